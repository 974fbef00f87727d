// Calibration fields of the NVLink: its wake-up after idle and compute beside
// an awake link.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> nvlink_fields() {
  return {
      {.name = "nvlink_wake_latency",
       .family = "nvlink",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(nvlink, nvlink_wake_latency),
       .precision = 1,
       .hi = 1e6,
       .example = "100 us",
       .written = OSIM_POS(nvlink, nvlink_wake_latency),
       .doc = "an NVLink collective after nvlink_wake_after without one pays this first (0: off)"},
      {.name = "nvlink_wake_after",
       .family = "nvlink",
       .kind = Kind::TimeMs,
       .ref = OSIM_REF(nvlink, nvlink_wake_after),
       .precision = 1,
       .hi = 1e6,
       .lo_open = true,
       .example = "40 ms",
       .written = OSIM_POS(nvlink, nvlink_wake_latency),
       .doc = "how long NVLink stays awake after a collective"},
      {.name = "nvlink_wake_min_bytes",
       .family = "nvlink",
       .kind = Kind::Bytes,
       .ref = OSIM_REF(nvlink, nvlink_wake_min_bytes),
       .precision = 0,
       .hi = 1e15,
       .example = "1 MiB",
       .written = OSIM_NOTDEF(nvlink, nvlink_wake_min_bytes),
       .doc = "collectives below this neither wake NVLink nor keep it awake"},
      {.name = "nvlink_copy_latency",
       .family = "nvlink",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(nvlink, nvlink_copy_latency),
       .precision = 1,
       .hi = 1e6,
       .example = "12 us",
       .written = OSIM_POS(nvlink, nvlink_copy_latency),
       .doc = "an NVLink collective starting beside a host copy of one of its ranks waits this first"},
      {.name = "nvlink_awake_slowdown",
       .family = "nvlink",
       .kind = Kind::Number,
       .ref = OSIM_REF(nvlink, nvlink_awake_slowdown),
       .hi = 1,
       .example = "0.02",
       .written = OSIM_POS(nvlink, nvlink_awake_slowdown),
       .doc = "compute-bound kernels take (1 + this) times longer while the rank's NVLink is awake"},
  };
}

}  // namespace params
}  // namespace osim
