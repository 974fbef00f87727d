#include "io/file_hash.hpp"

#include <fstream>

#include <fmt/format.h>

namespace osim {

bool fnv1a64_file(const std::string& path, uint64_t& h) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<uint8_t>(buf[i])) * 1099511628211ull;
    if (!in) break;
  }
  return true;
}

std::string fnv1a64_of(const std::string& path) {
  uint64_t h = kFnv1a64Offset;
  return fnv1a64_file(path, h) ? fmt::format("{:016x}", h) : "";
}

}  // namespace osim
