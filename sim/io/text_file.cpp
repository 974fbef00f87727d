#include "io/text_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace osim
