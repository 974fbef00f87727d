// Units used throughout overlapsim. Simulated time is an integer count of
// picoseconds (as in htsim's simtime_picosec): events order exactly and the
// same input always gives the same output. Byte counts are integers.
// Bandwidth is a double in bytes per second. Conversions live here and only
// here: never multiply by 1e12 inline elsewhere.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace osim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static constexpr Time from_ns(double ns) { return Time(round_ps(ns * 1e3)); }
  static constexpr Time from_us(double us) { return Time(round_ps(us * 1e6)); }
  static constexpr Time from_ms(double ms) { return Time(round_ps(ms * 1e9)); }
  static constexpr Time from_s(double s) { return Time(round_ps(s * 1e12)); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  [[nodiscard]] constexpr int64_t ps() const { return ps_; }
  [[nodiscard]] constexpr double ns() const { return static_cast<double>(ps_) * 1e-3; }
  [[nodiscard]] constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }
  [[nodiscard]] constexpr double ms() const { return static_cast<double>(ps_) * 1e-9; }
  [[nodiscard]] constexpr double s() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  static constexpr int64_t round_ps(double v) { return static_cast<int64_t>(v < 0 ? v - 0.5 : v + 0.5); }
  int64_t ps_ = 0;
};

using Bytes = int64_t;

/// Bytes per second.
struct Bandwidth {
  double bytes_per_s = 0.0;
  static constexpr Bandwidth from_GBps(double gbps) { return {gbps * 1e9}; }
  static constexpr Bandwidth unlimited() { return {std::numeric_limits<double>::infinity()}; }
  [[nodiscard]] constexpr double GBps() const { return bytes_per_s * 1e-9; }
  [[nodiscard]] bool is_unlimited() const { return bytes_per_s == std::numeric_limits<double>::infinity(); }
  constexpr auto operator<=>(const Bandwidth&) const = default;
};

/// Time to move `bytes` at `bw`, rounded up to the next picosecond.
Time transfer_time(double bytes, Bandwidth bw);

// Human-readable parsing ("1.5 GiB", "64 GB/s", "1.5 us", "gen5 x16").
// Each returns nullopt-like failure by throwing std::invalid_argument with a
// sentence saying what is accepted; callers add the file:line.
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
Time parse_duration(std::string_view text);

// Formatting for reports: fixed, locale-independent, deterministic.
std::string format_bytes(double bytes);      // "1.00 GiB"
std::string format_bandwidth(Bandwidth bw);  // "54.81 GB/s"
std::string format_time(Time t);             // "19.594 ms"

}  // namespace osim
