// Calibration fields of the sustained load: the clock under the power cap,
// collectives' share, stragglers.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> power_fields() {
  return {
    {"sustained_slowdown", "power", Kind::Number, OSIM_REF(power, sustained_slowdown), 4, 0, 2, false, "0.15", OSIM_POS(power, sustained_slowdown),
     "how much longer compute-bound kernels take at full duty (0: off)"},
    {"sustained_duty", "power", Kind::Number, OSIM_REF(power, sustained_duty), 4, 0, 0.999, false, "0.7", OSIM_POS(power, sustained_slowdown),
     "the duty cycle above which the clock drops"},
    {"sustained_time_constant", "power", Kind::TimeMs, OSIM_REF(power, sustained_time_constant), 3, 0, 1e6, true, "50 ms",
     OSIM_POS(power, sustained_slowdown), "the duty cycle's averaging time"},
    {"sustained_slow_slowdown", "power", Kind::Number, OSIM_REF(power, sustained_slow_slowdown), 4, 0, 2, false, "0.03",
     OSIM_POS(power, sustained_slow_slowdown), "a second, slower term at full duty (0: off)"},
    {"sustained_slow_time_constant", "power", Kind::TimeMs, OSIM_REF(power, sustained_slow_time_constant), 3, 0, 1e6, true, "1000 ms",
     OSIM_POS(power, sustained_slow_slowdown), "the slow term's averaging time"},
    {"sustained_attention_load", "power", Kind::Number, OSIM_REF(power, sustained_attention_load), 4, 0, 1, false, "1",
     [](const ModelParams& p) { return p.power.sustained_attention_load < 1; },
     "what an SDPA kernel adds to the duty cycle while it runs, against a GEMM's 1 (1: as a GEMM)"},
    {"sustained_memory_load", "power", Kind::Number, OSIM_REF(power, sustained_memory_load), 4, 0, 1, false, "1",
     [](const ModelParams& p) { return p.power.sustained_memory_load < 1; },
     "what a memory-bound kernel adds to the duty cycle while it runs, against a GEMM's 1 (1: as a GEMM)"},
    {"sustained_comm_load", "power", Kind::Number, OSIM_REF(power, sustained_comm_load), 4, 0, 1, false, "0.5", OSIM_POS(power, sustained_comm_load),
     "what a collective's kernels add to the duty cycle while they hold their SMs, against a GEMM's 1 (0: nothing)"},
    {"comm_clock_share", "power", Kind::Number, OSIM_REF(power, comm_clock_share), 4, 0, 1, false, "0.57",
     [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
     "the share of the compute slowdown a collective takes (its SM code)"},
    {"comm_clock_share_host", "power", Kind::Number, OSIM_REF(power, comm_clock_share_host), 4, 0, 1, false, "0.48",
     [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
     "the same through host memory"},
    {"straggler_share", "power", Kind::Number, OSIM_REF(power, straggler_share), 4, 0, 1, false, "0.02", OSIM_POS(power, straggler_share),
     "a collective waits this share of the time since the ranks' last one, times how far the clock is down"},
  };
}

}  // namespace params
}  // namespace osim
