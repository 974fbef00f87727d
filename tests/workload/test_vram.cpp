// VRAM of a workload: its plan (activations, the reserve over them, what
// sits outside the blocks) against its closed form, and what its runs hold.
#include <doctest/doctest.h>

#include <cmath>

#include "gpu/sim_fixture.hpp"
#include "workload/dit.hpp"

using namespace osim;
using namespace osim::test;

TEST_CASE("a workload's memory: activations from the block's expression, the reserve over them, the models outside the blocks") {
  // Wan2.1 14B at 32,760 tokens on one GPU: activations 2 x (32760 x (11 x 5120 + 2 x 13824) + 3 x 512 x 5120) bytes.
  const DitWorkload w = parse_workload_string("name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\n", "w.yaml");
  const MemoryPlan plan = memory_plan(w);
  CHECK(plan.activations == 2LL * (32760LL * (11 * 5120 + 2 * 13824) + 3LL * 512 * 5120));
  CHECK(plan.reserve == std::llround(0.2642 * static_cast<double>(plan.activations)));  // the default allocator_reserve
  REQUIRE(plan.outside.size() == 3);
  // umT5-XXL: 24 layers of 4 x 4096^2 + 3 x 4096 x 10240, and 256,384 x 4096 embeddings (5.68 B), bf16.
  CHECK(plan.outside[0].name == "umt5-xxl");
  CHECK(plan.outside[0].weights == 2LL * (24LL * (4 * 4096 * 4096LL + 3 * 4096 * 10240LL) + 256384LL * 4096));
  CHECK(plan.outside[0].resident);  // no offloading: resident (memory.outside: auto)
  // Offloaded weights take their encoders off the GPU between runs; the DiT's embeddings stay.
  const MemoryPlan off = memory_plan(
      parse_workload_string("name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\noffload: {policy: layerwise, prefetch_size: 2}\n", "w.yaml"));
  CHECK_FALSE(off.outside[0].resident);
  CHECK(off.outside[2].name == "embeddings");
  CHECK(off.outside[2].resident);
  // The math backend materialises the scores: 2 x heads x q x kv more at its largest attention.
  const MemoryPlan math =
      memory_plan(parse_workload_string("name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\ncompute: {attention_backend: math}\n", "w.yaml"));
  CHECK(math.activations - plan.activations == 2LL * 2 * 40 * 32760 * 32760);
}

TEST_CASE("a run's peak VRAM is the sum of its parts at the peak, and a block without activations: is counted from its ops") {
  // One block: a GEMM of 1,000 x 2,000 from 1,000 x 1,000 (its input and output, 6 MB in bf16) beside the block's input (2 MB).
  const DitWorkload w = parse_workload_string(R"(name: w
model:
  dims: {hidden: 1000}
  blocks:
    - {name: b, count: 2, params: 2*hidden*hidden, ops: [{gemm: up, m: tokens, n: 2*hidden, k: hidden}]}
tokens: 1000
)",
                                              "w.yaml");
  CHECK(memory_plan(w).activations == 2 * (1000 * 1000 + 1000 * 2000) + 2 * 1000 * 1000);
  const hw::Topology topo(hw::parse_topology_string(kTopo, "topo.yaml"));
  const ExecResult r = execute(generate_schedule(w), topo, w.params);
  const auto& parts = r.ranks[0].peak_parts;
  Bytes sum = 0;
  for (Bytes b : parts) sum += b;
  CHECK(sum == r.ranks[0].peak_vram);
  CHECK(parts[static_cast<size_t>(MemPart::Weights)] == 2 * 2 * 2000000);  // both blocks resident
  CHECK(parts[static_cast<size_t>(MemPart::Runtime)] == w.params.vram.cuda_context);
  CHECK(parts[static_cast<size_t>(MemPart::Workspace)] == w.params.vram.gemm_workspace);
}

TEST_CASE("a workload on several GPUs holds NCCL's buffers for each of its communicators") {
  // Ulysses 4 with CFG in parallel on 8 GPUs of a DGX H100 (NVSwitch): per rank
  // the Ulysses communicator (3 peers) and the CFG pair's (1 peer).
  const DitWorkload w = parse_workload_string(
      "name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\nsteps: 1\ncfg: parallel\n"
      "parallelism: {ulysses: 4}\nmemory: {outside: none}\n",
      "w.yaml");
  const hw::Topology dgx(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const ExecResult r = execute(generate_schedule(w), dgx, w.params);
  const VramParams& v = w.params.vram;
  // The CFG pair runs a gather: its collectives' channels, not a peer's buffers.
  for (const RankSummary& s : r.ranks)
    CHECK(s.peak_parts[static_cast<size_t>(MemPart::Comm)] == v.nccl_process + 2 * v.nccl_communicator + 3 * v.nccl_peer + v.nccl_collective);
  // Ulysses 2 x ring 2: the Ulysses pair's all-to-all and the ring's exchange (1 peer each); ring 4: its
  // exchange's 2 neighbours, a send and a receive connection: one peer's worth too.
  const DitWorkload u = parse_workload_string(
      "name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\nsteps: 1\ncfg: none\n"
      "parallelism: {ulysses: 2, ring: 2}\nmemory: {outside: none}\n",
      "w.yaml");
  for (const RankSummary& s : execute(generate_schedule(u), dgx, u.params).ranks)
    CHECK(s.peak_parts[static_cast<size_t>(MemPart::Comm)] == v.nccl_process + 2 * v.nccl_communicator + (1 + 1) * v.nccl_peer);
  const DitWorkload ring4 = parse_workload_string(
      "name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\nsteps: 1\ncfg: none\n"
      "parallelism: {ring: 4}\nmemory: {outside: none}\n",
      "w.yaml");
  for (const RankSummary& s : execute(generate_schedule(ring4), dgx, ring4.params).ranks)
    CHECK(s.peak_parts[static_cast<size_t>(MemPart::Comm)] == v.nccl_process + v.nccl_communicator + v.nccl_peer);
  // Tensor parallel 2 x Ulysses 2: the TP pair runs all-reduces (collectives), the Ulysses pair all-to-alls.
  const DitWorkload tp = parse_workload_string(
      "name: w\nmodel: {preset: llama3-8b, dims: {layers: 2}}\ntokens: 4096\nsteps: 1\n"
      "parallelism: {tp: 2, ulysses: 2}\nmemory: {outside: none}\n",
      "w.yaml");
  for (const RankSummary& s : execute(generate_schedule(tp), dgx, tp.params).ranks)
    CHECK(s.peak_parts[static_cast<size_t>(MemPart::Comm)] == v.nccl_process + 2 * v.nccl_communicator + v.nccl_peer + v.nccl_collective);
}
