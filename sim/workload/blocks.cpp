#include "workload/blocks.hpp"

#include <algorithm>
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
  MapReader r(file, node, "block op", {"gemm",  "attention", "memory", "all_to_all", "all_gather", "reduce_scatter", "all_reduce", "m",
                                       "n",     "k",         "heads",  "q",          "kv",         "bytes",          "access",     "row",
                                       "group", "when",      "phase",  "ring",       "causal",     "overlap",        "views",      "launches"});
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
    case BlockOp::Kind::Memory: {
      only({"bytes"}, "memory");
      op.bytes = expr_of(r, "bytes");
      const auto& names = access_names();
      if (auto a = r.opt_choice("access", names)) op.access = static_cast<Access>(std::find(names.begin(), names.end(), *a) - names.begin());
      if (r.has("row") && !is_norm(op.access))
        r.fail("row", "is the elements of each row a norm normalises: give it with access: norm, layer_norm or rms_norm");
      op.row = opt_expr_of(r, "row").value_or("");
      break;
    }
    case BlockOp::Kind::Collective:
      only({"bytes", "group"}, "collective");
      op.bytes = expr_of(r, "bytes");
      op.group = r.choice("group", {"ulysses", "tp", "cfg"});
      break;
  }
  if (r.has("access") && op.kind != BlockOp::Kind::Memory) r.fail("access", "is how a memory op walks memory: it applies to memory ops");
  if (r.has("row") && op.kind != BlockOp::Kind::Memory) r.fail("row", "is the elements of each row a norm normalises: it applies to memory ops");
  op.when = opt_expr_of(r, "when").value_or("");
  op.views = opt_expr_of(r, "views").value_or("");
  op.launches = opt_expr_of(r, "launches").value_or("");
  if (r.has("launches") && op.kind == BlockOp::Kind::Collective)
    r.fail("launches", "is the kernel launches a gemm, attention or memory op stands for");
  if (r.has("overlap")) {
    if (op.kind != BlockOp::Kind::Gemm) r.fail("overlap", "ties a tensor-parallel all-gather or reduce-scatter to a gemm op");
    MapReader o(file, r.get("overlap"), "overlap", {"all_gather", "reduce_scatter", "group", "bytes", "chunks"});
    BlockOp::Overlap ov;
    if (o.has("all_gather") == o.has("reduce_scatter"))
      o.fail_here("give one of all_gather (of the input, before) or reduce_scatter (of the output, after)");
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
  if (r.has("causal")) {
    if (op.kind != BlockOp::Kind::Attention)
      r.fail("causal", "marks causal attention (each query sees the keys up to its own); it applies to attention ops");
    op.causal = r.boolean("causal", false);
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
      if (name == j)
        throw InputError(location_of(file, kv.first), fmt::format("dims: '{}' is the job's (from the workload); choose another name", name));
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
    MapReader r(file, b, "block", {"name", "count", "params", "phases", "activations", "ops"});
    BlockType t;
    t.where = location_of(file, b);
    t.name = r.str("name");
    t.count = expr_of(r, "count");
    t.params = expr_of(r, "params");
    t.activations = opt_expr_of(r, "activations").value_or("");
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

void read_outside_models(const std::string& file, const YAML::Node& outside, BlockModel& model) {
  if (!outside.IsSequence())
    throw InputError(location_of(file, outside),
                     "outside: expected a list of models outside the blocks ({name, params, runs: before | after | throughout})");
  model.outside.clear();
  for (const auto& o : outside) {
    MapReader r(file, o, "outside model", {"name", "params", "activations", "runs"});
    OutsideModel m;
    m.where = location_of(file, o);
    m.name = r.str("name");
    m.params = expr_of(r, "params");
    m.activations = opt_expr_of(r, "activations").value_or("0");
    const std::string runs = r.opt_choice("runs", {"before", "after", "throughout"}).value_or("before");
    m.runs = runs == "before" ? OutsideModel::Runs::Before : runs == "after" ? OutsideModel::Runs::After : OutsideModel::Runs::Throughout;
    for (const OutsideModel& other : model.outside)
      if (other.name == m.name) r.fail("name", fmt::format("'{}' is named twice", m.name));
    model.outside.push_back(std::move(m));
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

int64_t block_activations(const BlockType& t, const RepeatVars& vars, bool math_attention) {
  auto e = [&](const std::string& x, const BlockOp& op) {
    return static_cast<double>(eval_block_expr(x, vars, op.where, fmt::format("op '{}' of block '{}'", op.name, t.name)));
  };
  const double act = static_cast<double>(vars.at("act_bytes"));
  double largest = 0, input = -1, scores = 0;
  for (const BlockOp& op : t.ops) {
    if (!op.when.empty() && eval_block_expr(op.when, vars, op.where, fmt::format("op '{}' when", op.name)) == 0) continue;
    double in = 0, out = 0;
    switch (op.kind) {
      case BlockOp::Kind::Gemm:
        in = e(op.m, op) * e(op.k, op) * act;
        out = e(op.m, op) * e(op.n, op) * act;
        break;
      case BlockOp::Kind::Attention: {
        const double ring = op.ring ? static_cast<double>(vars.at("ring")) : 1.0;
        const double h = e(op.heads, op), q = e(op.q, op), kv = e(op.kv, op) / ring, d = static_cast<double>(vars.at("head_dim"));
        in = h * (q + 2 * kv) * d * act;
        out = h * q * d * act;
        scores = std::max(scores, 2 * h * q * kv * act);  // QK^T and its softmax
        break;
      }
      case BlockOp::Kind::Memory: in = out = e(op.bytes, op) / 2; break;  // read and written
      case BlockOp::Kind::Collective: in = out = e(op.bytes, op); break;  // send and receive buffers
    }
    if (input < 0) input = in;
    largest = std::max(largest, in + out + (math_attention && op.kind == BlockOp::Kind::Attention ? scores : 0));
  }
  if (!t.activations.empty()) {
    const int64_t a = eval_block_expr(t.activations, vars, t.where, fmt::format("block '{}' activations", t.name));
    if (a < 0) throw InputError(t.where, fmt::format("block '{}': activations come out negative ({})", t.name, a));
    return a + (math_attention ? static_cast<int64_t>(scores) : 0);
  }
  return static_cast<int64_t>(largest + std::max(0.0, input));
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
      // Ring attention: ring steps of q/ring queries over kv/ring keys (causal: each step's kernel causal, as generated).
      if (op.kind == BlockOp::Kind::Attention) {
        const double ring = op.ring ? static_cast<double>(vars.at("ring")) : 1.0, d = static_cast<double>(vars.at("head_dim"));
        if (op.causal) {
          const AttentionShape step{1, 1, static_cast<int32_t>(e(op.q) / ring), static_cast<int32_t>(e(op.kv) / ring), 1, AttnBackend::Default, true};
          c.attention_flops += n * e(op.heads) * d * ring * step.flops();
        } else {
          c.attention_flops += n * 4.0 * e(op.heads) * e(op.q) * e(op.kv) * d / ring;
        }
      }
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
// sequence-parallel attention starts with these; each all-to-all's tensors
// laid out around it (a view, a transpose, an empty_like, the received
// tensor's view) are its 4 views.
#define OSIM_ULYSSES_QKV                                                                                               \
  "      - {all_to_all: a2a q, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4, views: 4}\n" \
  "      - {all_to_all: a2a k, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4, views: 4}\n" \
  "      - {all_to_all: a2a v, group: ulysses, bytes: local*hidden*comm_bytes, when: attention_comm == 4, views: 4}\n" \
  "      - {all_to_all: a2a qkv, group: ulysses, bytes: 3*local*hidden*comm_bytes, when: attention_comm == 2, views: 4}\n"

// Wan2.1 / Wan2.2 14B: self-attention (Ulysses all-to-alls around it),
// cross-attention to the text, FFN; 8h^2 + 2hf parameters a block.
// Activations, counted from a block written as sglang and diffusers write it
// in eager PyTorch (validate/programs/dit_offload.py): its intermediates
// live until it returns, so at the FFN's GELU it holds the input, the
// residual, the norm's output, q, k, the qkv projection (3), the attention
// and cross-attention outputs, the cross q (11 x local x hidden in all with
// the caller's input) and the FFN's two local x ffn tensors; the text's
// cross k, v and its embedding. Its calls that launch nothing (`views`):
// the 7 weight matrices sliced out of the block's flat buffer (a slice and a
// view each), the qkv split (a split costs about a view per tensor it
// returns: 3), q, k and v viewed to heads and transposed, the attention's
// output transposed back and reshaped; the cross kv split (2) and the same
// around the cross-attention; with Ulysses, each all-to-all's view,
// transpose, empty_like and its output's view. The framework ops an op
// stands for (`launches`): rope's 2 (q and k scaled), the residual's 3 adds.
// Outside the blocks: the umT5-XXL text encoder (24 layers of 4h^2 + 3hf at
// h = 4096, f = 10240, and 256,384 x 4096 embeddings: 5.68 B), the VAE
// (127 M: its 508 MB fp32 checkpoint) and the DiT's own embeddings (text
// 4096 -> h -> h, time 256 -> h -> h, its projection to 6h, patches of 64
// values in and out).
constexpr const char* kWan = R"(dims: {hidden: 5120, ffn: 13824, heads: 40, head_dim: 128, text_tokens: 512}
outside:
  - {name: umt5-xxl, params: 24*(4*4096*4096 + 3*4096*10240) + 256384*4096, runs: before}
  - {name: vae, params: 127000000, runs: after}
  - {name: embeddings, params: 4096*hidden + 2*hidden*hidden + 256*hidden + 6*hidden*hidden + 2*64*hidden, runs: throughout}
blocks:
  - name: block
    count: 40
    params: 8*hidden*hidden + 2*hidden*ffn
    phases: [4*hidden*hidden, 4*hidden*hidden, 2*hidden*ffn]
    activations: act_bytes*(local*(11*hidden + 2*ffn) + 3*text_tokens*hidden)
    ops:
      - {memory: norm1, bytes: 2*local*hidden*act_bytes, access: norm, views: 14}
      - {gemm: qkv, m: local, n: 3*hidden, k: hidden}
      - {memory: rope, bytes: 4*local*hidden*act_bytes, access: strided, views: 3, launches: 2}
)" OSIM_ULYSSES_QKV R"(      - {attention: self-attn, heads: heads/ulysses, q: tokens, kv: tokens, ring: true, views: 6}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes, views: 4}
      - {gemm: out, m: local, n: hidden, k: hidden, views: 2}
      - {memory: norm3, bytes: 2*local*hidden*act_bytes, access: norm, phase: 1}
      - {gemm: cross q, m: local, n: hidden, k: hidden, phase: 1}
      - {gemm: cross kv, m: text_tokens, n: 2*hidden, k: hidden, phase: 1}
      - {attention: cross-attn, heads: heads, q: local, kv: text_tokens, phase: 1, views: 8}
      - {gemm: cross out, m: local, n: hidden, k: hidden, phase: 1, views: 2}
      - {memory: norm2, bytes: 2*local*hidden*act_bytes, access: norm, phase: 2}
      - {gemm: ffn up, m: local, n: ffn, k: hidden, phase: 2}
      - {memory: gelu, bytes: 2*local*ffn*act_bytes, phase: 2}
      - {gemm: ffn down, m: local, n: hidden, k: ffn, phase: 2}
      - {memory: residual, bytes: 3*local*hidden*act_bytes, phase: 2, launches: 3}
)";

// MMDiT (Flux.1, HunyuanVideo): double-stream blocks (image and text
// streams with their own weights, joint attention over both) then
// single-stream blocks (one fused linear in, one out, over image + text).
// Each stream's adaLN modulation is a GEMM of one row (6h^2, single: 3h^2).
// Ulysses splits the image tokens; the text stream is replicated.
// Activations by the same count as Wan's over image + text tokens: a
// double block like a Wan block; a single block holds its input, the
// residual, the norm, linear1's 3h + f, q and k roped, the attention, the
// GELU's f and the concatenation's h + f. The memory-bound ops are those of
// Black Forest Labs' block code in eager PyTorch, pass by pass
// (validate/programs/model_blocks.py runs it): adaLN's norm, scale and
// shift (6 of tokens x hidden, read and written), the q, k, v of both
// streams concatenated (6), the q/k RMS norms over each head's head_dim (4),
// rope (18: q and k four elementwise passes each, as an elementwise stand-in
// of its real rotation), each gated residual (a multiply and an add: 5), the
// GELU; a single block concatenates the attention and the MLP before linear2.
// Its calls that launch nothing (`views`): each modulation's chunk (6, a
// single block's 3), each stream's qkv split (3), q, k and v viewed to heads
// (3), transposed and unsqueezed for SDPA (6), the output's select,
// transpose and reshape (3) and, in a double block, its split back into the
// streams (2); a single block's linear1 split (2) and qkv split (3). The
// framework ops each op stands for (`launches`): per stream, the
// modulation's SiLU and linear, each norm, its scale and shift (3), the
// gate and the residual; the 3 concatenations; the q and k norms; rope's
// 3 elementwise calls and a roll for each of q and k.
constexpr const char* kMmdit = R"(blocks:
  - name: double
    count: double_blocks
    params: 2*(6*hidden*hidden + 3*hidden*hidden + hidden*hidden + 2*hidden*ffn)
    activations: act_bytes*(local + text_tokens)*(11*hidden + 2*ffn)
    ops:
      - {gemm: img mod, m: 1, n: 6*hidden, k: hidden, launches: 2}
      - {gemm: txt mod, m: 1, n: 6*hidden, k: hidden, views: 6, launches: 2}
      - {memory: norm, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: norm, views: 6, launches: 2}
      - {memory: scale shift, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: broadcast, launches: 6}
      - {gemm: img qkv, m: local, n: 3*hidden, k: hidden}
      - {gemm: txt qkv, m: text_tokens, n: 3*hidden, k: hidden, views: 3}
      - {memory: cat qkv, bytes: 6*(local + text_tokens)*hidden*act_bytes, views: 3, launches: 3}
      - {memory: qk norm, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: rms_norm, row: head_dim, views: 3, launches: 2}
      - {memory: rope, bytes: 14*(local + text_tokens)*hidden*act_bytes, launches: 6}
      - {memory: rope roll, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: roll, launches: 2}
)" OSIM_ULYSSES_QKV R"(      - {attention: joint-attn, heads: heads/ulysses, q: tokens + text_tokens, kv: tokens + text_tokens, ring: true, views: 6}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes, views: 4}
      - {gemm: img proj, m: local, n: hidden, k: hidden, views: 5}
      - {gemm: txt proj, m: text_tokens, n: hidden, k: hidden}
      - {memory: gate, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: broadcast, launches: 2}
      - {memory: residual, bytes: 3*(local + text_tokens)*hidden*act_bytes, launches: 2}
      - {memory: norm, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: norm, launches: 2}
      - {memory: scale shift, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: broadcast, launches: 6}
      - {gemm: img mlp up, m: local, n: ffn, k: hidden}
      - {gemm: txt mlp up, m: text_tokens, n: ffn, k: hidden}
      - {memory: gelu, bytes: 2*(local + text_tokens)*ffn*act_bytes, launches: 2}
      - {gemm: img mlp down, m: local, n: hidden, k: ffn}
      - {gemm: txt mlp down, m: text_tokens, n: hidden, k: ffn}
      - {memory: gate, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: broadcast, launches: 2}
      - {memory: residual, bytes: 3*(local + text_tokens)*hidden*act_bytes, launches: 2}
  - name: single
    count: single_blocks
    params: 3*hidden*hidden + hidden*(3*hidden + ffn) + (hidden + ffn)*hidden
    activations: act_bytes*(local + text_tokens)*(9*hidden + 3*ffn)
    ops:
      - {gemm: mod, m: 1, n: 3*hidden, k: hidden, launches: 2}
      - {memory: norm, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: norm, views: 3}
      - {memory: scale shift, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: broadcast, launches: 3}
      - {gemm: linear1, m: local + text_tokens, n: 3*hidden + ffn, k: hidden}
      - {memory: qk norm, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: rms_norm, row: head_dim, views: 8, launches: 2}
      - {memory: rope, bytes: 14*(local + text_tokens)*hidden*act_bytes, launches: 6}
      - {memory: rope roll, bytes: 4*(local + text_tokens)*hidden*act_bytes, access: roll, launches: 2}
)" OSIM_ULYSSES_QKV R"(      - {attention: joint-attn, heads: heads/ulysses, q: tokens + text_tokens, kv: tokens + text_tokens, ring: true, views: 6}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden*comm_bytes, views: 4}
      - {memory: gelu, bytes: 2*(local + text_tokens)*ffn*act_bytes, access: strided, views: 3}
      - {memory: cat, bytes: 2*(local + text_tokens)*(hidden + ffn)*act_bytes}
      - {gemm: linear2, m: local + text_tokens, n: hidden, k: hidden + ffn}
      - {memory: gate, bytes: 2*(local + text_tokens)*hidden*act_bytes, access: broadcast}
      - {memory: residual, bytes: 3*(local + text_tokens)*hidden*act_bytes}
)";

// Outside Flux.1's blocks: the T5-XXL v1.1 encoder (24 layers of 4h^2 + 3hf
// at h = 4096, f = 10240, and 32,128 x 4096 embeddings: 4.76 B), CLIP-L's
// text encoder (123 M), the VAE (83.8 M) and the DiT's embeddings (text
// 4096 -> h, pooled 768 -> h -> h, time and guidance 256 -> h -> h, patches
// of 64 values in and out). HunyuanVideo's text encoder is a Llama-3-8B
// language model (32 layers of 4096 x 6144 + 4096^2 + 3 x 4096 x 14336, two
// 128,256 x 4096 embeddings: 8.03 B) beside CLIP-L, and its 3D VAE holds 246 M.
constexpr const char* kFluxOutside = R"(outside:
  - {name: t5-xxl, params: 24*(4*4096*4096 + 3*4096*10240) + 32128*4096, runs: before}
  - {name: clip-l, params: 123000000, runs: before}
  - {name: vae, params: 83800000, runs: after}
  - {name: embeddings, params: 4096*hidden + 768*hidden + 3*hidden*hidden + 2*256*hidden + 2*64*hidden, runs: throughout}
)";
constexpr const char* kHunyuanOutside = R"(outside:
  - {name: llava-llama-3-8b, params: 32*(4096*6144 + 4096*4096 + 3*4096*14336) + 2*128256*4096, runs: before}
  - {name: clip-l, params: 123000000, runs: before}
  - {name: vae, params: 246000000, runs: after}
  - {name: embeddings, params: 4096*hidden + 768*hidden + 3*hidden*hidden + 2*256*hidden + 2*64*hidden, runs: throughout}
)";

// A Llama-style decoder layer in prefill: grouped-query attention, SwiGLU
// MLP, Megatron tensor parallelism with sequence parallelism (QKV and
// gate/up split by columns after an all-gather of the sequence, out and down
// by rows before a reduce-scatter of it; norms and residuals on a rank's
// 1/tp of the tokens). Attention is causal: each query sees the keys up to
// its own (SDPA's is_causal).
// Memory-bound ops pass by pass as Hugging Face's LlamaDecoderLayer runs
// them in eager PyTorch (validate/programs/model_blocks.py): the RMS norms,
// rope on q and k (9 passes of each read and written: q cos + rotate_half(q)
// sin costs about that), repeat_kv copying k and v out to every query head
// for SDPA, the residual adds (3: two read, one written), SiLU and the gate
// times up (5 of the ffn width).
// Activations (counted from the same code):
// the input, the residual, the gathered norm output, q, k, v, the attention
// output and the out projection (h each, split by tp where the weights
// are), and at the MLP gate, its SiLU, up and their product (ffn/tp each).
// Its calls that launch nothing (`views`): q, k and v viewed to heads (3),
// transposed and unsqueezed for SDPA (6), the output's select, transpose and
// reshape (3). The framework ops each op stands for (`launches`): the q, k
// and v projections, rope's 3 elementwise calls and a roll for each of q
// and k, repeat_kv's 2, the gate and up projections, SiLU and the product.
// Outside the layers: the token embeddings and the LM head, split over tp.
constexpr const char* kLlama = R"(outside:
  - {name: embeddings, params: 2*vocab*hidden/tp, runs: throughout}
blocks:
  - name: layer
    count: layers
    params: (hidden*(hidden + 2*kv_heads*head_dim) + hidden*hidden + 3*hidden*ffn)/tp
    activations: act_bytes*local*(4*hidden + 4*hidden/tp + 4*ffn/tp)
    ops:
      - {memory: norm1, bytes: 2*local/tp*hidden*act_bytes, access: norm}
      - {gemm: qkv, m: local, n: (hidden + 2*kv_heads*head_dim)/tp, k: hidden, launches: 3,
         overlap: {all_gather: tp ag attn, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: rope, bytes: 7*local*(hidden + kv_heads*head_dim)/tp*act_bytes, views: 3, launches: 6}
      - {memory: rope roll, bytes: 2*local*(hidden + kv_heads*head_dim)/tp*act_bytes, access: roll, launches: 2}
      - {memory: repeat kv, bytes: 2*local*(hidden + kv_heads*head_dim)/tp*act_bytes, launches: 2}
      - {all_to_all: a2a q, group: ulysses, bytes: local*hidden/tp*comm_bytes, views: 4}
      - {all_to_all: a2a kv, group: ulysses, bytes: 2*local*kv_heads*head_dim/tp*comm_bytes, views: 4}
      - {attention: causal-attn, heads: heads/(ulysses*tp), q: tokens, kv: tokens, causal: true, ring: true, views: 6}
      - {all_to_all: a2a out, group: ulysses, bytes: local*hidden/tp*comm_bytes, views: 4}
      - {gemm: out, m: local, n: hidden, k: hidden/tp, views: 3,
         overlap: {reduce_scatter: tp rs attn, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: residual1, bytes: 3*local/tp*hidden*act_bytes}
      - {memory: norm2, bytes: 2*local/tp*hidden*act_bytes, access: norm}
      - {gemm: gate up, m: local, n: 2*ffn/tp, k: hidden, launches: 2,
         overlap: {all_gather: tp ag mlp, group: tp, bytes: local*hidden*act_bytes, chunks: tp}}
      - {memory: silu mul, bytes: 5*local*ffn/tp*act_bytes, launches: 2}
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
      {"flux.1-dev",
       std::string("dims: {hidden: 3072, ffn: 12288, heads: 24, head_dim: 128, text_tokens: 512, double_blocks: 19, single_blocks: 38}\n") +
           kFluxOutside + kMmdit},
      {"hunyuanvideo",
       std::string("dims: {hidden: 3072, ffn: 12288, heads: 24, head_dim: 128, text_tokens: 256, double_blocks: 20, single_blocks: 40}\n") +
           kHunyuanOutside + kMmdit},
      {"llama3-8b", std::string("dims: {hidden: 4096, ffn: 14336, heads: 32, kv_heads: 8, head_dim: 128, layers: 32, vocab: 128256}\n") + kLlama},
      {"llama3-70b", std::string("dims: {hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, head_dim: 128, layers: 80, vocab: 128256}\n") + kLlama},
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
