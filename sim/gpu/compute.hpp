// The SMs: running kernels share a GPU's SMs by priority and demand, slowed
// beside collectives and busy copy engines (InterferenceParams), by the
// sustained-load clock (PowerParams) and while NVLink is awake
// (NvlinkParams). A rank's clock also slows its collectives' SM code.
// A mirror (symmetric ranks) has no GPU state of its own: reads of it are its
// representative's, and changes to it are no-ops.
#pragma once

#include <array>
#include <utility>

#include <vector>

#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"

namespace osim::exec {

class Compute final : public Kernels, public SmShare, public NvlinkWake {
 public:
  Compute(ExecContext& x, OpCompletion& ops, ClockWatch& clocks);
  /// Rank r starts at `load` (a run that follows others at once).
  void set_load(int r, const LoadState& load);
  /// The duty averages carried to `now` (the GPU idle from its last kernel).
  LoadState load_at(int r, Time now) const;

  // Kernels
  void start_kernel(int r, int id) override;

  // SmShare
  void update(int r) override;
  void add_channels(int r, int channels) override {
    if (!x_.mirrors.is_mirror(r)) ranks_[static_cast<size_t>(r)].comm_channels += channels;
  }
  void copy_engines(int r, uint8_t mask) override { ranks_[static_cast<size_t>(r)].copy_engines = mask; }
  double comm_slowdown(int r, int channels, bool via_host) const override;
  double comm_receiver_slowdown(int r) const override { return gpu(r).kernels.empty() ? 1.0 : x_.p.interference.comm_slowdown_receiver; }
  double clock_slowdown(int r, bool via_host) const override;
  double clock(int r) const override { return gpu(r).clock; }
  /// Kernel time rank r's slow factors added, by source (RunningKernel::slow's order).
  std::array<Time, 4> slowed(int r) const;
  /// ExecOptions::record_measured_clock: rank r's measured kernels' mean clock, per op (0: any other op).
  std::vector<double> measured_clock(int r) const;

  // NvlinkWake
  void nvlink_started(int r) override {
    if (!x_.mirrors.is_mirror(r)) ++ranks_[static_cast<size_t>(r)].nvlink_running;
  }
  void nvlink_ended(int r) override;
  Time nvlink_quiet(int r, Time now) const override { return now - gpu(r).nvlink_quiet_since; }

 private:
  struct RunningKernel {
    int gop;
    double remaining;  // solo seconds left
    double speed = 0;
    double next_speed = 0;  // scratch in update
    Time last;
    EventId ev;
    int demand;
    int margin;  // SMs it leaves to others (sm_margin; 0: none): confined to demand, and a collective's SMs come from those first
    int priority;
    bool clocked = true;        // compute-bound (GEMM, attention, FLOPs): slowed by a lowered clock
    bool loads = true;          // draws power (any kernel with work; not a bare `duration`): counts toward the duty cycle
    bool attention = false;     // SDPA: takes AttentionParams::attention_slow_share of the slow clock term
    bool memory_bound = false;  // HBM bytes and no FLOPs: puts PowerParams::sustained_memory_load on the duty cycle
    bool measured = false;      // of measured duration: its clock recorded (ExecOptions::record_measured_clock)
    double clock_s = 0;         // the clock integrated over its time so far (seconds at clock 1)
    Time started;
    // The factors its speed carries (1: none), by source: collectives' and copies' interference,
    // the sustained-load clock, NVLink awake; next_*: scratch in update.
    std::array<double, 4> slow{1, 1, 1, 1}, next_slow{1, 1, 1, 1};
  };
  struct Rank {
    // The duty cycle (exponential averages) for the sustained-load clock.
    double duty = 0, duty_slow = 0, attention_duty = 0, attention_duty_slow = 0;
    Time duty_t;
    double duty_level = 0;             // what the running kernels (and collectives) put on the GEMMs' duty cycle: 1, a sustained_*_load, 0
    bool attention_duty_busy = false;  // any kernel that draws power runs (SDPA's duty cycle)
    double clock = 1.0;
    Time nvlink_quiet_since;   // when its last NVLink collective ended
    bool nvlink_used = false;  // it has had an NVLink collective
    int nvlink_running = 0;    // NVLink collectives of it in progress
    std::vector<RunningKernel> kernels;
    int comm_channels = 0;
    uint8_t copy_engines = 0;  // its busy copy engines (Copies says), one bit each; a mirror's own
    // What update last saw: a call at the same instant with the same
    // kernels, channels and busy copy engines has nothing to change.
    struct Seen {
      int64_t time_ps = -1;
      uint64_t kernels = 0;  // kernel_changes then
      int channels = 0;
      uint8_t engines = 0;  // busy copy engines, one bit each; bit 3: the NVLink awake
    } seen;
    uint64_t kernel_changes = 0;         // kernels started or ended so far
    std::array<double, 4> slowed_s{};    // kernel seconds added by each source of RunningKernel::slow
    std::vector<double> measured_clock;  // per op: a measured kernel's mean clock (ExecOptions::record_measured_clock)
  };
  /// Rank r's GPU state: a mirror's is its representative's.
  const Rank& gpu(int r) const { return ranks_[static_cast<size_t>(x_.mirrors.rep_of(r))]; }
  double compute_factor(int r, int margin = 0) const;
  /// compute_factor's two parts: the collectives' SM interference, the copies'.
  std::pair<double, double> interference(int r, int margin) const;
  /// A kernel's progress from its last update to `now`, and the time its slow factors added.
  void advance(Rank& C, RunningKernel& k, Time now);
  void end_kernel_event(uint64_t packed) { end_kernel(packed_rank(packed), packed_id(packed)); }
  void end_kernel(int r, int gid);

  ExecContext& x_;
  OpCompletion& ops_;
  ClockWatch& clocks_;
  std::vector<Rank> ranks_;
  std::vector<size_t> order_;  // scratch for update
};

}  // namespace osim::exec
