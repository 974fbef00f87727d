// Calibration fields of the hand-offs between the copy and compute engines.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> handoff_fields() {
  return {
      {.name = "copy_after_kernel_latency",
       .family = "handoff",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(handoff, copy_after_kernel_latency, h2d),
       .hi = 1e6,
       .example = "5.8 us",
       .written = OSIM_POS_DIR(handoff, copy_after_kernel_latency, h2d),
       .doc = "a pinned copy after a kernel on its stream (or waited on, still running) starts this much later"},
      {.name = "copy_after_kernel_latency_d2h",
       .family = "handoff",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(handoff, copy_after_kernel_latency, d2h),
       .hi = 1e6,
       .example = "6.0 us",
       .written = OSIM_NONNEG_DIR(handoff, copy_after_kernel_latency, d2h),
       .doc = "the same for a D2H copy (absent: copy_after_kernel_latency)"},
      {.name = "kernel_after_copy_latency",
       .family = "handoff",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(handoff, kernel_after_copy_latency),
       .hi = 1e6,
       .example = "2.8 us",
       .written = OSIM_POS(handoff, kernel_after_copy_latency),
       .doc = "a kernel after a copy, by the same rule"},
      {.name = "handoff_phase_min",
       .family = "handoff",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(handoff, handoff_phase_min),
       .hi = 1e6,
       .example = "0.3 us",
       .written = [](const ModelParams& p) { return p.handoff.has_handoff_phase(); },
       .doc = "the shortest one hand-off takes (with handoff_phase_max)"},
      {.name = "handoff_phase_max",
       .family = "handoff",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(handoff, handoff_phase_max),
       .hi = 1e6,
       .example = "7.4 us",
       .written = [](const ModelParams& p) { return p.handoff.has_handoff_phase(); },
       .doc = "the longest one hand-off takes (with handoff_phase_min)"},
  };
}

}  // namespace params
}  // namespace osim
