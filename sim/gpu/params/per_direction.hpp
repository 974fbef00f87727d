// A value per direction of a copy between host and GPU memory (H2D, D2H),
// for the calibration fields measured both ways. D2H may be unset (its
// calibration field absent): then it reads as H2D's value.
#pragma once

#include <cstdint>

#include "core/units.hpp"

namespace osim {

enum class Direction : uint8_t { H2D, D2H };

constexpr Direction copy_direction(bool d2h) { return d2h ? Direction::D2H : Direction::H2D; }

// What an unset D2H value holds (the default of a field left out):
// an unlimited bandwidth, a negative time, a number of 0 or less.
inline bool is_unset(Bandwidth b) { return b.is_unlimited(); }
inline bool is_unset(Time t) { return t < Time::zero(); }
inline bool is_unset(double x) { return x <= 0; }

template <class T>
struct PerDirection {
  T h2d{};
  T d2h{};  // unset (is_unset): as h2d

  /// The value for direction d: D2H's where set, else H2D's.
  [[nodiscard]] T operator[](Direction d) const { return d == Direction::D2H && !is_unset(d2h) ? d2h : h2d; }
  bool operator==(const PerDirection&) const = default;
};

}  // namespace osim
