// Calibration fields of the memory-bound kernels.
#include "core/interp.hpp"
#include "gpu/params/field.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace osim {

double MemoryParams::framework_efficiency(Access a, int32_t row) const {
  if (is_norm(a) && row > 0 && !framework_norm_rows.empty()) {
    const double layer = log_interpolate(framework_norm_rows, row, 1), rms = log_interpolate(framework_norm_rows, row, 2);
    return a == Access::LayerNorm ? layer : a == Access::RmsNorm ? rms : (layer + rms) / 2;
  }
  const double by = is_norm(a)              ? framework_norm_efficiency
                    : a == Access::Broadcast ? framework_broadcast_efficiency
                    : a == Access::Strided   ? framework_strided_efficiency
                    : a == Access::Roll      ? framework_roll_efficiency
                                             : 0.0;
  return by > 0 ? by : framework_hbm_efficiency > 0 ? framework_hbm_efficiency : hbm_efficiency;
}

namespace params {

namespace {

void read_norm_rows(const MapReader& m, const std::string&, ModelParams& p) {
  p.memory.framework_norm_rows = read_share_table(m, "framework_norm_rows",
                                                  "must be a list of [row elements, layer norm's share, RMS norm's share] by row, shares in (0, 1], "
                                                  "e.g. [[128, 0.1, 0.17], [2560, 0.46, 0.6]]");
}

}  // namespace

std::vector<Field> memory_fields() {
  return {
    {"hbm_efficiency", "memory", Kind::Number, OSIM_REF(memory, hbm_efficiency), 4, 1e-3, 1, false, "0.85", nullptr,
     "share of the HBM bandwidth a memory-bound kernel reaches"},
    {"hbm_latency", "memory", Kind::TimeUs, OSIM_REF(memory, hbm_latency), 4, 0, 1e6, false, "3 us", OSIM_POS(memory, hbm_latency),
     "added to a memory-bound kernel's time (ramp-up and tail)"},
    {"framework_hbm_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_hbm_efficiency), 4, 0, 1, false, "0.62",
     OSIM_POS(memory, framework_hbm_efficiency),
     "share of the HBM bandwidth the framework's own contiguous elementwise kernels reach (schedules with framework: pytorch; absent: hbm_efficiency)"},
    {"framework_norm_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_norm_efficiency), 4, 0, 1, false, "0.55",
     OSIM_POS(memory, framework_norm_efficiency), "the same for its layer and RMS norms (access: norm, layer_norm, rms_norm) where the op names no row or no table is "
     "fitted (absent: framework_hbm_efficiency)"},
    {"framework_broadcast_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_broadcast_efficiency), 4, 0, 1, false, "0.33",
     OSIM_POS(memory, framework_broadcast_efficiency), "the same for ops with an operand broadcast over the tokens (access: broadcast)"},
    {"framework_strided_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_strided_efficiency), 4, 0, 1, false, "0.34",
     OSIM_POS(memory, framework_strided_efficiency), "the same for ops on strided views (access: strided)"},
    {"framework_roll_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_roll_efficiency), 4, 0, 1, false, "0.19",
     OSIM_POS(memory, framework_roll_efficiency), "the same for roll (access: roll)"},
    {"framework_norm_rows", "memory", Kind::Custom, {}, 4, 0, 0, false, "[[128, 0.099, 0.166], [2560, 0.46, 0.6]]",
     [](const ModelParams& p) { return !p.memory.framework_norm_rows.empty(); },
     "[row elements, layer norm's share, RMS norm's share] by row: a norm op that names its row (row:) takes these, interpolated in "
     "log(row) (access norm: the two kinds' mean)",
     read_norm_rows,
     [](const ModelParams& p) { return format_share_table(p.memory.framework_norm_rows); }},
  };
}

}  // namespace params
}  // namespace osim
