#include "units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace osim {

Time transfer_time(double bytes, Bandwidth bw) {
  if (bytes <= 0) return Time::zero();
  const double ps = std::ceil(bytes / bw.bytes_per_s * 1e12);
  return Time::from_ps(static_cast<int64_t>(ps));
}

namespace {

struct NumberAndUnit {
  double value;
  std::string unit;  // lower-cased? no: units are case-sensitive (GB vs Gb)
};

NumberAndUnit split(std::string_view text, std::string_view what) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const char* begin = text.data() + i;
  const char* end = text.data() + text.size();
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin)
    throw std::invalid_argument(fmt::format("'{}' is not a {}: expected a number followed by a unit", text, what));
  std::string unit;
  for (const char* p = ptr; p != end; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p))) unit.push_back(*p);
  if (!std::isfinite(value)) throw std::invalid_argument(fmt::format("'{}' is not a finite {}", text, what));
  return {value, unit};
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  auto [v, unit] = split(text, "byte size");
  double mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KB" || unit == "kB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  else if (unit == "TB")
    mult = 1e12;
  else if (unit == "KiB")
    mult = 1024.0;
  else if (unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    throw std::invalid_argument(
        fmt::format("'{}' has unknown size unit '{}': use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB", text, unit));
  const double bytes = v * mult;
  if (bytes < 0) throw std::invalid_argument(fmt::format("'{}' is negative: sizes must be >= 0", text));
  if (bytes > 0x1p60) throw std::invalid_argument(fmt::format("'{}' is over the largest size overlapsim holds (1 EiB)", text));
  if (std::abs(bytes - std::round(bytes)) > 1e-6 * std::max(1.0, bytes))
    throw std::invalid_argument(fmt::format("'{}' is not a whole number of bytes", text));
  return static_cast<Bytes>(std::llround(bytes));
}

Bandwidth parse_bandwidth(std::string_view text) {
  auto [v, unit] = split(text, "bandwidth");
  double mult = 0;
  if (unit == "B/s")
    mult = 1;
  else if (unit == "KB/s" || unit == "kB/s")
    mult = 1e3;
  else if (unit == "MB/s")
    mult = 1e6;
  else if (unit == "GB/s")
    mult = 1e9;
  else if (unit == "TB/s")
    mult = 1e12;
  else if (unit == "MiB/s")
    mult = 1024.0 * 1024;
  else if (unit == "GiB/s")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "Gb/s" || unit == "Gbps")
    mult = 1e9 / 8;
  else if (unit == "Tb/s")
    mult = 1e12 / 8;
  else
    throw std::invalid_argument(
        fmt::format("'{}' has unknown bandwidth unit '{}': use B/s, MB/s, GB/s, TB/s, MiB/s, GiB/s or Gb/s (bits)", text, unit));
  if (v <= 0) throw std::invalid_argument(fmt::format("bandwidth '{}' must be positive", text));
  if (v * mult > 1e16)
    throw std::invalid_argument(fmt::format("bandwidth '{}' is over 10 PB/s: leave the bandwidth out for an unlimited internal link", text));
  return {v * mult};
}

Time parse_duration(std::string_view text) {
  auto [v, unit] = split(text, "duration");
  if (v < 0) throw std::invalid_argument(fmt::format("duration '{}' is negative", text));
  double seconds_per = 0;
  if (unit == "ps")
    seconds_per = 1e-12;
  else if (unit == "ns")
    seconds_per = 1e-9;
  else if (unit == "us" || unit == "\xC2\xB5s")
    seconds_per = 1e-6;
  else if (unit == "ms")
    seconds_per = 1e-3;
  else if (unit == "s")
    seconds_per = 1;
  else
    throw std::invalid_argument(fmt::format("'{}' has unknown time unit '{}': use ps, ns, us, ms or s", text, unit));
  // Simulated time is int64 picoseconds (~106 days); one duration may take a day of it.
  if (v * seconds_per > 86400)
    throw std::invalid_argument(fmt::format("duration '{}' is over a day: overlapsim simulates up to ~100 days in all", text));
  if (unit == "ps") return Time::from_ps(std::llround(v));
  if (unit == "ns") return Time::from_ns(v);
  if (unit == "us" || unit == "\xC2\xB5s") return Time::from_us(v);
  if (unit == "ms") return Time::from_ms(v);
  return Time::from_s(v);
}

std::string format_bytes(double bytes) {
  const double a = std::abs(bytes);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.2f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_bandwidth(Bandwidth bw) {
  if (bw.is_unlimited()) return "unlimited";
  return fmt::format("{:.2f} GB/s", bw.GBps());
}

std::string format_time(Time t) {
  const double a = std::abs(static_cast<double>(t.ps()));
  if (a >= 1e12) return fmt::format("{:.4f} s", t.s());
  if (a >= 1e9) return fmt::format("{:.3f} ms", t.ms());
  if (a >= 1e6) return fmt::format("{:.3f} us", t.us());
  return fmt::format("{:.3f} ns", t.ns());
}

}  // namespace osim
