#include "dit.hpp"

#include "schedule/builder.hpp"
#include "core/slots.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "gpu/params_io.hpp"
#include "io/yaml_reader.hpp"

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

double DitModel::params_per_block() const {
  const double h = static_cast<double>(hidden), f = static_cast<double>(ffn);
  return 8.0 * h * h + 2.0 * h * f;  // self-attn q,k,v,o + cross-attn q,k,v,o + FFN up/down
}
Bytes DitModel::block_bytes() const { return static_cast<Bytes>(params_per_block() * dtype_bytes(dtype)); }

Bytes DitWorkload::a2a_tensor_bytes() const {
  return static_cast<Bytes>(static_cast<double>(tokens / ulysses) * static_cast<double>(model.hidden) * dtype_bytes(comm_dtype));
}

namespace {

struct Preset {
  const char* name;
  int experts;
  int steps;
};
const std::vector<Preset> kPresets = {{"wan2.1-14b", 1, 50}, {"wan2.2-14b", 2, 40}};

DitWorkload parse(YAML::Node root, const std::string& file, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_override(root, o, "the workload", SourceLocation{"--set " + o, 0, 0});
  MapReader top(file, root, "workload",
                {"name", "topology", "calibration", "model", "video", "tokens", "steps", "cfg", "parallelism", "offload", "compute", "runtime"});
  DitWorkload w;
  w.file = file;
  w.name = top.str("name");
  w.topology = top.opt_str("topology").value_or("");
  {
    MapReader m(file, top.get("model"), "model",
                {"preset", "blocks", "hidden", "ffn", "heads", "head_dim", "text_tokens", "experts", "boundary", "dtype"});
    std::vector<std::string> names{"custom"};
    for (const auto& p : kPresets) names.emplace_back(p.name);
    w.model.preset = m.choice("preset", names);
    for (const auto& p : kPresets)
      if (w.model.preset == p.name) {
        w.model.experts = p.experts;
        w.steps = p.steps;
      }
    auto pos = [&](const char* key, auto& field) {
      if (auto v = m.opt_int32(key)) {
        if (*v < 1) m.fail(key, "must be at least 1");
        field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
      }
    };
    pos("blocks", w.model.blocks);
    pos("hidden", w.model.hidden);
    pos("ffn", w.model.ffn);
    pos("heads", w.model.heads);
    pos("head_dim", w.model.head_dim);
    pos("text_tokens", w.model.text_tokens);
    pos("experts", w.model.experts);
    if (w.model.experts > 2) m.fail("experts", "Wan-style models have 1 or 2 experts");
    if (auto b = m.opt_num("boundary")) {
      if (!(*b > 0 && *b < 1)) m.fail("boundary", "is the fraction of steps on the first expert, in (0, 1)");
      w.model.boundary = *b;
    }
    if (auto d = m.opt_choice("dtype", {"bf16", "fp16", "fp8"})) w.model.dtype = *d == "bf16" ? DType::BF16 : *d == "fp16" ? DType::FP16 : DType::FP8;
    if (w.model.heads * w.model.head_dim != w.model.hidden)
      m.fail_here(fmt::format("heads x head_dim = {} but hidden = {}", w.model.heads * w.model.head_dim, w.model.hidden));
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
    if (w.width % 16 || w.height % 16 || w.width < 16 || w.height < 16) v.fail_here("width and height must be positive multiples of 16");
    if (w.frames < 1 || (w.frames - 1) % 4) v.fail("frames", "must be 4k+1 (the VAE compresses time by 4)");
    w.tokens = ((w.frames - 1) / 4 + 1) * (w.height / 16) * (w.width / 16);
  }
  if (auto s = top.opt_int32("steps")) {
    if (*s < 1) top.fail("steps", "must be at least 1");
    w.steps = static_cast<int>(*s);
  }
  if (auto c = top.opt_choice("cfg", {"none", "serial", "parallel"})) w.cfg = *c == "none" ? CfgMode::None : *c == "serial" ? CfgMode::Serial : CfgMode::Parallel;
  if (top.has("parallelism")) {
    MapReader p(file, top.get("parallelism"), "parallelism", {"ulysses", "attention_comm", "all_to_all", "comm_dtype", "channels"});
    if (auto u = p.opt_int32("ulysses")) {
      if (*u < 1) p.fail("ulysses", "must be at least 1");
      w.ulysses = static_cast<int>(*u);
    }
    if (w.model.heads % w.ulysses) p.fail("ulysses", fmt::format("must divide the {} attention heads", w.model.heads));
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
  if (top.has("offload")) {
    MapReader o(file, top.get("offload"), "offload", {"policy", "prefetch_size", "host_memory"});
    const std::string pol = o.choice("policy", {"none", "blocking", "layerwise", "block", "phase"});
    w.offload = pol == "none" ? OffloadPolicy::None : pol == "blocking" ? OffloadPolicy::Blocking : pol == "layerwise" ? OffloadPolicy::Layerwise
              : pol == "block" ? OffloadPolicy::Block : OffloadPolicy::Phase;
    if (auto p = o.opt_int32("prefetch_size")) {
      if (w.offload != OffloadPolicy::Layerwise)
        o.fail("prefetch_size", fmt::format("applies to policy layerwise, not {}: remove it (on the command line: --set offload.prefetch_size=null)", pol));
      if (*p < 0 || *p >= w.model.blocks) o.fail("prefetch_size", fmt::format("must be 0..{} (0 = blocking copies)", w.model.blocks - 1));
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
    w.params = load_calibration(path, w.params);
  }
  if (top.has("compute")) {
    MapReader c(file, top.get("compute"), "compute", {"gemm_efficiency", "attention_efficiency", "hbm_efficiency", "attention_backend"});
    auto eff = [&](const char* key, double& field) {
      if (auto v = c.opt_num(key)) {
        if (!(*v > 0 && *v <= 1)) c.fail(key, "must be in (0, 1]");
        field = *v;
      }
    };
    eff("gemm_efficiency", w.params.gemm.gemm_efficiency);
    // An explicit efficiency is for every shape the calibration's table lacks.
    if (c.has("gemm_efficiency")) w.params.gemm.gemm_model = {};
    eff("attention_efficiency", w.params.attention.attention_efficiency);
    eff("hbm_efficiency", w.params.memory.hbm_efficiency);
    if (auto b = c.opt_choice("attention_backend", attn_backend_names())) w.attention_backend = *attn_backend_of(*b);
  }
  if (top.has("runtime"))
    w.runtime = read_runtime_settings(MapReader(file, top.get("runtime"), "runtime", {"device_max_connections", "nccl_p2p_disable", "framework"}));
  return w;
}

}  // namespace

DitWorkload parse_workload_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse(load_yaml_file(path), path, overrides);
}

DitWorkload parse_workload_string(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_string(yaml, name);
  if (!root.IsMap()) throw InputError(SourceLocation{name, 1, 1}, "expected a YAML mapping at the top level");
  return parse(root, name, overrides);
}

bool is_workload_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  if (!root["model"].IsDefined() && !root["programs"].IsDefined())
    throw InputError(SourceLocation{path, 1, 1}, "neither a workload (it has no 'model:') nor a schedule (no 'programs:'): docs/formats/workload.md, "
                                                 "docs/formats/schedule.md");
  return root["model"].IsDefined();
}

// ---------------------------------------------------------------- generator

namespace {

class Gen {
 public:
  explicit Gen(const DitWorkload& w) : w_(w), b_(w.name, w.ranks()) {
    Schedule& s = b_.schedule();
    s.file = w.file;
    s.topology = w.topology;
    s.runtime = w.runtime;
    b_.stream("compute");
    b_.stream("copy");
    const int U = w.ulysses, R = w.ranks();
    for (int c = 0; c < R / U; ++c) {
      std::vector<int> ranks;
      for (int i = 0; i < U; ++i) ranks.push_back(c * U + i);
      if (U > 1) b_.group(fmt::format("sp{}", c), ranks);
    }
    if (w.cfg == CfgMode::Parallel)
      for (int i = 0; i < U; ++i) b_.group(fmt::format("cfg{}", i), {i, i + U});
    groups_ = static_cast<int>(s.groups.size());
  }

  Schedule run() {
    // Without CFG-parallel every rank runs the same program (Ulysses ranks
    // differ only in their data): generate it once and share it.
    const bool same = w_.cfg != CfgMode::Parallel;
    for (int r = 0; r < w_.ranks(); ++r) {
      if (same && r > 0) b_.share_program(r, 0);
      else program(r);
    }
    return b_.build();
  }

 private:
  static constexpr int kCompute = 0, kCopy = 1;

  int event(const std::string& name) { return b_.event(name); }

  // Generated ops carry no source location (a file name per op would cost an
  // allocation each); errors name the rank and op index instead.
  void kernel_gemm(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k) {
    ops.push_back(ops::gemm(kCompute, m, n, k, w_.model.dtype == DType::FP8 ? DType::FP8 : DType::BF16, name));
  }
  void kernel_mem(std::vector<Op>& ops, const std::string& name, double bytes) { ops.push_back(ops::memory_kernel(kCompute, bytes, name)); }
  void kernel_attn(std::vector<Op>& ops, const std::string& name, int64_t heads, int64_t sq, int64_t skv) {
    const AttentionShape a{1, static_cast<int32_t>(heads), static_cast<int32_t>(sq), static_cast<int32_t>(skv), w_.model.head_dim, w_.attention_backend};
    ops.push_back(ops::attention(kCompute, a, name));
  }
  void a2a(std::vector<Op>& ops, int rank, const std::string& name, Bytes bytes) {
    if (w_.ulysses == 1) return;
    Op op = ops::collective(kCompute, CollKind::AllToAll, rank / w_.ulysses /* sp{c} */, bytes, w_.all_to_all, w_.comm_dtype, name);
    op.channels = w_.channels;
    ops.push_back(std::move(op));
  }
  void marker(std::vector<Op>& ops, const std::string& name) { ops.push_back(ops::marker(kCompute, name)); }

  // One DiT block's compute and Ulysses communication on this rank.
  void block(std::vector<Op>& ops, int rank, const std::string& tag) {
    const int64_t S = w_.tokens, Sl = S / w_.ulysses, h = w_.model.hidden, f = w_.model.ffn;
    const double e = dtype_bytes(DType::BF16);
    const double act = static_cast<double>(Sl) * static_cast<double>(h) * e;
    kernel_mem(ops, tag + " norm1", 2 * act);
    kernel_gemm(ops, tag + " qkv", Sl, 3 * h, h);
    kernel_mem(ops, tag + " rope", 4 * act);
    const Bytes t = w_.a2a_tensor_bytes();
    if (w_.attention_comm == 4) {
      a2a(ops, rank, tag + " a2a q", t);
      a2a(ops, rank, tag + " a2a k", t);
      a2a(ops, rank, tag + " a2a v", t);
    } else {
      a2a(ops, rank, tag + " a2a qkv", 3 * t);
    }
    kernel_attn(ops, tag + " self-attn", w_.model.heads / w_.ulysses, S, S);
    a2a(ops, rank, tag + " a2a out", t);
    kernel_gemm(ops, tag + " out", Sl, h, h);
    kernel_mem(ops, tag + " norm3", 2 * act);
    kernel_gemm(ops, tag + " cross q", Sl, h, h);
    kernel_gemm(ops, tag + " cross kv", w_.model.text_tokens, 2 * h, h);
    kernel_attn(ops, tag + " cross-attn", w_.model.heads, Sl, w_.model.text_tokens);
    kernel_gemm(ops, tag + " cross out", Sl, h, h);
    kernel_mem(ops, tag + " norm2", 2 * act);
    kernel_gemm(ops, tag + " ffn up", Sl, f, h);
    kernel_mem(ops, tag + " gelu", 2.0 * static_cast<double>(Sl) * static_cast<double>(f) * e);
    kernel_gemm(ops, tag + " ffn down", Sl, h, f);
    kernel_mem(ops, tag + " residual", 3 * act);
  }

  int expert_of(int fwd) const {
    if (w_.model.experts < 2) return 0;
    const int step = w_.cfg == CfgMode::Serial ? fwd / 2 : fwd;
    return step < static_cast<int>(w_.model.boundary * w_.steps + 0.5) ? 0 : 1;
  }

  void copy(std::vector<Op>& ops, int stream, const std::string& name, Bytes bytes, bool async) {
    ops.push_back(ops::copy(stream, CopyKind::H2D, bytes, w_.host_memory, async, name));
  }
  void alloc(std::vector<Op>& ops, const std::string& tag, Bytes bytes) { ops.push_back(ops::alloc(tag, bytes)); }
  void free_(std::vector<Op>& ops, const std::string& tag) { ops.push_back(ops::free(tag)); }
  void record(std::vector<Op>& ops, int stream, int ev) { ops.push_back(ops::record(stream, ev)); }
  void wait_event(std::vector<Op>& ops, int stream, int ev) { ops.push_back(ops::wait_event(stream, ev)); }
  void wait_stream(std::vector<Op>& ops, int stream, int on) { ops.push_back(ops::wait_stream(stream, on)); }
  void sync(std::vector<Op>& ops, int stream) { ops.push_back(ops::stream_sync(stream)); }

  std::string layer_name(int g) const {  // g: global layer index over all forwards
    const int L = w_.model.blocks;
    return fmt::format("e{}.f{}.l{}", expert_of(g / L), g / L, g % L);  // <= 15 chars up to 999 forwards
  }

  void program(int rank) {
    std::vector<Op> ops;
    const int L = w_.model.blocks, F = w_.forwards_per_rank();
    reserve_huge(ops, static_cast<size_t>(F) * static_cast<size_t>(L) * 30 + 100);
    const Bytes lb = w_.model.block_bytes();
    const int total = F * L;
    const bool cfg_par = w_.cfg == CfgMode::Parallel;
    auto fwd_marker = [&](int f) {
      const int step = w_.cfg == CfgMode::Serial ? f / 2 : f;
      const std::string cond = w_.cfg == CfgMode::Serial ? (f % 2 ? "uncond" : "cond") : (cfg_par ? (rank < w_.ulysses ? "cond" : "uncond") : "cond");
      marker(ops, fmt::format("step {} {}", step, cond));
    };
    auto end_of_step = [&](int f) {
      const bool last_of_step = w_.cfg != CfgMode::Serial || f % 2 == 1;
      if (!last_of_step || !cfg_par) return;
      // CFG-parallel: combine the two predictions (the latent, fp32).
      const Bytes latent = 2 * 16 * ((w_.frames - 1) / 4 + 1) * (w_.height / 8) * (w_.width / 8) * 4 / w_.ulysses;
      ops.push_back(ops::collective(kCompute, CollKind::AllGather, groups_ - w_.ulysses + rank % w_.ulysses, latent,
                                    CollAlgo::Nccl, DType::FP32, "cfg gather"));
    };

    switch (w_.offload) {
      case OffloadPolicy::None: {
        for (int e = 0; e < w_.model.experts; ++e)
          for (int l = 0; l < L; ++l) alloc(ops, fmt::format("e{}.l{}", e, l), lb);
        for (int f = 0; f < F; ++f) {
          fwd_marker(f);
          for (int l = 0; l < L; ++l) block(ops, rank, fmt::format("l{}", l));
          end_of_step(f);
        }
        sync(ops, kCompute);
        break;
      }
      case OffloadPolicy::Blocking:
      case OffloadPolicy::Layerwise: {
        const int P = w_.offload == OffloadPolicy::Blocking ? 0 : w_.prefetch_size;
        std::vector<char> prefetched(static_cast<size_t>(total), 0);
        auto prefetch = [&](int g) {
          if (prefetched[g]) return;  // already on the GPU or on its way (the wrap-around overlaps)
          prefetched[g] = 1;
          const std::string n = layer_name(g);
          alloc(ops, n, lb);
          copy(ops, kCopy, "h2d " + n, lb, true);
          record(ops, kCopy, event(n));
        };
        if (P > 0) {
          for (int j = 0; j < P && j < total; ++j) prefetch(j);
        }
        for (int f = 0; f < F; ++f) {
          fwd_marker(f);
          for (int l = 0; l < L; ++l) {
            const int g = f * L + l;
            const std::string n = layer_name(g);
            if (P == 0) {  // the old path: a blocking .to() per layer
              alloc(ops, n, lb);
              copy(ops, kCompute, "h2d " + n, lb, false);
            } else {
              if (l % P == 0) {
                wait_stream(ops, kCopy, kCompute);  // copy_stream.wait_stream(compute)
                for (int j = g + P; j < g + 2 * P && j < total; ++j) prefetch(j);
              }
              wait_event(ops, kCompute, event(n));
            }
            block(ops, rank, fmt::format("l{}", l));
            free_(ops, n);
          }
          end_of_step(f);
        }
        sync(ops, kCompute);
        break;
      }
      case OffloadPolicy::Block:
      case OffloadPolicy::Phase: {
        // Two GPU buffers; the next unit is copied while this one computes;
        // the host synchronises both streams after every unit.
        const bool phase = w_.offload == OffloadPolicy::Phase;
        const double h = static_cast<double>(w_.model.hidden), ff = static_cast<double>(w_.model.ffn);
        const double es = dtype_bytes(w_.model.dtype);
        const std::vector<Bytes> units = phase ? std::vector<Bytes>{static_cast<Bytes>(4 * h * h * es), static_cast<Bytes>(4 * h * h * es),
                                                                    static_cast<Bytes>(2 * h * ff * es)}
                                               : std::vector<Bytes>{lb};
        Bytes largest = 0;
        for (Bytes b : units) largest = std::max(largest, b);
        alloc(ops, "buffer0", largest);
        alloc(ops, "buffer1", largest);
        copy(ops, kCopy, "h2d first", units[0], true);
        sync(ops, kCopy);
        const int per_block = static_cast<int>(units.size());
        const int count = total * per_block;
        for (int f = 0; f < F; ++f) {
          fwd_marker(f);
          for (int l = 0; l < L; ++l) {
            std::vector<Op> body;
            block(body, rank, fmt::format("l{}", l));
            // Split the block's ops into its phases: self-attn, cross-attn, FFN.
            std::vector<std::vector<Op>> parts(per_block);
            for (const Op& op : body) {
              int p = 0;
              if (phase) {
                if (op.label.find("norm3") != std::string::npos || op.label.find("cross") != std::string::npos) p = 1;
                if (op.label.find("norm2") != std::string::npos || op.label.find("ffn") != std::string::npos ||
                    op.label.find("gelu") != std::string::npos || op.label.find("residual") != std::string::npos)
                  p = 2;
              }
              parts[p].push_back(op);
            }
            for (int u = 0; u < per_block; ++u) {
              const int idx = (f * L + l) * per_block + u;
              if (idx + 1 < count) copy(ops, kCopy, fmt::format("h2d f{}.l{}.{}", f, l, (u + 1) % per_block), units[(u + 1) % per_block], true);
              for (Op& op : parts[u]) ops.push_back(std::move(op));
              sync(ops, kCompute);
              sync(ops, kCopy);
            }
          }
          end_of_step(f);
        }
        free_(ops, "buffer0");
        free_(ops, "buffer1");
        break;
      }
    }
    b_.program(rank) = std::move(ops);
  }

  const DitWorkload& w_;
  ScheduleBuilder b_;
  int groups_ = 0;
};

}  // namespace

Schedule generate_schedule(const DitWorkload& w) { return Gen(w).run(); }

}  // namespace osim
