// Calibration fields of the hand-offs between the copy and compute engines.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> handoff_fields() {
  return {
    {"copy_after_kernel_latency", "handoff", Kind::TimeUs, OSIM_REF_DIR(handoff, copy_after_kernel_latency, h2d), 4, 0, 1e6, false, "5.8 us",
     OSIM_POS_DIR(handoff, copy_after_kernel_latency, h2d), "a pinned copy after a kernel on its stream (or waited on, still running) starts this much later"},
    {"copy_after_kernel_latency_d2h", "handoff", Kind::TimeUs, OSIM_REF_DIR(handoff, copy_after_kernel_latency, d2h), 4, 0, 1e6, false, "6.0 us",
     OSIM_NONNEG_DIR(handoff, copy_after_kernel_latency, d2h), "the same for a D2H copy (absent: copy_after_kernel_latency)"},
    {"kernel_after_copy_latency", "handoff", Kind::TimeUs, OSIM_REF(handoff, kernel_after_copy_latency), 4, 0, 1e6, false, "2.8 us",
     OSIM_POS(handoff, kernel_after_copy_latency), "a kernel after a copy, by the same rule"},
    {"handoff_phase_min", "handoff", Kind::TimeUs, OSIM_REF(handoff, handoff_phase_min), 4, 0, 1e6, false, "0.3 us",
     [](const ModelParams& p) { return p.handoff.has_handoff_phase(); }, "the shortest one hand-off takes (with handoff_phase_max)"},
    {"handoff_phase_max", "handoff", Kind::TimeUs, OSIM_REF(handoff, handoff_phase_max), 4, 0, 1e6, false, "7.4 us",
     [](const ModelParams& p) { return p.handoff.has_handoff_phase(); }, "the longest one hand-off takes (with handoff_phase_min)"},
  };
}

}  // namespace params
}  // namespace osim
