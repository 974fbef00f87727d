// NVLink's power states (params/nvlink.hpp), from the all-to-all as a Ulysses
// layer meets it (nccl_all_to_all_insitu: after 2-100 ms of GEMMs, with and
// without host copies beside): the wake-up after a quiet spell, the wait
// beside host copies, and compute's slowdown while the link is awake.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::nvlink {

struct InsituTimes {
  double a2a_us, gemm_span_us;
};
// The bench's all-to-all in situ (nccl_all_to_all_insitu), replayed as the
// bench ran the testcase: per size (the document's rows in order), its warm
// all-to-alls, then each case `warmup + samples` times: the host's 20 ms
// sleep, 64 MiB H2D copies back to back on a second stream (case `copies`:
// `ncopies` where the row has it, else as many as the bench then queued),
// each rank's GEMM `gemms` times, the 1-element all-reduce that lines the
// ranks up, the all-to-all, a device sync. The GPUs' clock state and the
// NVLink's quiet time carry from one sample to the next as they did on the
// GPUs (after 100 ms of GEMMs the next sample starts with the clock still
// part way down: replayed from rest its GEMMs ran ~2 % fast, the copies
// outlasting them where on the GPUs they had ended). Per row, per case: the
// median over the samples of the slowest rank's all-to-all, and of the
// slowest rank's GEMM span (its first GEMM's start to its last's end).
std::vector<std::vector<InsituTimes>> replay_insitu_doc(const json& doc, bool p2p_off, const hw::Topology& topo, const ModelParams& p) {
  const int warmup = doc.at("options").value("warmup", 2), samples = doc.at("options").value("samples", 5);
  std::vector<const json*> rs;
  int n = 0;
  for (const auto& r : doc.at("results"))
    if (r.at("key") == "nccl_all_to_all_insitu" && r.at("ranks").get<size_t>() <= topo.gpus().size()) {  // the rows compare_bench scores
      rs.push_back(&r);
      n = std::max(n, r.at("ranks").get<int>());
    }
  std::vector<Op> prog;
  // (row, case) -> the timed all-to-all's op index, per sample.
  std::vector<std::vector<std::vector<size_t>>> timed(rs.size());
  Op sync;
  sync.kind = OpKind::DeviceSync;
  Op sleep;
  sleep.kind = OpKind::HostWork;
  sleep.duration = Time::from_ms(20);
  Op line_up = bench_a2a(4);
  line_up.coll = CollKind::AllReduce;
  line_up.dtype = DType::FP32;
  const Op cp = bench_copy(CopyKind::H2D, Bytes(64) << 20, 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    const json& r = *rs[i];
    const Op a2a = bench_a2a(r.at("bytes").get<Bytes>()), g = bench_gemm(r.at("gemm"));
    for (int it = 0; it < warmup + samples; ++it) prog.insert(prog.end(), {a2a, line_up, a2a, sync});
    for (const auto& k : r.at("cases")) {
      auto& t = timed[i].emplace_back();
      const int copies = !k.at("copies").get<bool>() ? 0
                         : k.contains("ncopies")
                             ? k.at("ncopies").get<int>()
                             : static_cast<int>(std::ceil((k.at("gemm_ms").get<double>() + 5) * 1e-3 * 55e9 / static_cast<double>(cp.bytes))) + 1;
      for (int it = 0; it < warmup + samples; ++it) {
        prog.push_back(sleep);
        prog.insert(prog.end(), static_cast<size_t>(copies), cp);
        prog.insert(prog.end(), static_cast<size_t>(k.at("gemms").get<int>()), g);
        prog.push_back(line_up);
        if (it >= warmup) t.push_back(prog.size());  // the GEMMs: [at - 1 - gemms, at - 1)
        prog.push_back(a2a);
        prog.push_back(sync);
      }
    }
  }
  const ExecResult res = replay_programs(bench_schedule(n, p2p_off), std::vector<std::vector<Op>>(static_cast<size_t>(n), prog), topo, p);
  std::vector<std::vector<InsituTimes>> out(rs.size());
  for (size_t i = 0; i < rs.size(); ++i)
    for (size_t c = 0; c < timed[i].size(); ++c) {
      const size_t gemms = rs[i]->at("cases")[c].at("gemms").get<size_t>();
      std::vector<double> per_sample, spans;
      for (const size_t at : timed[i][c]) {
        double worst = 0, span = 0;
        for (const auto& ops : res.ops) {
          worst = std::max(worst, (ops[at].end - ops[at].start).us());
          span = std::max(span, (ops[at - 2].end - ops[at - 1 - gemms].start).us());
        }
        per_sample.push_back(worst);
        spans.push_back(span);
      }
      out[i].push_back({median(per_sample), median(spans)});
    }
  return out;
}

// The in-situ cases compare_bench scores (rows with ranks within the
// topology), in order, each with its times replayed as run (host overheads
// left out, the ranks lined up as the bench does).
struct InsituCase {
  double bytes;
  int gemm_ms;
  bool copies;
  const json* measured;
  InsituTimes sim;
};
std::vector<InsituCase> insitu_cases(const json& doc, bool p2p_off, const hw::Topology& topo, ModelParams p) {
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  p.power.straggler_share = 0;
  const auto sim = replay_insitu_doc(doc, p2p_off, topo, p);
  std::vector<InsituCase> out;
  size_t row = 0;
  for (const auto& r : doc.at("results")) {
    if (r.at("key") != "nccl_all_to_all_insitu" || r.at("ranks").get<size_t>() > topo.gpus().size()) continue;
    size_t k = 0;
    for (const auto& cs : r.at("cases"))
      out.push_back({r.at("bytes").get<double>(), cs.at("gemm_ms").get<int>(), cs.at("copies").get<bool>(), &cs, sim.at(row).at(k++)});
    ++row;
  }
  return out;
}

void fit_insitu_steps(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  // The NVLink wake-up (bench nccl_all_to_all_insitu, NCCL defaults): the
  // all-to-all after >= 30 ms of GEMMs less the same after <= 8 ms, no
  // copies beside; the median over sizes. Where the rows hold no such pair
  // it stays off.
  if (const json* doc = find_doc(runs, false)) {
    // Beside copies: the same case with copies less without, after <= 8 ms
    // (no wake-up in either).
    std::vector<double> steps, beside;
    for (const auto& r : rows(*doc, "nccl_all_to_all_insitu")) {
      std::vector<double> fast, slow;
      std::map<int, std::pair<double, double>> short_by_ms;  // gemm_ms <= 8 -> (without, with)
      for (const auto& k : r.at("cases")) {
        const bool copies = k.at("copies").get<bool>(), short_compute = k.at("gemm_ms").get<double>() <= 8;
        const double t = k.at("time_us").get<double>();
        if (!copies) (short_compute ? fast : slow).push_back(t);
        if (short_compute) (copies ? short_by_ms[k.at("gemm_ms").get<int>()].second : short_by_ms[k.at("gemm_ms").get<int>()].first) = t;
      }
      if (!fast.empty() && !slow.empty()) steps.push_back(median(slow) - median(fast));
      for (const auto& [ms, t] : short_by_ms)
        if (t.first > 0 && t.second > 0) beside.push_back(t.second - t.first);
    }
    if (!beside.empty()) {
      p.nvlink.nvlink_copy_latency = Time::from_us(std::max(0.0, median(beside)));
      c.fits.push_back({"NVLink beside copies",
                        "all-to-all with H2D copies beside - without, after <= 8 ms of GEMMs, median over sizes and cases",
                        {{"copy_latency_us", p.nvlink.nvlink_copy_latency.us()},
                         {"min_us", *std::min_element(beside.begin(), beside.end())},
                         {"max_us", *std::max_element(beside.begin(), beside.end())}},
                        0,
                        static_cast<int>(beside.size())});
    }
    if (!steps.empty()) {
      p.nvlink.nvlink_wake_latency = Time::from_us(std::max(0.0, median(steps)));
      c.fits.push_back({"NVLink wake-up",
                        "all-to-all after >= 30 ms of GEMMs - after <= 8 ms (no copies beside), median over sizes; after "
                        "nvlink_wake_after without NVLink collective traffic",
                        {{"wake_latency_us", p.nvlink.nvlink_wake_latency.us()},
                         {"min_us", *std::min_element(steps.begin(), steps.end())},
                         {"max_us", *std::max_element(steps.begin(), steps.end())}},
                        0,
                        static_cast<int>(steps.size())});
    }
  }
}

void fit_wake_by_simulation(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  const hw::Topology& topo = ctx.topo;
  // The NVLink wake-up again, by simulation: the measured step (after >=
  // 30 ms of GEMMs less after <= 8 ms) also holds the clock's effect on the
  // all-to-all, which the model gives by itself (comm_clock_share, the
  // sustained-load state the samples leave): the latency is the median over
  // sizes of the measured step less the step the replay as run gives
  // without a wake-up. The raw step counted the clock twice: 16 MiB rows
  // (base ~50 us, step 97) replayed 8-11 % slow after 30-100 ms, 80 MiB
  // (base ~165 us, step 118-123) within 5 %.
  if (const json* doc = find_doc(runs, false); doc && p.nvlink.nvlink_wake_latency > Time::zero()) {
    ModelParams q = p;
    q.nvlink.nvlink_wake_latency = Time::zero();
    struct Step {
      std::vector<double> fast, slow, sim_fast, sim_slow;
    };
    std::map<double, Step> by_size;
    for (const InsituCase& k : insitu_cases(*doc, false, topo, q))
      if (!k.copies) {
        Step& st = by_size[k.bytes];
        (k.gemm_ms <= 8 ? st.fast : st.slow).push_back(k.measured->at("time_us").get<double>());
        (k.gemm_ms <= 8 ? st.sim_fast : st.sim_slow).push_back(k.sim.a2a_us);
      }
    std::vector<double> steps;
    for (const auto& [bytes, st] : by_size)
      if (!st.fast.empty() && !st.slow.empty()) steps.push_back((median(st.slow) - median(st.fast)) - (median(st.sim_slow) - median(st.sim_fast)));
    if (!steps.empty()) {
      const double raw = p.nvlink.nvlink_wake_latency.us();
      p.nvlink.nvlink_wake_latency = Time::from_us(std::max(0.0, median(steps)));
      for (auto& f : c.fits)
        if (f.name == "NVLink wake-up") {
          f.formula =
              "(all-to-all after >= 30 ms of GEMMs - after <= 8 ms, no copies beside) - the same step replayed as run without a "
              "wake-up (the clock's share), median over sizes; after nvlink_wake_after without NVLink collective traffic";
          f.values = {{"wake_latency_us", p.nvlink.nvlink_wake_latency.us()},
                      {"min_us", *std::min_element(steps.begin(), steps.end())},
                      {"max_us", *std::max_element(steps.begin(), steps.end())},
                      {"raw_step_us", raw}};
        }
    }
  }
}

void fit_awake_slowdown(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  const hw::Topology& topo = ctx.topo;
  // Compute beside an awake NVLink (ModelParams::nvlink_awake_slowdown):
  // where both transports' in-situ runs hold the GEMMs' span, the cases
  // after <= 8 ms of GEMMs without copies (the link awake throughout over
  // NVLink: its last all-to-all 28-35 ms before), per size and case the
  // measured span over NVLink / through host memory, over the same ratio
  // replayed as run without the term; the median less one.
  {
    const json* nv = find_doc(runs, false);
    const json* off = find_doc(runs, true);
    // (bytes, gemm_ms) -> (measured span, replayed span) of the cases used.
    auto spans = [&](const json& doc, bool p2p_off) {
      std::map<std::pair<double, int>, std::pair<double, double>> out;
      bool any = false;
      for (const auto& r : rows(doc, "nccl_all_to_all_insitu"))
        for (const auto& k : r.at("cases")) any = any || k.contains("gemm_span_us");
      if (!any) return out;
      ModelParams q = p;
      q.nvlink.nvlink_awake_slowdown = 0;
      for (const InsituCase& k : insitu_cases(doc, p2p_off, topo, q))
        if (!k.copies && k.gemm_ms <= 8 && k.measured->contains("gemm_span_us"))
          out[{k.bytes, k.gemm_ms}] = {k.measured->at("gemm_span_us").get<double>(), k.sim.gemm_span_us};
      return out;
    };
    if (nv && off) {
      const auto sn = spans(*nv, false), so = spans(*off, true);
      std::vector<double> ratios;
      for (const auto& [key, t] : sn)
        if (const auto o = so.find(key); o != so.end() && o->second.second > 0)
          ratios.push_back((t.first / o->second.first) / (t.second / o->second.second));
      if (!ratios.empty()) {
        p.nvlink.nvlink_awake_slowdown = std::max(0.0, median(ratios) - 1);
        c.fits.push_back({"compute beside an awake NVLink",
                          "GEMMs' span after <= 8 ms over NVLink / through host memory (bench nccl_all_to_all_insitu, no copies), over the "
                          "same ratio replayed without the term; the median less one",
                          {{"nvlink_awake_slowdown", p.nvlink.nvlink_awake_slowdown},
                           {"min", *std::min_element(ratios.begin(), ratios.end()) - 1},
                           {"max", *std::max_element(ratios.begin(), ratios.end()) - 1}},
                          0,
                          static_cast<int>(ratios.size())});
      }
    }
  }
}

// The in-situ testcase replayed whole, once per document, case by case.
struct Insitu {
  std::optional<std::vector<InsituCase>> cases;
  size_t seen = 0;
};

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  if (r.at("ranks").get<int>() > ctx.ngpu) return;
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const json& doc = ctx.doc;
  const bool p2p_off = ctx.p2p_off;
  const std::string key = c.key;
  Insitu& st = ctx.state<Insitu>();
  auto& insitu = st.cases;
  size_t& insitu_seen = st.seen;
  if (!insitu) insitu = insitu_cases(doc, p2p_off, topo, p);
  for (const auto& k : r.at("cases")) {
    const InsituTimes& sim = (*insitu)[insitu_seen++].sim;
    const bool copies = k.at("copies").get<bool>();
    // The first bench queued copies for the GEMMs' time at burst + 5 ms
    // (rows without `ncopies`); after 100 ms of GEMMs under load they end
    // about when the all-to-all starts (P2P off: the all-to-all measured
    // as without them).
    const bool race = copies && k.at("gemm_ms").get<int>() >= 100 && !k.contains("ncopies");
    c.cls = fmt::format("NCCL all-to-all after GEMMs{}{}",
                        race     ? ", copies ending about its start"
                        : copies ? ", copies beside"
                                 : "",
                        p2p_off ? ", through host memory" : "");
    c.what = fmt::format("{} ranks, {} after {} ms{}", r.at("ranks").get<int>(), format_bytes(r.at("bytes").get<double>()),
                         k.at("gemm_ms").get<int>(), copies ? " + copies" : "");
    c.measured_us = k.at("time_us");
    c.simulated_us = sim.a2a_us;
    out.push_back(c);
    if (k.contains("gemm_span_us")) {
      // The GEMMs before it (the sustained-load model in situ, from the
      // clock state the samples before left; beside copies or not).
      c.cls = copies ? "GEMMs in situ (their span), H2D copies beside" : "GEMMs in situ (their span)";
      c.what = fmt::format("{} GEMMs ({} ms at warm) before a {} all-to-all{}{}", k.at("gemms").get<int>(), k.at("gemm_ms").get<int>(),
                           format_bytes(r.at("bytes").get<double>()), copies ? " + copies" : "", p2p_off ? ", P2P off" : "");
      c.key = "nccl_all_to_all_insitu gemm span";
      c.measured_us = k.at("gemm_span_us");
      c.simulated_us = sim.gemm_span_us;
      out.push_back(c);
      c.key = key;
    }
  }
}

}  // namespace families::nvlink
}  // namespace osim
