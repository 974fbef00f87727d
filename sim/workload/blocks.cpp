#include "workload/blocks.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "io/yaml_reader.hpp"

namespace osim {

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

const std::vector<std::string> kJobNames = {"tokens", "ulysses", "ring", "tp", "attention_comm", "comm_bytes", "act_bytes", "local"};

// An expression as written: a number or a string ("3*hidden").
std::string expr_of(const MapReader& m, const std::string& key) {
  const YAML::Node n = m.get(key);
  if (!n.IsScalar()) m.fail(key, "must be a whole number or an expression such as 3*hidden");
  return n.Scalar();
}
std::optional<std::string> opt_expr_of(const MapReader& m, const std::string& key) {
  if (!m.has(key)) return std::nullopt;
  return expr_of(m, key);
}

BlockOp read_op(const std::string& file, const YAML::Node& node) {
  static const std::vector<std::pair<std::string, CollKind>> colls = {{"all_to_all", CollKind::AllToAll},
                                                                      {"all_gather", CollKind::AllGather},
                                                                      {"reduce_scatter", CollKind::ReduceScatter},
                                                                      {"all_reduce", CollKind::AllReduce}};
  MapReader r(file, node, "block op",
              {"gemm", "attention", "memory", "all_to_all", "all_gather", "reduce_scatter", "all_reduce", "m", "n", "k", "heads", "q", "kv",
               "bytes", "group", "when", "phase", "ring", "overlap"});
  BlockOp op;
  op.where = location_of(file, node);
  int kinds = 0;
  auto kind = [&](const std::string& key, BlockOp::Kind k) {
    if (!r.has(key)) return;
    ++kinds;
    op.kind = k;
    op.name = r.str(key);
  };
  kind("gemm", BlockOp::Kind::Gemm);
  kind("attention", BlockOp::Kind::Attention);
  kind("memory", BlockOp::Kind::Memory);
  for (const auto& [key, c] : colls)
    if (r.has(key)) {
      kind(key, BlockOp::Kind::Collective);
      op.coll = c;
    }
  if (kinds != 1)
    r.fail_here("give exactly one of gemm, attention, memory, all_to_all, all_gather, reduce_scatter, all_reduce (its value is the op's name)");
  auto only = [&](std::initializer_list<const char*> keys, const char* what) {
    for (const char* k : {"m", "n", "k", "heads", "q", "kv", "bytes", "group"}) {
      bool allowed = false;
      for (const char* a : keys) allowed = allowed || std::string(a) == k;
      if (r.has(k) && !allowed) r.fail(k, fmt::format("does not apply to a {} op", what));
    }
  };
  switch (op.kind) {
    case BlockOp::Kind::Gemm:
      only({"m", "n", "k"}, "gemm");
      op.m = expr_of(r, "m"), op.n = expr_of(r, "n"), op.k = expr_of(r, "k");
      break;
    case BlockOp::Kind::Attention:
      only({"heads", "q", "kv"}, "attention");
      op.heads = expr_of(r, "heads"), op.q = expr_of(r, "q"), op.kv = expr_of(r, "kv");
      break;
    case BlockOp::Kind::Memory:
      only({"bytes"}, "memory");
      op.bytes = expr_of(r, "bytes");
      break;
    case BlockOp::Kind::Collective:
      only({"bytes", "group"}, "collective");
      op.bytes = expr_of(r, "bytes");
      op.group = r.choice("group", {"ulysses", "tp", "cfg"});
      break;
  }
  op.when = opt_expr_of(r, "when").value_or("");
  if (r.has("overlap")) {
    if (op.kind != BlockOp::Kind::Gemm) r.fail("overlap", "ties a tensor-parallel all-gather or reduce-scatter to a gemm op");
    MapReader o(file, r.get("overlap"), "overlap", {"all_gather", "reduce_scatter", "group", "bytes", "chunks"});
    BlockOp::Overlap ov;
    if (o.has("all_gather") == o.has("reduce_scatter")) o.fail_here("give one of all_gather (of the input, before) or reduce_scatter (of the output, after)");
    ov.coll = o.has("all_gather") ? CollKind::AllGather : CollKind::ReduceScatter;
    ov.name = o.str(o.has("all_gather") ? "all_gather" : "reduce_scatter");
    ov.group = o.choice("group", {"ulysses", "tp", "cfg"});
    ov.bytes = expr_of(o, "bytes");
    ov.chunks = opt_expr_of(o, "chunks").value_or("1");
    op.overlap = ov;
  }
  if (r.has("ring")) {
    if (op.kind != BlockOp::Kind::Attention) r.fail("ring", "marks the sequence-parallel attention; it applies to attention ops");
    op.ring = r.boolean("ring", false);
  }
  if (auto p = r.opt_int32("phase")) {
    if (*p < 0 || *p > 15) r.fail("phase", "is the op's sub-layer, 0..15");
    op.phase = *p;
  }
  return op;
}

}  // namespace

void read_block_dims(const std::string& file, const YAML::Node& dims, BlockModel& model) {
  if (!dims.IsMap()) throw InputError(location_of(file, dims), "dims: expected a mapping of names to whole numbers, e.g. {hidden: 3072, heads: 24}");
  for (const auto& kv : dims) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (!valid_name(name)) throw InputError(location_of(file, kv.first), "dims: a name is letters, digits and _, starting with a letter");
    for (const auto& j : kJobNames)
      if (name == j) throw InputError(location_of(file, kv.first), fmt::format("dims: '{}' is the job's (from the workload); choose another name", name));
    const YAML::Node v = kv.second;
    int64_t value = 0;
    try {
      if (!v.IsScalar()) throw std::invalid_argument("");
      size_t used = 0;
      value = std::stoll(v.Scalar(), &used);
      if (used != v.Scalar().size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw InputError(location_of(file, v), fmt::format("dims: '{}' must be a whole number", name));
    }
    if (value < 1) throw InputError(location_of(file, v), fmt::format("dims: '{}' must be at least 1", name));
    model.dims[name] = value;
  }
}

void read_block_types(const std::string& file, const YAML::Node& blocks, BlockModel& model) {
  if (!blocks.IsSequence() || blocks.size() == 0)
    throw InputError(location_of(file, blocks), "blocks: expected a list of block types ({name, count, params, ops: [...]})");
  model.blocks.clear();
  for (const auto& b : blocks) {
    MapReader r(file, b, "block", {"name", "count", "params", "phases", "ops"});
    BlockType t;
    t.where = location_of(file, b);
    t.name = r.str("name");
    t.count = expr_of(r, "count");
    t.params = expr_of(r, "params");
    if (r.has("phases")) {
      const YAML::Node ph = r.get("phases");
      if (!ph.IsSequence() || ph.size() == 0) r.fail("phases", "is a list of each sub-layer's parameters");
      for (const auto& p : ph) {
        if (!p.IsScalar()) throw InputError(location_of(file, p), "phases: each is a whole number or an expression");
        t.phases.push_back(p.Scalar());
      }
    }
    const YAML::Node ops = r.get("ops");
    if (!ops.IsSequence() || ops.size() == 0) r.fail("ops", "is a list of the block's ops");
    for (const auto& o : ops) {
      t.ops.push_back(read_op(file, o));
      if (!t.phases.empty() && t.ops.back().phase >= static_cast<int>(t.phases.size()))
        throw InputError(t.ops.back().where, fmt::format("phase {}: the block has {} phases", t.ops.back().phase, t.phases.size()));
    }
    model.blocks.push_back(std::move(t));
  }
}

RepeatVars block_vars(const BlockModel& model, const JobVars& job) {
  RepeatVars v(model.dims.begin(), model.dims.end());
  v["tokens"] = job.tokens;
  v["ulysses"] = job.ulysses;
  v["ring"] = job.ring;
  v["tp"] = job.tp;
  v["attention_comm"] = job.attention_comm;
  v["comm_bytes"] = job.comm_bytes;
  v["act_bytes"] = job.act_bytes;
  v["local"] = job.tokens / (job.ulysses * job.ring);
  return v;
}

int64_t eval_block_expr(const std::string& expr, const RepeatVars& vars, const SourceLocation& where, const std::string& what) {
  try {
    return eval_int_expr(expr, vars);
  } catch (const std::invalid_argument& e) {
    std::string names;
    for (const auto& [k, v] : vars) names += (names.empty() ? "" : ", ") + k;
    throw InputError(where, fmt::format("{}: {} (the names known: {})", what, e.what(), names));
  }
}

int block_count(const BlockType& t, const RepeatVars& vars) {
  const int64_t n = eval_block_expr(t.count, vars, t.where, fmt::format("block '{}' count", t.name));
  if (n < 1 || n > 100000) throw InputError(t.where, fmt::format("block '{}': count {} is not in 1..100000", t.name, n));
  return static_cast<int>(n);
}

std::vector<BlockInstance> block_sequence(const BlockModel& model, const RepeatVars& vars) {
  std::vector<BlockInstance> seq;
  for (const BlockType& t : model.blocks)
    for (int i = 0, n = block_count(t, vars); i < n; ++i) seq.push_back({&t, static_cast<int>(seq.size())});
  return seq;
}

ForwardCost forward_cost(const BlockModel& model, const RepeatVars& vars) {
  ForwardCost c;
  for (const BlockType& t : model.blocks) {  // one block of each type, times its count
    const double n = block_count(t, vars);
    c.blocks += static_cast<int>(n);
    c.params += n * static_cast<double>(eval_block_expr(t.params, vars, t.where, fmt::format("block '{}' params", t.name)));
    for (const BlockOp& op : t.ops) {
      if (!op.when.empty() && eval_block_expr(op.when, vars, op.where, fmt::format("op '{}' when", op.name)) == 0) continue;
      auto e = [&](const std::string& x) { return static_cast<double>(eval_block_expr(x, vars, op.where, fmt::format("op '{}'", op.name))); };
      if (op.kind == BlockOp::Kind::Gemm) c.gemm_flops += n * 2.0 * e(op.m) * e(op.n) * e(op.k);
      // Ring attention: ring steps of q/ring queries over kv/ring keys.
      const double ring = op.ring ? static_cast<double>(vars.at("ring")) : 1.0;
      if (op.kind == BlockOp::Kind::Attention) c.attention_flops += n * 4.0 * e(op.heads) * e(op.q) * e(op.kv) * static_cast<double>(vars.at("head_dim")) / ring;
    }
  }
  return c;
}

// ------------------------------------------------------------------ presets
// Activations are bf16 (act_bytes); the all-to-alls carry comm_bytes per
// element. Shapes are those of one rank: `local` = tokens / ulysses.
namespace {

// Ulysses before an attention: q, k and v to the ranks that hold their
// heads (4 all-to-alls), or packed in one (attention_comm 2). Every preset's
// sequence-parallel attention starts with these.
#define OSIM_ULYSSES_QKV                                                                                  \
  "      - {all_to_all: a2a q, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4}\n"  \
  "      - {all_to_all: a2a k, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4}\n"  \
  "      - {all_to_all: a2a v, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4}\n"  \
  "      - {all_to_all: a2a qkv, group: ulysses, bytes: 3*local*hidden*comm_bytes, when: attention_comm == 2}\n"

// Wan2.1 / Wan2.2 14B: self-attention (Ulysses all-to-alls around it),
// cross-attention to the text, FFN; 8h^2 + 2hf parameters a block.
constexpr const char* kWan = R"(dims: {hidden: 5120, ffn: 13824, heads: 40, head_dim: 128, text_tokens: 512}
blocks:
  - name: block
    count: 40
    params: 8*hidden*hidden + 2*hidden*ffn
    phases: [4*hidden*hidden, 4*hidden*hidden, 2*hidden*ffn]
    ops:
      - {memory: norm1, bytes: 2*local*hidden*act_bytes}
      - {gemm: qkv, m: local, n: 3*hidden, k: hidden}
      - {memory: rope, bytes: 4*local*hidden*act_bytes}
)"
    OSIM_ULYSSES_QKV R"(      - {attention: self-attn, heads: heads/ulysses, q: tokens, kv: tokens, ring: true}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes}
      - {gemm: out, m: local, n: hidden, k: hidden}
      - {memory: norm3, bytes: 2*local*hidden*act_bytes, phase: 1}
      - {gemm: cross q, m: local, n: hidden, k: hidden, phase: 1}
      - {gemm: cross kv, m: text_tokens, n: 2*hidden, k: hidden, phase: 1}
      - {attention: cross-attn, heads: heads, q: local, kv: text_tokens, phase: 1}
      - {gemm: cross out, m: local, n: hidden, k: hidden, phase: 1}
      - {memory: norm2, bytes: 2*local*hidden*act_bytes, phase: 2}
      - {gemm: ffn up, m: local, n: ffn, k: hidden, phase: 2}
      - {memory: gelu, bytes: 2*local*ffn*act_bytes, phase: 2}
      - {gemm: ffn down, m: local, n: hidden, k: ffn, phase: 2}
      - {memory: residual, bytes: 3*local*hidden*act_bytes, phase: 2}
)";

// MMDiT (Flux.1, HunyuanVideo): double-stream blocks (image and text
// streams with their own weights, joint attention over both) then
// single-stream blocks (one fused linear in, one out, over image + text).
// Each stream's adaLN modulation is a GEMM of one row (6h^2, single: 3h^2).
// Ulysses splits the image tokens; the text stream is replicated.
constexpr const char* kMmdit = R"(blocks:
  - name: double
    count: double_blocks
    params: 2*(6*hidden*hidden + 3*hidden*hidden + hidden*hidden + 2*hidden*ffn)
    ops:
      - {gemm: img mod, m: 1, n: 6*hidden, k: hidden}
      - {gemm: txt mod, m: 1, n: 6*hidden, k: hidden}
      - {memory: norm, bytes: 2*(local + text_tokens)*hidden*act_bytes}
      - {gemm: img qkv, m: local, n: 3*hidden, k: hidden}
      - {gemm: txt qkv, m: text_tokens, n: 3*hidden, k: hidden}
      - {memory: rope, bytes: 4*(local + text_tokens)*hidden*act_bytes}
)"
    OSIM_ULYSSES_QKV R"(      - {attention: joint-attn, heads: heads/ulysses, q: tokens + text_tokens, kv: tokens + text_tokens, ring: true}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes}
      - {gemm: img proj, m: local, n: hidden, k: hidden}
      - {gemm: txt proj, m: text_tokens, n: hidden, k: hidden}
      - {gemm: img mlp up, m: local, n: ffn, k: hidden}
      - {gemm: txt mlp up, m: text_tokens, n: ffn, k: hidden}
      - {memory: gelu, bytes: 2*(local + text_tokens)*ffn*act_bytes}
      - {gemm: img mlp down, m: local, n: hidden, k: ffn}
      - {gemm: txt mlp down, m: text_tokens, n: hidden, k: ffn}
      - {memory: residual, bytes: 3*(local + text_tokens)*hidden*act_bytes}
  - name: single
    count: single_blocks
    params: 3*hidden*hidden + hidden*(3*hidden + ffn) + (hidden + ffn)*hidden
    ops:
      - {gemm: mod, m: 1, n: 3*hidden, k: hidden}
      - {memory: norm, bytes: 2*(local + text_tokens)*hidden*act_bytes}
      - {gemm: linear1, m: local + text_tokens, n: 3*hidden + ffn, k: hidden}
)"
    OSIM_ULYSSES_QKV R"(      - {attention: joint-attn, heads: heads/ulysses, q: tokens + text_tokens, kv: tokens + text_tokens, ring: true}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes}
      - {memory: gelu, bytes: 2*(local + text_tokens)*ffn*act_bytes}
      - {gemm: linear2, m: local + text_tokens, n: hidden, k: hidden + ffn}
      - {memory: residual, bytes: 3*(local + text_tokens)*hidden*act_bytes}
)";

// A Llama-style decoder layer in prefill: grouped-query attention, SwiGLU
// MLP, Megatron tensor parallelism with sequence parallelism (QKV and
// gate/up split by columns after an all-gather of the sequence, out and down
// by rows before a reduce-scatter of it; norms and residuals on a rank's
// 1/tp of the tokens). Causal attention does half the work of full
// attention: it is written as tokens/2 queries over all tokens (the same
// FLOPs).
constexpr const char* kLlama = R"(blocks:
  - name: layer
    count: layers
    params: (hidden*(hidden + 2*kv_heads*head_dim) + hidden*hidden + 3*hidden*ffn)/tp
    ops:
      - {memory: norm1, bytes: 2*local/tp*hidden*act_bytes}
      - {gemm: qkv, m: local, n: (hidden + 2*kv_heads*head_dim)/tp, k: hidden,
         overlap: {all_gather: tp ag attn, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: rope, bytes: 2*local*(hidden + kv_heads*head_dim)/tp*act_bytes}
      - {all_to_all: a2a q, group: ulysses, bytes: local*hidden/tp*comm_bytes}
      - {all_to_all: a2a kv, group: ulysses, bytes: 2*local*kv_heads*head_dim/tp*comm_bytes}
      - {attention: causal-attn, heads: heads/(ulysses*tp), q: tokens/2, kv: tokens, ring: true}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden/tp*comm_bytes}
      - {gemm: out, m: local, n: hidden, k: hidden/tp,
         overlap: {reduce_scatter: tp rs attn, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: norm2, bytes: 2*local/tp*hidden*act_bytes}
      - {gemm: gate up, m: local, n: 2*ffn/tp, k: hidden,
         overlap: {all_gather: tp ag mlp, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: silu mul, bytes: 3*local*ffn/tp*act_bytes}
      - {gemm: down, m: local, n: hidden, k: ffn/tp,
         overlap: {reduce_scatter: tp rs mlp, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: residual, bytes: 3*local/tp*hidden*act_bytes}
)";

struct BlockPreset {
  const char* name;
  std::string text;
};
const std::vector<BlockPreset>& presets() {
  static const std::vector<BlockPreset> p = {
      {"wan", kWan},
      {"flux.1-dev", std::string("dims: {hidden: 3072, ffn: 12288, heads: 24, head_dim: 128, text_tokens: 512, double_blocks: 19, single_blocks: 38}\n") + kMmdit},
      {"hunyuanvideo", std::string("dims: {hidden: 3072, ffn: 12288, heads: 24, head_dim: 128, text_tokens: 256, double_blocks: 20, single_blocks: 40}\n") + kMmdit},
      {"llama3-8b", std::string("dims: {hidden: 4096, ffn: 14336, heads: 32, kv_heads: 8, head_dim: 128, layers: 32}\n") + kLlama},
      {"llama3-70b", std::string("dims: {hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, head_dim: 128, layers: 80}\n") + kLlama},
  };
  return p;
}

}  // namespace

std::optional<std::string> block_preset_text(const std::string& name) {
  for (const auto& p : presets())
    if (name == p.name) return p.text;
  return std::nullopt;
}

std::vector<std::string> block_preset_names() {
  std::vector<std::string> n;
  for (const auto& p : presets())
    if (std::string(p.name) != "wan") n.emplace_back(p.name);
  return n;
}

}  // namespace osim
