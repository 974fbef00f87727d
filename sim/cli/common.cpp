#include "cli/common.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "core/errors.hpp"
#include "gpu/params_io.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

void refuse_overwrite(const fs::path& p, bool force) {
  if (!force && fs::exists(p)) throw InputError(SourceLocation{p.string(), 0, 0}, "exists already: pass --force to overwrite it, or choose another path");
}

void write_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp" + std::to_string(::getpid());
  {
    // Written whole and on the disk (fsync) before it takes the old file's place.
    FILE* f = std::fopen(tmp.c_str(), "wb");
    const bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    if (f) std::fclose(f);
    if (!ok) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError(SourceLocation{p.string(), 0, 0}, "cannot write this file: check the folder exists and is writable");
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(SourceLocation{p.string(), 0, 0}, "cannot write this file (" + ec.message() + ")");
  }
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_maybe_gzip(path);  // bench documents may be kept gzipped
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(SourceLocation{path, 0, 0}, std::string("not valid JSON: ") + e.what());
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string calibration_note(const std::string& calibration) {
  BaseParams b;
  if (calibration != "none") {
    b.file = calibration;
    b.origin = read_calibration_file(calibration).origin;
  }
  return base_params_note(b, nullptr);
}

CLI::Validator finite_percent() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          size_t used = 0;
          const double v = std::stod(s, &used);
          if (used == s.size() && std::isfinite(v) && v >= 0) return "";
        } catch (const std::exception&) {
        }
        return "'" + s + "' is not a percentage (a finite number >= 0)";
      },
      "PERCENT");
}

std::string records_path(const std::string& p) { return fs::is_directory(p) ? plain_or_gz(p, "records.json") : p; }

}  // namespace osim::cli
