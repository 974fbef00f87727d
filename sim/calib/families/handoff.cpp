// Hand-offs between the copy engines and the SMs (params/handoff.hpp): the
// burst a gated copy pays after a kernel (copy_reps), a kernel after a copy
// (kernel_reps), the hand-off's phase (every sample of kernel_reps), and the
// reports against a workload's kernels (handoff_wait) and a kernel done long
// before (copy_after_idle).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::handoff {

// A gated burst of copies after a spin kernel (copy_reps): what a burst pays
// once; the copies family holds it in its pinned lines, which set
// copy_after_kernel_latency.
void fit_copy_burst(FitContext& ctx) {
  const json& d = ctx.def;
  Calibration& c = ctx.cal;
  const double close_us = ctx.close_us();
  for (const bool d2h : {false, true}) {
    std::vector<BurstPoint> pts;
    for (const auto& r : rows(d, "copy_reps"))
      if ((r.at("gate") == "kernel" || r.at("gate") == "kernel_wait") && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0)
        pts.push_back({r.at("bytes").get<double>(), r.at("reps").get<double>(), r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>()});
    const auto b = fit_burst(pts, false);
    if (!b) continue;
    ctx.produce(d2h ? FitOutput::copy_burst_d2h_us : FitOutput::copy_burst_h2d_us, std::max(0.0, b->burst));
    c.fits.push_back({fmt::format("burst of copies after a kernel (copy_reps), {}", d2h ? "D2H" : "H2D"),
                      "time per copy = steady(size) + burst / reps over the rows after a spin kernel on the stream or waited on; "
                      "copy_after_kernel_latency = burst - the closing event's GPU time",
                      {{"burst_us", b->burst}, {"copy_after_kernel_latency_us", std::max(0.0, b->burst - close_us)}},
                      b->rms_pct,
                      static_cast<int>(pts.size())});
  }
}

void fit_copy_reps_report(FitContext& ctx) {
  const json& d = ctx.def;
  Calibration& c = ctx.cal;
  // Copies per gated burst (copy_reps): was the ~1 us step in the per-copy
  // latency from 1 MiB (the retired copy_step_latency) the size's, or
  // the bench's, whose one-way rows time 20 copies per sample below 1 MiB
  // and 5 from it? Per gate and direction, time - bytes / the engine's rate
  // = latency + burst / reps + step [from 1 MiB]: `burst_us` a burst's
  // one-off cost, `step_us` the step at equal reps (0.1-0.4 us: the model
  // has none). Reported only.
  for (const char* gate : {"kernel", "host", "kernel_wait"})
    for (const bool d2h : {false, true}) {
      if (ctx.engine_bandwidth().h2d.is_unlimited()) break;
      std::vector<BurstPoint> pts;
      for (const auto& r : rows(d, "copy_reps"))
        if (r.at("gate") == gate && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0) {
          const double bytes = r.at("bytes").get<double>();
          pts.push_back({0, r.at("reps").get<double>(), r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>(),
                         bytes / ctx.engine_bandwidth()[copy_direction(d2h)].bytes_per_s * 1e6, bytes >= 1048576});
        }
      const auto b = fit_burst(pts, true);
      if (!b) continue;
      c.fits.push_back(
          {fmt::format("copies per gated burst (copy_reps), {}, after a {}", d2h ? "D2H" : "H2D", copy_reps_gate(gate)),
           "time per copy - bytes / the engine's rate = latency + burst / reps + step [bytes >= 1 MiB], relative least squares (reported only)",
           {{"latency_us", b->steady.at(0)}, {"burst_us", b->burst}, {"step_us", b->step}},
           b->rms_pct,
           static_cast<int>(pts.size())});
    }
}

void fit_handoff_wait_report(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const double route_latency_us = ctx.route_latency_us, close_us = ctx.close_us();
  // One copy after a kernel of 5 us-3 ms (handoff_wait): per direction and
  // mode the mean over the rows of the time less the copy's set-up, its
  // bytes at the engine's rate and the closing event: the hand-off as a
  // workload's kernels meet it, against copy_reps' gate. Reported only.
  if (!ctx.engine_bandwidth().h2d.is_unlimited())
    for (const char* mode : {"same", "wait"})
      for (const bool d2h : {false, true}) {
        double sum = 0;
        int n = 0;
        for (const auto& r : rows(d, "handoff_wait"))
          if (r.at("mode") == mode && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0) {
            const double bytes = r.at("bytes").get<double>();
            sum += r.at("time_us").get<double>() - p.copies.host_copy_setup(d2h, false).us() - route_latency_us -
                   bytes / ctx.engine_bandwidth()[copy_direction(d2h)].bytes_per_s * 1e6 - close_us;
            ++n;
          }
        if (n == 0) continue;
        c.fits.push_back({fmt::format("one copy after a kernel of 5 us-3 ms (handoff_wait), {}, {}", d2h ? "D2H" : "H2D",
                                      mode[0] == 's' ? "on its stream" : "waited on"),
                          "the mean over the rows of time - set-up - bytes / the engine's rate - the closing event (reported only)",
                          {{"handoff_us", sum / n}, {"copy_after_kernel_latency_us", p.handoff.copy_after_kernel_latency[copy_direction(d2h)].us()}},
                          0,
                          n});
      }
}

void fit_kernel_reps(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // Kernels per gated burst after what (kernel_reps): per `after` (a host
  // function, a kernel, a copy on the stream, a copy waited on), time per
  // kernel = steady + burst / reps (reported), and from them the hand-off
  // from a copy to the compute engine against a burst's closing event.
  {
    std::map<std::string, std::vector<BurstPoint>> by_after;
    std::vector<BurstPoint> after_copy_pts;  // after a copy, on the stream or waited on
    for (const auto& r : rows(d, "kernel_reps")) {
      const BurstPoint pt{0, r.at("reps").get<double>(), r.at("time_us").get<double>()};
      by_after[r.at("after").get<std::string>()].push_back(pt);
      if (r.at("after") == "copy" || r.at("after") == "copy_wait") after_copy_pts.push_back(pt);
    }
    // The hand-off from a copy to the compute engine
    // (kernel_after_copy_latency): the burst after a copy, on the stream or
    // waited on (one fit over both), less the burst after a host function
    // (its closing event).
    if (!after_copy_pts.empty() && by_after.contains("host")) {
      const auto after_copy = fit_burst(after_copy_pts, false), after_host = fit_burst(by_after.at("host"), false);
      if (after_copy && after_host) {
        p.handoff.kernel_after_copy_latency = Time::from_us(std::max(0.0, after_copy->burst - after_host->burst));
        c.fits.push_back({"kernel after a copy (kernel_reps)",
                          "burst of kernels after a copy (on the stream or waited on) - burst after a host function (steady + burst / reps each)",
                          {{"kernel_after_copy_latency_us", p.handoff.kernel_after_copy_latency.us()}},
                          after_copy->rms_pct,
                          static_cast<int>(after_copy_pts.size() + by_after.at("host").size())});
      }
    }
    for (const auto& [after, pts] : by_after) {
      const auto b = fit_burst(pts, false);
      if (!b) continue;
      const std::string what = after == "host"        ? "host function"
                               : after == "kernel"    ? "spin kernel"
                               : after == "copy"      ? "4 KiB H2D copy on its stream"
                               : after == "copy_wait" ? "4 KiB H2D copy on another stream, waited on"
                                                      : after;
      c.fits.push_back({fmt::format("kernels per gated burst (kernel_reps), after a {}", what),
                        "time per 1 MiB memory kernel = steady + burst / reps, relative least squares (reported only)",
                        {{"steady_us", b->steady.at(0)}, {"burst_us", b->burst}},
                        b->rms_pct,
                        static_cast<int>(pts.size())});
    }
  }
}

void fit_phase(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // The hand-off's phase (handoff_phase_min / _max), where the bench kept
  // every sample (samples_us): what each burst of up to 5 kernels paid for
  // its hand-off after a copy, on the stream or waited on (kernel_reps),
  // (the sample - the median of the same reps after a host function) x reps;
  // the 2nd and 98th percentiles. The kernels' own time holds to ~0.1 us;
  // copies' (copy_after_idle) wander on some machines by more than the
  // phase (bursts 30 us slow), and where they hold they give the same phase
  // (0.2-7.4 us against 0.1-7.9 from the kernels).
  {
    std::vector<double> paid;
    const std::vector<json> kernels = rows(d, "kernel_reps");
    for (const auto& r : kernels) {
      if ((r.at("after") != "copy" && r.at("after") != "copy_wait") || r.at("reps").get<int>() > 5 || !r.contains("samples_us")) continue;
      const auto host = std::find_if(kernels.begin(), kernels.end(), [&](const json& h) {
        return h.at("after") == "host" && h.at("reps") == r.at("reps") && h.at("gpus") == r.at("gpus") && h.contains("samples_us");
      });
      if (host == kernels.end()) continue;
      const double reps = r.at("reps").get<double>();
      const double host_us = median(host->at("samples_us").get<std::vector<double>>());
      for (const double t : r.at("samples_us").get<std::vector<double>>()) paid.push_back((t - host_us) * reps);
    }
    if (paid.size() >= 50) {
      std::sort(paid.begin(), paid.end());
      const auto pct = [&](double q) {  // linear between the nearest ranks
        const double x = q * static_cast<double>(paid.size() - 1);
        const size_t i = static_cast<size_t>(x);
        return i + 1 < paid.size() ? paid[i] + (x - static_cast<double>(i)) * (paid[i + 1] - paid[i]) : paid[i];
      };
      const double lo = std::max(0.0, pct(0.02)), hi = std::max(lo, pct(0.98));
      p.handoff.handoff_phase_min = Time::from_us(lo);
      p.handoff.handoff_phase_max = Time::from_us(hi);
      double mean = 0;
      for (const double x : paid) mean += x / static_cast<double>(paid.size());
      c.fits.push_back(
          {"the hand-off's phase (kernel_reps after a copy, on the stream or waited on; every sample)",
           "per burst of up to 5: (sample - the median after a host function at the same reps) x reps; min, max = the 2nd, 98th percentiles",
           {{"handoff_phase_min_us", lo},
            {"handoff_phase_max_us", hi},
            {"median_us", pct(0.5)},
            {"mean_us", mean},
            {"copy_after_kernel_latency_us", p.handoff.copy_after_kernel_latency.h2d.us()}},
           0,
           static_cast<int>(paid.size())});
    }
  }
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const int ngpu = ctx.ngpu;
  const std::string key = c.key;
  if (key == "copy_reps") {
    // A burst of `reps` pinned copies per direction as the bench ran it
    // (one way on one stream, or H2D and D2H on two streams at once)
    // behind its gate, per copy from the first event to the last.
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const Bytes bytes = r.at("bytes").get<Bytes>();
    const int reps = r.at("reps").get<int>();
    const std::string dir = one_of(r, "dir", {"h2d", "d2h", "both"}), gate = one_of(r, "gate", {"kernel", "host", "kernel_wait"});
    const bool run_h2d = dir != "d2h", run_d2h = dir != "h2d";
    std::vector<Op> lanes;
    if (run_h2d) lanes.push_back(bench_copy(CopyKind::H2D, bytes));
    if (run_d2h) lanes.push_back(bench_copy(CopyKind::D2H, bytes));
    const std::vector<double> per_copy = replay_gated(lanes, reps, gate, dev, topo, p);
    c.cls = dir != "both" ? "copies per gated burst, one way (copy_reps)"
            : reps > 5    ? "copies per gated burst, both ways at once (copy_reps)"
                          : "copies per gated burst, both ways at once, 1-5 per burst (copy_reps)";
    // Both ways, a few copies per burst: how the two directions' first
    // copies line up behind the gate decides (the host functions run one
    // after the other, the kernel_wait events one after the other on one
    // stream; after a host function a burst's first H2D copy ran at the
    // one-way time, 7.4 against 9.3 us at 256 KiB). The model starts both
    // directions at once, at the shared rate from the first copy.
    if (dir == "both" && reps <= 5) c.outside = "how the two directions' first copies line up behind the gate";
    for (const bool d2h : {false, true}) {
      if (!(d2h ? run_d2h : run_h2d)) continue;
      c.what = fmt::format("GPU {}, {} x {} after a {}, {}", dev, format_bytes(static_cast<double>(bytes)), reps,
                           gate == "kernel" ? std::string("kernel") : copy_reps_gate(gate),
                           dir == "both" ? (d2h ? "D2H beside H2D" : "H2D beside D2H") : (d2h ? "D2H" : "H2D"));
      c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>();
      c.simulated_us = per_copy[d2h && run_h2d ? 1 : 0];
      out.push_back(c);
    }
  } else if (key == "handoff_wait") {
    // One copy queued behind a kernel of `wait_us` on every SM, on its
    // stream or waited on through an event: from the event after the
    // kernel to the one after the copy.
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const bool d2h = one_of(r, "dir", {"h2d", "d2h"}) == "d2h", same = one_of(r, "mode", {"same", "wait"}) == "same";
    const double wait_us = r.at("wait_us").get<double>();
    c.cls = "one copy after a kernel of 5 us-3 ms (handoff_wait)";
    c.what = fmt::format("GPU {}, {} after {} us {}, {}", dev, format_bytes(r.at("bytes").get<double>()), wait_us,
                         same ? "on the stream" : "waited on", d2h ? "D2H" : "H2D");
    // The rows' medians (five samples each) move by up to 7 us from row
    // to row with no trend over the wait, where the model has one
    // latency (their mean is reported beside the fitted one).
    // With the phase calibrated (handoff_phase_min / _max) they are held,
    // against the times it allows.
    if (!ctx.params.handoff.has_handoff_phase()) c.outside = "the hand-off's phase (0.7-7.5 us from row to row)";
    c.measured_us = r.at("time_us").get<double>();
    c.simulated_us = replay_gated({bench_copy(d2h ? CopyKind::D2H : CopyKind::H2D, r.at("bytes").get<Bytes>())}, 1, same ? "kernel" : "kernel_wait",
                                  dev, topo, p, Time::from_us(wait_us))[0];
    out.push_back(c);
  } else {
    // A burst behind a host function, with a kernel done long before on
    // the stream or waited on, or nothing (the control): as the bench ran it.
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const Bytes bytes = r.at("bytes").get<Bytes>();
    const int reps = r.at("reps").get<int>();
    const std::string before = one_of(r, "before", {"host", "kernel_done", "kernel_wait_done"});
    const bool d2h = one_of(r, "dir", {"h2d", "d2h"}) == "d2h";
    c.cls = "copies per burst after a kernel done long before (copy_after_idle)";
    c.what = fmt::format("GPU {}, {} x {} after {}, {}", dev, format_bytes(static_cast<double>(bytes)), reps,
                         before == "host"          ? "a host function alone"
                         : before == "kernel_done" ? "a kernel done before, on the stream"
                                                   : "a kernel done before, waited on",
                         d2h ? "D2H" : "H2D");
    c.measured_us = r.at("time_us").get<double>();
    c.simulated_us = replay_gated({bench_copy(d2h ? CopyKind::D2H : CopyKind::H2D, bytes)}, reps, before, dev, topo, p)[0];
    out.push_back(c);
  }
}

}  // namespace families::handoff
}  // namespace osim
