// Calibration fields of the sustained load: the clock under the power cap,
// collectives' share, stragglers.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> power_fields() {
  return {
    {.name = "sustained_slowdown", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_slowdown), .hi = 2, .example = "0.15",
     .written = OSIM_POS(power, sustained_slowdown), .doc = "how much longer compute-bound kernels take at full duty (0: off)"},
    {.name = "sustained_duty", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_duty), .hi = 0.999, .example = "0.7",
     .written = OSIM_POS(power, sustained_slowdown), .doc = "the duty cycle above which the clock drops"},
    {.name = "sustained_time_constant", .family = "power", .kind = Kind::TimeMs, .ref = OSIM_REF(power, sustained_time_constant), .precision = 3,
     .hi = 1e6, .lo_open = true, .example = "50 ms", .written = OSIM_POS(power, sustained_slowdown), .doc = "the duty cycle's averaging time"},
    {.name = "sustained_slow_slowdown", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_slow_slowdown), .hi = 2,
     .example = "0.03", .written = OSIM_POS(power, sustained_slow_slowdown), .doc = "a second, slower term at full duty (0: off)"},
    {.name = "sustained_slow_time_constant", .family = "power", .kind = Kind::TimeMs, .ref = OSIM_REF(power, sustained_slow_time_constant),
     .precision = 3, .hi = 1e6, .lo_open = true, .example = "1000 ms", .written = OSIM_POS(power, sustained_slow_slowdown),
     .doc = "the slow term's averaging time"},
    {.name = "sustained_attention_load", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_attention_load), .hi = 1,
     .example = "1", .written = [](const ModelParams& p) { return p.power.sustained_attention_load < 1; },
     .doc = "what an SDPA kernel adds to the duty cycle while it runs, against a GEMM's 1 (1: as a GEMM)"},
    {.name = "sustained_memory_load", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_memory_load), .hi = 1, .example = "1",
     .written = [](const ModelParams& p) { return p.power.sustained_memory_load < 1; },
     .doc = "what a memory-bound kernel adds to the duty cycle while it runs, against a GEMM's 1 (1: as a GEMM)"},
    {.name = "sustained_comm_load", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, sustained_comm_load), .hi = 1, .example = "0.5",
     .written = OSIM_POS(power, sustained_comm_load),
     .doc = "what a collective's kernels add to the duty cycle while they hold their SMs, against a GEMM's 1 (0: nothing)"},
    {.name = "comm_clock_share", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, comm_clock_share), .hi = 1, .example = "0.57",
     .written = [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
     .doc = "the share of the compute slowdown a collective takes (its SM code)"},
    {.name = "comm_clock_share_host", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, comm_clock_share_host), .hi = 1,
     .example = "0.48", .written = [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
     .doc = "the same through host memory"},
    {.name = "straggler_share", .family = "power", .kind = Kind::Number, .ref = OSIM_REF(power, straggler_share), .hi = 1, .example = "0.02",
     .written = OSIM_POS(power, straggler_share),
     .doc = "a collective waits this share of the time since the ranks' last one, times how far the clock is down"},
  };
}

}  // namespace params
}  // namespace osim
