#include "cli/common.hpp"

#include <fstream>

#include <unistd.h>

#include "core/errors.hpp"

namespace osim::cli {

void refuse_overwrite(const fs::path& p, bool force) {
  if (!force && fs::exists(p)) throw InputError(SourceLocation{p.string(), 0, 0}, "exists already: pass --force to overwrite it, or choose another path");
}

void write_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.flush();
    if (!out) {
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
  std::ifstream in(path);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "cannot open file: check the path");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(SourceLocation{path, 0, 0}, std::string("not valid JSON: ") + e.what());
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string records_path(const std::string& p) { return fs::is_directory(p) ? (fs::path(p) / "records.json").string() : p; }

}  // namespace osim::cli
