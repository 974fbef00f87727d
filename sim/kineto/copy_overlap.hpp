// How long each kernel of a trace ran beside busy copy engines. A measured
// kernel's duration holds the slowdown of the copies that ran beside it; the
// replay slows it again by the copies it replays (Compute's copy
// interference), so the import records, per kernel, the time 1, 2 and 3
// engines were busy (Op::beside_copies_ns) and the replay takes that
// slowdown out first. Engines as Copies assigns them: one for host-to-device
// copies, one for device-to-host, one for the rest.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace osim::kineto {

class CopyOverlap {
 public:
  enum Engine { kH2D = 0, kD2H = 1, kOther = 2 };
  /// A copy that ran on `engine` from `start` to `end` (ns). Call build() after the last.
  void add(Engine engine, int64_t start, int64_t end);
  /// Sorts and merges each engine's busy time.
  void build();
  /// The ns of [start, end) during which exactly 1, 2 and 3 engines were busy.
  [[nodiscard]] std::array<uint32_t, 3> beside(int64_t start, int64_t end) const;

 private:
  std::array<std::vector<std::pair<int64_t, int64_t>>, 3> busy_;  // per engine: disjoint [start, end), in order
};

}  // namespace osim::kineto
