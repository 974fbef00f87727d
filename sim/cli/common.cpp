#include "cli/common.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "core/errors.hpp"
#include "gpu/params_io.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_maybe_gzip(path);  // bench documents may be kept gzipped
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(SourceLocation{path, 0, 0}, std::string("not valid JSON: ") + e.what());
  }
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
