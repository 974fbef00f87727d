// FNV-1a (64 bit) of files' bytes: which measurement a calibration came from,
// which inputs a sweep's journal belongs to.
#pragma once

#include <cstdint>
#include <string>

namespace osim {

inline constexpr uint64_t kFnv1a64Offset = 1469598103934665603ull;

/// Folds a file's bytes into `h`; false (h unchanged) when it cannot be read.
bool fnv1a64_file(const std::string& path, uint64_t& h);

/// The hash of a file's bytes as 16 hex digits; "" when it cannot be read.
std::string fnv1a64_of(const std::string& path);

}  // namespace osim
