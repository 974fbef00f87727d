// The generator: a workload (DitWorkload) expanded into a Schedule, one
// program per rank with the kernels, collectives, weight copies and memory
// of every step (docs/formats/workload.md). Here the ranks, their groups,
// streams and events, and each rank's ops; the block types' op templates it
// copies from are built in generate_templates.cpp.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "core/slots.hpp"
#include "io/limits.hpp"
#include "schedule/builder.hpp"
#include "schedule/stage_spans.hpp"
#include "workload/dit.hpp"
#include "workload/generate_templates.hpp"

namespace osim {

namespace {

class Gen {
 public:
  // `as_run`: the programs are generated as a run reaches them (Program::source).
  Gen(std::shared_ptr<const DitWorkload> workload, bool as_run) : owned_(std::move(workload)), w_(*owned_), b_(w_.name, w_.ranks()) {
    const DitWorkload& w = w_;
    Schedule& s = b_.schedule();
    s.file = w.file;
    s.topology = w.topology;
    s.gpus = w.gpus;
    s.runtime = w.runtime;
    b_.stream("compute");
    b_.stream("copy");
    // Rank ((c * G + g) * U + u) * T + t: CFG half c, ring rank g, Ulysses
    // rank u, tensor-parallel rank t.
    const int U = w.ulysses, G = w.ring, T = w.tp, R = w.ranks();
    if (G > 1) {
      ring_send_ = b_.stream("ring send");
      ring_recv_ = b_.stream("ring recv");
      for (int i = 0; i + 1 < G; ++i) ring_events_.push_back(b_.event(fmt::format("ring{}", i)));
    }
    if (w.tp_overlap == TpOverlap::Chunked && T > 1) tp_stream_ = b_.stream("tp comm");
    if (w.tp_overlap == TpOverlap::RingExchange && T > 1) {
      tp_send_ = b_.stream("tp send");
      tp_recv_ = b_.stream("tp recv");
    }
    auto rank_of = [&](int c, int g, int u, int t) { return ((c * G + g) * U + u) * T + t; };
    sp_of_.assign(static_cast<size_t>(R), -1);
    tp_of_.assign(static_cast<size_t>(R), -1);
    cfg_of_.assign(static_cast<size_t>(R), -1);
    ring_of_.assign(static_cast<size_t>(R), -1);
    ring_next_.assign(static_cast<size_t>(R), -1);
    ring_prev_.assign(static_cast<size_t>(R), -1);
    const int halves = R / (G * U * T);
    int groups = 0;
    for (int c = 0; c < halves; ++c)
      for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) {
          if (U < 2) continue;
          std::vector<int> ranks;
          for (int u = 0; u < U; ++u) ranks.push_back(rank_of(c, g, u, t));
          b_.group(fmt::format("sp{}{}{}", c, G > 1 ? fmt::format(".r{}", g) : "", T > 1 ? fmt::format(".{}", t) : ""), ranks);
          for (int r : ranks) sp_of_[static_cast<size_t>(r)] = groups;
          ++groups;
        }
    if (T > 1)
      for (int cu = 0; cu < R / T; ++cu) {
        std::vector<int> ranks;
        for (int t = 0; t < T; ++t) ranks.push_back(cu * T + t);
        b_.group(fmt::format("tp{}", cu), ranks);
        for (int r : ranks) tp_of_[static_cast<size_t>(r)] = groups;
        ++groups;
      }
    for (int c = 0; c < halves; ++c)
      for (int g = 0; g < G; ++g)
        for (int u = 0; u < U; ++u)
          for (int t = 0; t < T; ++t) {
            ring_next_[static_cast<size_t>(rank_of(c, g, u, t))] = rank_of(c, (g + 1) % G, u, t);
            ring_prev_[static_cast<size_t>(rank_of(c, g, u, t))] = rank_of(c, (g + G - 1) % G, u, t);
          }
    if (w.cfg == CfgMode::Parallel)
      for (int i = 0; i < G * U * T; ++i) {
        b_.group(fmt::format("cfg{}", i), {i, i + G * U * T});
        cfg_of_[static_cast<size_t>(i)] = cfg_of_[static_cast<size_t>(i + G * U * T)] = groups++;
      }
    // Ring attention's ranks: a communicator of their own (NCCL's buffers).
    if (G > 1)
      for (int c = 0; c < halves; ++c)
        for (int u = 0; u < U; ++u)
          for (int t = 0; t < T; ++t) {
            std::vector<int> ranks;
            for (int g = 0; g < G; ++g) ranks.push_back(rank_of(c, g, u, t));
            b_.group(fmt::format("ring{}{}{}", c, U > 1 ? fmt::format(".u{}", u) : "", T > 1 ? fmt::format(".{}", t) : ""), ranks);
            for (int r : ranks) ring_of_[static_cast<size_t>(r)] = groups;
            ++groups;
          }
    templates_ = gen::build_block_templates(w, tp_stream_, tp_send_);
    StageJob job = w.stage_job(kCompute);
    if (parallel_decode()) {  // a VAE's bands over the Ulysses group, halos on streams of their own
      job.group = group_role(Group::Ulysses);
      job.next = next_in_group(Group::Ulysses);
      job.prev = prev_in_group(Group::Ulysses);
      job.send_stream = b_.stream("halo send");
      job.recv_stream = b_.stream("halo recv");
      job.event = b_.event("halo");
    }
    for (const Stage& st : w.stages) stage_plans_.push_back(stage_plan(st, job));
    // The tied collectives' events, as many as the most chunks, and one for the last.
    if (tp_stream_ >= 0 || tp_send_ >= 0)
      for (const TypeTemplate& tt : templates_.types)
        for (const Template& t : tt.ops) {
          if (!t.tied) continue;
          while (static_cast<int>(tp_events_.size()) < t.chunks) tp_events_.push_back(b_.event(fmt::format("tp{}", tp_events_.size())));
          if (tp_done_ < 0) tp_done_ = b_.event("tp done");
        }
    if (as_run && w.offload == OffloadPolicy::Layerwise && w.prefetch_size > 0)
      for (int i = 0; i < 2 * w.prefetch_size + 2; ++i) slot_events_.push_back(b_.event(fmt::format("layer weights {}", i)));
  }

  // `self`: this generator, which the programs' sources hold (as_run).
  Schedule run(const std::shared_ptr<Gen>& self = nullptr) {
    // The ranks of a CFG half run the same program (they differ only in
    // their data and, by role, in their groups and peers): generate it once
    // per half and share it.
    const int half = w_.ranks() / (w_.cfg == CfgMode::Parallel ? 2 : 1);
    const size_t programs = static_cast<size_t>(w_.ranks() / half);
    per_forward_ = ops_per_forward();
    size_t per_program = static_cast<size_t>(w_.forwards_per_rank()) * per_forward_ + 100;
    for (const StagePlan& p : stage_plans_)
      for (const StagePlan::Pass& pass : p.passes) per_program += static_cast<size_t>(pass.count) * pass.ops.size() + 8;
    // Held whole or generated as the run goes, a program past the limit is
    // minutes of work.
    if (per_program > limits::max_unrolled_ops() / programs)
      throw InputError(
          SourceLocation{w_.file, 0, 0},
          fmt::format("{} steps ({} forwards a rank) x {} blocks{} come to about {} ops, more than the {} a run {}: "
                      "simulate fewer steps (the step time settles after the first few, so a few dozen show it) or fewer ranks",
                      w_.steps, w_.forwards_per_rank(), templates_.seq.size(), programs > 1 ? fmt::format(" x {} CFG halves", programs) : "",
                      programs * per_program, limits::max_unrolled_ops(), self ? "simulates" : "holds in memory"));
    for (int r = 0; r < w_.ranks(); ++r) {
      b_.set_roles(r, roles_of(r));
      if (r % half > 0)
        b_.share_program(r, r - r % half);
      else if (!self)
        program(r);
    }
    Schedule s = b_.build();
    if (self)
      for (int r = 0; r < w_.ranks(); ++r)
        s.programs[static_cast<size_t>(r)].source = [self, first = r - r % half]() -> std::unique_ptr<OpSource> {
          return std::make_unique<ProgramGen>(*self, first);
        };
    return s;
  }

 private:
  using Group = gen::Group;
  using Template = gen::Template;
  using TypeTemplate = gen::TypeTemplate;
  static constexpr int kCompute = gen::kCompute, kCopy = gen::kCopy;
  // A forward's ops: its blocks' as generated, and at most this many a block
  // for offload (alloc, copy, record, wait, free) and the forward's markers.
  static constexpr size_t kOffloadOpsPerBlock = 8;
  size_t ops_per_forward() {
    size_t n = 4;
    std::vector<Op> scratch;
    for (size_t l = 0; l < templates_.seq.size(); ++l) {
      scratch.clear();
      block(scratch, static_cast<int>(l));
      n += scratch.size() + kOffloadOpsPerBlock;
    }
    return n;
  }
  size_t per_forward_ = 0;
  int group_size(Group g) const { return gen::group_size(w_, g); }

  // Rank r's groups by kind, and its peers: its ring neighbours, then the
  // next and previous rank in each of its groups (index order, a ring).
  ProgramRoles roles_of(int r) const {
    const auto at = static_cast<size_t>(r);
    ProgramRoles out;
    out.groups = {sp_of_[at], tp_of_[at], cfg_of_[at], ring_of_[at]};
    const bool ring = w_.ring > 1;
    out.peers = {ring ? ring_next_[at] : -1, ring ? ring_prev_[at] : -1};
    for (int g : out.groups) {
      if (g < 0) {
        out.peers.insert(out.peers.end(), {-1, -1});
        continue;
      }
      const std::vector<int>& m = b_.schedule().groups[static_cast<size_t>(g)].ranks;
      const size_t n = m.size(), i = static_cast<size_t>(std::find(m.begin(), m.end(), r) - m.begin());
      out.peers.insert(out.peers.end(), {m[(i + 1) % n], m[(i + n - 1) % n]});
    }
    return out;
  }

  void marker(std::vector<Op>& ops, const std::string& name) { ops.push_back(ops::marker(kCompute, name)); }

  // Block l of a forward on this rank, its ops in sub-layer order (`phase`
  // offload runs them one sub-layer at a time): parts[p] gets phase p's.
  void block(std::vector<std::vector<Op>>& parts, int l) {
    const std::string tag = fmt::format("l{}", l);
    const TypeTemplate& tt = templates_.of_block(l);
    for (const Template& t : tt.ops) {
      std::vector<Op>& part = parts[parts.size() == 1 ? 0 : static_cast<size_t>(t.phase)];
      const size_t from = part.size();
      if (t.ring)
        ring_attention(part, t, tag + " " + t.name);
      else if (t.tied)
        tied_gemm(part, t, tag);
      else {
        Op op = t.op;
        op.label = tag + " " + t.name;
        if (t.group != Group::None) op.group = group_role(t.group);
        part.push_back(std::move(op));
      }
      if (t.views > 0) set_views(part, from, t.views);
    }
  }
  // The framework calls a block op's code makes before it that launch
  // nothing go before the first call of those emitted for it that issues GPU
  // work (a ring attention's or a tied GEMM's first).
  static void set_views(std::vector<Op>& part, size_t from, uint8_t views) {
    for (size_t i = from; i < part.size(); ++i)
      if (part[i].kind == OpKind::Kernel || part[i].kind == OpKind::Collective || part[i].kind == OpKind::Memcpy) {
        part[i].views = views;
        return;
      }
  }
  // Programs name groups and peers by role (role_ref), so the ranks of a
  // CFG half share one program; each rank's Program says who they are.
  static int kind_index(Group g) { return g == Group::Ulysses ? 0 : g == Group::Tp ? 1 : g == Group::Cfg ? 2 : 3; }
  static int group_role(Group g) { return role_ref(kind_index(g)); }
  static constexpr int kRingNext = 0, kRingPrev = 1;  // peer roles; then next and previous in each group kind's ring
  static int next_in_group(Group g) { return role_ref(2 + 2 * kind_index(g)); }
  static int prev_in_group(Group g) { return role_ref(3 + 2 * kind_index(g)); }
  // A GEMM with its tensor-parallel collective: in order on the compute
  // stream, or (tp_overlap: chunked) in pieces: the all-gather's pieces on
  // the tp stream, each GEMM piece waiting for its own; or each GEMM piece's
  // reduce-scatter on the tp stream after it, the next op waiting for the last.
  void tied_gemm(std::vector<Op>& part, const Template& t, const std::string& tag) {
    const int group = group_role(t.coll_group);
    if (tp_send_ >= 0) {
      ring_exchange_gemm(part, t, tag);
      return;
    }
    if (tp_stream_ < 0) {
      Op coll = t.coll, gemm = t.op;
      coll.group = group;
      coll.label = tag + " " + t.coll_name;
      gemm.label = tag + " " + t.name;
      if (t.before) part.push_back(std::move(coll));
      part.push_back(std::move(gemm));
      if (!t.before) part.push_back(std::move(coll));
      return;
    }
    auto coll = [&](int i) {
      Op c = t.coll_chunk;
      c.group = group;
      c.label = fmt::format("{} {} {}", tag, t.coll_name, i);
      return c;
    };
    auto gemm = [&](int i) {
      Op g = t.gemm_chunk;
      g.label = fmt::format("{} {} {}", tag, t.name, i);
      return g;
    };
    if (t.before) {
      part.push_back(ops::wait_stream(tp_stream_, kCompute));  // the input is ready
      for (int i = 0; i < t.chunks; ++i) {
        part.push_back(coll(i));
        part.push_back(ops::record(tp_stream_, tp_events_[static_cast<size_t>(i)]));
      }
      for (int i = 0; i < t.chunks; ++i) {
        part.push_back(ops::wait_event(kCompute, tp_events_[static_cast<size_t>(i)]));
        part.push_back(gemm(i));
      }
      return;
    }
    for (int i = 0; i < t.chunks; ++i) {
      part.push_back(gemm(i));
      part.push_back(ops::record(kCompute, tp_events_[static_cast<size_t>(i)]));
      part.push_back(ops::wait_event(tp_stream_, tp_events_[static_cast<size_t>(i)]));
      part.push_back(coll(i));
    }
    part.push_back(ops::record(tp_stream_, tp_done_));
    part.push_back(ops::wait_event(kCompute, tp_done_));
  }

  // Ring exchange (Transformer Engine's ring_exchange method): with the
  // group's G ranks in a ring, an all-gather + GEMM computes G pieces, piece
  // i on the share received at step i - 1 while that share goes on to the
  // next rank; a GEMM + reduce-scatter computes G pieces, each partial
  // result added to the one received and sent on, the last one the rank's
  // own. Sends and receives on streams of their own, as a batched
  // isend/irecv.
  void ring_exchange_gemm(std::vector<Op>& part, const Template& t, const std::string& tag) {
    const int G = t.chunks;
    const int next = next_in_group(t.coll_group), prev = prev_in_group(t.coll_group);
    auto gemm = [&](int i) {
      Op g = t.gemm_chunk;
      g.label = fmt::format("{} {} {}", tag, t.name, i);
      return g;
    };
    auto exchange = [&](int i) {
      Op send = t.coll_chunk;
      send.peer = next;
      send.label = fmt::format("{} {} send {}", tag, t.coll_name, i);
      Op recv = send;
      recv.coll = CollKind::Recv;
      recv.stream = tp_recv_;
      recv.peer = prev;
      recv.label = fmt::format("{} {} recv {}", tag, t.coll_name, i);
      part.push_back(std::move(send));
      part.push_back(std::move(recv));
      part.push_back(ops::record(tp_recv_, tp_events_[static_cast<size_t>(i)]));
    };
    for (int i = 0; i < G; ++i) {
      if (t.before) {
        if (i + 1 < G) {  // pass on the share this step computes on
          if (i == 0)
            part.push_back(ops::wait_stream(tp_send_, kCompute));  // the rank's own share is ready
          else
            part.push_back(ops::wait_event(tp_send_, tp_events_[static_cast<size_t>(i - 1)]));
          exchange(i);
        }
        if (i > 0) part.push_back(ops::wait_event(kCompute, tp_events_[static_cast<size_t>(i - 1)]));
        part.push_back(gemm(i));
      } else {
        part.push_back(gemm(i));
        if (i > 0) {  // add the partial received
          part.push_back(ops::wait_event(kCompute, tp_events_[static_cast<size_t>(i - 1)]));
          part.push_back(
              ops::memory_kernel(kCompute, 3.0 * static_cast<double>(t.coll_chunk.bytes), fmt::format("{} {} add {}", tag, t.coll_name, i)));
        }
        if (i + 1 < G) {
          part.push_back(ops::wait_stream(tp_send_, kCompute));
          exchange(i);
        }
      }
    }
  }

  // Ring attention: at step i the rank computes its queries against the K/V
  // chunk it holds while it sends that chunk to the next ring rank and
  // receives the next one from the previous (send and receive on streams of
  // their own, as a batched isend/irecv); step i + 1 waits for the receive.
  void ring_attention(std::vector<Op>& part, const Template& t, const std::string& label) {
    const int G = w_.ring;
    for (int i = 0; i < G; ++i) {
      if (i + 1 < G) {
        if (i == 0)
          part.push_back(ops::wait_stream(ring_send_, kCompute));  // its own K/V are ready
        else
          part.push_back(ops::wait_event(ring_send_, ring_events_[static_cast<size_t>(i - 1)]));
        Op send = ops::collective(ring_send_, CollKind::Send, -1, t.kv_bytes, CollAlgo::Nccl, DType::BF16, fmt::format("{} kv send {}", label, i));
        send.peer = role_ref(kRingNext);
        Op recv = ops::collective(ring_recv_, CollKind::Recv, -1, t.kv_bytes, CollAlgo::Nccl, DType::BF16, fmt::format("{} kv recv {}", label, i));
        recv.peer = role_ref(kRingPrev);
        part.push_back(std::move(send));
        part.push_back(std::move(recv));
        part.push_back(ops::record(ring_recv_, ring_events_[static_cast<size_t>(i)]));
      }
      Op chunk = t.op;
      chunk.label = fmt::format("{} {}", label, i);
      part.push_back(std::move(chunk));
      if (i + 1 < G) part.push_back(ops::wait_event(kCompute, ring_events_[static_cast<size_t>(i)]));
    }
  }
  void block(std::vector<Op>& ops, int l) {
    std::vector<std::vector<Op>> one(1);
    one[0].swap(ops);
    block(one, l);
    ops.swap(one[0]);
  }

  int expert_of(int fwd) const {
    if (w_.model.experts < 2) return 0;
    const int step = w_.cfg == CfgMode::Serial ? fwd / 2 : fwd;
    return step < static_cast<int>(w_.model.boundary * w_.steps + 0.5) ? 0 : 1;
  }

  void copy(std::vector<Op>& ops, int stream, const std::string& name, Bytes bytes, bool async) {
    ops.push_back(ops::copy(stream, CopyKind::H2D, bytes, w_.host_memory, async, name));
  }
  void alloc(std::vector<Op>& ops, const std::string& tag, Bytes bytes, MemPart part = MemPart::Weights) {
    ops.push_back(ops::alloc(tag, bytes, MemSpace::Device, part));
  }
  void free_(std::vector<Op>& ops, const std::string& tag) { ops.push_back(ops::free(tag)); }

  // What a rank holds beside its block weights, taken before the steps: the
  // runtime's own memory, NCCL's buffers for each communicator of two ranks
  // or more (sized by the run: how the rank reaches the other members), the
  // GEMM workspace and the models outside the blocks held through the steps.
  void memory_held(std::vector<Op>& ops) {
    const VramParams& v = w_.params.vram;
    if (v.cuda_context > 0) alloc(ops, "cuda context", v.cuda_context, MemPart::Runtime);
    for (const Group g : {Group::Ulysses, Group::Tp, Group::Cfg, Group::Ring})
      if (const uint8_t runs = nccl_runs(g); group_size(g) > 1 && runs != 0) {
        Op op = ops::nccl_buffers(fmt::format("nccl {}", g == Group::Ulysses ? "ulysses"
                                                         : g == Group::Tp    ? "tp"
                                                         : g == Group::Cfg   ? "cfg"
                                                                             : "ring"),
                                  group_role(g));
        op.nccl_runs = runs;
        ops.push_back(std::move(op));
      }
    if (v.gemm_workspace > 0) alloc(ops, "gemm workspace", v.gemm_workspace, MemPart::Workspace);
    for (const MemoryPlan::Outside& o : plan_.outside)
      if (o.resident && o.weights > 0) alloc(ops, o.name, o.weights, MemPart::Outside);
    for (size_t i = 0; i < stage_plans_.size(); ++i)
      if (w_.stages[i].place == StagePlace::Resident && stage_plans_[i].weights > 0)
        alloc(ops, w_.stages[i].name, stage_plans_[i].weights, MemPart::Outside);
  }
  // Then, once the blocks' resident weights or buffers are taken (a pipeline
  // loads its DiT before it encodes), the encoders while they run (with their
  // weights when offloaded), the forward's activations and the allocator's
  // reserve over them.
  void memory_encode(std::vector<Op>& ops) {
    for (const MemoryPlan::Outside& o : plan_.outside)
      if (o.runs == OutsideModel::Runs::Before) outside_run(ops, o);
    for (size_t i = 0; i < stage_plans_.size(); ++i)
      if (w_.stages[i].kind == Stage::Kind::Encoder) run_stage(ops, w_.stages[i], stage_plans_[i]);
    if (plan_.activations > 0) alloc(ops, "activations", plan_.activations, MemPart::Activations);
    if (plan_.reserve > 0) alloc(ops, "allocator reserve", plan_.reserve, MemPart::Reserve);
  }
  // A VAE stage decoded in bands over the Ulysses group.
  bool parallel_decode() const {
    return w_.ulysses > 1 && std::any_of(w_.stages.begin(), w_.stages.end(), [](const Stage& st) { return st.parallel; });
  }
  // What a group's communicator runs (kNccl* bits; 0: nothing): the blocks'
  // collectives on it, tied ones as collectives or, with tp_overlap
  // ring_exchange, a ring exchange; CFG's gather; ring attention's exchange;
  // a parallel decode's halo exchange and gathers.
  uint8_t nccl_runs(Group g) const {
    if (g == Group::Ring) return kNcclRingExchange;
    if (g == Group::Ulysses && parallel_decode()) return static_cast<uint8_t>(nccl_runs_of_blocks(g) | kNcclRingExchange | kNcclCollectives);
    return nccl_runs_of_blocks(g);
  }
  uint8_t nccl_runs_of_blocks(Group g) const {
    uint8_t runs = g == Group::Cfg && w_.cfg == CfgMode::Parallel ? kNcclCollectives : 0;
    for (const TypeTemplate& tt : templates_.types)
      for (const Template& t : tt.ops) {
        if (t.group == g && t.op.kind == OpKind::Collective) runs |= t.op.coll == CollKind::AllToAll ? kNcclAllToAll : kNcclCollectives;
        if (t.tied && t.coll_group == g) runs |= tp_send_ >= 0 ? kNcclRingExchange : kNcclCollectives;
      }
    return runs;
  }
  // The decoders after the steps (the VAE), on what the steps left held;
  // with stages, the steps' end marked first.
  void memory_after(std::vector<Op>& ops) {
    if (!stage_plans_.empty()) marker(ops, kStepsEndMarker);
    for (size_t i = 0; i < stage_plans_.size(); ++i)
      if (w_.stages[i].kind == Stage::Kind::VaeDecode) run_stage(ops, w_.stages[i], stage_plans_[i]);
    for (const MemoryPlan::Outside& o : plan_.outside)
      if (o.runs == OutsideModel::Runs::After) outside_run(ops, o);
  }
  void outside_run(std::vector<Op>& ops, const MemoryPlan::Outside& o) {
    const bool load = !o.resident && o.weights > 0;
    if (load) alloc(ops, o.name, o.weights, MemPart::Outside);
    if (load && w_.request.move_outside) move(ops, CopyKind::H2D, o.name, o.weights);
    if (o.activations > 0) alloc(ops, o.name + " activations", o.activations, MemPart::Activations);
    if (o.activations > 0) free_(ops, o.name + " activations");
    if (load && w_.request.move_outside) move(ops, CopyKind::D2H, o.name, o.weights);
    if (load) free_(ops, o.name);
  }
  // A model moved in or out as a framework does it: a blocking .to() of
  // its pageable weights on the compute stream.
  void move(std::vector<Op>& ops, CopyKind kind, const std::string& name, Bytes bytes, HostMem host = HostMem::Pageable) {
    ops.push_back(ops::copy(kCompute, kind, bytes, host, false, (kind == CopyKind::H2D ? "h2d " : "d2h ") + name));
  }
  // A stage of the request, between markers "stage <name>" and "end of
  // stage <name>" on the compute stream (schedule/stage_spans.hpp): on
  // the GPU its kernels with its activations held (offloaded: its weights
  // moved in before and out after); on the CPU the host's work at its rate,
  // then its result copied over (an encoder's embeddings) or, for a
  // decoder, the latent copied back first.
  void run_stage(std::vector<Op>& ops, const Stage& st, const StagePlan& p) {
    marker(ops, kStageMarker + st.name);
    stage_ops(ops, st, p);
    marker(ops, kStageEndMarker + st.name);
  }
  void stage_ops(std::vector<Op>& ops, const Stage& st, const StagePlan& p) {
    if (st.place == StagePlace::Cpu) {
      const bool decoder = st.kind != Stage::Kind::Encoder;
      const Bytes latent = 16 * ((w_.frames - 1) / 4 + 1) * (w_.height / 8) * (w_.width / 8) * 4;
      if (decoder) ops.push_back(ops::copy(kCompute, CopyKind::D2H, latent, HostMem::Pageable, false, "d2h " + st.name + " input"));
      ops.push_back(ops::host_work(Time::from_s(p.flops / (st.cpu_tflops * 1e12))));
      ops.back().label = st.name + " on cpu";
      if (!decoder) ops.push_back(ops::copy(kCompute, CopyKind::H2D, p.result, HostMem::Pageable, false, "h2d " + st.name + " result"));
      return;
    }
    const bool offloaded = st.place == StagePlace::Offloaded && p.weights > 0;
    if (offloaded) {
      alloc(ops, st.name, p.weights, MemPart::Outside);
      move(ops, CopyKind::H2D, st.name, p.weights, st.host);
    }
    if (p.activations > 0) alloc(ops, st.name + " activations", p.activations, MemPart::Activations);
    for (const StagePlan::Pass& pass : p.passes)
      for (int i = 0; i < pass.count; ++i)
        for (const Op& op : pass.ops) {
          ops.push_back(op);
          if (!op.label.empty()) ops.back().label = st.name + " " + op.label;
        }
    if (p.activations > 0) free_(ops, st.name + " activations");
    if (offloaded) {
      if (st.copy_back) move(ops, CopyKind::D2H, st.name, p.weights, st.host);
      free_(ops, st.name);
    }
  }
  void record(std::vector<Op>& ops, int stream, int ev) { ops.push_back(ops::record(stream, ev)); }
  void wait_event(std::vector<Op>& ops, int stream, int ev) { ops.push_back(ops::wait_event(stream, ev)); }
  void wait_stream(std::vector<Op>& ops, int stream, int on) { ops.push_back(ops::wait_stream(stream, on)); }
  void sync(std::vector<Op>& ops, int stream) { ops.push_back(ops::stream_sync(stream)); }

  std::string layer_name(int g) const {  // g: global layer index over all forwards
    const int L = static_cast<int>(templates_.seq.size());
    return fmt::format("e{}.f{}.l{}", expert_of(g / L), g / L, g % L);  // <= 15 chars up to 999 forwards
  }

  // One program's ops a part at a time: what comes before the forwards, each
  // forward, what comes after. Whole (program()) or part by part as a run
  // reaches them (generate_schedule_as_run), the ops are the same but for
  // the layers' weight events (layer_event).
  class ProgramGen final : public OpSource {
   public:
    ProgramGen(Gen& g, int rank)
        : g_(g),
          w_(g.w_),
          rank_(rank),
          L_(static_cast<int>(g.templates_.seq.size())),
          F_(w_.forwards_per_rank()),
          total_(F_ * L_),
          P_(w_.offload == OffloadPolicy::Layerwise ? w_.prefetch_size : 0) {
      if (w_.offload == OffloadPolicy::Blocking || w_.offload == OffloadPolicy::Layerwise) prefetched_.assign(static_cast<size_t>(total_), 0);
      if (w_.offload == OffloadPolicy::Block || w_.offload == OffloadPolicy::Phase) {
        for (const TypeTemplate& tt : g_.templates_.types)
          for (Bytes b : tt.units) largest_ = std::max(largest_, b);
        for (int l = 0; l < L_; ++l)
          for (int u = 0; u < static_cast<int>(g_.templates_.of_block(l).units.size()); ++u) units_.emplace_back(l, u);
      }
    }
    bool next(std::vector<Op>& ops) override {
      if (part_ > F_ + 1) return false;
      if (part_ == 0)
        before(ops);
      else if (part_ <= F_)
        forward(ops, part_ - 1);
      else
        after(ops);
      ++part_;
      return true;
    }

   private:
    void before(std::vector<Op>& ops) {
      g_.memory_held(ops);
      // Resident weights and a block policy's two GPU buffers are taken
      // before the encoders run, as a pipeline builds its DiT first: when
      // the model loads, by no call of the run's.
      if (w_.offload == OffloadPolicy::None)
        for (int e = 0; e < w_.model.experts; ++e)
          for (int l = 0; l < L_; ++l) {
            g_.alloc(ops, fmt::format("e{}.l{}", e, l), g_.templates_.layer_bytes(l));
            ops.back().launches = 0;
          }
      if (w_.offload == OffloadPolicy::Block || w_.offload == OffloadPolicy::Phase)
        for (const char* buffer : {"buffer0", "buffer1"}) {
          g_.alloc(ops, buffer, largest_);
          ops.back().launches = 0;
        }
      g_.memory_encode(ops);
      switch (w_.offload) {
        case OffloadPolicy::None:
          return;
        case OffloadPolicy::Blocking:
        case OffloadPolicy::Layerwise:
          if (!w_.request.first_prefetch_blocking)
            for (int j = 0; j < P_ && j < total_; ++j) prefetch(ops, j);
          return;
        case OffloadPolicy::Block:
        case OffloadPolicy::Phase:
          // The next unit (a block, or with `phase` a sub-layer) is copied
          // into one buffer while the other computes; the host synchronises
          // both streams after every unit.
          g_.copy(ops, kCopy, "h2d first", unit_bytes(0), true);
          g_.sync(ops, kCopy);
          return;
      }
    }
    void after(std::vector<Op>& ops) {
      if (w_.offload == OffloadPolicy::Block || w_.offload == OffloadPolicy::Phase) {
        g_.free_(ops, "buffer0");
        g_.free_(ops, "buffer1");
      } else {
        g_.sync(ops, kCompute);
      }
      g_.memory_after(ops);
    }
    void forward(std::vector<Op>& ops, int f) {
      fwd_marker(ops, f);
      switch (w_.offload) {
        case OffloadPolicy::None:
          for (int l = 0; l < L_; ++l) g_.block(ops, l);
          break;
        case OffloadPolicy::Blocking:
        case OffloadPolicy::Layerwise:
          // request.first_prefetch_blocking: each forward copies its first
          // layer in by a blocking .to() on the compute stream, then
          // prefetches only its own layers from there.
          if (w_.request.first_prefetch_blocking) {
            const int g0 = f * L_;
            prefetched_[static_cast<size_t>(g0)] = 1;
            g_.alloc(ops, g_.layer_name(g0), g_.templates_.layer_bytes(0));
            g_.copy(ops, kCompute, "h2d " + g_.layer_name(g0), g_.templates_.layer_bytes(0), false);
            g_.record(ops, kCompute, g_.layer_event(g0));
            for (int j = g0 + 1; j < g0 + P_ && j < (f + 1) * L_; ++j) prefetch(ops, j);
          }
          for (int l = 0; l < L_; ++l) {
            const int g = f * L_ + l;
            const std::string n = g_.layer_name(g);
            const int last = w_.request.first_prefetch_blocking ? (f + 1) * L_ : total_;
            if (P_ == 0) {  // the old path: a blocking .to() per layer
              g_.alloc(ops, n, g_.templates_.layer_bytes(l));
              g_.copy(ops, kCompute, "h2d " + n, g_.templates_.layer_bytes(l), false);
            } else {
              if (l % P_ == 0) {
                g_.wait_stream(ops, kCopy, kCompute);  // copy_stream.wait_stream(compute)
                for (int j = g + P_; j < g + 2 * P_ && j < last; ++j) prefetch(ops, j);
              }
              g_.wait_event(ops, kCompute, g_.layer_event(g));
            }
            g_.block(ops, l);
            g_.free_(ops, n);
            // Prefetched weights were allocated on the copy stream and used on
            // compute (record_stream): their memory comes back once compute
            // has run the block.
            if (P_ > 0) ops.back().stream = kCompute;
          }
          break;
        case OffloadPolicy::Block:
        case OffloadPolicy::Phase: {
          const size_t count = static_cast<size_t>(F_) * units_.size();
          for (int l = 0; l < L_; ++l) {
            const int per_block = static_cast<int>(g_.templates_.of_block(l).units.size());
            std::vector<std::vector<Op>> parts(static_cast<size_t>(per_block));
            g_.block(parts, l);
            for (int u = 0; u < per_block; ++u) {
              const size_t here = unit_index(units_, l, u) + static_cast<size_t>(f) * units_.size();
              if (here + 1 < count) g_.copy(ops, kCopy, fmt::format("h2d f{}.l{}.{}", f, l, (u + 1) % per_block), unit_bytes(here + 1), true);
              for (Op& op : parts[static_cast<size_t>(u)]) ops.push_back(std::move(op));
              g_.sync(ops, kCompute);
              g_.sync(ops, kCopy);
            }
          }
          break;
        }
      }
      end_of_step(ops, f);
    }
    void prefetch(std::vector<Op>& ops, int g) {
      if (prefetched_[static_cast<size_t>(g)]) return;  // already on the GPU or on its way (the wrap-around overlaps)
      prefetched_[static_cast<size_t>(g)] = 1;
      const std::string n = g_.layer_name(g);
      g_.alloc(ops, n, g_.templates_.layer_bytes(g % L_));
      g_.copy(ops, kCopy, "h2d " + n, g_.templates_.layer_bytes(g % L_), true);
      g_.record(ops, kCopy, g_.layer_event(g));
    }
    void fwd_marker(std::vector<Op>& ops, int f) const {
      const int step = w_.cfg == CfgMode::Serial ? f / 2 : f;
      const bool cfg_par = w_.cfg == CfgMode::Parallel;
      const int half = w_.ring * w_.ulysses * w_.tp;  // ranks of one CFG half
      const std::string cond = w_.cfg == CfgMode::Serial ? (f % 2 ? "uncond" : "cond") : (cfg_par ? (rank_ < half ? "cond" : "uncond") : "cond");
      g_.marker(ops, fmt::format("step {} {}", step, cond));
    }
    void end_of_step(std::vector<Op>& ops, int f) const {
      const bool last_of_step = w_.cfg != CfgMode::Serial || f % 2 == 1;
      if (!last_of_step || w_.cfg != CfgMode::Parallel) return;
      // CFG-parallel: combine the two predictions (the latent, fp32).
      const Bytes latent = 2 * 16 * ((w_.frames - 1) / 4 + 1) * (w_.height / 8) * (w_.width / 8) * 4 / (w_.ulysses * w_.ring);
      ops.push_back(ops::collective(kCompute, CollKind::AllGather, group_role(Group::Cfg), latent, CollAlgo::Nccl, DType::FP32, "cfg gather"));
    }
    Bytes unit_bytes(size_t i) const {
      const auto [l, u] = units_[i % units_.size()];
      return g_.templates_.of_block(l).units[static_cast<size_t>(u)];
    }

    Gen& g_;
    const DitWorkload& w_;
    const int rank_, L_, F_, total_, P_;
    int part_ = 0;                            // 0: before the forwards; 1..F: forward part - 1; F + 1: after
    std::vector<char> prefetched_;            // layerwise: per layer of every forward
    Bytes largest_ = 0;                       // block, phase: the largest unit
    std::vector<std::pair<int, int>> units_;  // block, phase: a forward's units in order, (block, part)
  };

  void program(int rank) {
    std::vector<Op> ops;
    ops.reserve(static_cast<size_t>(w_.forwards_per_rank()) * per_forward_ + 100);
    ProgramGen gen(*this, rank);
    while (gen.next(ops)) {
    }
    b_.program(rank) = std::move(ops);
  }

  // Layer g's weights' event (g over every forward). Generated whole, each
  // has its own; generated as a run reaches them, 2 x prefetch_size + 2 of
  // them take turns: a layer's record is issued after the wait on the layer
  // 2 x prefetch_size before it, behind the copy stream's wait for compute,
  // so each wait still sees its own layer's record (at issue and when it runs).
  int layer_event(int g) {
    if (!slot_events_.empty()) return slot_events_[static_cast<size_t>(g) % slot_events_.size()];
    return b_.event(layer_name(g));
  }

  static size_t unit_index(const std::vector<std::pair<int, int>>& units, int l, int u) {
    return static_cast<size_t>(std::lower_bound(units.begin(), units.end(), std::make_pair(l, u)) - units.begin());
  }

  std::shared_ptr<const DitWorkload> owned_;  // as_run: the workload, for the programs' sources; else not owned
  const DitWorkload& w_;
  ScheduleBuilder b_;
  MemoryPlan plan_ = memory_plan(w_);
  gen::BlockTemplates templates_;
  std::vector<StagePlan> stage_plans_;                 // w_.stages' plans, in order
  std::vector<int> sp_of_, tp_of_, cfg_of_, ring_of_;  // rank -> its group of that kind, or -1
  std::vector<int> ring_next_, ring_prev_;             // rank -> its ring neighbours
  std::vector<int> ring_events_;                       // per ring step: its K/V received
  int ring_send_ = -1, ring_recv_ = -1;                // ring > 1: the K/V streams
  int tp_stream_ = -1;                                 // tp_overlap: chunked: the tied collectives' stream
  int tp_send_ = -1, tp_recv_ = -1;                    // tp_overlap: ring_exchange: its sends' and receives' streams
  std::vector<int> tp_events_;                         // per chunk
  int tp_done_ = -1;
  std::vector<int> slot_events_;  // as_run, layerwise prefetch: the layers' weight events, taking turns
};

}  // namespace

Schedule generate_schedule(const DitWorkload& w) {
  return Gen(std::shared_ptr<const DitWorkload>(std::shared_ptr<const DitWorkload>{}, &w), false).run();
}

Schedule generate_schedule_as_run(const DitWorkload& w) {
  auto gen = std::make_shared<Gen>(std::make_shared<const DitWorkload>(w), true);
  return gen->run(gen);
}

}  // namespace osim
