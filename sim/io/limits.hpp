// How much an input may expand to: programs are unrolled in memory, so a
// loop count, a repeat or a step count past these is refused with an error
// naming its key instead of exhausting memory or running for hours.
#pragma once

#include <cstddef>
#include <cstdint>

namespace osim::limits {

/// The most ops a run's programs may unroll to (loops; steps x blocks of a
/// workload), about 4 GB of ops; loop iterations count even when empty.
size_t max_unrolled_ops();
/// Lowers (or raises) the limit: the fuzzers run with a small one.
void set_max_unrolled_ops(size_t n);

/// The most ranks a schedule or workload may have.
inline constexpr int kMaxRanks = 1 << 20;

/// The most combinations one `repeat:` may run through, skipped ones included.
inline constexpr int64_t kMaxRepeatIterations = int64_t{1} << 20;

}  // namespace osim::limits
