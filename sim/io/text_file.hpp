// Whole files in and out: an input read whole, plain or gzip-compressed
// (reference data is kept compressed in the repository; users' own files are
// usually plain), and an output written atomically, never over a user's file
// unless asked to, whole or streamed (OutputFile: a trace too large to hold).
// The one place the simulator reads and writes text files.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

namespace osim {

/// A file's contents, gunzipped when it is gzip (by its magic bytes);
/// InputError naming the file when it is missing, unreadable or corrupt.
std::string read_maybe_gzip(const std::string& path);
/// The same file read a block at a time as it is decompressed (memory for a
/// block, not the file): a stream buffer whose reads throw read_maybe_gzip's
/// InputErrors (a gzip stream cut short among them).
std::unique_ptr<std::streambuf> open_maybe_gzip(const std::string& path);

/// `dir/name` where it exists, else `dir/name.gz` where that exists, else
/// `dir/name` (for the error that names it).
std::string plain_or_gz(const std::string& dir, const std::string& name);

/// Refuses an existing path unless `force` (InputError naming it).
void refuse_overwrite(const std::filesystem::path& p, bool force);
/// Writes `text` as it is (an OutputFile that never compresses: a path the
/// caller names ".gz" gets the bytes given, as the readers of YAML and CSV
/// read plain text only) to a temporary file beside `p`, then renames it
/// over `p`: a failed write never leaves a truncated file in place of the
/// old one (InputError naming `p`).
void write_file(const std::filesystem::path& p, const std::string& text);

/// An output written as it is produced, in bounded memory: into a temporary
/// file beside `p`, gzip-compressed where `p` ends in ".gz" (deterministic:
/// no name or time in the header) unless Compression::None, on the disk
/// (fsync) and renamed over `p` by commit(); dropped, unless committed, when
/// destroyed. Every failure an InputError naming `p` (a .gz path too in a
/// build without zlib).
class OutputFile {
 public:
  enum class Compression { ByName, None };
  explicit OutputFile(std::filesystem::path p, Compression c = Compression::ByName);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  /// Flushed, on the disk (fsync) and in place of `p`.
  void commit();
  /// Bytes given to write() so far (before compression).
  [[nodiscard]] uint64_t bytes() const { return bytes_; }

 private:
  void put(std::string_view text, bool finish);  // to the file, compressed where gzip
  [[noreturn]] void fail(const std::string& why);

  std::filesystem::path p_, tmp_;
  FILE* f_ = nullptr;
  struct Deflate;
  std::unique_ptr<Deflate> gz_;  // null: a plain file
  std::string buf_;
  uint64_t bytes_ = 0;
  bool committed_ = false;
};

}  // namespace osim
