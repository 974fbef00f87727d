// Calibration fields of the NVLink: its wake-up after idle and compute beside
// an awake link.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> nvlink_fields() {
  return {
    {"nvlink_wake_latency", "nvlink", Kind::TimeUs, OSIM_REF(nvlink, nvlink_wake_latency), 1, 0, 1e6, false, "100 us",
     OSIM_POS(nvlink, nvlink_wake_latency), "an NVLink collective after nvlink_wake_after without one pays this first (0: off)"},
    {"nvlink_wake_after", "nvlink", Kind::TimeMs, OSIM_REF(nvlink, nvlink_wake_after), 1, 0, 1e6, true, "40 ms",
     OSIM_POS(nvlink, nvlink_wake_latency), "how long NVLink stays awake after a collective"},
    {"nvlink_wake_min_bytes", "nvlink", Kind::Bytes, OSIM_REF(nvlink, nvlink_wake_min_bytes), 0, 0, 1e15, false, "1 MiB",
     OSIM_NOTDEF(nvlink, nvlink_wake_min_bytes), "collectives below this neither wake NVLink nor keep it awake"},
    {"nvlink_copy_latency", "nvlink", Kind::TimeUs, OSIM_REF(nvlink, nvlink_copy_latency), 1, 0, 1e6, false, "12 us",
     OSIM_POS(nvlink, nvlink_copy_latency), "an NVLink collective starting beside a host copy of one of its ranks waits this first"},
    {"nvlink_awake_slowdown", "nvlink", Kind::Number, OSIM_REF(nvlink, nvlink_awake_slowdown), 4, 0, 1, false, "0.02",
     OSIM_POS(nvlink, nvlink_awake_slowdown), "compute-bound kernels take (1 + this) times longer while the rank's NVLink is awake"},
  };
}

}  // namespace params
}  // namespace osim
