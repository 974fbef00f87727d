// Calibration fields of the convolutions.
#include "core/interp.hpp"
#include "gpu/params/field.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace osim {

double ConvParams::efficiency(double cout, double positions, bool tf32) const {
  const double share = log_interpolate(rates, cout, tf32 ? 1 : 2);
  return share / (1 + positions_half / std::max(1.0, positions));
}

namespace params {

std::vector<Field> conv_fields() {
  return {
      {.name = "conv_rates",
       .family = "conv",
       .kind = Kind::Custom,
       .example = "[[96, 0.26, 0.26], [128, 0.72, 0.61]]",
       .written = [](const ModelParams& p) { return p.conv.fitted(); },
       .doc = "[output channels, TF32 share, 16-bit share] of the peak a convolution's kernel reaches, by channels (absent: convolutions at "
              "flops_efficiency)",
       .read =
           [](const MapReader& m, const std::string&, ModelParams& p) {
             p.conv.rates = read_share_table(m, "conv_rates",
                                             "must be a list of [output channels, TF32 share, 16-bit share] by channels, shares in (0, 1], "
                                             "e.g. [[96, 0.26, 0.26], [128, 0.72, 0.61]]");
           },
       .write = [](const ModelParams& p) { return format_share_table(p.conv.rates); }},
      {.name = "conv_positions_half",
       .family = "conv",
       .kind = Kind::Number,
       .ref = OSIM_REF(conv, positions_half),
       .precision = 0,
       .hi = 1e9,
       .example = "6000",
       .written = [](const ModelParams& p) { return p.conv.fitted(); },
       .doc = "output positions at which a convolution's share falls by half its value (share / (1 + this / positions))"},
      {.name = "conv_layout_efficiency",
       .family = "conv",
       .kind = Kind::Number,
       .ref = OSIM_REF(conv, layout_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.8",
       .written = [](const ModelParams& p) { return p.conv.fitted(); },
       .doc = "share of the HBM bandwidth the layout conversions around a channels-first convolution reach, 4-byte elements"},
      {.name = "conv_layout_efficiency_16",
       .family = "conv",
       .kind = Kind::Number,
       .ref = OSIM_REF(conv, layout_efficiency_16),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.55",
       .written = [](const ModelParams& p) { return p.conv.fitted(); },
       .doc = "the same for 2-byte elements"},
  };
}

}  // namespace params
}  // namespace osim
