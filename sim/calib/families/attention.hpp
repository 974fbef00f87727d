// The attention family's cross-attention fit, for the tests and the notebooks.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace osim {

/// Cross-attention efficiency against the query count: least squares on
/// 1 / efficiency = (1 + q0 / seq_q) / e over (seq_q, efficiency) points,
/// leaving out point `skip`; {e, q0}, or none with fewer than 3 points, one
/// length only, or q0 < 0.
std::optional<std::pair<double, double>> fit_cross_attention(const std::vector<std::pair<double, double>>& points,
                                                             size_t skip = static_cast<size_t>(-1));

}  // namespace osim
