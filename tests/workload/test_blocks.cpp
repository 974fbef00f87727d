// Models written as blocks: each preset's parameters and FLOPs against a
// hand count of its architecture, tensor parallelism's groups and
// collectives, a model of the user's own blocks, and bad input.
#include <doctest/doctest.h>

#include <string>

#include "workload/dit.hpp"

using namespace osim;

namespace {

DitWorkload workload(const std::string& model, const std::string& rest = "tokens: 4096\n") {
  return parse_workload_string("name: w\nmodel: " + model + "\n" + rest, "w.yaml");
}

std::string error_of(const std::string& model, const std::string& rest = "tokens: 4096\n") {
  try {
    generate_schedule(workload(model, rest));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

int count_label(const Schedule& s, int rank, const std::string& suffix) {
  int n = 0;
  for (const Op& op : *s.programs[static_cast<size_t>(rank)].ops)
    n += op.label.size() >= suffix.size() && op.label.compare(op.label.size() - suffix.size(), suffix.size(), suffix) == 0;
  return n;
}

}  // namespace

TEST_CASE("each preset's parameters and FLOPs per forward are its architecture's hand count") {
  SUBCASE("Wan2.1 14B: 40 blocks of 8h^2 + 2hf; self-attention over all tokens, cross-attention to 512 text tokens") {
    const double h = 5120, f = 13824, S = 32760, T = 512;
    const ForwardCost c = workload_cost(workload("{preset: wan2.1-14b}", "tokens: 32760\n"));
    CHECK(c.params == 40 * (8 * h * h + 2 * h * f));  // 14.05 B
    // GEMMs: q,k,v,o + cross q,o over S tokens, cross k,v over the text, FFN up and down.
    CHECK(c.gemm_flops == doctest::Approx(40 * (2 * S * (4 * h * h + 2 * h * h + 2 * h * f) + 2 * T * 2 * h * h)).epsilon(1e-12));
    CHECK(c.attention_flops == doctest::Approx(40 * 4 * 40 * (S * S + S * T) * 128).epsilon(1e-12));
  }
  SUBCASE("Flux.1-dev: 19 double-stream blocks of 36h^2, 38 single-stream of 15h^2 (11.8 B; 11.9 B with its embedders)") {
    const double h = 3072, f = 12288, S = 4096, T = 512;
    const ForwardCost c = workload_cost(workload("{preset: flux.1-dev}"));
    // Double: per stream adaLN 6h^2, qkv 3h^2, proj h^2, MLP 8h^2. Single: adaLN 3h^2, linear1 7h^2, linear2 5h^2.
    CHECK(c.params == 19 * 36 * h * h + 38 * 15 * h * h);
    CHECK(c.params == doctest::Approx(11.834e9).epsilon(1e-3));
    const double dbl = 2 * (S + T) * (3 * h * h + h * h + 2 * h * f) + 2 * 2 * 6 * h * h;
    const double sgl = 2 * (S + T) * (h * (3 * h + f) + (h + f) * h) + 2 * 3 * h * h;
    CHECK(c.gemm_flops == doctest::Approx(19 * dbl + 38 * sgl).epsilon(1e-12));
    CHECK(c.attention_flops == doctest::Approx(57 * 4 * 24 * (S + T) * (S + T) * 128).epsilon(1e-12));
  }
  SUBCASE("HunyuanVideo: 20 dual-stream and 40 single-stream blocks of the same widths (12.5 B; 13 B with refiner and embedders)") {
    const double h = 3072;
    CHECK(workload_cost(workload("{preset: hunyuanvideo}")).params == 20 * 36 * h * h + 40 * 15 * h * h);
  }
  SUBCASE("Llama-3-8B and 70B: GQA attention, SwiGLU MLP (7.0 B and 68.5 B in the layers; 8.0 B and 70.6 B with the embeddings)") {
    auto layers = [](double h, double f, double kv, double n) { return n * (h * (h + 2 * kv * 128) + h * h + 3 * h * f); };
    CHECK(workload_cost(workload("{preset: llama3-8b}")).params == layers(4096, 14336, 8, 32));
    CHECK(workload_cost(workload("{preset: llama3-70b}")).params == layers(8192, 28672, 8, 80));
    // Tensor parallel 8: each rank holds an eighth and does an eighth of the GEMMs; causal attention computes the
    // query-key pairs on and below the diagonal, 8192 x 8193 / 2.
    const ForwardCost c = workload_cost(workload("{preset: llama3-70b}", "tokens: 8192\nparallelism: {tp: 8}\n"));
    CHECK(c.params == layers(8192, 28672, 8, 80) / 8);
    CHECK(c.gemm_flops == doctest::Approx(2 * 8192 * layers(8192, 28672, 8, 80) / 8).epsilon(1e-12));
    CHECK(c.attention_flops == doctest::Approx(80 * 4 * (64 / 8) * (8192 * 8193 / 2.0) * 128).epsilon(1e-12));
  }
}

TEST_CASE("tensor parallelism: groups of consecutive ranks, an all-gather and a reduce-scatter per GEMM pair, chunked overlap") {
  const Schedule s = generate_schedule(workload("{preset: llama3-8b, dims: {layers: 2}}", "tokens: 4096\nparallelism: {tp: 2, ulysses: 2}\n"));
  REQUIRE(s.ranks() == 4);
  REQUIRE(s.groups.size() == 4);
  CHECK(s.groups[0].name == "sp0.0");
  CHECK(s.groups[0].ranks == std::vector<int>{0, 2});
  CHECK(s.groups[1].ranks == std::vector<int>{1, 3});
  CHECK(s.groups[2].name == "tp0");
  CHECK(s.groups[2].ranks == std::vector<int>{0, 1});
  CHECK(s.groups[3].ranks == std::vector<int>{2, 3});
  for (int r = 0; r < 4; ++r) {
    CHECK(count_label(s, r, " tp ag attn") == 2);
    CHECK(count_label(s, r, " tp rs mlp") == 2);
    CHECK(count_label(s, r, " a2a q") == 2);
  }
  const Op* rs = nullptr;
  for (const Op& op : *s.programs[3].ops)
    if (op.label == "l1 tp rs mlp") rs = &op;
  REQUIRE(rs);
  CHECK(rs->coll == CollKind::ReduceScatter);
  CHECK(s.programs[3].group_of(*rs) == 3);  // tp1: ranks 2 and 3
  CHECK(rs->bytes == 2048LL * 4096 * 2);    // the input: the local tokens' activations, bf16
  // Causal attention over every token, the heads split over ulysses x tp.
  const Op* attn = nullptr;
  for (const Op& op : *s.programs[3].ops)
    if (op.attention) attn = &op;
  REQUIRE(attn);
  CHECK(attn->attention->causal);
  CHECK(attn->attention->seq_q == 4096);
  CHECK(attn->attention->seq_kv == 4096);
  CHECK(attn->attention->heads == 32 / 4);
  // Without tensor parallelism the tied collectives are not there at all.
  CHECK(count_label(generate_schedule(workload("{preset: llama3-8b, dims: {layers: 2}}")), 0, " tp ag attn") == 0);
  // Chunked: per tied collective tp pieces on the stream "tp comm", each GEMM piece m / tp.
  const Schedule c =
      generate_schedule(workload("{preset: llama3-8b, dims: {layers: 2}}", "tokens: 4096\nparallelism: {tp: 2, tp_overlap: chunked}\n"));
  REQUIRE(c.streams.size() == 3);
  CHECK(c.streams[2].name == "tp comm");
  int ag = 0, gemm = 0;
  for (const Op& op : *c.programs[0].ops) {
    if (op.label.find(" tp ag attn ") != std::string::npos) {
      ++ag;
      CHECK(op.stream == 2);
      CHECK(op.bytes == 4096LL * 4096 * 2 / 2);
    }
    if (op.label == "l0 qkv 1") {
      ++gemm;
      CHECK(op.gemm->m == 2048);
    }
  }
  CHECK(ag == 2 * 2);  // 2 layers x 2 pieces
  CHECK(gemm == 1);
  CHECK(error_of("{preset: llama3-8b}", "tokens: 4095\nparallelism: {tp: 2, tp_overlap: chunked}\n").find("chunks must divide m") !=
        std::string::npos);
}

TEST_CASE("tensor parallelism as a ring exchange: tp GEMM pieces, tp - 1 sends to the next rank, the reduce-scatter's partial sums added") {
  const Schedule s = generate_schedule(
      workload("{preset: llama3-8b, dims: {layers: 1}}", "tokens: 4096\nparallelism: {tp: 4, tp_overlap: ring_exchange, tp_comm_sms: 16}\n"));
  REQUIRE(s.streams.size() == 4);
  CHECK(s.streams[2].name == "tp send");
  CHECK(s.streams[3].name == "tp recv");
  // Rank 1 of the group tp0 = ranks 0..3: sends to 2, receives from 0.
  int sends = 0, recvs = 0, pieces = 0, adds = 0;
  for (const Op& op : *s.programs[1].ops) {
    if (op.kind == OpKind::Collective && op.coll == CollKind::Send) {
      ++sends;
      CHECK(s.programs[1].peer_of(op) == 2);
      CHECK(op.stream == 2);
      CHECK(op.channels == 16);
      CHECK(op.bytes == 4096LL * 4096 * 2 / 4);  // one rank's share of the all-gather / reduce-scatter
    }
    if (op.kind == OpKind::Collective && op.coll == CollKind::Recv) {
      ++recvs;
      CHECK(s.programs[1].peer_of(op) == 0);
    }
    if (op.gemm && op.label.rfind("l0 qkv ", 0) == 0) {
      ++pieces;
      CHECK(op.gemm->m == 1024);
      CHECK(op.sm_limit == -16);  // leaves the exchange its 16 SMs
    }
    adds += op.label.find(" tp rs attn add ") != std::string::npos;
  }
  CHECK(sends == 4 * 3);  // four tied GEMMs, 3 exchanges each
  CHECK(recvs == 4 * 3);
  CHECK(pieces == 4);
  CHECK(adds == 3);  // the attention output's reduce-scatter: a partial added at each step but the first
  CHECK(error_of("{preset: llama3-8b}", "tokens: 4096\nparallelism: {tp: 2, tp_comm_sms: 8}\n").find("applies with tp_overlap") != std::string::npos);
  CHECK(error_of("{preset: llama3-8b}", "tokens: 4094\nparallelism: {tp: 4, tp_overlap: ring_exchange}\n").find("ring_exchange splits m") !=
        std::string::npos);
}

TEST_CASE("a model of the user's own blocks") {
  const std::string model = R"({dims: {hidden: 1024, heads: 8, head_dim: 128, depth: 3},
  blocks: [{name: b, count: depth, params: 4*hidden*hidden, ops: [
    {gemm: qkv, m: local, n: 3*hidden, k: hidden},
    {all_to_all: a2a, group: ulysses, bytes: local*hidden*comm_bytes},
    {attention: attn, heads: heads/ulysses, q: tokens, kv: tokens},
    {memory: norm, bytes: 2*local*hidden*act_bytes, when: depth > 5}]}]})";
  const DitWorkload w = workload(model, "tokens: 4096\nparallelism: {ulysses: 2}\noffload: {policy: layerwise, prefetch_size: 1}\n");
  CHECK(w.model.preset == "blocks");
  CHECK(w.steps == 40);
  const Schedule s = generate_schedule(w);
  CHECK(count_label(s, 0, " qkv") == 3 * 80);  // 3 blocks, 40 steps x 2 forwards (CFG serial)
  CHECK(count_label(s, 0, " norm") == 0);      // `when` false
  for (const Op& op : *s.programs[0].ops)
    if (op.label == "h2d e0.f0.l0") CHECK(op.bytes == 4LL * 1024 * 1024 * 2);
  // Errors name the file, line and the names known.
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: locl, n: 1, k: 1}]}]}").find("w.yaml:2:") !=
        std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: locl, n: 1, k: 1}]}]}")
            .find("unknown variable 'locl'") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: 1, n: 1, k: 1, bytes: 3}]}]}")
            .find("does not apply to a gemm op") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, memory: m, m: 1, n: 1, k: 1}]}]}")
            .find("exactly one of") != std::string::npos);
  CHECK(error_of("{dims: {tokens: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{memory: m, bytes: 1}]}]}").find("is the job's") !=
        std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{attention: a, heads: 1, q: 1, kv: 1}]}]}").find("head_dim") !=
        std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: hidden - 8, n: 1, k: 1}]}]}").find("comes out 0") !=
        std::string::npos);
  CHECK(error_of("{preset: wan2.1-14b}", "tokens: 4096\nparallelism: {tp: 2}\n").find("no tensor-parallel split") != std::string::npos);
  CHECK(error_of("{preset: llama3-8b}", "tokens: 4096\nparallelism: {tp: 3}\n").find("must divide the 32 attention heads") != std::string::npos);
  CHECK(error_of("{preset: flux.1-dev, hidden: 1024}").find("set it under dims:") != std::string::npos);
  CHECK(error_of("{preset: flux.1-dev, blocks: 3}").find("block counts are dims") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{memory: m, bytes: 1, access: roll, row: 8}]}]}")
            .find("give it with access: norm, layer_norm or rms_norm") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: 1, n: 1, k: 1, row: 8}]}]}")
            .find("it applies to memory ops") != std::string::npos);
}

TEST_CASE("a norm op names the row it normalises: Flux's q/k RMS norms over each head's head_dim") {
  const Schedule s = generate_schedule(workload("{preset: flux.1-dev, dims: {double_blocks: 1, single_blocks: 1}}"));
  int qk = 0;
  for (const Op& op : *s.programs[0].ops)
    if (op.label.ends_with(" qk norm")) {
      ++qk;
      CHECK(op.access == Access::RmsNorm);
      CHECK(op.norm_row == 128);  // 3,072 / 24 heads
    } else if (op.label.ends_with(" norm")) {
      CHECK(op.norm_row == 0);  // adaLN's layer norm over the hidden size: no row named
    }
  CHECK(qk > 0);
}

TEST_CASE("ring attention and USP: ring steps of chunks, K/V passed to the next ring rank, Ulysses groups within a ring rank") {
  const DitWorkload w = workload("{preset: wan2.1-14b, blocks: 2}", "tokens: 4096\nsteps: 1\ncfg: none\nparallelism: {ulysses: 2, ring: 2}\n");
  REQUIRE(w.ranks() == 4);
  const Schedule s = generate_schedule(w);
  REQUIRE(s.streams.size() == 4);  // compute, copy, ring send, ring recv
  REQUIRE(s.groups.size() == 4);   // two Ulysses groups, then two rings (their communicators: NCCL's buffers)
  CHECK(s.groups[0].name == "sp0.r0");
  CHECK(s.groups[0].ranks == std::vector<int>{0, 1});
  CHECK(s.groups[1].ranks == std::vector<int>{2, 3});
  CHECK(s.groups[3].name == "ring0.u1");
  CHECK(s.groups[3].ranks == std::vector<int>{1, 3});
  // Rank 1 (ring rank 0, Ulysses rank 1): two chunks a block, one K/V exchange with rank 3 both ways.
  const Op* chunk = nullptr;
  const Op* send = nullptr;
  const Op* recv = nullptr;
  for (const Op& op : *s.programs[1].ops) {
    if (op.label == "l0 self-attn 1") chunk = &op;
    if (op.label == "l0 self-attn kv send 0") send = &op;
    if (op.label == "l0 self-attn kv recv 0") recv = &op;
  }
  REQUIRE(chunk);
  REQUIRE(send);
  REQUIRE(recv);
  CHECK(chunk->attention->heads == 20);  // 40 heads / Ulysses 2
  CHECK(chunk->attention->seq_q == 2048);
  CHECK(chunk->attention->seq_kv == 2048);
  CHECK(s.programs[1].peer_of(*send) == 3);  // by role: the next ring rank
  CHECK(s.programs[1].peer_of(*recv) == 3);
  CHECK(send->bytes == 2LL * 2048 * 20 * 128 * 2);  // K and V of 2,048 tokens, 20 heads, bf16
  CHECK(count_label(s, 1, " kv send 0") == 2);
  CHECK(count_label(s, 1, " kv send 1") == 0);  // the last step passes nothing on
  // The all-to-alls carry a ring rank's share: 4,096 / (2 x 2) tokens.
  for (const Op& op : *s.programs[1].ops)
    if (op.label == "l0 a2a q") CHECK(op.bytes == 1024LL * 5120 * 2);
  // A rank's attention FLOPs: 1/ring of Ulysses alone's, as the chunks add up.
  const double self = 40 * 4.0 * 20 * 4096 * 4096 * 128;  // Ulysses 2 alone: 20 heads over all 4,096 tokens
  const ForwardCost c = workload_cost(workload("{preset: wan2.1-14b}", "tokens: 4096\nparallelism: {ulysses: 2, ring: 2}\n"));
  const double cross = 40 * 4.0 * 40 * 1024 * 512 * 128;  // the cross-attention: a ring rank's 1,024 queries, all heads
  CHECK(c.attention_flops == doctest::Approx(self / 2 + cross).epsilon(1e-12));
  CHECK(error_of("{preset: wan2.1-14b}", "tokens: 4094\nparallelism: {ulysses: 1, ring: 4}\n").find("ulysses x ring = 4") != std::string::npos);
}

TEST_CASE("a block op's views: the framework calls before it that launch nothing, on the first GPU op emitted for it") {
  auto views = [](const Schedule& s) {
    int n = 0;
    for (const Op& op : *s.programs[0].ops) n += op.views;
    return n;
  };
  // The Wan-shaped block as its reference code writes it
  // (validate/programs/dit_offload.py): 14 weight views, a split into 3,
  // 6 and 2 around the attention, a split into 2, 6 and 2 around the
  // cross-attention; with Ulysses 4 more around each of its 4 all-to-alls.
  const std::string dit = "{preset: custom, blocks: 8, hidden: 3072, ffn: 8192, heads: 24, head_dim: 128, text_tokens: 512}";
  const std::string rest = "tokens: 4096\nsteps: 1\ncfg: none\nruntime: {framework: pytorch}\n";
  CHECK(views(generate_schedule(workload(dit, rest))) == 8 * 35);
  CHECK(views(generate_schedule(workload(dit, rest + "parallelism: {ulysses: 2}\n"))) == 8 * (35 + 16));
  // A user's block: an expression; over a ring attention, only its first step's kernel or send carries them.
  const std::string own = R"({dims: {hidden: 1024, heads: 8, head_dim: 128},
  blocks: [{name: b, count: 2, params: 4*hidden*hidden, ops: [
    {gemm: qkv, m: local, n: 3*hidden, k: hidden, views: 1 + ulysses},
    {attention: attn, heads: heads/ulysses, q: tokens, kv: tokens, ring: true, views: 6}]}]})";
  const Schedule ring = generate_schedule(workload(own, "tokens: 4096\nsteps: 1\ncfg: none\nparallelism: {ring: 2}\n"));
  CHECK(views(ring) == 2 * (2 + 6));
  for (const Op& op : *ring.programs[0].ops)
    if (op.label.find("attn 1") != std::string::npos) CHECK(op.views == 0);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: 1, n: 1, k: 1, views: 256}]}]}")
            .find("views comes out 256") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: 1, n: 1, k: 1, views: -1}]}]}")
            .find("views comes out -1") != std::string::npos);
  // launches: the framework ops a kernel stands for; its pieces under tensor-parallel overlap each stand for as many.
  const Schedule llama = generate_schedule(
      workload("{preset: llama3-8b, dims: {layers: 1}}", "tokens: 4096\nsteps: 1\ncfg: none\nparallelism: {tp: 2, tp_overlap: chunked}\n"));
  int gate_up = 0;
  for (const Op& op : *llama.programs[0].ops)
    if (op.label.find("gate up") != std::string::npos && op.kind == OpKind::Kernel) {
      ++gate_up;
      CHECK(op.launches == 2);
    }
  CHECK(gate_up == 2);  // two chunks
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{gemm: g, m: 1, n: 1, k: 1, launches: 0}]}]}")
            .find("launches comes out 0") != std::string::npos);
  CHECK(error_of("{dims: {hidden: 8}, blocks: [{name: b, count: 1, params: 1, ops: [{all_reduce: r, group: tp, bytes: 8, launches: 2}]}]}")
            .find("the kernel launches a gemm, attention or memory op stands for") != std::string::npos);
}
