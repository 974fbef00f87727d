// The GEMM family's shape model fit, for the tests and the notebooks.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "gpu/params.hpp"

namespace osim {

/// The GEMM shape model (GemmShapeModel) fitted to a per-shape table: least
/// squares on 1 / efficiency = (1 + m0/m + n0/n + k0/k + pow2_m [m a power
/// of two]) / e, leaving out entry `skip` (for leave-one-out checks) and any
/// term the table does not vary; every coefficient >= 0 (a negative term is
/// dropped and the rest refitted); the power-of-two term only if it lowers
/// the leave-one-out rms error over the table. None with fewer than 5 shapes.
std::optional<GemmShapeModel> fit_gemm_model(const std::vector<GemmShapeEfficiency>& shapes, size_t skip = static_cast<size_t>(-1));

}  // namespace osim
