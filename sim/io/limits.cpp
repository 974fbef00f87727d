#include "io/limits.hpp"

#include <atomic>

namespace osim::limits {

namespace {
std::atomic<size_t> g_max_unrolled_ops{100'000'000};
}  // namespace

size_t max_unrolled_ops() { return g_max_unrolled_ops.load(std::memory_order_relaxed); }
void set_max_unrolled_ops(size_t n) { g_max_unrolled_ops.store(n, std::memory_order_relaxed); }

}  // namespace osim::limits
