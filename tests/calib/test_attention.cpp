// Attention kernels: efficiency per SDPA backend, cross-attention over the
// query count, and the fit of both from bench attention_sdpa rows.
#include <doctest/doctest.h>

#include <functional>

#include <filesystem>
#include <fstream>

#include "calib/calibrate.hpp"
#include "gpu/params_io.hpp"
#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

namespace {
// The attention rows of `doc` that `take` picks, replayed under `p`: each
// within 1e-4 of its measured time; how many there were.
int replayed_exactly(const nlohmann::json& doc, const hw::Topology& topo, const ModelParams& p, const std::function<bool(const Comparison&)>& take) {
  int n = 0;
  for (const auto& cmp : compare_bench(doc, topo, p))
    if (take(cmp)) {
      ++n;
      CHECK(cmp.simulated_us == doctest::Approx(cmp.measured_us).epsilon(1e-4));
    }
  return n;
}

// `p` written to a calibration file and read back.
ModelParams round_trip(const ModelParams& p, const std::string& name) {
  const std::filesystem::path f = std::filesystem::temp_directory_path() / name;
  std::ofstream(f) << model_yaml(p);
  ModelParams back = load_calibration(f.string());
  std::filesystem::remove(f);
  return back;
}
}  // namespace

TEST_CASE("an attention op runs at its backend's rates, the default's where it names none or one not measured") {
  const hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  ModelParams p;
  p.attention.attention_efficiency = 0.6;  // the default kernel's (cudnn here)
  p.attention.default_backend = AttnBackend::Cudnn;
  p.attention.backends = {{AttnBackend::Cudnn, {0.6, 0.4, 500}}, {AttnBackend::Flash2, {0.3, 0.2, 0}}};
  Op op;
  op.kind = OpKind::Kernel;
  op.attention = AttentionShape{1, 8, 1000, 1000, 128};
  const double flops = 4.0 * 8 * 1000 * 1000 * 128;                                           // at 100 TFLOP/s x efficiency
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 60e12 * 1e6).epsilon(1e-7));  // default -> cudnn
  op.attention->backend = AttnBackend::Flash2;
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 30e12 * 1e6).epsilon(1e-7));
  op.attention->backend = AttnBackend::Efficient;  // not measured: the default's rates
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 60e12 * 1e6).epsilon(1e-7));
  // Cross-attention (fewer keys than queries): efficiency / (1 + q0 / seq_q).
  op.attention = AttentionShape{1, 8, 1000, 100, 128, AttnBackend::Cudnn};
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(4.0 * 8 * 1000 * 100 * 128 / (100e12 * 0.4 / 1.5) * 1e6).epsilon(1e-7));
  op.attention->backend = AttnBackend::Flash2;  // no cross model: its self-attention efficiency
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(4.0 * 8 * 1000 * 100 * 128 / (100e12 * 0.2) * 1e6).epsilon(1e-7));
}

TEST_CASE("a schedule's attention names its backend (an unknown one refused with the file and line) and whether it is causal") {
  const char* s = R"(name: a
ranks: 1
streams: [c]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: c, attention: {heads: 8, seq: 1000, head_dim: 128, backend: flash2}}
)";
  const Schedule sched = parse_schedule_string(s, "a.yaml");
  CHECK((*sched.programs[0].ops)[0].attention->backend == AttnBackend::Flash2);
  CHECK(to_yaml(sched).find("backend: flash2") != std::string::npos);
  std::string bad = s;
  bad.replace(bad.find("flash2"), 6, "flash9");
  CHECK_THROWS_WITH_AS(parse_schedule_string(bad, "a.yaml"), doctest::Contains("a.yaml:7"), InputError);
  // Causal: read, written and read back.
  std::string causal = s;
  causal.replace(causal.find("backend: flash2"), 15, "causal: true");
  const Schedule cs = parse_schedule_string(causal, "c.yaml");
  CHECK((*cs.programs[0].ops)[0].attention->causal);
  CHECK(to_yaml(cs).find("causal: true") != std::string::npos);
  CHECK(parse_schedule_string(to_yaml(cs), "d.yaml").programs[0].ops->at(0).attention->causal);
}

TEST_CASE("calibrate fits each backend's rates and the default's from attention_sdpa rows, and replays each row at its backend's") {
  // Synthetic H200 rows (989 TFLOP/s bf16), timed back to back without a
  // sustained-load model: cudnn self-attention at 0.66 of the peak, flash2 at
  // 0.36; cross-attention efficiency / (1 + q0 / seq_q) with (0.5, 400) and
  // (0.3, 900); PyTorch's default: cudnn.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 1048576; b <= 1073741824.0; b *= 4)  // a machine run's pinned copies
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  struct B {
    const char* name;
    double self, cross, q0;
  };
  for (const B& b : {B{"cudnn", 0.66, 0.5, 400}, B{"flash2", 0.36, 0.3, 900}}) {
    for (int tokens : {16384, 32768}) {
      const double f = 4.0 * 40 * tokens * double(tokens) * 128;
      doc["results"].push_back({{"key", "attention_sdpa"},
                                {"kind", "self"},
                                {"heads", 40},
                                {"seq_q", tokens},
                                {"seq_kv", tokens},
                                {"head_dim", 128},
                                {"backend", b.name},
                                {"time_us", f / (989e12 * b.self) * 1e6},
                                {"TFLOPs", 989 * b.self}});
    }
    for (int q : {2048, 4096, 8192, 16384}) {
      const double eff = b.cross / (1 + b.q0 / q), f = 4.0 * 40 * q * 512.0 * 128;
      doc["results"].push_back({{"key", "attention_sdpa"},
                                {"kind", "cross"},
                                {"heads", 40},
                                {"seq_q", q},
                                {"seq_kv", 512},
                                {"head_dim", 128},
                                {"backend", b.name},
                                {"time_us", f / (989e12 * eff) * 1e6},
                                {"TFLOPs", 989 * eff}});
    }
  }
  doc["results"].push_back({{"key", "attention_default"}, {"backend", "cudnn"}, {"kernel", "cudnn_generated_fort_native_sdpa_sm90"}});
  const Calibration c = calibrate({{"sdpa.json", doc}}, topo);
  const AttentionParams& a = c.params.attention;
  CHECK(a.default_backend == AttnBackend::Cudnn);
  CHECK(a.attention_efficiency == doctest::Approx(0.66).epsilon(1e-9));
  CHECK(a.cross_attention_efficiency == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(a.cross_attention_q0 == doctest::Approx(400).epsilon(1e-6));
  REQUIRE(a.backends.size() == 2);
  CHECK(a.rates_for(AttnBackend::Flash2).efficiency == doctest::Approx(0.36).epsilon(1e-9));
  CHECK(a.rates_for(AttnBackend::Flash2).cross_q0 == doctest::Approx(900).epsilon(1e-6));
  // Every row replayed at its own backend's rates (the cross rows out of sample: exact here, the model being exact).
  CHECK(replayed_exactly(doc, topo, c.params, [](const Comparison& cmp) { return cmp.key == "attention_sdpa"; }) == 12);
  // The file: written, read back to the same model.
  const ModelParams back = round_trip(c.params, "osim-attention-backends.yaml");
  CHECK(model_yaml(back) == model_yaml(c.params));
  CHECK(model_yaml(back).find("attention_default_backend: cudnn") != std::string::npos);
}

TEST_CASE("attention over head_dim: efficiency x (d / (d + d0)) / (128 / (128 + d0)), 128's unchanged") {
  AttentionRates r;
  r.efficiency = 0.6;
  r.head_dim0 = 56;
  CHECK(r.for_shape(4096, 4096, 128) == 0.6);
  CHECK(r.for_shape(4096, 4096, 64) == doctest::Approx(0.6 * (64.0 / 120.0) / (128.0 / 184.0)).epsilon(1e-12));  // 0.46: 23 % below
  CHECK(r.for_shape(4096, 4096, 256) == doctest::Approx(0.6 * (256.0 / 312.0) / (128.0 / 184.0)).epsilon(1e-12));
  r.efficiency = 0.95;
  CHECK(r.for_shape(4096, 4096, 512) == 1.0);  // never above the peak
  r.head_dim0 = 0;
  CHECK(r.for_shape(4096, 4096, 64) == 0.95);  // not fitted: one efficiency
}

TEST_CASE("causal attention: the pairs it computes at the causal efficiency, fitted from causal rows over the sequence") {
  // Top-left diagonal: query i sees keys 0..i.
  CHECK(AttentionShape{1, 1, 4, 4, 1, AttnBackend::Default, true}.pairs() == 10);      // 1 + 2 + 3 + 4
  CHECK(AttentionShape{1, 1, 6, 4, 1, AttnBackend::Default, true}.pairs() == 10 + 8);  // two more rows see all 4 keys
  CHECK(AttentionShape{1, 1, 3, 5, 1, AttnBackend::Default, true}.pairs() == 6);       // the keys past the queries unseen
  CHECK(AttentionShape{2, 8, 1000, 1000, 128, AttnBackend::Default, true}.flops() == 4.0 * 2 * 8 * 128 * (1000.0 * 1001 / 2));
  const hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  ModelParams p;
  p.attention.attention_efficiency = 0.6;
  Op op;
  op.kind = OpKind::Kernel;
  op.attention = AttentionShape{1, 8, 1000, 1000, 128, AttnBackend::Default, true};
  const double flops = 4.0 * 8 * 128 * (1000.0 * 1001 / 2);
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 60e12 * 1e6).epsilon(1e-7));  // not measured: self's efficiency
  p.attention.causal_attention_efficiency = 0.45;
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 45e12 * 1e6).epsilon(1e-7));
  p.attention.causal_attention_s0 = 500;  // efficiency / (1 + s0 / seq_q): a third off at 1,000 queries
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / 30e12 * 1e6).epsilon(1e-7));
  op.attention->causal = false;  // the same shape unmasked: self's efficiency on every pair
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(4.0 * 8 * 128 * 1e6 / 60e12 * 1e6).epsilon(1e-7));

  // Causal rows (TFLOPs on the pairs computed) give causal_attention_efficiency; self and cross rows keep theirs.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 1048576; b <= 1073741824.0; b *= 4)
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  const auto row = [&](const char* kind, int seq_q, int seq_kv, double eff) {
    const double f = AttentionShape{1, 32, seq_q, seq_kv, 128, AttnBackend::Default, std::string(kind) == "causal"}.flops();
    doc["results"].push_back({{"key", "attention_sdpa"},
                              {"kind", kind},
                              {"heads", 32},
                              {"seq_q", seq_q},
                              {"seq_kv", seq_kv},
                              {"head_dim", 128},
                              {"backend", "cudnn"},
                              {"time_us", f / (989e12 * eff) * 1e6},
                              {"TFLOPs", 989 * eff}});
  };
  row("self", 16384, 16384, 0.66);
  row("self", 32768, 32768, 0.66);
  for (int q : {2048, 4096, 8192}) row("cross", q, 512, 0.5 / (1 + 400.0 / q));
  for (int seq : {4096, 8192, 16384, 32768}) row("causal", seq, seq, 0.6 / (1 + 1000.0 / seq));
  doc["results"].push_back({{"key", "attention_default"}, {"backend", "cudnn"}, {"kernel", "cudnn_generated_fort_native_sdpa_sm90"}});
  const Calibration c = calibrate({{"sdpa.json", doc}}, topo);
  CHECK(c.params.attention.attention_efficiency == doctest::Approx(0.66).epsilon(1e-9));
  CHECK(c.params.attention.cross_attention_q0 == doctest::Approx(400).epsilon(1e-6));  // the causal rows are not cross-attention
  // Over the sequence: efficiency / (1 + s0 / seq_q), recovered.
  CHECK(c.params.attention.causal_attention_efficiency == doctest::Approx(0.6).epsilon(1e-6));
  CHECK(c.params.attention.causal_attention_s0 == doctest::Approx(1000).epsilon(1e-6));
  CHECK(c.params.attention.rates_for(AttnBackend::Cudnn).causal_s0 == doctest::Approx(1000).epsilon(1e-6));
  CHECK(replayed_exactly(doc, topo, c.params, [](const Comparison& cmp) { return cmp.what.rfind("causal", 0) == 0; }) == 4);
  const ModelParams back = round_trip(c.params, "osim-attention-causal.yaml");
  CHECK(back.attention.causal_attention_efficiency == doctest::Approx(0.6).epsilon(1e-4));
  CHECK(back.attention.causal_attention_s0 == doctest::Approx(1000).epsilon(1e-3));
  CHECK(back.attention.rates_for(AttnBackend::Cudnn).causal_s0 == doctest::Approx(1000).epsilon(1e-3));
}
