#include "io/paths.hpp"

#include <filesystem>

namespace osim {

namespace fs = std::filesystem;

std::string resolve_named_path(const std::string& file, const std::string& named) {
  if (named.empty() || fs::path(named).is_absolute()) return named;
  return (fs::path(file).parent_path() / named).lexically_normal().string();
}

namespace {

// Whether `p` (absolute, normal) lies under `dir` (absolute, normal).
bool under(const fs::path& p, const fs::path& dir) {
  const fs::path rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

std::string path_to_write(const std::string& written, const std::string& target) {
  if (target.empty()) return target;
  const fs::path abs_target = fs::absolute(target).lexically_normal();
  const fs::path folder = fs::absolute(written).lexically_normal().parent_path();
  const fs::path here = fs::current_path().lexically_normal();
  if (under(abs_target, here) && under(folder, here)) return abs_target.lexically_relative(folder).string();
  return abs_target.string();
}

}  // namespace osim
