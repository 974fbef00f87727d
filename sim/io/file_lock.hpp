// An exclusive lock on an output, held for a process's run: a second run
// writing the same output is refused at once instead of mixing its writes
// with the first's. A lock file `PATH.lock` (flock(2): released by the
// kernel when the process ends, however it ends); removed when released.
#pragma once

#include <filesystem>
#include <string>

namespace osim {

class FileLock {
 public:
  /// Locks `path` (through `path.lock`); InputError naming `path` when another
  /// process holds it (`what` says what that one is doing, e.g. "another
  /// overlapsim sweep writes this CSV") or the lock file cannot be made.
  FileLock(const std::filesystem::path& path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  std::filesystem::path lock_;
  int fd_ = -1;
};

}  // namespace osim
