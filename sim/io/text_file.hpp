// Whole files in and out: an input read whole, plain or gzip-compressed
// (reference data is kept compressed in the repository; users' own files are
// usually plain), and an output written atomically, never over a user's file
// unless asked to. The one place the simulator reads and writes text files.
#pragma once

#include <filesystem>
#include <string>

namespace osim {

/// A file's contents, gunzipped when it is gzip (by its magic bytes);
/// InputError naming the file when it is missing, unreadable or corrupt.
std::string read_maybe_gzip(const std::string& path);

/// `dir/name` where it exists, else `dir/name.gz` where that exists, else
/// `dir/name` (for the error that names it).
std::string plain_or_gz(const std::string& dir, const std::string& name);

/// Refuses an existing path unless `force` (InputError naming it).
void refuse_overwrite(const std::filesystem::path& p, bool force);
/// Writes `text` to a temporary file beside `p`, then renames it over `p`:
/// a failed write never leaves a truncated file in place of the old one
/// (InputError naming `p`).
void write_file(const std::filesystem::path& p, const std::string& text);

}  // namespace osim
