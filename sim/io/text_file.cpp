#include "io/text_file.hpp"

#include <algorithm>
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

namespace {

#ifdef OVERLAPSIM_HAVE_ZLIB
// gzread a block at a time (plain files as they are).
class GzipReadBuf : public std::streambuf {
 public:
  explicit GzipReadBuf(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw InputError(SourceLocation{path, 0, 0}, "cannot be read");
  }
  ~GzipReadBuf() override { gzclose(f_); }
  GzipReadBuf(const GzipReadBuf&) = delete;
  GzipReadBuf& operator=(const GzipReadBuf&) = delete;

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(f_, buf_, sizeof buf_);
    int err = 0;
    const std::string msg = gzerror(f_, &err);
    if (n < 0) throw InputError(SourceLocation{path_, 0, 0}, "cannot be decompressed (" + msg + ")");
    if (n == 0 && err == Z_BUF_ERROR) throw InputError(SourceLocation{path_, 0, 0}, "cannot be decompressed (the gzip stream is cut short)");
    if (n == 0) return traits_type::eof();
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string path_;
  gzFile f_;
  char buf_[1 << 16];
};
#endif

}  // namespace

std::unique_ptr<std::streambuf> open_maybe_gzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(SourceLocation{path, 0, 0}, "no such file");
#ifdef OVERLAPSIM_HAVE_ZLIB
  return std::make_unique<GzipReadBuf>(path);
#else
  auto f = std::make_unique<std::filebuf>();
  if (!f->open(path, std::ios::in | std::ios::binary)) throw InputError(SourceLocation{path, 0, 0}, "cannot be read");
  if (f->sgetc() == 0x1f && (f->snextc(), f->sgetc() == 0x8b))
    throw InputError(SourceLocation{path, 0, 0}, "is gzip-compressed, and this build reads no gzip: gunzip it first");
  f->pubseekpos(0);
  return f;
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
  OutputFile f(p, OutputFile::Compression::None);
  f.write(text);
  f.commit();
}

namespace {
constexpr size_t kOutputBuffer = size_t{1} << 20;  // text gathered before each write or compression
}  // namespace

#ifdef OVERLAPSIM_HAVE_ZLIB
struct OutputFile::Deflate {
  z_stream z{};
  std::string out = std::string(kOutputBuffer, '\0');
};
#else
struct OutputFile::Deflate {};
#endif

OutputFile::OutputFile(std::filesystem::path p, Compression c) : p_(std::move(p)), tmp_(p_.string() + ".tmp" + std::to_string(::getpid())) {
  if (c == Compression::ByName && p_.extension() == ".gz") {
#ifdef OVERLAPSIM_HAVE_ZLIB
    gz_ = std::make_unique<Deflate>();
    // windowBits 15 + 16: a gzip stream, its header without a name and with time 0.
    if (deflateInit2(&gz_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      gz_.reset();
      throw InputError(SourceLocation{p_.string(), 0, 0}, "cannot start its gzip compression (out of memory?)");
    }
#else
    throw InputError(SourceLocation{p_.string(), 0, 0}, "this build writes no gzip (it was built without zlib): give a path without .gz");
#endif
  }
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail("cannot write this file: check the folder exists and is writable");
  buf_.reserve(kOutputBuffer);
}

OutputFile::~OutputFile() {
#ifdef OVERLAPSIM_HAVE_ZLIB
  if (gz_) deflateEnd(&gz_->z);
#endif
  if (f_) std::fclose(f_);
  if (!committed_) {
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

void OutputFile::fail(const std::string& why) {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
  throw InputError(SourceLocation{p_.string(), 0, 0}, why);
}

void OutputFile::write(std::string_view text) {
  bytes_ += text.size();
  if (buf_.size() + text.size() > kOutputBuffer) {
    put(buf_, false);
    buf_.clear();
  }
  if (text.size() > kOutputBuffer) {
    put(text, false);  // one piece larger than the buffer goes out on its own, not copied
    return;
  }
  buf_.append(text);
}

void OutputFile::put(std::string_view text, bool finish) {
  if (!f_) fail("cannot write this file: it was closed");
  const char* why = "cannot write this file (the disk full?)";
  if (!gz_) {
    if (std::fwrite(text.data(), 1, text.size(), f_) != text.size()) fail(why);
  } else {
#ifdef OVERLAPSIM_HAVE_ZLIB
    // In pieces of at most the buffer's size (zlib counts its input in 32
    // bits); the stream is the same however the input is cut.
    z_stream& z = gz_->z;
    size_t at = 0;
    do {
      const size_t n_in = std::min(text.size() - at, kOutputBuffer);
      const int flush = finish && at + n_in == text.size() ? Z_FINISH : Z_NO_FLUSH;
      // zlib's input is not const in its API; deflate only reads it.
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + at));
      z.avail_in = static_cast<uInt>(n_in);
      int rc = Z_OK;
      do {
        z.next_out = reinterpret_cast<Bytef*>(gz_->out.data());
        z.avail_out = static_cast<uInt>(gz_->out.size());
        rc = deflate(&z, flush);
        if (rc == Z_STREAM_ERROR) fail("cannot compress this file (zlib stream error)");
        const size_t n = gz_->out.size() - z.avail_out;
        if (std::fwrite(gz_->out.data(), 1, n, f_) != n) fail(why);
      } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
      at += n_in;
    } while (at < text.size());
#endif
  }
}

void OutputFile::commit() {
  put(buf_, true);
  buf_.clear();
  if (std::fflush(f_) != 0 || ::fsync(::fileno(f_)) != 0) fail("cannot write this file (the disk full?)");
  const int closed = std::fclose(f_);
  f_ = nullptr;
  if (closed != 0) fail("cannot write this file (the disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_, p_, ec);
  if (ec) fail("cannot write this file (" + ec.message() + ")");
  committed_ = true;
}

}  // namespace osim
