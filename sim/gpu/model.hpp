// Parameters of the execution model. Defaults are leads from MODEL.md's
// measurements and public figures (README "Execution model"); calibration
// files (validate) replace them.
#pragma once
#include <array>
#include <cmath>

#include <cstdint>
#include <vector>

#include "core/units.hpp"

namespace osim {

struct ModelParams {
  // Host time each API call costs before it returns (then the next call).
  Time kernel_launch = Time::from_us(4);
  Time memcpy_call = Time::from_us(10);      // MODEL.md: async pinned copies return in ~10-15 us
  Time event_call = Time::from_us(2);        // event_record, stream_wait_event, stream_wait_stream
  Time sync_call = Time::from_us(2);         // stream/event/device synchronize, before waiting
  Time collective_call = Time::from_us(6);
  Time alloc_call = Time::from_us(2);        // caching allocator
  Time free_call = Time::from_us(1);

  // GPU time an event record takes on its stream: the next op on the stream
  // starts that much later (the GPU drains the stream and writes the event
  // where the host can read it). Measured (bench overhead_gpu_event_gap: 50
  // 1 MiB kernels back to back, with and without an event after each): 1.9 us
  // on H200s and an H100. 0 = none (until calibrated).
  Time event_gpu_time = Time::zero();
  // What an event record takes more while its GPU has an H2D copy in flight
  // (overhead_gpu_event_gap `beside: h2d`). The validation runs, which record
  // an event before and after every op, measured ~3 us between two kernels
  // of a stream, ~7 us while the rank's own prefetch ran. 0 = none.
  Time event_gpu_time_h2d = Time::zero();
  // GPU time of an event recorded after a copy (its stream's last op a
  // copy): measured apart (overhead_gpu_event_gap, H2D copies with
  // and without an event after each: 1.3 us on H200s and an H100, against
  // 1.9 between kernels; bench copy_reps: the burst after a host function,
  // 1.2-1.3 us). Negative = event_gpu_time (with event_gpu_time_h2d).
  Time event_gpu_time_copy = Time::from_ps(-1);

  // Hand-offs between engines. A copy (H2D / D2H) whose stream's last op
  // (kernel, collective or copy) was a kernel or collective, however long
  // ago, starts copy_after_kernel_latency later (D2H: _d2h where >= 0); one
  // that waited through an event on a kernel still running when the host
  // issued it starts no earlier than that long after the wait's release,
  // the ops queued between (timing events) running meanwhile (the hand-off
  // set, validate/handoff/: added to them, its two-stream runs came out
  // 12-13 % slow). Measured (bench copy_reps, H200 and H100 leases): a
  // burst of copies behind a spin kernel costs 5-6 us more than one behind
  // a host function, on the same stream or waiting on an event from
  // another; copy_after_idle (an H200 and an H100): the same after a kernel
  // on the copies' stream done and synchronised before they were issued,
  // nothing after an event on another stream's kernel done before; bench
  // handoff_wait: 0.7-7.5 us from sample to sample, the phase of the
  // hand-over (its mean is what a run of many pays). 0 = none.
  Time copy_after_kernel_latency = Time::zero();
  Time copy_after_kernel_latency_d2h = Time::from_ps(-1);
  [[nodiscard]] Time copy_after_kernel_latency_for(bool d2h) const {
    return d2h && copy_after_kernel_latency_d2h >= Time::zero() ? copy_after_kernel_latency_d2h : copy_after_kernel_latency;
  }
  // The other way, by the same rule: a kernel after a copy on its stream,
  // or waiting on a running one, starts this much later (bench kernel_reps,
  // two H200 leases and an H100: a burst of kernels after a 4 KiB H2D copy
  // 2.8-4.5 us more than after a host function or a kernel). 0 = none.
  Time kernel_after_copy_latency = Time::zero();
  // The hand-off's phase: one hand-off between the engines (either way)
  // takes between these two. Measured with every sample kept (bench
  // copy_after_idle, kernel_reps, handoff_wait; two H100 and two H200
  // leases): 0.2-7.9 us in steps of ~1 us, the step changing from sample to
  // sample and its spread from run to run (bursts soon after the kernel
  // mostly 5-6 us, after waits of 0.3-3 ms spread over all eight);
  // calibrate fits it from kernel_reps (kernels after a copy). Nothing a
  // schedule says sets it, so the executor charges the latencies above (what
  // a burst pays on average); calibrate's replay gives each row with a
  // hand-off the simulated times with the hand-off at either end
  // (Comparison::simulated_lo_us / _hi_us). Negative = not measured.
  Time handoff_phase_min = Time::from_ps(-1);
  Time handoff_phase_max = Time::from_ps(-1);
  [[nodiscard]] bool has_handoff_phase() const { return handoff_phase_min >= Time::zero() && handoff_phase_max >= handoff_phase_min; }

  // Compute: time = max(FLOPs / (peak * efficiency), HBM bytes / (HBM bandwidth * hbm_efficiency)).
  double gemm_efficiency = 0.75;
  struct GemmShapeEfficiency {
    int m, n, k;
    double efficiency;
  };
  std::vector<GemmShapeEfficiency> gemm_shapes;  // measured shapes (calibration); others use the model below
  // Efficiency by shape for shapes the table lacks (calibrated: least squares
  // over the table): efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power
  // of two]), the loss a small dimension costs (edge tiles, pipeline fill
  // along k), and what cuBLAS loses when the row count m is a power of two
  // (measured on five H200/H100 boxes: m = 4096, 8192, 16384 run 2-3 % slower
  // than 4095, 8190, 16380 at the same n, k; pow2_m ~ 0.02-0.03).
  // efficiency 0 = none: gemm_efficiency for every other shape.
  struct GemmShapeModel {
    double efficiency = 0;
    double m0 = 0, n0 = 0, k0 = 0, pow2_m = 0;
    [[nodiscard]] static bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
    [[nodiscard]] double at(int64_t m, int64_t n, int64_t k) const {
      return efficiency / (1 + m0 / static_cast<double>(m) + n0 / static_cast<double>(n) + k0 / static_cast<double>(k) +
                           (power_of_two(m) ? pow2_m : 0.0));
    }
  };
  GemmShapeModel gemm_model;
  /// The measured efficiency of this shape (the last entry wins), else the
  /// shape model's, else gemm_efficiency.
  double gemm_efficiency_for(int64_t m, int64_t n, int64_t k) const {
    double eff = gemm_model.efficiency > 0 && m > 0 && n > 0 && k > 0 ? gemm_model.at(m, n, k) : gemm_efficiency;
    for (const auto& sh : gemm_shapes)
      if (sh.m == m && sh.n == n && sh.k == k) eff = sh.efficiency;
    return eff;
  }
  double attention_efficiency = 0.60;
  // Cross-attention (fewer keys than queries, e.g. to 512 text tokens) runs
  // at a lower rate (PyTorch SDPA on an H200: 0.30 of peak vs 0.36 for
  // self-attention); 0 = attention_efficiency.
  double cross_attention_efficiency = 0;
  // Short query sets lose more (fixed per-launch work over 512 keys): the
  // cross-attention efficiency is cross_attention_efficiency / (1 + q0 /
  // seq_q) with this q0 (calibrated: least squares over the SDPA shapes;
  // 1xH200: ~930 queries); 0 = one efficiency for every length.
  double cross_attention_q0 = 0;
  double flops_efficiency = 0.60;            // kernels given as flops/bytes
  double hbm_efficiency = 0.85;
  Time hbm_latency = Time::zero();           // added to a memory-bound kernel's time (calibrated: ramp-up and tail)

  // Copies.
  Bandwidth pageable_bandwidth = Bandwidth::from_GBps(10);  // MODEL.md: 7-19 GB/s staged
  // The D2H pageable rate where measured apart (calibrated: the driver's
  // staging is the CPU's copy, not the link's; 2xH200: 16.4 GB/s D2H against
  // 9.7 H2D at 256 MiB); unlimited = pageable_bandwidth.
  Bandwidth pageable_bandwidth_d2h = Bandwidth::unlimited();
  [[nodiscard]] Bandwidth pageable_bandwidth_for(bool d2h) const {
    return d2h && !pageable_bandwidth_d2h.is_unlimited() ? pageable_bandwidth_d2h : pageable_bandwidth;
  }
  // A pageable copy's fixed cost (the driver's staging set-up and the
  // host-synchronous return; calibrated where the bench took copies from a
  // host buffer not in the CPU's caches: 1xH200 ~29 us H2D, ~44 us D2H), in
  // place of the pinned copy's set-up; negative = the pinned set-up.
  Time pageable_latency = Time::from_ps(-1);
  Time pageable_latency_d2h = Time::from_ps(-1);
  [[nodiscard]] Time pageable_latency_for(bool d2h) const {
    return d2h && pageable_latency_d2h >= Time::zero() ? pageable_latency_d2h : pageable_latency;
  }
  // The share of its engine's rate a pinned H2D (D2H) copy keeps while the
  // same GPU runs a pinned copy the other way (calibrated: bench
  // bidir_pinned; PCIe is full duplex, but each direction also carries the
  // other's read requests and acknowledgements: 2xH200 0.93 / 0.92, the
  // H100 boxes' H2D down to 0.73). 1 = no effect.
  double copy_bidir_factor = 1;
  double copy_bidir_factor_d2h = 1;
  [[nodiscard]] double copy_bidir_factor_for(bool d2h) const { return d2h ? copy_bidir_factor_d2h : copy_bidir_factor; }
  // Small copies both ways at once (calibrated: bench bidir_pinned with
  // `reps`, three single-GPU leases: per copy both directions take the same
  // time, 2.9 us at 4 KiB where a D2H alone takes 1.8, 9.3-9.7 us at 256 KiB
  // where either alone takes 6.5-7.6; from 1 MiB near the large copies'
  // share). Where copy_bidir_small_bytes > 0: while the other direction
  // runs a pinned copy, a pinned copy below it keeps copy_bidir_factor_small
  // (D2H: _d2h where >= 0) of its engine's rate in place of
  // copy_bidir_factor, and a pinned copy of any size starts after the
  // longer of the two directions' set-ups. 0 = the large share at every
  // size, each direction its own set-up.
  Bytes copy_bidir_small_bytes = 0;
  double copy_bidir_factor_small = -1;
  double copy_bidir_factor_small_d2h = -1;
  [[nodiscard]] bool copy_bidir_small() const { return copy_bidir_small_bytes > 0; }
  // Mid-sized copies both ways at once (calibrated: bench bidir_pinned and
  // copy_span; every H100 lease: 4-16 MiB copies kept 0.87-0.92 of the
  // one-way H2D rate, 256 MiB-1 GiB ones 0.73-0.84; on h100x1-k 4 MiB copies
  // walking 1 GiB of host memory as much as from one buffer, on h100x1-j
  // only while their host spans stayed within 64 MiB: 0.68 beyond, as a
  // large copy). Where copy_bidir_mid_bytes > 0: while the other direction
  // runs a pinned copy, a pinned copy above copy_bidir_small_bytes and below
  // copy_bidir_mid_bytes keeps copy_bidir_factor_mid (D2H: _d2h where >= 0)
  // in place of copy_bidir_factor, and where copy_bidir_mid_span > 0 only
  // while both directions' copies walk host spans (Op::host_span, default
  // their own bytes) of at most it. 0 = the large share from the small
  // bound up.
  Bytes copy_bidir_mid_bytes = 0;
  Bytes copy_bidir_mid_span = 0;
  double copy_bidir_factor_mid = -1;
  double copy_bidir_factor_mid_d2h = -1;
  [[nodiscard]] bool copy_bidir_mid() const { return copy_bidir_mid_bytes > 0; }
  // Both ways at once per size (calibrated: bidir_pinned, copy_span and
  // copy_reps both ways, the share per measured size, 64 KiB up): (bytes,
  // H2D share, D2H share), by bytes; a copy's share interpolated in
  // log(bytes), the ends held. Where set, it takes the place of the small
  // and mid-sized tiers and the large share, and a copy beside the other
  // direction takes the longer set-up.
  std::vector<std::array<double, 3>> copy_bidir_table;
  [[nodiscard]] bool copy_bidir_tabled() const { return !copy_bidir_table.empty(); }
  [[nodiscard]] double copy_bidir_table_share(bool d2h, Bytes bytes) const {
    const auto& t = copy_bidir_table;
    const size_t k = d2h ? 2 : 1;
    const double b = static_cast<double>(bytes);
    if (b <= t.front()[0]) return t.front()[k];
    if (b >= t.back()[0]) return t.back()[k];
    size_t i = 1;
    while (t[i][0] < b) ++i;
    const double x = (std::log(b) - std::log(t[i - 1][0])) / (std::log(t[i][0]) - std::log(t[i - 1][0]));
    return t[i - 1][k] + x * (t[i][k] - t[i - 1][k]);
  }
  // The share a copy of `bytes` in direction d2h keeps while the other
  // direction copies; `spans_within`: both directions' host spans are within
  // copy_bidir_mid_span (where that is set).
  [[nodiscard]] double copy_bidir_factor_for(bool d2h, Bytes bytes, bool spans_within = true) const {
    if (copy_bidir_tabled()) return copy_bidir_table_share(d2h, bytes);
    if (copy_bidir_small() && bytes < copy_bidir_small_bytes) {
      const double s = d2h && copy_bidir_factor_small_d2h >= 0 ? copy_bidir_factor_small_d2h : copy_bidir_factor_small;
      if (s >= 0) return s;
    }
    if (copy_bidir_mid() && bytes > copy_bidir_small_bytes && bytes < copy_bidir_mid_bytes && (copy_bidir_mid_span <= 0 || spans_within)) {
      const double s = d2h && copy_bidir_factor_mid_d2h >= 0 ? copy_bidir_factor_mid_d2h : copy_bidir_factor_mid;
      if (s >= 0) return s;
    }
    return copy_bidir_factor_for(d2h);
  }
  Bandwidth copy_engine_bandwidth = Bandwidth::unlimited(); // a single engine's ceiling (calibrated)
  // The D2H engine's own ceiling where measured apart (a 2xH200 box: 54.7
  // against 52.6 GB/s H2D); unlimited = copy_engine_bandwidth.
  Bandwidth copy_engine_bandwidth_d2h = Bandwidth::unlimited();
  [[nodiscard]] Bandwidth copy_engine_bandwidth_for(bool d2h) const {
    return d2h && !copy_engine_bandwidth_d2h.is_unlimited() ? copy_engine_bandwidth_d2h : copy_engine_bandwidth;
  }
  Time copy_latency = Time::zero();          // DMA set-up before the first byte, beyond the route's latency
  // The same for device-to-host copies, where measured apart (calibrated:
  // D2H writes to host memory are posted, H2D reads wait for completions;
  // 4xH200: 2.6 against 2.8 us). Negative = copy_latency.
  Time copy_latency_d2h = Time::from_ps(-1);
  [[nodiscard]] Time copy_latency_for(bool d2h) const { return d2h && copy_latency_d2h >= Time::zero() ? copy_latency_d2h : copy_latency; }
  // Pinned H2D / D2H copies of at least copy_step_bytes take copy_step_latency
  // (D2H: copy_step_latency_d2h where >= 0) more set-up. Calibrations before
  // 2026-11-24 set it (every box measured its copies from 1 MiB up on a line
  // ~1.1-1.5 us above the one through 4-256 KiB); bench copy_reps showed it
  // the bench's (its bursts go from 20 copies to 5 there, and each burst
  // pays the hand-off from its gate's kernel and its closing event:
  // copy_after_kernel_latency, event_gpu_time_copy), and `calibrate` no
  // longer writes it. 0 = no step.
  Bytes copy_step_bytes = 0;
  Time copy_step_latency = Time::zero();
  Time copy_step_latency_d2h = Time::from_ps(-1);
  [[nodiscard]] Time copy_step_latency_for(bool d2h) const {
    return d2h && copy_step_latency_d2h >= Time::zero() ? copy_step_latency_d2h : copy_step_latency;
  }
  // A host copy's set-up before its first byte, beyond its route's latency:
  // a pinned one's (with the step from copy_step_bytes on), a pageable one's
  // own where calibrated.
  [[nodiscard]] Time host_copy_setup(bool d2h, bool pageable, Bytes bytes) const {
    if (pageable && pageable_latency_for(d2h) >= Time::zero()) return pageable_latency_for(d2h);
    Time t = copy_latency_for(d2h);
    if (!pageable && copy_step_bytes > 0 && bytes >= copy_step_bytes) t += copy_step_latency_for(d2h);
    return t;
  }
  // A host bridge's limit on traffic from host memory while k GPUs under it
  // run H2D copies at once: entry k-1 (the last for more GPUs). Measured
  // aggregates bend (4xH200: 55 / 106 / 140 / 149 GB/s for 1-4 GPUs), which
  // one fixed throughput_from_host cannot follow. Never above the topology's
  // limit; empty = that limit alone (calibrated: bench multi_h2d_pinned).
  std::vector<Bandwidth> host_h2d_aggregate;
  // The same for D2H copies to host memory (calibrated: multi_d2h_pinned;
  // 4xH200 box b: 55 / 108 / 125 / 134 GB/s).
  std::vector<Bandwidth> host_d2h_aggregate;

  // NCCL.
  int nccl_channels = 24;                    // collectives (MODEL.md, 4xH200 default)
  Bandwidth nccl_channel_bandwidth = Bandwidth::from_GBps(19.5);  // per channel, all-to-all on NVLink
  Time nccl_latency = Time::from_us(10);     // per collective launch (and per pairwise round: each is a launch)
  Time nccl_step_latency = Time::from_us(1); // each further ring step (pipelined: measured small on 4xH200)
  Bandwidth nccl_rank_bandwidth = Bandwidth::unlimited();  // ceiling of one rank's collective traffic (SM copies)
  Bandwidth nccl_host_rank_bandwidth = Bandwidth::unlimited();  // the same when it bounces through host memory
  // Measured collective times (calibration, bench nccl_*): per collective,
  // rank count, transport and channel count (NCCL's choice, or a count the
  // bench set), time against bytes per rank. NCCL's rate grows with the message (protocol and channel choice) and
  // with the peer count, which one latency + bandwidth line does not follow.
  // Where a table fits a collective (same collective, transport and channel
  // count, inside one host; the nearest measured rank count), its flows take
  // the table's latency and the rate it implies at that size, in place of the
  // channel model below; they still share links and slow beside compute like
  // any collective flow.
  enum class TableColl : uint8_t { AllToAll, AllToAllPairwise, AllGather, ReduceScatter, AllReduce };
  struct NcclTable {
    TableColl coll = TableColl::AllToAll;
    int ranks = 0;
    bool via_host = false;  // through host memory (NCCL_P2P_DISABLE=1)
    std::vector<std::pair<double, double>> points;  // (bytes per rank, time in s), bytes ascending
    int channels = 0;       // the channel count it was measured at; 0 = NCCL's choice
    /// Between two points the straight line through them (latency + bandwidth);
    /// below the smallest its time,
    /// above the largest the last segment's rate.
    [[nodiscard]] double time_at(double bytes) const;
  };
  std::vector<NcclTable> nccl_tables;
  /// The table for this collective: same kind, transport and channel count
  /// (0: NCCL's choice), the rank count nearest `ranks` (ties: the larger);
  /// null if none.
  [[nodiscard]] const NcclTable* nccl_table_for(TableColl coll, int ranks, bool via_host, int channels = 0) const;

  // Max-min weight of a copy-engine transfer against SM-driven collective
  // flows on a shared link (DMA out-competes them; calibrated): H2D copies,
  // and D2H ones unless copy_weight_d2h is set (> 0).
  double copy_weight = 1.0;
  double copy_weight_d2h = 0;
  [[nodiscard]] double copy_weight_for(bool d2h) const { return d2h && copy_weight_d2h > 0 ? copy_weight_d2h : copy_weight; }
  // Link cost per byte of a collective's traffic bounced through host memory
  // (NCCL's host transport: SMs store to and load from pinned host buffers),
  // on the resources it shares with copies: the sending GPU's way up to host
  // memory (d2h) and the receiving GPU's way down from it (h2d). 1 = a
  // copy's byte. Measured: beside a copy-engine transfer a PCIe link carries
  // fewer bytes in all than the copy alone (calibrated by simulation).
  double host_transport_cost_h2d = 1.0;
  double host_transport_cost_d2h = 1.0;

  // Sustained load (power): the SM clock drops once the GPU has been busy with
  // kernels for a while. u = the duty cycle (any kernel with work running; a bare
  // `duration` kernel does not count), an
  // exponential average over `sustained_time_constant`; compute-bound kernels
  // take (1 + sustained_slowdown * clamp((u - sustained_duty) / (1 - sustained_duty), 0, 1))
  // times longer. Measured on an H200 (bench gemm_sustained): 15 % at 100 %
  // duty, none at 50 %. Off (0) until calibrated.
  double sustained_slowdown = 0;
  double sustained_duty = 0.7;
  Time sustained_time_constant = Time::from_ms(50);
  // A second, slower term: after ~1 s at full duty the clock dips again every
  // ~second (H200, bench gemm_sustained_long); its average is another
  // sustained_slow_slowdown, reached over sustained_slow_time_constant, with
  // the same duty threshold. Off (0) until calibrated.
  double sustained_slow_slowdown = 0;
  Time sustained_slow_time_constant = Time::from_ms(1000);
  // The share of the slow term attention kernels (SDPA) take: PyTorch SDPA
  // kept its rate whether it had run 0.3 s or 3 s at full duty, where a
  // GEMM slowed by the slow term (H100, H200: bench windows). 1 (as GEMMs)
  // until calibrated.
  double attention_slow_share = 1.0;
  // An NVLink collective that a rank starts after nvlink_wake_after without
  // NVLink collective traffic of its own (computing or idle) first pays
  // nvlink_wake_latency: the 2-rank all-to-all after 30 or 100 ms of GEMMs
  // took 98-129 us longer than after 2 or 8 ms (bench
  // nccl_all_to_all_insitu, 2xH200; after idle: slow from 50 ms, not at
  // 20 ms). Its samples, replayed as run, were quiet 28-35 ms after 2-8 ms
  // of GEMMs (awake) and >= 50 ms after 30 ms (woken): 40 ms between.
  // Through host memory there is no such step. A run starts awake.
  // Collectives under nvlink_wake_min_bytes neither wake it nor keep it
  // awake (a 1-element all-reduce every 10 ms did not: box i). Off (0)
  // until calibrated.
  Time nvlink_wake_latency = Time::zero();
  Time nvlink_wake_after = Time::from_ms(40);
  Bytes nvlink_wake_min_bytes = 1 << 20;
  // An NVLink collective (>= nvlink_wake_min_bytes) that starts while one of
  // its ranks has a host copy (H2D or D2H) running first waits this long:
  // the 2-rank all-to-all after 2-8 ms of GEMMs took 6-15 us longer with H2D
  // copies beside (bench nccl_all_to_all_insitu, two leases). Off (0) until calibrated.
  Time nvlink_copy_latency = Time::zero();
  // While a rank's NVLink is awake (an NVLink collective of >=
  // nvlink_wake_min_bytes running, or one ended less than nvlink_wake_after
  // ago) its compute-bound kernels take (1 + nvlink_awake_slowdown) times
  // longer. Measured: the same GEMMs 1.4-3.0 % longer a few ms after an
  // NVLink all-to-all than after one through host memory (bench
  // nccl_all_to_all_insitu's spans, 2xH200), and the SP 2 validation runs'
  // compute ~2 % slower with NCCL over NVLink than with P2P off (four
  // leases). Evaluated when a rank's kernels change (not at the instant the
  // link falls asleep). Off (0) until calibrated.
  double nvlink_awake_slowdown = 0;
  // Under the power cap two GPUs' clocks wander apart (each dips on its
  // own): ranks reach a collective apart by a mean share of the time since
  // their last one, so the collective waits half that for the later one.
  // The delay a collective adds: straggler_share x that time x how far the
  // clock is down (0 rested, 1 at the full sustained slowdown), the largest
  // over its members. 2xH200 (bench nccl_barrier_skew): after 2-30 ms of
  // GEMMs, 1-6 % apart loaded, 0.3-0.7 % rested. Off (0) until calibrated.
  double straggler_share = 0;

  // Interference (MODEL.md, H200): a GEMM next to an all-to-all slows by ~10 %
  // with 24 channels and ~5 % with 4: slowdown = base + per_channel * channels.
  double gemm_slowdown_base = 0.04;
  double gemm_slowdown_per_channel = 0.0025;
  // A concurrent H2D slows a GEMM by ~3.5 % (HBM): per busy copy engine.
  double gemm_slowdown_per_copy = 0.035;
  // The collective slows while compute kernels run: rate / max(1, base + per_channel * channels);
  // 24 channels -> 2x (MODEL.md: 1.5x-4x), 4 channels -> 1.09x (MODEL.md: ~5 %).
  double comm_slowdown_base = 0.908;
  double comm_slowdown_per_channel = 0.0455;
  // NCCL moves bytes with SM code, so a collective slows with the clock too
  // under sustained load, by this share of the compute slowdown: time x
  // (1 + share x (compute slowdown - 1)), its rate and its latency, from the
  // sender's clock when a flow starts or its caps change (in steps of 1/256,
  // so recurring collectives stay recurring). Calibrated from
  // nccl_all_to_all_loaded (2xH200: ~0.6 over NVLink, ~0.5 through host
  // memory); 0 = collectives keep their speed.
  double comm_clock_share = 0;
  double comm_clock_share_host = 0;  // the same for a collective through host memory (NCCL_P2P_DISABLE=1)
};

}  // namespace osim
