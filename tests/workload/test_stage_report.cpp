// A request's stages in the reports: each stage's window, where its time
// went and its peak VRAM against closed forms (its kernels' solo times, its
// weights over the copy rate, its FLOPs over the host's rate), and the
// summary's, metrics.json's and the trace's stage sections.
#include <doctest/doctest.h>

#include "gpu/sim_fixture.hpp"
#include "report/metrics.hpp"
#include "report/trace.hpp"
#include "schedule/records.hpp"
#include "workload/dit.hpp"
#include "workload/stage_jobs.hpp"

using namespace osim;

namespace {

using test::stage_job;

// The test node's 10 GB/s PCIe; pageable copies at 5 GB/s, no set-up times.
ModelParams params() {
  ModelParams p = test::quiet();
  p.copies.pageable_bandwidth = {Bandwidth::from_GBps(5), Bandwidth::from_GBps(5)};
  p.copies.pageable_latency = {Time::zero(), Time::zero()};
  p.copies.copy_latency = {Time::zero(), Time::zero()};
  return p;
}

// The test node with 80 GiB GPUs (the CUDA context and the VAE's fp32 weights pass 1 GiB).
std::string topology() {
  std::string t = test::kTopo;
  t.replace(t.find("memory: 1 GiB"), 13, "memory: 80 GiB");
  return t;
}

DitWorkload workload(const std::string& yaml) {
  DitWorkload w = parse_workload_string(yaml, "w.yaml");
  w.params = params();
  return w;
}

struct Run {
  DitWorkload w;
  hw::Topology topo;
  Schedule s;
  ExecResult r;
  Metrics m;
  explicit Run(const std::string& yaml, const ExecOptions& o = {})
      : w(workload(yaml)), topo(hw::parse_topology_string(topology(), "topo.yaml")), s(generate_schedule(w)) {
    r = execute(s, topo, w.params, o);
    m = compute_metrics(s, topo, r);
  }
  // The stage's kernels run alone, one after the other: their solo times summed.
  Time solo(int stage) const {
    const StagePlan p = stage_plan(w.stages[static_cast<size_t>(stage)], w.stage_job(0));
    const hw::NodeSpec& gpu = topo.node(topo.gpus()[0]);
    Time t;
    for (const StagePlan::Pass& pass : p.passes)
      for (const Op& op : pass.ops)
        if (op.kind == OpKind::Kernel) t += Time::from_ps(kernel_time(op, gpu, w.params, {}, s.runtime.framework_kernels).ps() * pass.count);
    return t;
  }
};

}  // namespace

TEST_CASE("a resident encoder stage: its time is its kernels' solo times, nothing moved") {
  const Run run(stage_job("resident"));
  REQUIRE(run.m.stages.size() == 2);
  const StageMetrics& enc = run.m.stages[0];
  CHECK(enc.name == "enc");
  CHECK(run.m.stages[1].name == "vae");
  CHECK(enc.compute.s() == doctest::Approx(run.solo(0).s()).epsilon(1e-9));
  CHECK(enc.copy_in == Time::zero());
  CHECK(enc.copy_out == Time::zero());
  CHECK(enc.exchange == Time::zero());
  CHECK(enc.end - enc.start == enc.compute + enc.other);
  // No host overheads: the stream runs its kernels back to back.
  CHECK(enc.other == Time::zero());
  // The kernels run at most at the GPU's peak: the FLOPs over 100 TFLOP/s bound them below.
  const StagePlan p = stage_plan(run.w.stages[0], run.w.stage_job(0));
  CHECK(enc.compute >= Time::from_s(p.flops / 100e12));
  // The VAE after the steps' end; the request is the whole run.
  REQUIRE(!run.m.steps.empty());
  CHECK(enc.end <= run.m.steps.front().start);
  CHECK(run.m.stages[1].start >= run.m.steps.back().end);
  CHECK(run.m.stages[1].compute.s() == doctest::Approx(run.solo(1).s()).epsilon(1e-9));
  CHECK(run.m.stages[1].end == run.m.makespan);
}

TEST_CASE("an offloaded encoder stage adds its weights moved in and out at the pageable rate") {
  const Run res(stage_job("resident")), off(stage_job("offloaded"));
  const StagePlan p = stage_plan(off.w.stages[0], off.w.stage_job(0));
  const Time move = Time::from_s(static_cast<double>(p.weights) / 5e9);
  const StageMetrics& enc = off.m.stages[0];
  CHECK(enc.copy_in == move);
  CHECK(enc.copy_out == move);
  CHECK(enc.compute == res.m.stages[0].compute);
  CHECK(enc.end - enc.start == res.m.stages[0].end - res.m.stages[0].start + move + move);
  // Its peak: the CUDA context and the GEMM workspace, the resident VAE's
  // and DiT's weights (two blocks of hidden² bf16 parameters), then its own
  // weights and activations.
  const StagePlan vae = stage_plan(off.w.stages[1], off.w.stage_job(0));
  const VramParams& v = off.w.params.vram;
  CHECK(enc.peak_vram == v.cuda_context + v.gemm_workspace + vae.weights + 2 * 64 * 64 * 2 + p.weights + p.activations);
  // Resident, its weights are held from the start: the same peak.
  CHECK(res.m.stages[0].peak_vram == enc.peak_vram);
}

TEST_CASE("a CPU encoder stage: its FLOPs at the host's rate, then its embeddings copied over") {
  const Run cpu(stage_job("cpu"));
  const StagePlan p = stage_plan(cpu.w.stages[0], cpu.w.stage_job(0));
  const StageMetrics& enc = cpu.m.stages[0];
  CHECK(enc.compute == Time::zero());
  CHECK(enc.other == Time::from_s(p.flops / 0.5e12));
  CHECK(enc.copy_in == Time::from_s(static_cast<double>(p.result) / 5e9));
}

TEST_CASE("stage metrics are the same from a run's records and from its spans alone") {
  ExecOptions o;
  o.keep_records = false;
  const Run a(stage_job("offloaded")), b(stage_job("offloaded"), o);
  REQUIRE(a.m.stages.size() == b.m.stages.size());
  for (size_t i = 0; i < a.m.stages.size(); ++i) {
    CHECK(a.m.stages[i].start == b.m.stages[i].start);
    CHECK(a.m.stages[i].end == b.m.stages[i].end);
    CHECK(a.m.stages[i].compute == b.m.stages[i].compute);
    CHECK(a.m.stages[i].copy_in == b.m.stages[i].copy_in);
    CHECK(a.m.stages[i].peak_vram == b.m.stages[i].peak_vram);
  }
}

TEST_CASE("the summary, metrics.json and the trace show the stages and the request's latency, and without stages nothing") {
  const Run run(stage_job("offloaded"));
  const std::string summary = format_summary(run.m, run.topo, run.r, "head");
  CHECK(summary.find(fmt::format("  request {} end to end:", format_time(run.m.makespan))) != std::string::npos);
  CHECK(summary.find("  enc ") != std::string::npos);
  CHECK(summary.find("  vae ") != std::string::npos);
  const nlohmann::ordered_json j = metrics_json(run.m, run.topo, run.r);
  CHECK(j["request"]["latency_s"].get<double>() == run.m.makespan.s());
  const double steps = (run.m.steps.back().end - run.m.steps.front().start).s();
  CHECK(j["request"]["steps_s"].get<double>() == doctest::Approx(steps));
  REQUIRE(j["stages"].size() == 2);
  CHECK(j["stages"][0]["name"] == "enc");
  CHECK(j["stages"][0]["copy_in_s"].get<double>() == run.m.stages[0].copy_in.s());
  CHECK(j["stages"][1]["peak_vram_bytes"].get<Bytes>() == run.m.stages[1].peak_vram);
  // The request track: the encoder, the steps, the VAE, in order.
  const std::vector<RequestSlice> slices = request_slices(run.s, run.r);
  REQUIRE(slices.size() == 3);
  CHECK(slices[0].name == "enc");
  CHECK(slices[1].name == "DiT steps");
  CHECK(slices[2].name == "vae");
  CHECK(slices[1].start == run.m.steps.front().start);
  const std::string trace = trace_json(run.s, run.topo, run.r);
  CHECK(trace.find(R"("name":"thread_name","args":{"name":"request"})") != std::string::npos);
  // Without stages: no request line, section or track.
  const std::string yaml = stage_job("resident");
  const Run plain(yaml.substr(0, yaml.find("stages:")));
  CHECK(plain.m.stages.empty());
  CHECK(format_summary(plain.m, plain.topo, plain.r, "head").find("request") == std::string::npos);
  CHECK(!metrics_json(plain.m, plain.topo, plain.r).contains("stages"));
  CHECK(trace_json(plain.s, plain.topo, plain.r).find(R"("name":"request")") == std::string::npos);
}

TEST_CASE("a report of a run's records gives each stage's peak VRAM as the run did, and not a zero where none was kept") {
  const Run run(stage_job("offloaded"));
  const Records rec = parse_records(nlohmann::json(records_json(run.s, run.r, "topo.yaml", "simulated")), "records.json");
  const RunRecord back = run_record_of(run.s, rec);
  const Metrics m = compute_metrics(run.s, run.topo, back);
  REQUIRE(m.stages.size() == 2);
  // The encoder's peak: the CUDA context, the GEMM workspace, the resident
  // VAE's weights, the DiT's (two blocks of hidden² bf16 parameters, taken
  // before the encoders run), its own weights and activations (one rank: no
  // NCCL buffers, which only a simulation sizes).
  const StagePlan p = stage_plan(run.w.stages[0], run.w.stage_job(0));
  const StagePlan vae = stage_plan(run.w.stages[1], run.w.stage_job(0));
  const VramParams& v = run.w.params.vram;
  const Bytes dit_weights = 2 * 64 * 64 * 2;
  CHECK(m.stages[0].peak_vram == v.cuda_context + v.gemm_workspace + vae.weights + dit_weights + p.weights + p.activations);
  CHECK(m.stages[0].peak_parts[static_cast<size_t>(MemPart::Weights)] == dit_weights);
  CHECK(m.stages[0].peak_parts[static_cast<size_t>(MemPart::Runtime)] == v.cuda_context);
  REQUIRE(run.m.stages[1].peak_vram.has_value());
  CHECK(m.stages[1].peak_vram == run.m.stages[1].peak_vram);
  CHECK(*m.stages[1].peak_vram >= v.cuda_context + vae.weights);
  // A run that kept no VRAM windows of its stages: "not recorded", null in metrics.json.
  RunRecord bare = back;
  bare.ranks[0].stage_peaks.clear();
  const Metrics none = compute_metrics(run.s, run.topo, bare);
  REQUIRE(none.stages.size() == 2);
  CHECK(!none.stages[0].peak_vram);
  const std::string summary = format_summary(none, run.topo, bare, "head");
  const size_t row = summary.find("  enc ");
  REQUIRE(row != std::string::npos);
  const std::string line = summary.substr(row, summary.find('\n', row) - row);
  CHECK(line.ends_with(" not recorded"));
  // The cell fits its column: the row is as wide as the table's header.
  const size_t head = summary.find("  stage ");
  REQUIRE(head != std::string::npos);
  CHECK(line.size() == summary.find('\n', head) - head);
  CHECK(metrics_json(none, run.topo, bare)["stages"][0]["peak_vram_bytes"].is_null());
}
