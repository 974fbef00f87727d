// The workload's block types evaluated into op templates (generate_templates.hpp).
#include "workload/generate_templates.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "schedule/builder.hpp"

namespace osim::gen {

namespace {
Group group_kind(const std::string& name) { return name == "ulysses" ? Group::Ulysses : name == "tp" ? Group::Tp : Group::Cfg; }
}  // namespace

int group_size(const DitWorkload& w, Group g) {
  return g == Group::Ulysses ? w.ulysses : g == Group::Tp ? w.tp : g == Group::Ring ? w.ring : (w.cfg == CfgMode::Parallel ? 2 : 1);
}

BlockTemplates build_block_templates(const DitWorkload& w, int tp_stream, int tp_send) {
  BlockTemplates out;
  const RepeatVars vars = w.vars();
  const BlockModel& spec = w.model.spec;
  const double es = dtype_bytes(w.model.dtype);
  for (const BlockType& t : spec.blocks) {
    TypeTemplate tt;
    auto e = [&](const std::string& x, const SourceLocation& at, const std::string& what) { return eval_block_expr(x, vars, at, what); };
    const int64_t params = e(t.params, t.where, fmt::format("block '{}' params", t.name));
    if (params < 0) throw InputError(t.where, fmt::format("block '{}': params come out negative ({})", t.name, params));
    tt.bytes = static_cast<Bytes>(static_cast<double>(params) * es);
    if (w.offload == OffloadPolicy::Phase && !t.phases.empty())
      for (const std::string& ph : t.phases)
        tt.units.push_back(static_cast<Bytes>(static_cast<double>(e(ph, t.where, fmt::format("block '{}' phases", t.name))) * es));
    else
      tt.units.push_back(tt.bytes);
    for (const BlockOp& b : t.ops) {
      const std::string what = fmt::format("op '{}' of block '{}'", b.name, t.name);
      if (!b.when.empty() && e(b.when, b.where, what + " when") == 0) continue;
      auto positive = [&](const std::string& x, const char* field) {
        const int64_t v = e(x, b.where, fmt::format("{} {}", what, field));
        if (v < 1) throw InputError(b.where, fmt::format("{}: {} comes out {} (must be at least 1)", what, field, v));
        return v;
      };
      Template tp;
      tp.name = b.name;
      tp.phase = b.phase;
      double quant_elements = 0;  // an fp8 GEMM's input, quantised before it
      switch (b.kind) {
        case BlockOp::Kind::Gemm: {
          const DType dt = w.model.dtype == DType::FP8 ? DType::FP8 : DType::BF16;
          const int64_t m = positive(b.m, "m"), n = positive(b.n, "n"), k = positive(b.k, "k");
          if (dt == DType::FP8) quant_elements = static_cast<double>(m) * static_cast<double>(k);
          tp.op = ops::gemm(kCompute, m, n, k, dt);
          if (b.overlap) {
            const BlockOp::Overlap& o = *b.overlap;
            tp.coll_group = group_kind(o.group);
            if (group_size(w, tp.coll_group) < 2) break;  // a group of one rank: the GEMM alone
            tp.tied = true;
            tp.before = o.coll == CollKind::AllGather;
            tp.coll_name = o.name;
            const int64_t bytes = positive(o.bytes, "overlap bytes");
            tp.coll = ops::collective(kCompute, o.coll, -1, bytes, CollAlgo::Nccl, DType::BF16);
            tp.coll.channels = w.channels;
            const int comm_channels = w.tp_comm_sms > 0 ? w.tp_comm_sms : w.channels;
            if (tp_stream >= 0) {
              const int64_t c = positive(o.chunks, "overlap chunks");
              if (c > 64 || m % c || bytes % c)
                throw InputError(b.where, fmt::format("{}: {} chunks must divide m = {} and the {} bytes, and be at most 64", what, c, m, bytes));
              tp.chunks = static_cast<int>(c);
              tp.gemm_chunk = ops::gemm(kCompute, m / c, n, k, dt);
              tp.coll_chunk = ops::collective(tp_stream, o.coll, -1, bytes / c, CollAlgo::Nccl, DType::BF16);
              tp.coll_chunk.channels = comm_channels;
            } else if (tp_send >= 0) {
              // Ring exchange: one GEMM piece per rank of the group, each
              // beside the send of one rank's share to the next rank.
              const int64_t g = group_size(w, tp.coll_group);
              if (m % g || bytes % g)
                throw InputError(b.where, fmt::format("{}: ring_exchange splits m = {} and the {} bytes over the group's {} ranks: they must divide",
                                                      what, m, bytes, g));
              tp.chunks = static_cast<int>(g);
              tp.gemm_chunk = ops::gemm(kCompute, m / g, n, k, dt);
              tp.coll_chunk = ops::collective(tp_send, CollKind::Send, -1, bytes / g, CollAlgo::Nccl, DType::BF16);
              tp.coll_chunk.channels = comm_channels;
            }
            if (w.tp_comm_sms > 0) tp.gemm_chunk.sm_limit = -w.tp_comm_sms;  // the GEMM pieces leave the communication its SMs
          }
          break;
        }
        case BlockOp::Kind::Attention: {
          const int64_t heads = positive(b.heads, "heads"), q = positive(b.q, "q"), kv = positive(b.kv, "kv");
          if (heads > INT32_MAX || q > INT32_MAX || kv > INT32_MAX) throw InputError(b.where, what + ": heads and sequences must fit 32 bits");
          const int64_t G = b.ring ? w.ring : 1;
          if (q < G || kv < G) throw InputError(b.where, fmt::format("{}: {} queries and {} keys do not split over ring degree {}", what, q, kv, G));
          // Causal over a ring: each step's kernel causal too (a balanced, zigzag split computes about half of every step).
          const AttentionShape a{
              1,       static_cast<int32_t>(heads), static_cast<int32_t>(q / G), static_cast<int32_t>(kv / G), w.model.head_dim, w.attention_backend,
              b.causal};
          tp.op = ops::attention(kCompute, a);
          tp.ring = G > 1;
          tp.kv_bytes = 2 * (kv / G) * heads * w.model.head_dim * 2;  // K and V, bf16
          break;
        }
        case BlockOp::Kind::Memory:
          tp.op = ops::memory_kernel(kCompute, static_cast<double>(positive(b.bytes, "bytes")), {}, b.access);
          if (!b.row.empty()) tp.op.norm_row = static_cast<int32_t>(std::min<int64_t>(positive(b.row, "row"), INT32_MAX));
          break;
        case BlockOp::Kind::Collective: {
          tp.group = group_kind(b.group);
          if (group_size(w, tp.group) < 2) continue;  // a group of one rank: nothing to exchange
          const bool a2a = b.coll == CollKind::AllToAll;
          tp.op = ops::collective(kCompute, b.coll, -1, positive(b.bytes, "bytes"), a2a ? w.all_to_all : CollAlgo::Nccl,
                                  a2a ? w.comm_dtype : DType::BF16);
          tp.op.channels = w.channels;
          break;
        }
      }
      // A count of the host's framework calls, held in a byte: lo .. 255.
      const auto call_count = [&](const std::string& expr, const char* key, int64_t lo, const char* meaning) {
        const int64_t v = e(expr, b.where, what + " " + key);
        if (v < lo || v > 255) throw InputError(b.where, fmt::format("{}: {} comes out {} ({}: {} .. 255)", what, key, v, meaning, lo));
        return static_cast<uint8_t>(v);
      };
      if (!b.launches.empty())  // gemm, attention, memory (read_op): their kernels, each piece of a tied GEMM too
        tp.op.launches = tp.gemm_chunk.launches = call_count(b.launches, "launches", 1, "the framework ops it stands for");
      if (!b.views.empty()) tp.views = call_count(b.views, "views", 0, "framework calls before it that launch nothing");
      if (quant_elements > 0 && w.fp8_input_quant != Fp8InputQuant::None) {
        // The input read as bf16 and written as fp8; eager PyTorch writes the
        // scaled bf16 tensor first and transposes the weight's view for
        // torch._scaled_mm. The GEMM's calls before it come before this.
        const bool fused = w.fp8_input_quant == Fp8InputQuant::Fused;
        Template q;
        q.name = b.name + " fp8 quant";
        q.phase = b.phase;
        q.op = ops::memory_kernel(kCompute, quant_elements * (fused ? 3.0 : 7.0));
        q.op.launches = fused ? 1 : 2;
        const int views = tp.views + (fused ? 0 : 1);
        if (views > 255)
          throw InputError(b.where, fmt::format("{}: views come out {} with the fp8 input's transposed weight (views: 0 .. 254 here)", what, views));
        q.views = static_cast<uint8_t>(views);
        tp.views = 0;
        tt.ops.push_back(std::move(q));
      }
      tt.ops.push_back(std::move(tp));
    }
    out.types.push_back(std::move(tt));
  }
  for (const BlockInstance& b : block_sequence(spec, vars)) out.seq.push_back(static_cast<int>(b.type - spec.blocks.data()));
  return out;
}

}  // namespace osim::gen
