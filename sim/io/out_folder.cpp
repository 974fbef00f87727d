#include "io/out_folder.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <signal.h>
#include <unistd.h>

#include "core/errors.hpp"

namespace osim {

namespace fs = std::filesystem;

namespace {

// `.<name>.<kind><pid>` beside `dir`.
fs::path sibling(const fs::path& dir, const char* kind, long pid) {
  return dir.parent_path() / ("." + dir.filename().string() + "." + kind + std::to_string(pid));
}

[[noreturn]] void refuse(const fs::path& dir, const std::string& what) { throw InputError(SourceLocation{dir.string(), 0, 0}, what); }

// A folder path with no trailing separator ("out/" names "out").
fs::path folder_path(fs::path dir) {
  if (!dir.has_filename() && dir.has_parent_path()) dir = dir.parent_path();
  if (dir.empty() || dir.filename() == "." || dir.filename() == "..") {
    dir = fs::absolute(dir.empty() ? fs::path(".") : dir).lexically_normal();
    if (!dir.has_filename() && dir.has_parent_path()) dir = dir.parent_path();
  }
  return dir;
}

}  // namespace

int remove_stale_temporaries(const fs::path& dir_in) {
  const fs::path dir = folder_path(dir_in);
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  std::error_code ec;
  int removed = 0;
  for (const std::string kind : {".tmp", ".old"}) {
    const std::string prefix = "." + dir.filename().string() + kind;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.size() <= prefix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string digits = n.substr(prefix.size());
      if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(digits));
      if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its run is still going
      std::error_code rm;
      fs::remove_all(it->path(), rm);
      if (!rm) ++removed;
    }
  }
  return removed;
}

int remove_own_temporaries(const fs::path& out) {
  const fs::path dir = folder_path(out);
  int removed = 0;
  for (const fs::path& t : {sibling(dir, "tmp", ::getpid()), fs::path(dir.string() + ".tmp" + std::to_string(::getpid()))}) {
    std::error_code ec;
    if (fs::remove_all(t, ec) > 0 && !ec) ++removed;
  }
  return removed;
}

OutputFolder::OutputFolder(fs::path dir, std::vector<std::string> names, bool force) : dir_(folder_path(std::move(dir))), names_(std::move(names)) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec)) refuse(dir_, "exists and is not a folder: choose another path");
  for (const std::string& n : names_)
    if (!force && fs::exists(dir_ / n, ec))
      throw InputError(SourceLocation{(dir_ / n).string(), 0, 0}, "exists already: pass --force to overwrite it, or choose another path");
  const fs::path parent = dir_.parent_path().empty() ? fs::path(".") : dir_.parent_path();
  for (fs::path p = parent; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec) && !fs::is_directory(p, ec)) refuse(dir_, p.string() + " is a file, not a folder: choose another path");
    if (p == p.parent_path()) break;
  }
  fs::create_directories(parent, ec);
  if (ec) refuse(dir_, ec.message() + ": choose another path");
  remove_stale_temporaries(dir_);
  tmp_ = sibling(dir_, "tmp", ::getpid());
  fs::remove_all(tmp_, ec);
  fs::create_directory(tmp_, ec);
  if (ec) refuse(dir_, ec.message() + ": choose another path");
}

OutputFolder::~OutputFolder() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

fs::path OutputFolder::path(const std::string& name) const { return tmp_ / name; }

void OutputFolder::commit() {
  std::error_code ec;
  bool only_ours = true;  // an earlier run's folder (or an empty one)
  if (fs::exists(dir_, ec))
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (std::find(names_.begin(), names_.end(), it->path().filename().string()) == names_.end()) only_ours = false;
  if (only_ours) {
    // Renamed in whole: over an empty folder directly, else the earlier one moved aside first.
    fs::rename(tmp_, dir_, ec);
    if (ec) {
      const fs::path old = sibling(dir_, "old", ::getpid());
      std::error_code aside;
      fs::rename(dir_, old, aside);
      if (aside) refuse(dir_, aside.message() + ": choose another path");
      fs::rename(tmp_, dir_, ec);
      if (ec) {
        fs::rename(old, dir_, aside);
        refuse(dir_, ec.message() + ": choose another path");
      }
      fs::remove_all(old, aside);
    }
  } else {
    // The user's folder with other files in it: ours moved in one by one, an earlier run's that this one did not write removed.
    for (const std::string& n : names_) {
      if (fs::exists(tmp_ / n, ec)) {
        fs::rename(tmp_ / n, dir_ / n, ec);
        if (ec) refuse(dir_ / n, ec.message() + ": choose another path");
      } else {
        fs::remove(dir_ / n, ec);
      }
    }
    fs::remove_all(tmp_, ec);
  }
  committed_ = true;
}

}  // namespace osim
