// Compute: kernel times from the compute model, SM shares.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gpu/as_run.hpp"
#include "gpu/executor.hpp"
#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

TEST_CASE("kernel time from the compute model") {
  hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  ModelParams p;
  Op op;
  op.kind = OpKind::Kernel;
  op.gemm = GemmShape{4096, 4096, 4096};
  // 2*4096^3 = 137.4 GFLOP at 100 TFLOP/s * 0.75
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(2.0 * 4096.0 * 4096 * 4096 / 75e12 * 1e3).epsilon(1e-9));
  op.gemm.reset();
  op.attention = AttentionShape{1, 8, 1000, 1000, 128};  // 4*8*1000*1000*128 FLOPs at 60 TFLOP/s
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(4.0 * 8 * 1000 * 1000 * 128 / 60e12 * 1e3).epsilon(1e-6));
  op.attention.reset();
  op.dtype = DType::FP8;
  op.flops = 1e12;  // no fp8 rate in this topology
  CHECK_THROWS_AS(kernel_time(op, gpu, p), InputError);
}

TEST_CASE("an fp8 GEMM runs at the fp8 peak times the bf16 efficiency of its shape times gemm_fp8_ratio") {
  const std::string topo = std::string(kTopo).replace(std::string(kTopo).find("peak_tflops: {bf16: 100}"), 24, "peak_tflops: {bf16: 100, fp8: 200}");
  hw::Topology t(hw::parse_topology_string(topo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  ModelParams p;
  p.gemm.gemm_shapes = {{4096, 4096, 4096, 0.8}};
  Op op;
  op.kind = OpKind::Kernel;
  op.gemm = GemmShape{4096, 4096, 4096};
  const double flops = 2.0 * 4096.0 * 4096 * 4096;
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / (100e12 * 0.8) * 1e6).epsilon(1e-9));
  op.dtype = DType::FP8;
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / (200e12 * 0.8) * 1e6).epsilon(1e-9));  // ratio 1: alike
  p.gemm.fp8_efficiency_ratio = 0.9;
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / (200e12 * 0.72) * 1e6).epsilon(1e-9));
  op.dtype = DType::BF16;  // bf16 GEMMs keep theirs
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(flops / (100e12 * 0.8) * 1e6).epsilon(1e-9));
}

TEST_CASE("kernels on two streams share the SMs") {
  Sim s(R"(name: share
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, duration: 100 us}
      - {op: kernel, stream: b, duration: 100 us}
      - {op: kernel, stream: b, duration: 100 us, sm_limit: 50}
)");
  // Both want all 100 SMs: half speed each until both end at 200 us.
  CHECK(s.op(0, 0).end == Time::from_us(200));
  CHECK(s.op(0, 1).end == Time::from_us(200));
  // Then the 50-SM kernel alone at full speed.
  CHECK(s.op(0, 2).end == Time::from_us(300));
}

TEST_CASE("a kernel with an SM margin runs on the SMs it leaves the others, and a collective's SMs come from the margin first") {
  // 100 SMs; 10 left to others: the kernel takes 100/90 of its time alone.
  Sim alone(R"(name: margin
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, duration: 90 us, sm_margin: 10}
)");
  CHECK(alone.op(0, 0).end.us() == doctest::Approx(100.0));
  // The schedule writes it back as it was read.
  CHECK(to_yaml(alone.sched).find("sm_margin: 10") != std::string::npos);
  // Beside a collective of 16 channels: slowed by base + per channel x (16 - 10), not x 16.
  const std::string coll = R"(name: beside
ranks: 2
streams: [a, b]
groups: [{name: g, ranks: [0, 1]}]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_reduce, stream: b, group: g, bytes: 4 GiB, channels: 16}
      - {op: kernel, stream: a, flops: 1e9, MARGIN}
  - rank: 1
    ops:
      - {op: collective, kind: all_reduce, stream: b, group: g, bytes: 4 GiB, channels: 16}
)";
  ModelParams p = quiet();
  p.interference.gemm_slowdown_base = 0.04;
  p.interference.gemm_slowdown_per_channel = 0.0025;
  auto kernel_us = [&](const std::string& margin) {
    std::string s = coll;
    s.replace(s.find("MARGIN"), 6, margin);
    const Sim x(s, p);
    return (x.op(0, 1).end - x.op(0, 1).start).us();
  };
  Op k;
  k.kind = OpKind::Kernel;
  k.flops = 1e9;
  const hw::Topology topo(hw::parse_topology_string(kTopo, "topo.yaml"));
  const double solo = kernel_time(k, topo.node(topo.find("gpu0")), p).us();  // alone, on every SM
  CHECK(kernel_us("sm_margin: 10") == doctest::Approx(solo * 100 / 90 / (1 - (0.04 + 0.0025 * 6))).epsilon(1e-6));
  CHECK(kernel_us("sm_limit: 100") == doctest::Approx(solo / (1 - (0.04 + 0.0025 * 16))).epsilon(1e-6));
  // More SMs left than the GPU has: an error naming the kernel.
  CHECK(error_of("name: m\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, name: k, stream: a, duration: 1 us, "
                 "sm_margin: 100}\n")
            .find("kernel 'k' leaves 100 SMs to others (sm_margin) but gpu0 has 100") != std::string::npos);
}

TEST_CASE("a framework program's memory-bound kernels run at the framework's own elementwise rate where the calibration has it") {
  // 1 GB at 1,000 GB/s: 0.85 of it (hbm_efficiency) in a plain schedule, 0.6 of it with framework: pytorch.
  const std::string body = R"(ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, bytes: 1 GB}
      - {op: kernel, stream: a, gemm: {m: 4096, n: 4096, k: 4096}}
)";
  ModelParams p = quiet();
  p.memory.framework_hbm_efficiency = 0.6;
  const Sim plain("name: plain\n" + body, p);
  const Sim torch("name: torch\nsettings: {framework: pytorch}\n" + body, p);
  CHECK((plain.op(0, 0).end - plain.op(0, 0).start).ms() == doctest::Approx(1.0 / 0.85).epsilon(1e-9));
  CHECK((torch.op(0, 0).end - torch.op(0, 0).start).ms() == doctest::Approx(1.0 / 0.6).epsilon(1e-9));
  // GEMMs keep the bench's rates.
  CHECK((torch.op(0, 1).end - torch.op(0, 1).start) == (plain.op(0, 1).end - plain.op(0, 1).start));
}

namespace {
// One kernel of 1 GB HBM traffic (and `keys`) in a framework program, its time in ms.
double framework_kernel_ms(const ModelParams& p, const std::string& keys) {
  const Sim s(
      "name: k\nsettings: {framework: pytorch}\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: a, bytes: 1 "
      "GB" +
          keys + "}\n",
      p);
  return (s.op(0, 0).end - s.op(0, 0).start).ms();
}
}  // namespace

TEST_CASE("a framework program's memory-bound kernel runs at its access kind's rate: norms, broadcasts, strided views and roll") {
  ModelParams p = quiet();
  p.memory.framework_hbm_efficiency = 0.8;
  p.memory.framework_norm_efficiency = 0.5;
  p.memory.framework_roll_efficiency = 0.2;
  auto ms = [&](const std::string& keys) { return framework_kernel_ms(p, keys); };
  CHECK(ms("") == doctest::Approx(1.0 / 0.8).epsilon(1e-9));
  CHECK(ms(", access: norm") == doctest::Approx(1.0 / 0.5).epsilon(1e-9));
  CHECK(ms(", access: roll") == doctest::Approx(1.0 / 0.2).epsilon(1e-9));
  CHECK(ms(", access: broadcast") == doctest::Approx(1.0 / 0.8).epsilon(1e-9));  // not calibrated: the elementwise rate
  CHECK(error_of("name: k\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: a, flops: 1e9, access: norm}\n")
            .find("applies to a kernel of HBM bytes only") != std::string::npos);
}

TEST_CASE("a norm over short rows runs at the table's rate for its row length and kind, interpolated in log(row)") {
  ModelParams p = quiet();
  p.memory.framework_norm_efficiency = 0.5;
  p.memory.framework_norm_rows = {{{128, 0.1, 0.2}, {512, 0.3, 0.4}, {2048, 0.45, 0.6}}};
  auto ms = [&](const std::string& keys) { return framework_kernel_ms(p, keys); };
  CHECK(ms(", access: rms_norm, row: 128") == doctest::Approx(1.0 / 0.2).epsilon(1e-9));
  CHECK(ms(", access: layer_norm, row: 128") == doctest::Approx(1.0 / 0.1).epsilon(1e-9));
  CHECK(ms(", access: norm, row: 128") == doctest::Approx(1.0 / 0.15).epsilon(1e-9));  // either kind: their mean
  // 256 lies halfway between 128 and 512 in log(row).
  CHECK(ms(", access: rms_norm, row: 256") == doctest::Approx(1.0 / 0.3).epsilon(1e-9));
  // Beyond the table: its last (or first) row.
  CHECK(ms(", access: layer_norm, row: 8192") == doctest::Approx(1.0 / 0.45).epsilon(1e-9));
  CHECK(ms(", access: rms_norm, row: 16") == doctest::Approx(1.0 / 0.2).epsilon(1e-9));
  // No row named: the norms' rate, whatever the kind.
  CHECK(ms(", access: rms_norm") == doctest::Approx(1.0 / 0.5).epsilon(1e-9));
  // Two norms of the same bytes and kind in one program: each at its own row's rate.
  const Sim both(
      "name: k\nsettings: {framework: pytorch}\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n"
      "      - {op: kernel, stream: a, bytes: 1 GB, access: rms_norm, row: 128}\n"
      "      - {op: kernel, stream: a, bytes: 1 GB, access: rms_norm, row: 2048}\n",
      p);
  CHECK((both.op(0, 0).end - both.op(0, 0).start).ms() == doctest::Approx(1.0 / 0.2).epsilon(1e-9));
  CHECK((both.op(0, 1).end - both.op(0, 1).start).ms() == doctest::Approx(1.0 / 0.6).epsilon(1e-9));
  // A row is a norm's.
  CHECK(
      error_of(
          "name: k\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: a, bytes: 1 GB, access: roll, row: 128}\n")
          .find("give it with access: norm, layer_norm or rms_norm") != std::string::npos);
  CHECK(error_of(
            "name: k\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: a, bytes: 1 GB, access: norm, row: 0}\n")
            .find("must be 1 .. 2^31-1") != std::string::npos);
}

TEST_CASE("framework_kernels: PyTorch's kernel rates without its host costs (imported traces)") {
  ModelParams p = quiet();
  p.memory.framework_hbm_efficiency = 0.6;
  p.overheads.framework_op_call = Time::from_us(20);
  const std::string body = "ranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: a, bytes: 1 GB}\n";
  const Sim kernels("name: k\nsettings: {framework_kernels: true}\n" + body, p);
  const Sim plain("name: k\n" + body, p);
  const Sim torch("name: k\nsettings: {framework: pytorch}\n" + body, p);
  CHECK((kernels.op(0, 0).end - kernels.op(0, 0).start).ms() == doctest::Approx(1.0 / 0.6).epsilon(1e-9));
  CHECK(kernels.op(0, 0).returned == plain.op(0, 0).returned);                    // the host's cost as without a framework
  CHECK(torch.op(0, 0).returned - plain.op(0, 0).returned == Time::from_us(20));  // PyTorch's op on top
  CHECK(error_of("name: k\nsettings: {framework: pytorch, framework_kernels: false}\n" + body).find("a PyTorch program's kernels are PyTorch's") !=
        std::string::npos);
}
