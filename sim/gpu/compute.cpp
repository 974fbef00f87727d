#include "gpu/compute.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <fmt/format.h>

namespace osim {

Time kernel_time(const Op& op, const hw::NodeSpec& gpu, const ModelParams& p, const SourceLocation& where, bool framework) {
  if (op.duration) return *op.duration;
  double flops = op.flops, bytes = op.hbm_bytes, eff = p.gemm.flops_efficiency;
  const double es = dtype_bytes(op.dtype);
  if (op.gemm) {
    const auto& g = *op.gemm;
    const double m = g.m, n = g.n, k = g.k;
    flops = 2.0 * m * n * k;
    bytes = es * (m * k + k * n + m * n);
    eff = p.gemm.gemm_efficiency_for(g.m, g.n, g.k);
    if (op.dtype == DType::FP8) eff = std::min(1.0, eff * p.gemm.fp8_efficiency_ratio);
  } else if (op.attention) {
    const auto& a = *op.attention;
    const double bh = static_cast<double>(a.batch) * static_cast<double>(a.heads);
    flops = a.flops();
    bytes = es * bh * static_cast<double>(a.head_dim) * (2.0 * static_cast<double>(a.seq_q) + 2.0 * static_cast<double>(a.seq_kv));
    eff = p.attention.rates_for(a.backend).for_shape(a.seq_q, a.seq_kv, a.head_dim, a.causal);
  }
  if (op.efficiency > 0) eff = op.efficiency;
  // A convolution where the calibration has the convolutions' rates: their
  // share of the peak, and the layout conversions around a kernel of more
  // than one tap (channels-first tensors in, channels-last kernel).
  double layout_s = 0;
  if (op.conv && p.conv.fitted() && op.efficiency <= 0) {
    const ConvShape& c = *op.conv;
    eff = p.conv.efficiency(c.cout, c.positions, c.tf32);
    if (c.taps > 1 && !c.channels_last) {
      if (!gpu.gpu.hbm_bandwidth)
        throw InputError(
            where, fmt::format("convolution '{}' converts layouts in HBM but GPU '{}' has no hbm_bandwidth in the topology", op.label, gpu.name));
      const double element = c.element_bytes(es);
      layout_s = c.conversion_bytes(element) /
                 (gpu.gpu.hbm_bandwidth->bytes_per_s * (element >= 4 ? p.conv.layout_efficiency : p.conv.layout_efficiency_16));
    }
  }
  double t = 0;
  if (flops > 0) {
    auto it = gpu.gpu.peak_tflops.find(to_string(op.dtype));
    if (it == gpu.gpu.peak_tflops.end())
      throw InputError(where, fmt::format("kernel '{}' needs the {} rate of GPU '{}': add peak_tflops: {{{}: ...}} to it in the "
                                          "topology, or give the kernel a duration",
                                          op.label, to_string(op.dtype), gpu.name, to_string(op.dtype)));
    t = std::max(t, flops / (it->second * 1e12 * eff));
  }
  if (bytes > 0) {
    if (!gpu.gpu.hbm_bandwidth)
      throw InputError(where, fmt::format("kernel '{}' moves HBM bytes but GPU '{}' has no hbm_bandwidth in the topology", op.label, gpu.name));
    // A framework program's own memory-bound kernel: its kind's share and fixed time.
    const bool framework_kernel = framework && !op.gemm && !op.attention && flops == 0;
    const double hbm = framework_kernel ? p.memory.framework_efficiency(op.access, op.norm_row, es) : p.memory.hbm_efficiency;
    const double fixed = framework_kernel ? p.memory.framework_fixed(op.access).s() : 0.0;
    t = std::max(t, p.memory.hbm_latency.s() + fixed + bytes / (gpu.gpu.hbm_bandwidth->bytes_per_s * hbm));
  }
  return Time::from_s(t + layout_s);
}

double measured_solo_s(const Op& op, double measured_s, const ModelParams& p) {
  // Under k busy engines a kernel progresses at (1 - s)^k, so t_k of its measured time did
  // t_k (1 - s)^k of its solo work.
  const double keep = 1.0 - p.interference.gemm_slowdown_per_copy;
  double solo = measured_s, rate = 1.0;
  for (const uint32_t ns : op.beside_copies_ns) {
    rate *= keep;
    solo -= static_cast<double>(ns) * 1e-9 * (1.0 - rate);
  }
  return std::max(0.0, solo);
}

namespace exec {

Compute::Compute(ExecContext& x, OpCompletion& ops, ClockWatch& clocks)
    : x_(x), ops_(ops), clocks_(clocks), ranks_(static_cast<size_t>(x.s.ranks())) {}

void Compute::set_load(int r, const LoadState& load) {
  Rank& C = ranks_[static_cast<size_t>(r)];
  C.duty = load.duty;
  C.duty_slow = load.duty_slow;
  C.attention_duty = load.attention_duty;
  C.attention_duty_slow = load.attention_duty_slow;
}

LoadState Compute::load_at(int r, Time now) const {
  const Rank& C = ranks_[static_cast<size_t>(r)];
  const PowerParams& pw = x_.p.power;
  LoadState ls{C.duty, C.duty_slow, C.attention_duty, C.attention_duty_slow};
  const double b = C.duty_level, dt = (now - C.duty_t).s();
  if (dt > 0) {
    const double fast = std::exp(-dt / pw.sustained_time_constant.s());
    ls.duty = b + (C.duty - b) * fast;
    const double slow = pw.sustained_slow_slowdown > 0 ? std::exp(-dt / pw.sustained_slow_time_constant.s()) : 1.0;
    if (pw.sustained_slow_slowdown > 0) ls.duty_slow = b + (C.duty_slow - b) * slow;
    if (pw.sustained_attention_load < 1) {
      const double a = C.attention_duty_busy ? 1.0 : 0.0;
      ls.attention_duty = a + (C.attention_duty - a) * fast;
      if (pw.sustained_slow_slowdown > 0) ls.attention_duty_slow = a + (C.attention_duty_slow - a) * slow;
    } else {  // SDPA counted whole: one duty cycle for both
      ls.attention_duty = ls.duty;
      ls.attention_duty_slow = ls.duty_slow;
    }
  }
  return ls;
}

double Compute::compute_factor(int r, int margin) const {
  const auto [comm, copies] = interference(r, margin);
  return comm * copies;
}

std::pair<double, double> Compute::interference(int r, int margin) const {
  const Rank& C = ranks_[static_cast<size_t>(r)];
  const InterferenceParams& in = x_.p.interference;
  double comm = 1.0, copies = 1.0;
  // A kernel that leaves `margin` SMs to others loses only the collective's channels beyond them.
  if (C.comm_channels > 0)
    comm = std::max(0.05, 1.0 - (in.gemm_slowdown_base + in.gemm_slowdown_per_channel * std::max(0, C.comm_channels - margin)));
  for (uint8_t busy = C.copy_engines; busy; busy &= static_cast<uint8_t>(busy - 1)) copies *= 1.0 - in.gemm_slowdown_per_copy;
  return {comm, copies};
}

void Compute::advance(Rank& C, RunningKernel& k, Time now) {
  const double dt = (now - k.last).s();
  k.remaining = std::max(0.0, k.remaining - k.speed * dt);
  k.last = now;
  k.clock_s += C.clock * dt;  // the clock update() set last held since
  // Of dt, the share (1 - the product of the factors) went to them; each source takes its part
  // in proportion to its own deficit.
  double all = 1.0, deficit = 0;
  for (double f : k.slow) all *= f, deficit += 1.0 - f;
  if (dt <= 0 || deficit <= 0) return;
  for (size_t i = 0; i < k.slow.size(); ++i) C.slowed_s[i] += dt * (1.0 - all) * (1.0 - k.slow[i]) / deficit;
}

std::array<Time, 4> Compute::slowed(int r) const {
  std::array<Time, 4> out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = Time::from_s(gpu(r).slowed_s[i]);
  return out;
}

std::vector<double> Compute::measured_clock(int r) const { return gpu(r).measured_clock; }

double Compute::comm_slowdown(int r, int channels, bool via_host) const {
  const InterferenceParams& in = x_.p.interference;
  const double contention = gpu(r).kernels.empty() ? 1.0 : std::max(1.0, in.comm_slowdown_base + in.comm_slowdown_per_channel * channels);
  return contention * clock_slowdown(r, via_host);
}

double Compute::clock_slowdown(int r, bool via_host) const {
  const double share = via_host ? x_.p.power.comm_clock_share_host : x_.p.power.comm_clock_share;
  const double clock = gpu(r).clock;
  if (share <= 0 || clock >= 1.0) return 1.0;
  // In steps of 1/256, so recurring collectives stay recurring.
  return 1.0 + std::round(share * (1.0 / clock - 1.0) * 256.0) / 256.0;
}

void Compute::nvlink_ended(int r) {
  if (x_.mirrors.is_mirror(r)) return;
  Rank& C = ranks_[static_cast<size_t>(r)];
  C.nvlink_quiet_since = x_.engine.now();
  C.nvlink_used = true;
  --C.nvlink_running;  // awake still: the update that follows sees it
}

void Compute::start_kernel(int r, int id) {
  Rank& C = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  const Op& op = x_.op_of(r, id);
  const int margin = op.sm_limit < 0 ? -op.sm_limit : 0;
  if (margin >= R.sms)
    throw SimulationError(fmt::format("{}: kernel '{}' leaves {} SMs to others (sm_margin) but {} has {}: give it fewer", x_.where(r, id), op.label,
                                      margin, R.node->name, R.sms));
  const int demand = op.sm_limit > 0 ? std::min(op.sm_limit, R.sms) : R.sms - margin;
  // A kernel of measured duration (an imported trace's) ran at the clock and
  // beside the copies it had: neither slows it again.
  const bool has_flops = op.gemm.has_value() || op.attention.has_value() || op.flops > 0;
  // A convolution keeps its rate under sustained load: conv.py's decoder
  // calls ran back to back within 0.5 % of their time on a rested GPU with
  // its clock up (burst_us), where GEMMs slow ~10 %. It still loads the duty cycle.
  bool compute = !op.duration && has_flops && !op.conv;
  double work = R.program->work(id);
  // Re-clocked (ExecOptions::measured_clock): it ran at clock c as recorded,
  // so its duration d is work d * c at clock 1, slowed by the clock here.
  const std::vector<double>* recorded = x_.o.measured_clock.empty() ? nullptr : &x_.o.measured_clock[static_cast<size_t>(r)];
  const double rec_clock = op.duration && recorded && static_cast<size_t>(id) < recorded->size() ? (*recorded)[static_cast<size_t>(id)] : 0.0;
  if (rec_clock > 0) {
    compute = true;
    work *= rec_clock;
  }
  // Recording (or re-clocked), a measured kernel draws power as a GEMM does.
  const bool measured_loads = op.duration && (x_.o.record_measured_clock || rec_clock > 0);
  ++C.kernel_changes;
  C.kernels.push_back(RunningKernel{id,
                                    work,
                                    0,
                                    0,
                                    x_.engine.now(),
                                    {},
                                    demand,
                                    margin,
                                    x_.s.streams[static_cast<size_t>(op.stream)].priority,
                                    compute,
                                    compute || op.hbm_bytes > 0 || measured_loads,
                                    op.attention.has_value() && !op.gemm.has_value() && !op.realised,
                                    !has_flops && op.hbm_bytes > 0 && !measured_loads,
                                    op.duration.has_value() && x_.o.record_measured_clock,
                                    0,
                                    x_.engine.now()});
  update(r);
}

void Compute::update(int r) {
  if (x_.mirrors.is_mirror(r)) return;  // its representative's update re-times it
  Rank& C = ranks_[static_cast<size_t>(r)];
  const Time now = x_.engine.now();
  const PowerParams& pw = x_.p.power;
  const NvlinkParams& nv = x_.p.nvlink;
  // Called again at the same instant with nothing changed (a collective
  // member finishing starts the stream's next kernel, which updates, then
  // updates itself): every speed, cap and completion stands.
  const bool awake = nv.nvlink_awake_slowdown > 0 && (C.nvlink_running > 0 || (C.nvlink_used && now - C.nvlink_quiet_since < nv.nvlink_wake_after));
  const uint8_t engines = static_cast<uint8_t>(C.copy_engines | (awake ? 8 : 0));
  if (C.seen.time_ps == now.ps() && C.seen.kernels == C.kernel_changes && C.seen.channels == C.comm_channels && C.seen.engines == engines) return;
  C.seen = {now.ps(), C.kernel_changes, C.comm_channels, engines};
  for (auto& k : C.kernels) advance(C, k, now);
  // SM shares: higher priority first; within a priority, proportional to demand.
  std::vector<size_t>& order = order_;
  order.resize(C.kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (order.size() > 1)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return C.kernels[a].priority > C.kernels[b].priority; });
  double avail = x_.ranks[static_cast<size_t>(r)].sms;
  const double factor = compute_factor(r);
  double clock = 1.0, attention_clock = 1.0;
  if (pw.sustained_slowdown > 0) {
    if (now > C.duty_t) {  // no time passed: the averages stand (exp(0) would only add rounding)
      const LoadState ls = load_at(r, now);
      C.duty = ls.duty;
      C.duty_slow = ls.duty_slow;
      C.attention_duty = ls.attention_duty;
      C.attention_duty_slow = ls.attention_duty_slow;
      C.duty_t = now;
    }
    // The duty cycle counts every kernel that draws power, memory-bound
    // ones too; only compute-bound kernels slow with the clock. The GEMMs'
    // counts SDPA by sustained_attention_load, a memory-bound kernel by
    // sustained_memory_load and a collective holding SMs by
    // sustained_comm_load; SDPA's own counts each of them whole.
    C.duty_level = 0;
    C.attention_duty_busy = false;
    for (const RunningKernel& k : C.kernels)
      if (k.loads) {
        const double level = k.attention ? pw.sustained_attention_load : k.memory_bound ? pw.sustained_memory_load : 1.0;
        C.duty_level = std::max(C.duty_level, level);
        C.attention_duty_busy = true;
      }
    if (C.comm_channels > 0 && pw.sustained_comm_load > 0) {
      C.duty_level = std::max(C.duty_level, pw.sustained_comm_load);
      C.attention_duty_busy = true;
    }
    auto above = [&](double duty) { return std::clamp((duty - pw.sustained_duty) / (1 - pw.sustained_duty), 0.0, 1.0); };
    clock = 1.0 / (1.0 + pw.sustained_slowdown * above(C.duty) + pw.sustained_slow_slowdown * above(C.duty_slow));
    attention_clock = 1.0 / (1.0 + pw.sustained_slowdown * above(C.attention_duty) +
                             x_.p.attention.attention_slow_share * pw.sustained_slow_slowdown * above(C.attention_duty_slow));
  }
  C.clock = clock;
  const double sustained_clock = clock, sustained_attention_clock = attention_clock;
  const double awake_factor = awake ? 1.0 / (1 + nv.nvlink_awake_slowdown) : 1.0;
  if (awake) {
    clock /= 1 + nv.nvlink_awake_slowdown;
    attention_clock /= 1 + nv.nvlink_awake_slowdown;
  }
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    double demand = 0;
    while (j < order.size() && C.kernels[order[j]].priority == C.kernels[order[i]].priority) demand += C.kernels[order[j++]].demand;
    const double give = std::min(avail, demand);
    for (size_t k = i; k < j; ++k) {
      const RunningKernel& rk = C.kernels[order[k]];
      // Confined to its SMs (sm_margin), a kernel runs at their share of the GPU's rate.
      const double confined = rk.margin > 0 ? static_cast<double>(rk.demand) / x_.ranks[static_cast<size_t>(r)].sms : 1.0;
      const double f = rk.margin > 0 ? compute_factor(r, rk.margin) : factor;
      C.kernels[order[k]].next_speed = (give / demand) * f * confined * (!rk.clocked ? 1.0 : rk.attention ? attention_clock : clock);
      const auto [by_comm, by_copies] = interference(r, rk.margin);
      C.kernels[order[k]].next_slow = {by_comm, by_copies,
                                       !rk.clocked    ? 1.0
                                       : rk.attention ? sustained_attention_clock
                                                      : sustained_clock,
                                       rk.clocked ? awake_factor : 1.0};
    }
    avail -= give;
    i = j;
  }
  for (auto& k : C.kernels) {
    k.slow = k.next_slow;
    // Same speed: the pending completion stands (progress is linear).
    if (k.next_speed == k.speed && x_.engine.pending(k.ev)) continue;
    k.speed = k.next_speed;
    x_.engine.cancel(k.ev);
    if (k.speed > 0)
      k.ev = x_.engine.after(Time::from_ps(static_cast<int64_t>(std::ceil(k.remaining / k.speed * 1e12))),
                             &Engine::call<&Compute::end_kernel_event, Compute>, this, pack(r, k.gop));
  }
  clocks_.clock_changed(r);
  if (x_.mirrors.has_mirrors(r))
    for (const int m : x_.mirrors.of[static_cast<size_t>(r)]) clocks_.clock_changed(m);
}

void Compute::end_kernel(int r, int gid) {
  Rank& C = ranks_[static_cast<size_t>(r)];
  auto it = std::find_if(C.kernels.begin(), C.kernels.end(), [&](const RunningKernel& k) { return k.gop == gid; });
  assert(it != C.kernels.end());
  advance(C, *it, x_.engine.now());  // its last stretch's slowdown
  if (it->measured) {
    const double t = (x_.engine.now() - it->started).s();
    if (C.measured_clock.size() <= static_cast<size_t>(gid)) C.measured_clock.resize(static_cast<size_t>(gid) + 1, 0.0);
    C.measured_clock[static_cast<size_t>(gid)] = t > 0 ? it->clock_s / t : C.clock;
  }
  C.kernels.erase(it);
  ++C.kernel_changes;
  ops_.op_done(r, gid);
  update(r);
}

}  // namespace exec
}  // namespace osim
