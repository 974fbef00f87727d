// Reading a whole input file that may be gzip-compressed (reference data is
// kept compressed in the repository; users' own files are usually plain).
#pragma once

#include <string>

namespace osim {

/// A file's contents, gunzipped when it is gzip (by its magic bytes);
/// InputError naming the file when it is missing, unreadable or corrupt.
std::string read_maybe_gzip(const std::string& path);

/// `dir/name` where it exists, else `dir/name.gz` where that exists, else
/// `dir/name` (for the error that names it).
std::string plain_or_gz(const std::string& dir, const std::string& name);

}  // namespace osim
