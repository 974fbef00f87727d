// Calibration fields of the memory-bound kernels.
#include "core/interp.hpp"
#include "gpu/params/field.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace osim {

double MemoryParams::framework_efficiency(Access a, int32_t row, double element) const {
  if (is_norm(a) && row > 0 && !framework_norm_rows.empty()) {
    const double layer = log_interpolate(framework_norm_rows, row, 1), rms = log_interpolate(framework_norm_rows, row, 2);
    return a == Access::LayerNorm ? layer : a == Access::RmsNorm ? rms : (layer + rms) / 2;
  }
  const bool wide = element >= 4;
  const double by = is_norm(a)                 ? framework_norm_efficiency
                    : a == Access::ChannelNorm ? (wide ? framework_channel_norm_efficiency : framework_channel_norm_efficiency_16)
                    : a == Access::Indexed     ? (wide ? framework_indexed_efficiency : framework_indexed_efficiency_16)
                    : a == Access::Pad         ? (wide ? framework_pad_efficiency : framework_pad_efficiency_16)
                    : a == Access::Upsample    ? (wide ? framework_upsample_efficiency : framework_upsample_efficiency_16)
                    : a == Access::Broadcast   ? framework_broadcast_efficiency
                    : a == Access::Strided     ? framework_strided_efficiency
                    : a == Access::Roll        ? framework_roll_efficiency
                                               : 0.0;
  return by > 0 ? by : framework_hbm_efficiency > 0 ? framework_hbm_efficiency : hbm_efficiency;
}

Time MemoryParams::framework_fixed(Access a) const {
  return a == Access::ChannelNorm ? framework_channel_norm_fixed
         : a == Access::Indexed   ? framework_indexed_fixed
         : a == Access::Pad       ? framework_pad_fixed
         : a == Access::Upsample  ? framework_upsample_fixed
                                  : Time::zero();
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
      {.name = "hbm_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, hbm_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.85",
       .doc = "share of the HBM bandwidth a memory-bound kernel reaches"},
      {.name = "hbm_latency",
       .family = "memory",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(memory, hbm_latency),
       .hi = 1e6,
       .example = "3 us",
       .written = OSIM_POS(memory, hbm_latency),
       .doc = "added to a memory-bound kernel's time (ramp-up and tail)"},
      {.name = "framework_hbm_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_hbm_efficiency),
       .hi = 1,
       .example = "0.62",
       .written = OSIM_POS(memory, framework_hbm_efficiency),
       .doc = "share of the HBM bandwidth the framework's own contiguous elementwise kernels reach (schedules with framework: pytorch; absent: "
              "hbm_efficiency)"},
      {.name = "framework_norm_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_norm_efficiency),
       .hi = 1,
       .example = "0.55",
       .written = OSIM_POS(memory, framework_norm_efficiency),
       .doc = "the same for its layer and RMS norms (access: norm, layer_norm, rms_norm) where the op names no row or no table is "
              "fitted (absent: framework_hbm_efficiency)"},
      {.name = "framework_broadcast_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_broadcast_efficiency),
       .hi = 1,
       .example = "0.33",
       .written = OSIM_POS(memory, framework_broadcast_efficiency),
       .doc = "the same for ops with an operand broadcast over the tokens (access: broadcast)"},
      {.name = "framework_strided_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_strided_efficiency),
       .hi = 1,
       .example = "0.34",
       .written = OSIM_POS(memory, framework_strided_efficiency),
       .doc = "the same for ops on strided views (access: strided)"},
      {.name = "framework_roll_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_roll_efficiency),
       .hi = 1,
       .example = "0.19",
       .written = OSIM_POS(memory, framework_roll_efficiency),
       .doc = "the same for roll (access: roll)"},
      {.name = "framework_channel_norm_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_channel_norm_efficiency),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_channel_norm_efficiency),
       .doc = "share of the HBM bandwidth a norm over the channels of a 5-D channels-first tensor (access: channel_norm; F.normalize(x, dim=1): the "
              "reduction and the division), 4-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_channel_norm_efficiency_16",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_channel_norm_efficiency_16),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_channel_norm_efficiency_16),
       .doc = "share of the HBM bandwidth a norm over the channels of a 5-D channels-first tensor (access: channel_norm; F.normalize(x, dim=1): the "
              "reduction and the division), 2-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_indexed_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_indexed_efficiency),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_indexed_efficiency),
       .doc = "share of the HBM bandwidth indexed copies on 5-D channels-first tensors (access: indexed; a cat along frames, a stack, a per-channel "
              "broadcast), 4-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_indexed_efficiency_16",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_indexed_efficiency_16),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_indexed_efficiency_16),
       .doc = "share of the HBM bandwidth indexed copies on 5-D channels-first tensors (access: indexed; a cat along frames, a stack, a per-channel "
              "broadcast), 2-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_pad_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_pad_efficiency),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_pad_efficiency),
       .doc = "share of the HBM bandwidth a constant pad of every side of a 5-D channels-first tensor (access: pad; F.pad: the fill and the copy), "
              "4-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_pad_efficiency_16",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_pad_efficiency_16),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_pad_efficiency_16),
       .doc = "share of the HBM bandwidth a constant pad of every side of a 5-D channels-first tensor (access: pad; F.pad: the fill and the copy), "
              "2-byte elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_upsample_efficiency",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_upsample_efficiency),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_upsample_efficiency),
       .doc = "share of the HBM bandwidth nearest upsampling (access: upsample; F.interpolate nearest-exact: input read, output written), 4-byte "
              "elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_upsample_efficiency_16",
       .family = "memory",
       .kind = Kind::Number,
       .ref = OSIM_REF(memory, framework_upsample_efficiency_16),
       .hi = 1,
       .example = "0.5",
       .written = OSIM_POS(memory, framework_upsample_efficiency_16),
       .doc = "share of the HBM bandwidth nearest upsampling (access: upsample; F.interpolate nearest-exact: input read, output written), 2-byte "
              "elements (absent: framework_hbm_efficiency)"},
      {.name = "framework_channel_norm_fixed",
       .family = "memory",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(memory, framework_channel_norm_fixed),
       .hi = 1e6,
       .example = "5 us",
       .written = OSIM_POS(memory, framework_channel_norm_fixed),
       .doc = "time beyond hbm_latency that a norm over the channels (F.normalize: the reduction, then the division) on a 5-D channels-first tensor takes whatever its size (access: channel_norm; absent: 0)"},
      {.name = "framework_indexed_fixed",
       .family = "memory",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(memory, framework_indexed_fixed),
       .hi = 1e6,
       .example = "5 us",
       .written = OSIM_POS(memory, framework_indexed_fixed),
       .doc = "time beyond hbm_latency that an indexed copy (a cat along frames, a stack, a per-channel broadcast) on a 5-D channels-first tensor takes whatever its size (access: indexed; absent: 0)"},
      {.name = "framework_pad_fixed",
       .family = "memory",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(memory, framework_pad_fixed),
       .hi = 1e6,
       .example = "5 us",
       .written = OSIM_POS(memory, framework_pad_fixed),
       .doc = "time beyond hbm_latency that a constant pad (F.pad: the fill, then the copy) on a 5-D channels-first tensor takes whatever its size (access: pad; absent: 0)"},
      {.name = "framework_upsample_fixed",
       .family = "memory",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(memory, framework_upsample_fixed),
       .hi = 1e6,
       .example = "5 us",
       .written = OSIM_POS(memory, framework_upsample_fixed),
       .doc = "time beyond hbm_latency that nearest upsampling on a 5-D channels-first tensor takes whatever its size (access: upsample; absent: 0)"},
      {.name = "framework_norm_rows",
       .family = "memory",
       .kind = Kind::Custom,
       .example = "[[128, 0.099, 0.166], [2560, 0.46, 0.6]]",
       .written = [](const ModelParams& p) { return !p.memory.framework_norm_rows.empty(); },
       .doc = "[row elements, layer norm's share, RMS norm's share] by row: a norm op that names its row (row:) takes these, interpolated in "
              "log(row) (access norm: the two kinds' mean)",
       .read = read_norm_rows,
       .write = [](const ModelParams& p) { return format_share_table(p.memory.framework_norm_rows); }},
  };
}

}  // namespace params
}  // namespace osim
