// Workload files (docs/formats/workload.md) parsed and checked, what a
// forward costs, and what a rank holds beside its block weights; the
// generator is generate.cpp.
#include "workload/dit.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "gpu/params_io.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_stream.hpp"

namespace osim {

std::string to_string(OffloadPolicy p) {
  switch (p) {
    case OffloadPolicy::None: return "none";
    case OffloadPolicy::Blocking: return "blocking";
    case OffloadPolicy::Layerwise: return "layerwise";
    case OffloadPolicy::Block: return "block";
    case OffloadPolicy::Phase: return "phase";
  }
  return "?";
}

RepeatVars DitWorkload::vars() const {
  JobVars j;
  j.tokens = tokens;
  j.ulysses = ulysses;
  j.ring = ring;
  j.tp = tp;
  j.attention_comm = attention_comm;
  j.comm_bytes = static_cast<int64_t>(dtype_bytes(comm_dtype));
  j.act_bytes = 2;  // activations are bf16
  return block_vars(model.spec, j);
}

ForwardCost workload_cost(const DitWorkload& w) { return forward_cost(w.model.spec, w.vars()); }

void set_base_params(DitWorkload& w, const ModelParams& base) {
  w.params = base;
  if (w.compute.gemm_efficiency) {
    w.params.gemm.gemm_efficiency = *w.compute.gemm_efficiency;
    w.params.gemm.gemm_model = {};  // an explicit efficiency is for every shape the calibration's table lacks
  }
  if (w.compute.attention_efficiency) w.params.attention.attention_efficiency = *w.compute.attention_efficiency;
  if (w.compute.hbm_efficiency) w.params.memory.hbm_efficiency = *w.compute.hbm_efficiency;
}

MemoryPlan memory_plan(const DitWorkload& w) {
  MemoryPlan plan;
  const RepeatVars vars = w.vars();
  const bool math = w.attention_backend == AttnBackend::Math;
  int64_t act = 0;
  for (const BlockType& t : w.model.spec.blocks) act = std::max(act, block_activations(t, vars, math));
  plan.activations = act;
  plan.reserve = static_cast<Bytes>(std::llround(w.params.vram.allocator_reserve * static_cast<double>(act)));
  plan.place = w.outside != OutsidePlace::Auto ? w.outside : w.offload == OffloadPolicy::None ? OutsidePlace::Resident : OutsidePlace::Offloaded;
  const double es = dtype_bytes(w.model.dtype);
  for (const OutsideModel& o : w.model.spec.outside) {
    // A stage of its name holds its memory where the stage is placed.
    if (std::any_of(w.stages.begin(), w.stages.end(), [&](const Stage& s) { return s.name == o.name; })) continue;
    MemoryPlan::Outside x;
    x.name = o.name;
    x.runs = o.runs;
    const int64_t params = eval_block_expr(o.params, vars, o.where, fmt::format("outside model '{}' params", o.name));
    const int64_t a = eval_block_expr(o.activations, vars, o.where, fmt::format("outside model '{}' activations", o.name));
    if (params < 0 || a < 0) throw InputError(o.where, fmt::format("outside model '{}': params and activations must not be negative", o.name));
    // The DiT's own embeddings run with its blocks: each expert holds its own, always on the GPU.
    const bool with_blocks = o.runs == OutsideModel::Runs::Throughout;
    x.weights = static_cast<Bytes>(static_cast<double>(params) * es) * (with_blocks ? w.model.experts : 1);
    x.activations = a;
    x.resident = with_blocks || plan.place == OutsidePlace::Resident;
    if (plan.place == OutsidePlace::None && !with_blocks) continue;
    plan.outside.push_back(std::move(x));
  }
  return plan;
}

namespace {

// A Wan-shaped preset's dims: the block stack and a token's side in pixels.
struct WanDims {
  int blocks;
  int64_t hidden, ffn;
  int heads;
  int token_stride;
};
struct Preset {
  const char* name;
  int experts;
  int steps;
  CfgMode cfg;
  std::optional<WanDims> wan = std::nullopt;  // Wan-shaped: its dims
  const char* outside = nullptr;              // its models outside the blocks, where not the Wan preset's
};
// Wan2.2 TI2V-5B (Wan-Video/Wan2.2 wan/configs/wan_ti2v_5B.py: 30 blocks of
// 3072, FFN 14336, 24 heads, 50 steps, guide scale 5): the Wan block at its
// dims. Its Wan 2.2 VAE compresses 16x (vae_stride (4, 16, 16)) and its
// patches are 2x2: a token per 32x32 pixels. Outside the blocks: umT5-XXL
// as Wan's; the Wan 2.2 VAE, encoder and decoder (704.7 M: its 2.82 GB fp32
// Wan2.2_VAE.pth, counted from vae2_2.py); the embeddings with patches of
// 48 x 4 = 192 values in and out.
constexpr const char* kTi2vOutside = R"(
- {name: umt5-xxl, params: 24*(4*4096*4096 + 3*4096*10240) + 256384*4096, runs: before}
- {name: vae, params: 704688668, runs: after}
- {name: embeddings, params: 4096*hidden + 2*hidden*hidden + 256*hidden + 6*hidden*hidden + 2*192*hidden, runs: throughout}
)";

// Wan 2.1 and 2.2 A14B: 40 blocks of 5120, FFN 13824, 40 heads, a token per
// 16x16 pixels. Flux.1-dev and HunyuanVideo take their guidance as an input
// (no CFG forward); a decoder's step is one forward (prefill).
const std::vector<Preset> kPresets = {
    {"wan2.1-14b", 1, 50, CfgMode::Serial, WanDims{40, 5120, 13824, 40, 16}},
    {"wan2.2-14b", 2, 40, CfgMode::Serial, WanDims{40, 5120, 13824, 40, 16}},
    {"wan2.2-ti2v-5b", 1, 50, CfgMode::Serial, WanDims{30, 3072, 14336, 24, 32}, kTi2vOutside},
    {"flux.1-dev", 1, 28, CfgMode::None},
    {"hunyuanvideo", 1, 50, CfgMode::None},
    {"llama3-8b", 1, 1, CfgMode::None},
    {"llama3-70b", 1, 1, CfgMode::None}};

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

// The Wan block written in the block language, with the file's dims.
BlockModel wan_spec(const DitModel& m) {
  BlockModel spec;
  const YAML::Node root = load_yaml_string(*block_preset_text("wan"), "the wan preset");
  read_block_dims("the wan preset", root["dims"], spec);
  read_block_types("the wan preset", root["blocks"], spec);
  const Preset* preset = find_preset(m.preset);
  if (preset && preset->outside) {
    const std::string what = fmt::format("the {} preset", preset->name);
    read_outside_models(what, load_yaml_string(preset->outside, what), spec);
  } else if (m.preset != "custom")
    read_outside_models("the wan preset", root["outside"], spec);  // custom dims: a model of the user's, nothing outside assumed
  spec.dims = {{"hidden", m.hidden}, {"ffn", m.ffn}, {"heads", m.heads}, {"head_dim", m.head_dim}, {"text_tokens", m.text_tokens}};
  spec.blocks[0].count = std::to_string(m.blocks);
  return spec;
}

// `placement:` a rule or a list of GPU names, one per rank.
Placement read_placement(const MapReader& top) {
  Placement p;
  p.given = true;
  p.where = top.where("placement");
  const YAML::Node n = top.get("placement");
  if (n.IsSequence()) {
    p.rule = Placement::Rule::Named;
    for (const YAML::Node& x : n) p.gpus.push_back(scalar_str(top.file(), x, "GPU name"));
    if (p.gpus.empty()) top.fail("placement", "lists no GPU: name one per rank, or give a rule (pack, spread_switches, spread_sockets)");
    return p;
  }
  const std::string r = top.choice("placement", {"pack", "spread_switches", "spread_sockets"});
  p.rule = r == "pack" ? Placement::Rule::Pack : r == "spread_switches" ? Placement::Rule::SpreadSwitches : Placement::Rule::SpreadSockets;
  return p;
}

DitWorkload parse_edited(YAML::Node root, const std::string& file) {
  MapReader top(file, root, "workload",
                {"name", "topology", "calibration", "model", "video", "tokens", "steps", "cfg", "parallelism", "offload", "compute", "runtime",
                 "memory", "stages", "request", "placement"});
  DitWorkload w;
  w.file = file;
  w.name = top.str("name");
  w.topology = top.opt_str("topology").value_or("");
  {
    MapReader m(file, top.get("model"), "model",
                {"preset", "blocks", "hidden", "ffn", "heads", "head_dim", "text_tokens", "experts", "boundary", "dtype", "dims", "outside"});
    std::vector<std::string> names{"custom"};
    for (const auto& p : kPresets) names.emplace_back(p.name);
    const bool own_blocks = m.has("blocks") && m.get("blocks").IsSequence();
    if (own_blocks && !m.has("preset"))
      w.model.preset = "blocks";
    else
      w.model.preset = m.choice("preset", names);
    if (const Preset* p = find_preset(w.model.preset)) {
      w.model.experts = p->experts;
      w.steps = p->steps;
      w.cfg = p->cfg;
      if (p->wan) {
        w.model.blocks = p->wan->blocks;
        w.model.hidden = p->wan->hidden;
        w.model.ffn = p->wan->ffn;
        w.model.heads = p->wan->heads;
        w.model.token_stride = p->wan->token_stride;
      }
    }
    if (w.model.wan_shaped()) {
      if (m.has("dims"))
        m.fail("dims", "Wan-shaped models take hidden:, ffn:, heads:, head_dim:, text_tokens: (or give blocks: a list, without preset:)");
      auto pos = [&](const char* key, auto& field) {
        if (auto v = m.opt_int32(key)) {
          if (*v < 1) m.fail(key, "must be at least 1");
          field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
        }
      };
      if (own_blocks) m.fail("blocks", "with a Wan preset it is the block count; to write your own blocks, leave preset: out");
      pos("blocks", w.model.blocks);
      pos("hidden", w.model.hidden);
      pos("ffn", w.model.ffn);
      pos("heads", w.model.heads);
      pos("head_dim", w.model.head_dim);
      pos("text_tokens", w.model.text_tokens);
      if (w.model.heads * w.model.head_dim != w.model.hidden)
        m.fail_here(fmt::format("heads x head_dim = {} but hidden = {}", w.model.heads * w.model.head_dim, w.model.hidden));
      w.model.spec = wan_spec(w.model);
    } else {
      for (const char* k : {"hidden", "ffn", "heads", "head_dim", "text_tokens"})
        if (m.has(k)) m.fail(k, fmt::format("set it under dims: ({{{}: ...}})", k));
      if (w.model.preset != "blocks") {
        const std::string label = "the " + w.model.preset + " preset";
        const YAML::Node preset = load_yaml_string(*block_preset_text(w.model.preset), label);
        read_block_dims(label, preset["dims"], w.model.spec);
        read_block_types(label, preset["blocks"], w.model.spec);
        if (preset["outside"]) read_outside_models(label, preset["outside"], w.model.spec);
        if (m.has("blocks") && !own_blocks) m.fail("blocks", "is a list of block types; a preset's block counts are dims (e.g. dims: {layers: 16})");
      }
      if (m.has("dims")) read_block_dims(file, m.get("dims"), w.model.spec);  // a preset's dims, overridden
      if (own_blocks) read_block_types(file, m.get("blocks"), w.model.spec);
      if (w.model.preset == "blocks" && !m.has("dims"))
        m.fail_here("a model of your own blocks needs dims: (at least head_dim where it has attention)");
      bool attention = false;
      for (const auto& b : w.model.spec.blocks)
        for (const auto& op : b.ops) attention = attention || op.kind == BlockOp::Kind::Attention;
      if (attention && !w.model.spec.dims.contains("head_dim")) m.fail_here("the model has attention: give dims: {head_dim: ...}");
      w.model.heads = 0;  // unknown unless dims has it
      if (auto it = w.model.spec.dims.find("heads"); it != w.model.spec.dims.end())
        w.model.heads = static_cast<int>(std::min<int64_t>(it->second, INT32_MAX));
      if (auto it = w.model.spec.dims.find("head_dim"); it != w.model.spec.dims.end())
        w.model.head_dim = static_cast<int>(std::min<int64_t>(it->second, INT32_MAX));
    }
    if (m.has("outside")) read_outside_models(file, m.get("outside"), w.model.spec);  // in place of the preset's
    if (auto e = m.opt_int32("experts")) {
      if (*e < 1) m.fail("experts", "must be at least 1");
      w.model.experts = *e;
    }
    if (w.model.experts > 2) m.fail("experts", "a model has 1 or 2 experts (Wan2.2: high-noise, low-noise)");
    if (auto b = m.opt_num("boundary")) {
      if (!(*b > 0 && *b < 1)) m.fail("boundary", "is the fraction of steps on the first expert, in (0, 1)");
      w.model.boundary = *b;
    }
    if (auto d = m.opt_choice("dtype", {"bf16", "fp16", "fp8"})) w.model.dtype = *d == "bf16" ? DType::BF16 : *d == "fp16" ? DType::FP16 : DType::FP8;
  }
  if (top.has("tokens") && top.has("video")) top.fail("tokens", "give 'tokens' or 'video', not both");
  if (top.has("tokens")) {
    w.tokens = top.integer("tokens");
    if (w.tokens < 1) top.fail("tokens", "must be at least 1");
  } else {
    MapReader v(file, top.get("video"), "video", {"width", "height", "frames"});
    w.width = v.int32("width");
    w.height = v.int32("height");
    w.frames = v.int32("frames");
    const int stride = w.model.token_stride;
    if (w.width % stride || w.height % stride || w.width < stride || w.height < stride)
      v.fail_here(fmt::format("width and height must be positive multiples of {} (a token's side in pixels for model {})", stride, w.model.preset));
    if (w.frames < 1 || (w.frames - 1) % 4) v.fail("frames", "must be 4k+1 (the VAE compresses time by 4)");
    w.tokens = ((w.frames - 1) / 4 + 1) * (w.height / stride) * (w.width / stride);
  }
  if (auto s = top.opt_int32("steps")) {
    if (*s < 1 || *s > 1'000'000) top.fail("steps", "must be in 1..1,000,000 (the step time settles after the first few steps: a few dozen show it)");
    w.steps = static_cast<int>(*s);
  }
  if (auto c = top.opt_choice("cfg", {"none", "serial", "parallel"}))
    w.cfg = *c == "none" ? CfgMode::None : *c == "serial" ? CfgMode::Serial : CfgMode::Parallel;
  if (top.has("parallelism")) {
    MapReader p(file, top.get("parallelism"), "parallelism",
                {"ulysses", "ring", "tp", "tp_overlap", "tp_comm_sms", "attention_comm", "all_to_all", "comm_dtype", "channels"});
    if (auto u = p.opt_int32("ulysses")) {
      if (*u < 1) p.fail("ulysses", "must be at least 1");
      w.ulysses = static_cast<int>(*u);
    }
    if (w.model.heads && w.model.heads % w.ulysses) p.fail("ulysses", fmt::format("must divide the {} attention heads", w.model.heads));
    if (auto t = p.opt_int32("tp")) {
      if (*t < 1) p.fail("tp", "must be at least 1");
      w.tp = static_cast<int>(*t);
      if (w.model.heads && w.model.heads % (w.ulysses * w.tp))
        p.fail("tp", fmt::format("ulysses x tp = {} must divide the {} attention heads", w.ulysses * w.tp, w.model.heads));
      if (w.tp > 1 && w.model.wan_shaped())
        p.fail("tp", "the Wan blocks have no tensor-parallel split: write the model's blocks (docs/formats/workload.md)");
    }
    if (auto o = p.opt_choice("tp_overlap", {"none", "chunked", "ring_exchange"}))
      w.tp_overlap = *o == "none" ? TpOverlap::None : *o == "chunked" ? TpOverlap::Chunked : TpOverlap::RingExchange;
    if (auto n = p.opt_int32("tp_comm_sms")) {
      if (*n < 0 || *n > 1024) p.fail("tp_comm_sms", "is the SMs the overlapped communication holds, 0..1024 (0: NCCL's default channels)");
      if (*n > 0 && w.tp_overlap == TpOverlap::None) p.fail("tp_comm_sms", "applies with tp_overlap: chunked or ring_exchange");
      w.tp_comm_sms = static_cast<int>(*n);
    }
    if (auto g = p.opt_int32("ring")) {
      if (*g < 1) p.fail("ring", "must be at least 1");
      w.ring = static_cast<int>(*g);
    }
    if (static_cast<int64_t>(w.ulysses) * w.ring * w.tp > 65536) p.fail_here("ulysses x ring x tp is more than 65,536 ranks");
    if (auto a = p.opt_int32("attention_comm")) {
      if (*a != 2 && *a != 4) p.fail("attention_comm", "is 4 (q, k, v, out) or 2 (packed qkv, out)");
      w.attention_comm = static_cast<int>(*a);
    }
    if (auto a = p.opt_choice("all_to_all", {"nccl", "pairwise"})) w.all_to_all = *a == "nccl" ? CollAlgo::Nccl : CollAlgo::Pairwise;
    if (auto d = p.opt_choice("comm_dtype", {"bf16", "fp8"})) w.comm_dtype = *d == "bf16" ? DType::BF16 : DType::FP8;
    if (auto c = p.opt_int32("channels")) {
      if (*c < 1) p.fail("channels", "must be at least 1");
      w.channels = static_cast<int>(*c);
    }
  }
  if (w.tokens % w.ulysses) top.fail_here(fmt::format("{} tokens do not split evenly over Ulysses degree {}", w.tokens, w.ulysses));
  if (w.tokens % (static_cast<int64_t>(w.ulysses) * w.ring))
    top.fail_here(fmt::format("{} tokens do not split evenly over ulysses x ring = {}", w.tokens, static_cast<int64_t>(w.ulysses) * w.ring));
  // Every expression of the model, evaluated once here: errors name the file before anything runs.
  const ForwardCost cost = workload_cost(w);
  const int total_blocks = cost.blocks;
  if (top.has("offload")) {
    MapReader o(file, top.get("offload"), "offload", {"policy", "prefetch_size", "host_memory"});
    const std::string pol = o.choice("policy", {"none", "blocking", "layerwise", "block", "phase"});
    w.offload = pol == "none"        ? OffloadPolicy::None
                : pol == "blocking"  ? OffloadPolicy::Blocking
                : pol == "layerwise" ? OffloadPolicy::Layerwise
                : pol == "block"     ? OffloadPolicy::Block
                                     : OffloadPolicy::Phase;
    if (auto p = o.opt_int32("prefetch_size")) {
      if (w.offload != OffloadPolicy::Layerwise)
        o.fail("prefetch_size",
               fmt::format("applies to policy layerwise, not {}: remove it (on the command line: --set offload.prefetch_size=null)", pol));
      if (*p < 0 || *p >= total_blocks) o.fail("prefetch_size", fmt::format("must be 0..{} (0 = blocking copies)", total_blocks - 1));
      w.prefetch_size = static_cast<int>(*p);
    }
    // The old FSDP path copied from pageable memory; the others pin.
    w.host_memory = w.offload == OffloadPolicy::Blocking ? HostMem::Pageable : HostMem::Pinned;
    if (auto h = o.opt_choice("host_memory", {"pinned", "pageable"})) w.host_memory = *h == "pinned" ? HostMem::Pinned : HostMem::Pageable;
  }
  if (auto cal = top.opt_str("calibration")) {
    // Relative to the workload file; applied before the workload's own 'compute:'.
    const std::string path = (std::filesystem::path(file).parent_path() / *cal).string();
    w.calibration = path;
    CalibrationFile c = read_calibration_file(path, w.params);
    w.params = std::move(c.params);
    w.calibration_origin = std::move(c.origin);
  }
  if (top.has("compute")) {
    MapReader c(file, top.get("compute"), "compute",
                {"gemm_efficiency", "attention_efficiency", "hbm_efficiency", "attention_backend", "fp8_input_quant"});
    auto eff = [&](const char* key, std::optional<double>& field) {
      if (auto v = c.opt_num(key)) {
        if (!(*v > 0 && *v <= 1)) c.fail(key, "must be in (0, 1]");
        field = *v;
      }
    };
    eff("gemm_efficiency", w.compute.gemm_efficiency);
    eff("attention_efficiency", w.compute.attention_efficiency);
    eff("hbm_efficiency", w.compute.hbm_efficiency);
    set_base_params(w, w.params);
    if (auto b = c.opt_choice("attention_backend", attn_backend_names())) w.attention_backend = *attn_backend_of(*b);
    if (auto q = c.opt_choice("fp8_input_quant", {"fused", "scale_then_cast", "none"}))
      w.fp8_input_quant = *q == "fused" ? Fp8InputQuant::Fused : *q == "scale_then_cast" ? Fp8InputQuant::ScaleThenCast : Fp8InputQuant::None;
  }
  if (top.has("runtime"))
    w.runtime = read_runtime_settings(MapReader(file, top.get("runtime"), "runtime", {"device_max_connections", "nccl_p2p_disable", "nccl_nvls_enable", "framework"}));
  if (top.has("memory")) {
    MapReader mem(file, top.get("memory"), "memory", {"outside"});
    if (auto o = mem.opt_choice("outside", {"auto", "resident", "offloaded", "none"}))
      w.outside = *o == "auto"        ? OutsidePlace::Auto
                  : *o == "resident"  ? OutsidePlace::Resident
                  : *o == "offloaded" ? OutsidePlace::Offloaded
                                      : OutsidePlace::None;
  }
  if (top.has("stages")) {
    if (top.has("tokens")) top.fail("stages", "a request's stages need its video: {width, height, frames} in place of tokens:");
    w.stages = read_stages(file, top.get("stages"));
    for (Stage& s : w.stages) {
      if (s.kind == Stage::Kind::VaeDecode && s.vae.spatial * 2 != w.model.token_stride)
        throw InputError(s.where, fmt::format("stage '{}': this VAE compresses {}x, but model {} takes a token per {} pixels (its VAE's {}x with "
                                              "2x2 patches): give the model's own VAE (wan2.2-ti2v-5b: wan2.2-vae; the others: their 8x one)",
                                              s.name, s.vae.spatial, w.model.preset, w.model.token_stride, w.model.token_stride / 2));
      // Named like an outside model: it loads that model's weights.
      for (const OutsideModel& o : w.model.spec.outside)
        if (o.name == s.name && !s.params) s.params = eval_block_expr(o.params, w.vars(), o.where, fmt::format("outside model '{}' params", o.name));
      stage_plan(s, w.stage_job(0));  // its shapes checked here
    }
  }
  if (top.has("request")) {
    MapReader q(file, top.get("request"), "request", {"first_prefetch_blocking", "move_outside"});
    w.request.first_prefetch_blocking = q.boolean("first_prefetch_blocking", false);
    w.request.move_outside = q.boolean("move_outside", false);
    if (w.request.first_prefetch_blocking && !(w.offload == OffloadPolicy::Layerwise && w.prefetch_size > 0))
      q.fail("first_prefetch_blocking", "applies to offload policy layerwise with prefetch_size 1 or more");
  }
  if (top.has("placement")) w.placement = read_placement(top);
  memory_plan(w);  // its expressions evaluated here: errors name the file before anything runs
  return w;
}

// The workload `root` as `overrides` edit it; an error in an edited value names the edit.
DitWorkload parse(YAML::Node root, const std::string& file, const std::vector<Override>& overrides) {
  apply_overrides(root, overrides, "the workload");
  if (overrides.empty()) return parse_edited(root, file);
  try {
    return parse_edited(root, file);
  } catch (const InputError& e) {
    throw override_error(e, file, overrides);
  }
}
DitWorkload parse(YAML::Node root, const std::string& file, const std::vector<std::string>& overrides) {
  return parse(std::move(root), file, overrides_from_flags(overrides));
}

}  // namespace

DitWorkload parse_workload_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse(load_yaml_file(path), path, overrides);
}
DitWorkload parse_workload_file(const std::string& path, const std::vector<Override>& overrides) {
  return parse(load_yaml_file(path), path, overrides);
}

DitWorkload parse_workload_string(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_string(yaml, name);
  if (!root.IsMap()) throw InputError(SourceLocation{name, 1, 1}, "expected a YAML mapping at the top level");
  return parse(root, name, overrides);
}

void place_on(DitWorkload& w, const hw::Topology& topo) {
  if (w.placement.given) w.gpus = place_ranks(w.placement, topo, w.ranks());
}

bool is_workload_file(const std::string& path) {
  // Read only up to where a schedule shows itself (its first program's ops
  // open, no `model:` before them): a written schedule holds millions of ops.
  struct IsSchedule {};
  YAML::Node root;
  try {
    root.reset(stream_yaml_file(path, {"programs", "ops"},
                                StreamHandler{.on_open =
                                                  [](size_t, const YAML::Node& so_far, const YAML::Node&) {
                                                    if (!so_far["model"].IsDefined()) throw IsSchedule{};
                                                  },
                                              .on_item = [](size_t, const YAML::Node&) {},
                                              .on_close = {}}));
  } catch (const IsSchedule&) {
    return false;
  }
  if (!root["model"].IsDefined() && !root["programs"].IsDefined())
    throw InputError(SourceLocation{path, 1, 1},
                     "neither a workload (it has no 'model:') nor a schedule (no 'programs:'): docs/formats/workload.md, "
                     "docs/formats/schedule.md");
  return root["model"].IsDefined();
}

}  // namespace osim
