#include "io/file_lock.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"

namespace osim {

FileLock::FileLock(const std::filesystem::path& path, const std::string& what) : lock_(path.string() + ".lock") {
  // The lock file may be removed by its holder between our open and flock:
  // then the lock is on a file no longer there, so try again on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw InputError(SourceLocation{path.string(), 0, 0},
                       std::string("cannot make its lock file ") + lock_.string() + " (" + std::strerror(errno) + "): choose another path");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw InputError(SourceLocation{path.string(), 0, 0},
                         what + " (it holds " + lock_.string() + "): wait for it to finish, or choose another output");
      throw InputError(SourceLocation{path.string(), 0, 0}, std::string("cannot lock ") + lock_.string() + " (" + std::strerror(err) + ")");
    }
    struct stat held {
    }, named{};
    if (::fstat(fd_, &held) == 0 && ::stat(lock_.c_str(), &named) == 0 && held.st_ino == named.st_ino && held.st_dev == named.st_dev) return;
    ::close(fd_);
    fd_ = -1;
  }
  throw InputError(SourceLocation{path.string(), 0, 0}, "cannot lock " + lock_.string() + ": it is removed and made again all the time");
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  ::unlink(lock_.c_str());  // while holding it: a waiting process then finds it gone and makes a new one
  ::close(fd_);
}

}  // namespace osim
