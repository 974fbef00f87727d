#include "io/text_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#ifdef OVERLAPSIM_HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/errors.hpp"

namespace osim {

std::string read_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(SourceLocation{path, 0, 0}, "no such file");
#ifdef OVERLAPSIM_HAVE_ZLIB
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) throw InputError(SourceLocation{path, 0, 0}, "cannot be read");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const std::string msg = gzerror(f, &err);
  gzclose(f);
  if (n < 0) throw InputError(SourceLocation{path, 0, 0}, "cannot be decompressed (" + msg + ")");
  // At the end of input short of the stream's end gzread returns what it has and flags Z_BUF_ERROR.
  if (err == Z_BUF_ERROR) throw InputError(SourceLocation{path, 0, 0}, "cannot be decompressed (the gzip stream is cut short)");
  return out;
#else
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string out = ss.str();
  if (out.size() >= 2 && static_cast<unsigned char>(out[0]) == 0x1f && static_cast<unsigned char>(out[1]) == 0x8b)
    throw InputError(SourceLocation{path, 0, 0}, "is gzip-compressed, and this build reads no gzip: gunzip it first");
  return out;
#endif
}

std::string plain_or_gz(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path plain = fs::path(dir) / name;
  std::error_code ec;
  if (!fs::exists(plain, ec)) {
    fs::path gz = plain;
    gz += ".gz";
    if (fs::exists(gz, ec)) return gz.string();
  }
  return plain.string();
}

void refuse_overwrite(const std::filesystem::path& p, bool force) {
  if (!force && std::filesystem::exists(p))
    throw InputError(SourceLocation{p.string(), 0, 0}, "exists already: pass --force to overwrite it, or choose another path");
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  namespace fs = std::filesystem;
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

}  // namespace osim
