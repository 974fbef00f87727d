#include "gpu/executor.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include <boost/container/small_vector.hpp>

#include <fmt/format.h>

#include "core/engine.hpp"
#include "core/flows.hpp"
#include "core/isolated.hpp"
#include "core/slots.hpp"

namespace osim {

Time kernel_time(const Op& op, const hw::NodeSpec& gpu, const ModelParams& p, const SourceLocation& where) {
  if (op.duration) return *op.duration;
  double flops = op.flops, bytes = op.hbm_bytes, eff = p.gemm.flops_efficiency;
  const double es = dtype_bytes(op.dtype);
  if (op.gemm) {
    const auto& g = *op.gemm;
    const double m = g.m, n = g.n, k = g.k;
    flops = 2.0 * m * n * k;
    bytes = es * (m * k + k * n + m * n);
    eff = p.gemm.gemm_efficiency_for(g.m, g.n, g.k);
  } else if (op.attention) {
    const auto& a = *op.attention;
    const double bh = static_cast<double>(a.batch) * static_cast<double>(a.heads);
    flops = a.flops();
    bytes = es * bh * static_cast<double>(a.head_dim) * (2.0 * static_cast<double>(a.seq_q) + 2.0 * static_cast<double>(a.seq_kv));
    eff = a.seq_kv < a.seq_q && p.attention.cross_attention_efficiency > 0
              ? p.attention.cross_attention_efficiency / (1 + p.attention.cross_attention_q0 / static_cast<double>(a.seq_q))
              : p.attention.attention_efficiency;
  }
  if (op.efficiency > 0) eff = op.efficiency;
  double t = 0;
  if (flops > 0) {
    auto it = gpu.gpu.peak_tflops.find(to_string(op.dtype));
    if (it == gpu.gpu.peak_tflops.end())
      throw InputError(where, fmt::format("kernel '{}' needs the {} rate of GPU '{}': add peak_tflops: {{{}: ...}} to it in the "
                                             "topology, or give the kernel a duration",
                                             op.label, to_string(op.dtype), gpu.name, to_string(op.dtype)));
    t = std::max(t, flops / (it->second * 1e12 * eff));
  }
  if (bytes > 0) {
    if (!gpu.gpu.hbm_bandwidth)
      throw InputError(where, fmt::format("kernel '{}' moves HBM bytes but GPU '{}' has no hbm_bandwidth in the topology", op.label, gpu.name));
    t = std::max(t, p.memory.hbm_latency.s() + bytes / (gpu.gpu.hbm_bandwidth->bytes_per_s * p.memory.hbm_efficiency));
  }
  return Time::from_s(t);
}

namespace {

enum EngineIdx { kH2D = 0, kD2H = 1, kOther = 2 };

// An op of a rank's program, by id: the rank's base (RankState::base) plus
// its index in the program. What changes as it runs is one byte of flags
// (Executor::flags_) and, for a collective, its instance and sequence
// (RankState::coll). Nothing else is written per op: a full workload holds
// ~10^6 of them, and writing per-op state was much of a run's cost.
enum OpFlag : uint8_t { kDispatched = 1, kDone = 2, kArrived = 4 };

// The hand-offs between engines (ModelParams::copy_after_kernel_latency,
// kernel_after_copy_latency, event_gpu_time_copy): the engine of the latest
// op a stream's next op depends on (the stream's own last kernel, collective
// or copy, or one it waited on through an event) and when that op ended.
// StreamState::own is the engine of the stream's own last such op.
struct EngineDep {
  enum Kind : uint8_t { None, Compute, Copy } kind = None;
  Time end;
};

struct StreamState {
  int enqueued = 0;  // ops the host has issued to it
  int done = 0;
  int hwq = 0;
  int priority = 0;
  Time started;  // when its running op was dispatched (a stream runs one op at a time)
  EngineDep dep;
  EngineDep::Kind own = EngineDep::None;
  int dep_waiting = -1;  // its ops up to this place were issued when `dep` came through a wait
  Time dep_released;     // when that wait was satisfied
};

// A hardware queue: ops in submission order, dispatched from the head. Which
// ops go to which queue, in what order and waiting on what, follows from
// the program alone (the host issues it in order), so the entries are
// built once per program (ProgramInfo::queues) and shared by the ranks that
// run it; a rank keeps its place in each queue and how far its host has
// issued (RankState::issued). The head's dispatch condition is in its
// entry, so a pump scans the queues without touching the ops.
struct QueueEntry {  // 16 bytes
  int32_t index;                // the op's index in the program
  int16_t stream, dep_stream;   // the op's stream; the stream it waits on, or -1
  int32_t pos, dep_pos;         // its place in its stream; dep_stream must have finished its op dep_pos
};
struct HwQueue {
  const std::vector<QueueEntry>* ops = nullptr;  // [head, end) are waiting (once issued)
  size_t head = 0;
};

// What the streams need of a program, built once (see HwQueue).
struct ProgramQueues {
  std::vector<std::vector<QueueEntry>> queues;   // per hardware queue
  std::vector<size_t> used;                      // the queues that get ops, in order
  std::vector<std::vector<int32_t>> stream_ops;  // per stream: its ops' indices, in order
  std::vector<int32_t> coll_ord;                 // per op: its place among the program's collectives, or -1
  int colls = 0;
};

struct RunningKernel {
  int gop;
  double remaining;  // solo seconds left
  double speed = 0;
  double next_speed = 0;  // scratch in update_gpu
  Time last;
  EventId ev;
  int demand;
  int priority;
  bool clocked = true;  // compute-bound (GEMM, attention, FLOPs): slowed by a lowered clock
  bool loads = true;    // draws power (any kernel with work; not a bare `duration`): counts toward the duty cycle
  bool attention = false;  // SDPA: takes ModelParams::attention_slow_share of the slow clock term
};

struct CopyEngine {
  std::deque<std::pair<int, Time>> queue;  // (op id, hand-off latency before its set-up)
  int busy = -1;
};

struct CollFlow {
  FlowId flow;
  double base_cap;
  int channels;
  bool via_host;
};

struct RankState {
  // Compute duty cycle (exponential average) for the sustained-load clock model.
  double duty = 0;
  double duty_slow = 0;  // the same over the slow time constant
  Time duty_t;
  bool duty_busy = false;
  double clock = 1.0;  // compute-bound speed under the sustained-load model (update_gpu)
  Time nvlink_quiet_since;  // when its last NVLink collective ended (ModelParams::nvlink_wake_after)
  bool nvlink_used = false;  // it has had an NVLink collective (ModelParams::nvlink_awake_slowdown)
  int nvlink_running = 0;    // NVLink collectives of it in progress
  Time last_coll_end;       // when its last collective ended (ModelParams::straggler_share)
  int gpu = -1, cpu = -1;
  const hw::NodeSpec* node = nullptr;
  int sms = 1;
  int pc = 0;
  bool paid = false, effect_done = false;
  enum { Ready, Busy, Blocked, Done } state = Ready;
  // What a blocked host waits for (the op at pc says why, for deadlock reports).
  struct Wait {
    enum Kind : uint8_t { None, Gop, Stream, Device } kind = None;
    int gop = -1;                 // Gop: that op done
    int stream = -1, count = 0;   // Stream: that many ops of the stream done
    std::vector<int> counts;      // Device: that many ops of every stream done
  } until;
  Time busy_until;
  Time host_end;
  Time last_end;  // the latest end of any of its ops (RankSummary::end is this or host_end)
  int64_t handoffs = 0;  // RankSummary::handoffs, handoff_time
  Time handoff_time;
  std::vector<StreamState> streams;
  std::vector<HwQueue> hwq;
  std::vector<std::pair<int, int>> event_pos;
  // Per event: the stream and place of the record that last completed, and
  // that stream's EngineDep then (hand-offs only).
  struct EventDep {
    int stream = -1, pos = -1;
    EngineDep dep;
  };
  std::vector<EventDep> event_dep;
  std::map<std::string, std::pair<Bytes, MemSpace>> allocs;
  Bytes vram = 0, peak_vram = 0, vram_cap = 0;
  CopyEngine ce[3];
  std::vector<RunningKernel> kernels;
  int comm_channels = 0;
  std::vector<int> group_seq, group_done;
  std::vector<std::deque<int>> parked;
  std::map<int, int> send_seq, recv_seq;
  std::vector<CollFlow> coll_flows;
  std::vector<std::pair<int, int>> closed;  // (instance, member) replayed in closed form with flows from this rank
  int issued = 0;  // program ops [0, issued) are in their queues
  // What update_gpu last saw: a call at the same instant with the same
  // kernels, channels and busy copy engines has nothing to change.
  struct Seen {
    int64_t time_ps = -1;
    uint64_t kernels = 0;  // kernel_changes then
    int channels = 0;
    uint8_t engines = 0;   // busy copy engines, one bit each; bit 3: the NVLink awake
  } seen;
  uint64_t kernel_changes = 0;  // kernels started or ended so far
  int base = 0;    // the id of its program's first op
  std::vector<std::pair<int32_t, int32_t>> coll;  // per collective op (ProgramInfo::coll_ord): (instance, sequence on its group)
  const ProgramQueues* queues = nullptr;
  const std::vector<double>* work = nullptr;  // solo seconds per op (kernels)
  const Op* ops = nullptr;                    // the rank's program
  bool pumping = false, again = false;
};

struct ClosedForm;

struct CollInst {
  const Op* op = nullptr;  // the first arrival's op (all must match)
  int group = -1;
  int seq = 0;
  std::vector<int> members;
  std::vector<int> gops;
  std::tuple<int, int, int> key;  // in Executor::inst_index_ until it finishes
  int arrived = 0;
  int finished = 0;  // members done
  bool launched = false;
  bool nvlink = false;  // moves >= nvlink_wake_min_bytes over NVLink, where a wake-up, copy latency or awake slowdown is calibrated (launch)
  double wire = 0;
  int channels = 0;
  std::vector<int> outstanding;
  std::vector<char> member_done;
  int step = 0, steps = 0, step_left = 0;
  std::vector<std::vector<int>> partner;  // pairwise: [round][member] -> member or -1
  std::vector<int> round;
  std::vector<char> in_round;
  std::vector<int> round_left;
  // A measured collective table's rate and latency for this collective, per
  // transport inside a host (0: peer-to-peer, 1: through host memory); rate
  // 0 = none fits.
  struct Tabled {
    bool looked = false;
    double rate = 0;  // bytes/s of one flow
    Time latency;
  };
  Tabled tabled[2];
  // Replayed in closed form (Executor::try_closed_form) while set.
  const ClosedForm* closed = nullptr;
  Time t0;                // when its flows started
  size_t next_group = 0;  // the first of closed->groups not replayed yet
  EventId closed_ev;      // that group's event
};

// An NCCL all-to-all alone on its links, simulated once by itself
// (core/isolated.hpp) and replayed wherever the same group moves the same
// bytes at the same rate caps.
struct ClosedForm {
  IsolatedFlows flows;                   // the collective's flows, constraints numbered locally
  std::vector<ConstraintId> cons;        // local -> the executor's constraint
  std::vector<std::pair<int, int>> ends;  // per flow: (from, to) members
  std::vector<double> base;              // per flow: its cap before the compute slowdown
  std::vector<double> slow;              // per member: the comm slowdown its flows were capped by
  bool via_host = false;                 // its flows go through host memory (which clock share they take)
  // Flows that complete at one instant, with what they add to the reports
  // (local constraint ids; -1: the flows' own caps).
  struct Group {
    Time end;
    std::vector<int> flows;  // in the order the flow model completed them
    std::vector<std::pair<int, Time>> bottleneck_time;
    std::vector<std::pair<int, int64_t>> transfers;
    std::vector<std::pair<int, double>> bytes;
  };
  std::vector<Group> groups;
};

// Everything kernel_time() reads from an op.
struct KernelKey {
  int64_t duration_ps = -1;
  GemmShape gemm{-1, -1, -1};
  AttentionShape attention{-1, -1, -1, -1, -1};
  double flops = 0, hbm_bytes = 0;
  float efficiency = 0;
  DType dtype = DType::BF16;
  static KernelKey of(const Op& op) {
    KernelKey k;
    if (op.duration) k.duration_ps = op.duration->ps();
    if (op.gemm) k.gemm = *op.gemm;
    if (op.attention) k.attention = *op.attention;
    k.flops = op.flops;
    k.hbm_bytes = op.hbm_bytes;
    k.efficiency = op.efficiency;
    k.dtype = op.dtype;
    return k;
  }
  bool operator==(const KernelKey& o) const {
    const auto& a = attention;
    const auto& b = o.attention;
    return duration_ps == o.duration_ps && gemm.m == o.gemm.m && gemm.n == o.gemm.n && gemm.k == o.gemm.k && a.batch == b.batch &&
           a.heads == b.heads && a.seq_q == b.seq_q && a.seq_kv == b.seq_kv && a.head_dim == b.head_dim && flops == o.flops &&
           hbm_bytes == o.hbm_bytes && efficiency == o.efficiency && dtype == o.dtype;
  }
};
struct KernelKeyHash {
  // Independent multiplies (one chain each), then one fold: this runs once
  // per kernel of a program.
  size_t operator()(const KernelKey& k) const {
    auto pair = [](int32_t a, int32_t b) { return static_cast<uint64_t>(static_cast<uint32_t>(a)) | (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32); };
    auto bits = [](double x) { return std::bit_cast<uint64_t>(x + 0.0); };  // + 0.0: -0.0 hashes as 0.0, as == says
    const uint64_t h = static_cast<uint64_t>(k.duration_ps) * 0x9E3779B97F4A7C15ull + pair(k.gemm.m, k.gemm.n) * 0xC2B2AE3D27D4EB4Full +
                       pair(k.gemm.k, k.attention.batch) * 0x165667B19E3779F9ull +
                       pair(k.attention.heads, k.attention.seq_q) * 0xD6E8FEB86659FD93ull +
                       pair(k.attention.seq_kv, k.attention.head_dim) * 0xFF51AFD7ED558CCDull + bits(k.flops) * 0xC4CEB9FE1A85EC53ull +
                       bits(k.hbm_bytes) * 0x2545F4914F6CDD1Dull +
                       pair(static_cast<int32_t>(std::bit_cast<uint32_t>(k.efficiency + 0.0f)), static_cast<int32_t>(k.dtype)) * 0x94D049BB133111EBull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

class Executor {
 public:
  Executor(const Schedule& s, const hw::Topology& t, const ModelParams& p, const ExecOptions& o)
      : s_(s), topo_(t), p_(p), o_(o), flows_(engine_, sys_) {
    cons_ = topo_.install(sys_);
    dma_.dma = true;
    const size_t nres = topo_.resources().size();
    for (size_t i = 0; i < cons_.size(); ++i) {
      if (res_of_cons_.size() <= static_cast<size_t>(cons_[i])) res_of_cons_.resize(cons_[i] + 1, -1);
      res_of_cons_[cons_[i]] = static_cast<int>(i);
    }
    copy_bn_.assign(nres + 1, {});
    // Per host bridge and direction, a limit that copy-engine copies alone
    // share (host_h2d_aggregate, host_d2h_aggregate); reports count it as the
    // bridge's from-host or to-host limit.
    for (const bool h2d : {true, false}) {
      const std::vector<Bandwidth>& table = h2d ? p_.copies.host_h2d_aggregate : p_.copies.host_d2h_aggregate;
      if (table.empty()) continue;
      if (dma_limit_of_.empty()) dma_limit_of_.assign(cons_.size(), -1);
      for (size_t n = 0; n < topo_.node_count(); ++n)
        if (const int res = h2d ? topo_.from_host_resource(static_cast<int>(n)) : topo_.to_host_resource(static_cast<int>(n)); res >= 0) {
          const double nominal = topo_.resources()[static_cast<size_t>(res)].capacity;
          const ConstraintId c = sys_.add_constraint(nominal);
          if (res_of_cons_.size() <= static_cast<size_t>(c)) res_of_cons_.resize(static_cast<size_t>(c) + 1, -1);
          res_of_cons_[static_cast<size_t>(c)] = res;
          dma_limit_of_[static_cast<size_t>(cons_[static_cast<size_t>(res)])] = static_cast<int>(dma_limits_.size());
          dma_limits_.push_back({c, nominal, 0, &table});
        }
    }
    coll_bn_.assign(nres + 1, {});
    if (p_.copies.copy_bidir_modelled() && !p_.copies.copy_engine_bandwidth_for(false).is_unlimited() &&
        !p_.copies.copy_engine_bandwidth_for(true).is_unlimited()) {
      bidir_.resize(static_cast<size_t>(s_.ranks()));
      bidir_active_.assign(static_cast<size_t>(s_.ranks()), {0, 0});
      for (auto& b : bidir_)
        for (const int d : {0, 1}) {
          b[static_cast<size_t>(d)] = sys_.add_constraint(p_.copies.copy_engine_bandwidth_for(d == 1).bytes_per_s);
          if (res_of_cons_.size() <= static_cast<size_t>(b[static_cast<size_t>(d)])) res_of_cons_.resize(static_cast<size_t>(b[static_cast<size_t>(d)]) + 1, -1);
        }
    }
    vram_.resize(s_.ranks());
    if (o_.link_samples) {
      usage_.assign(nres, 0.0);
      flows_.rate_observer = [this](FlowId f, double before, double after) {
        const Time now = engine_.now();
        for (const auto& u : flow_uses_[f]) {
          usage_[u.resource] += (after - before) * u.coefficient;
          if (std::abs(usage_[u.resource]) < 1e-3) usage_[u.resource] = 0;
          if (!samples_.empty() && samples_.back().time == now && samples_.back().resource == u.resource)
            samples_.back().bytes_per_s = usage_[u.resource];
          else
            samples_.push_back({now, u.resource, usage_[u.resource]});
        }
        if (after == 0) flow_uses_.erase(f);
      };
    }
    opts_.p2p_disabled = s_.runtime.nccl_p2p_disable;
    const auto gpus = topo_.gpus();
    if (s_.ranks() > static_cast<int>(gpus.size()) && s_.gpus.empty())
      throw InputError(SourceLocation{s_.file, 0, 0}, fmt::format("the schedule has {} ranks but topology '{}' has {} GPUs", s_.ranks(),
                                                                  topo_.name(), gpus.size()));
    if (s_.streams.size() > static_cast<size_t>(INT16_MAX))
      throw InputError(SourceLocation{s_.file, 0, 0}, fmt::format("the schedule declares {} streams; the simulator takes at most {}: "
                                                                  "share streams between ops", s_.streams.size(), INT16_MAX));
    ranks_.resize(s_.ranks());
    records_.resize(s_.ranks());
    if (!o_.keep_records) spans_ = RunSpans::for_schedule(s_);
    assert((o_.initial_load.empty() || o_.initial_load.size() == static_cast<size_t>(s_.ranks())) && "initial_load: one state per rank");
    std::vector<bool> p2p_ranks;  // ranks whose program holds a P2P copy
    for (int r = 0; r < s_.ranks(); ++r) {
      RankState& R = ranks_[r];
      if (!o_.initial_load.empty()) {
        R.duty = o_.initial_load[r].duty;
        R.duty_slow = o_.initial_load[r].duty_slow;
      }
      if (!s_.gpus.empty()) {
        R.gpu = topo_.find(s_.gpus[r]);
        if (R.gpu < 0 || topo_.node(R.gpu).kind != hw::NodeKind::Gpu)
          throw InputError(SourceLocation{s_.file, 0, 0}, fmt::format("gpus[{}] = '{}' is not a GPU of topology '{}'", r, s_.gpus[r], topo_.name()));
      } else {
        R.gpu = gpus[r];
      }
      R.node = &topo_.node(R.gpu);
      R.cpu = topo_.nearest_cpu(R.gpu);
      R.sms = R.node->gpu.sms.value_or(1);
      R.vram_cap = R.node->gpu.memory.value_or(0);
      const int nq = s_.runtime.device_max_connections;
      R.hwq.resize(nq);
      for (size_t i = 0; i < s_.streams.size(); ++i) {
        StreamState& st = R.streams.emplace_back();
        st.hwq = static_cast<int>(i % static_cast<size_t>(nq));
        st.priority = s_.streams[i].priority;
      }
      R.event_pos.assign(s_.events.size(), {-1, -1});
      if (handoffs_) R.event_dep.assign(s_.events.size(), {});
      R.group_seq.assign(s_.groups.size(), 0);
      R.group_done.assign(s_.groups.size(), 0);
      R.parked.resize(s_.groups.size());
      const auto& ops = *s_.programs[r].ops;
      if (o_.keep_records) {
        reserve_huge(records_[r], ops.size());
        for (const Op& op : ops) {  // one pass over fresh memory
          OpRecord& rec = records_[r].emplace_back();
          rec.op = &op;
        }
      }
      // What the executor needs to know of a program, once per program and
      // kind of GPU (ranks may share a program; kernel times depend only on
      // the GPU's rates): solo kernel times and stream lengths.
      auto [pit, fresh] = programs_.try_emplace(std::make_pair(&ops, compute_twin(R.node)));
      ProgramInfo& info = pit->second;
      if (fresh) {
        info.work.assign(ops.size(), 0.0);
        build_queues(ops, info.q);
        // A program repeats a few kernel shapes thousands of times: each is timed once.
        std::unordered_map<KernelKey, double, KernelKeyHash> timed;
        for (size_t i = 0; i < ops.size(); ++i) {
          const Op& op = ops[i];
          info.p2p = info.p2p || (op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P);
          if (op.kind != OpKind::Kernel) continue;
          const KernelKey key = KernelKey::of(op);
          if (auto hit = timed.find(key); hit != timed.end()) {
            info.work[i] = hit->second;
            continue;
          }
          try {
            info.work[i] = kernel_time(op, *R.node, p_).s();
          } catch (const InputError&) {  // fail early on missing rates, naming the op
            (void)kernel_time(op, *R.node, p_, s_.location(r, static_cast<int>(i)));
            throw;
          }
          timed.emplace(key, info.work[i]);
        }
      }
      R.work = &info.work;
      R.ops = ops.data();
      R.queues = &info.q;
      for (size_t q = 0; q < R.hwq.size(); ++q) R.hwq[q].ops = &info.q.queues[q];
      R.coll.assign(static_cast<size_t>(info.q.colls), {-1, -1});
      R.base = static_cast<int>(flags_.size());
      if (flags_.size() + ops.size() > static_cast<size_t>(INT32_MAX))
        throw InputError(SourceLocation{s_.file, 0, 0}, "the schedule holds more than 2^31 ops over all ranks: split it");
      flags_.resize(flags_.size() + ops.size(), 0);
      p2p_ranks.push_back(info.p2p);
    }
    // P2P copies' routes, found (or refused) up front once every rank has its GPU.
    for (int r = 0; r < s_.ranks(); ++r)
      if (p2p_ranks[static_cast<size_t>(r)])
        for (const Op& op : *s_.programs[r].ops)
          if (op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P) (void)route_between(r, op.peer, dma_);
  }

  ExecResult run() {
    closed_owner_.assign(sys_.constraint_count(), -1);
    for (int r = 0; r < s_.ranks(); ++r) engine_.at(Time::zero(), kHostStep, this, static_cast<uint64_t>(r));
    engine_.run();
    check_finished();
    ExecResult out;
    if (o_.keep_records) out.ops = std::move(records_);
    else out.spans = std::move(spans_);
    for (int r = 0; r < s_.ranks(); ++r) {
      RankSummary sum;
      sum.gpu = ranks_[r].node->name;
      sum.end = std::max(ranks_[r].host_end, ranks_[r].last_end);
      sum.peak_vram = ranks_[r].peak_vram;
      sum.vram_capacity = ranks_[r].vram_cap;
      sum.handoffs = ranks_[r].handoffs;
      sum.handoff_time = ranks_[r].handoff_time;
      out.makespan = std::max(out.makespan, sum.end);
      out.ranks.push_back(sum);
    }
    // The duty averages carried from their last update to the makespan (the
    // GPU idle from its last kernel on).
    for (int r = 0; r < s_.ranks(); ++r) out.final_load.push_back(load_at(ranks_[r], out.makespan));
    out.vram = std::move(vram_);
    out.copy_bottlenecks = std::move(copy_bn_);
    out.collective_bottlenecks = std::move(coll_bn_);
    out.link_samples = std::move(samples_);
    out.closed_form = closed_count_;
    out.handed_back = handed_back_;
    out.resource_bytes.assign(topo_.resources().size(), 0);
    const auto& cb = flows_.constraint_bytes();
    for (size_t i = 0; i < cons_.size(); ++i)
      if (static_cast<size_t>(cons_[i]) < cb.size()) out.resource_bytes[i] = cb[cons_[i]];
    return out;
  }

 private:
  // ---------------------------------------------------------------- host
  // Where an op came from: file:line, or its place in a generated schedule.
  std::string where(int r, int index) const { return s_.location(r, index).str(); }

  Time overhead(const Op& op) const {
    switch (op.kind) {
      case OpKind::Kernel: return p_.overheads.kernel_launch;
      case OpKind::Memcpy: return p_.overheads.memcpy_call;
      case OpKind::EventRecord: case OpKind::StreamWaitEvent: case OpKind::StreamWaitStream: return p_.overheads.event_call;
      case OpKind::StreamSync: case OpKind::EventSync: case OpKind::DeviceSync: return p_.overheads.sync_call;
      case OpKind::Collective: return p_.overheads.collective_call;
      case OpKind::Alloc: return p_.overheads.alloc_call;
      case OpKind::Free: return p_.overheads.free_call;
      case OpKind::HostWork: case OpKind::Marker: return Time::zero();
    }
    return Time::zero();
  }

  static void host_step_event(void* self, uint64_t r) { static_cast<Executor*>(self)->host_step(static_cast<int>(r)); }
  static constexpr Engine::Fn kHostStep = &Executor::host_step_event;
  void host_step(int r) {
    RankState& R = ranks_[r];
    if (R.state == RankState::Done) return;
    R.state = RankState::Ready;
    const auto& ops = *s_.programs[r].ops;
    while (R.pc < static_cast<int>(ops.size())) {
      const Op& op = ops[R.pc];
      OpRecord& rec = record(r, R.pc);
      if (!R.paid) {
        rec.issue = engine_.now();
        R.paid = true;
        const Time oh = overhead(op);
        // The call's overhead: when nothing else is due before it ends, the
        // clock just moves on (same order of events as waking up later).
        if (oh > Time::zero() && !engine_.try_advance(engine_.now() + oh)) {
          R.state = RankState::Busy;
          engine_.after(oh, kHostStep, this, static_cast<uint64_t>(r));
          return;
        }
      }
      if (!R.effect_done) {
        R.effect_done = true;
        rec.returned = engine_.now();
        effect(r, op, rec);
      }
      if (R.busy_until > engine_.now() && !engine_.try_advance(R.busy_until)) {
        R.state = RankState::Busy;
        engine_.at(R.busy_until, kHostStep, this, static_cast<uint64_t>(r));
        return;
      }
      if (!satisfied(R)) {
        R.state = RankState::Blocked;
        return;
      }
      R.until.kind = RankState::Wait::None;
      if (!is_gpu_op(op)) {
        rec.start = rec.issue;
        rec.end = engine_.now();
        rec.ran = true;
        R.last_end = std::max(R.last_end, engine_.now());
      }
      rec.returned = engine_.now();
      ++R.pc;
      R.paid = R.effect_done = false;
    }
    R.state = RankState::Done;
    R.host_end = engine_.now();
  }

  const Op& op_of(int r, int id) const { return ranks_[r].ops[id - ranks_[r].base]; }
  std::pair<int32_t, int32_t>& coll_of(int r, int id) {
    RankState& R = ranks_[r];
    return R.coll[static_cast<size_t>(R.queues->coll_ord[static_cast<size_t>(id - R.base)])];
  }

  static bool is_gpu_op(const Op& op) {
    switch (op.kind) {
      case OpKind::Kernel: case OpKind::Memcpy: case OpKind::EventRecord: case OpKind::StreamWaitEvent:
      case OpKind::StreamWaitStream: case OpKind::Collective: return true;
      case OpKind::Marker: return op.stream >= 0;
      default: return false;
    }
  }

  bool satisfied(const RankState& R) const {
    const RankState::Wait& w = R.until;
    switch (w.kind) {
      case RankState::Wait::None: return true;
      case RankState::Wait::Gop: return (flags_[static_cast<size_t>(w.gop)] & kDone) != 0;
      case RankState::Wait::Stream: return R.streams[w.stream].done >= w.count;
      case RankState::Wait::Device:
        for (size_t i = 0; i < w.counts.size(); ++i)
          if (R.streams[i].done < w.counts[i]) return false;
        return true;
    }
    return true;
  }

  // What the host of a blocked rank waits in (deadlock reports).
  std::string waiting_in(const RankState& R) const {
    const Op& op = R.ops[R.pc];
    switch (op.kind) {
      case OpKind::Memcpy: return fmt::format("a blocking {} copy", to_string(op.copy));
      case OpKind::StreamSync: return fmt::format("stream_sync({})", s_.streams[op.stream].name);
      case OpKind::EventSync: return fmt::format("event_sync({})", s_.events[op.event]);
      case OpKind::DeviceSync: return "device_sync";
      default: return to_string(op.kind);
    }
  }

  void block_on_stream(RankState& R, int stream, int count) {
    R.until.kind = RankState::Wait::Stream;
    R.until.stream = stream;
    R.until.count = count;
  }

  void wake(int r) {
    RankState& R = ranks_[r];
    if (R.state == RankState::Blocked && satisfied(R)) {
      R.state = RankState::Busy;
      engine_.after(Time::zero(), kHostStep, this, static_cast<uint64_t>(r));
    }
  }

  void effect(int r, const Op& op, OpRecord& rec) {
    RankState& R = ranks_[r];
    (void)rec;
    switch (op.kind) {
      case OpKind::Kernel: case OpKind::Collective: case OpKind::StreamWaitEvent: case OpKind::StreamWaitStream:
      case OpKind::EventRecord: case OpKind::Marker: {
        if (op.kind == OpKind::Marker && op.stream < 0) return;
        enqueue(r, op);
        if (op.kind == OpKind::EventRecord) R.event_pos[op.event] = {op.stream, R.streams[op.stream].enqueued - 1};
        return;
      }
      case OpKind::Memcpy: {
        const int g = enqueue(r, op);
        const bool blocking = !op.async || (op.host_mem == HostMem::Pageable && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H));
        if (blocking) {
          R.until.kind = RankState::Wait::Gop;
          R.until.gop = g;
        }
        return;
      }
      case OpKind::StreamSync: {
        block_on_stream(R, op.stream, R.streams[op.stream].enqueued);
        return;
      }
      case OpKind::EventSync: {
        const auto [s, pos] = R.event_pos[op.event];
        block_on_stream(R, s, pos + 1);
        return;
      }
      case OpKind::DeviceSync: {
        R.until.kind = RankState::Wait::Device;
        R.until.counts.clear();
        for (const auto& st : R.streams) R.until.counts.push_back(st.enqueued);
        return;
      }
      case OpKind::Alloc: {
        if (op.space == MemSpace::Device) {
          if (R.vram_cap > 0 && R.vram + op.bytes > R.vram_cap)
            throw SimulationError(fmt::format(
                "{}: rank {} ({}) runs out of GPU memory: alloc '{}' of {} needs {} with {} already in use of {} capacity",
                where(r, R.pc), r, R.node->name, op.label, format_bytes(static_cast<double>(op.bytes)),
                format_bytes(static_cast<double>(R.vram + op.bytes)), format_bytes(static_cast<double>(R.vram)),
                format_bytes(static_cast<double>(R.vram_cap))));
          R.vram += op.bytes;
          R.peak_vram = std::max(R.peak_vram, R.vram);
          vram_[r].emplace_back(engine_.now(), R.vram);
        } else {
          const hw::NodeSpec& cpu = topo_.node(R.cpu);
          Bytes& used = pinned_[R.cpu];
          if (cpu.memory && used + op.bytes > *cpu.memory)
            throw SimulationError(fmt::format("{}: rank {} runs out of host memory on {}: alloc '{}' of {} with {} pinned of {}",
                                              where(r, R.pc), r, cpu.name, op.label, format_bytes(static_cast<double>(op.bytes)),
                                              format_bytes(static_cast<double>(used)), format_bytes(static_cast<double>(*cpu.memory))));
          used += op.bytes;
        }
        R.allocs[op.label] = {op.bytes, op.space};
        return;
      }
      case OpKind::Free: {
        auto it = R.allocs.find(op.label);
        assert(it != R.allocs.end());
        if (it->second.second == MemSpace::Device) {
          R.vram -= it->second.first;
          vram_[r].emplace_back(engine_.now(), R.vram);
        } else {
          pinned_[R.cpu] -= it->second.first;
        }
        R.allocs.erase(it);
        return;
      }
      case OpKind::HostWork: R.busy_until = engine_.now() + *op.duration; return;
    }
  }

  // ---------------------------------------------------------------- streams
  // The host issues the op at R.pc to its stream (its queue entry is built
  // already: ProgramQueues).
  int enqueue(int r, const Op& op) {
    RankState& R = ranks_[r];
    R.issued = R.pc + 1;
    StreamState& st = R.streams[op.stream];
    ++st.enqueued;
    if (op.kind == OpKind::StreamWaitEvent && o_.keep_records) {
      const auto [es, ep] = R.event_pos[op.event];
      record(r, R.pc).waits_on = R.queues->stream_ops[static_cast<size_t>(es)][static_cast<size_t>(ep)];
    }
    // Outside a pump no queue's head can dispatch; a new op changes only its
    // own queue's head, and only when it is that head. The scan starts there:
    // the queues before it would have done nothing.
    const HwQueue& q = R.hwq[st.hwq];
    if ((*q.ops)[q.head].index == R.pc) pump(r, st.hwq);
    return R.base + R.pc;
  }

  static bool can_dispatch(const RankState& R, const HwQueue& q) {
    if (q.head == q.ops->size()) return false;
    const QueueEntry& e = (*q.ops)[q.head];
    if (e.index >= R.issued || R.streams[e.stream].done != e.pos) return false;
    return e.dep_stream < 0 || R.streams[e.dep_stream].done > e.dep_pos;
  }

  // Dispatches every queue head that can go, queue by queue, until none can.
  // `first`: the first queue of the first pass (see enqueue).
  void pump(int r, size_t first = 0) {
    RankState& R = ranks_[r];
    if (R.pumping) {
      R.again = true;
      return;
    }
    R.pumping = true;
    do {
      R.again = false;
      for (const size_t i : R.queues->used) {  // the others never hold an op
        if (i < first) continue;
        HwQueue& q = R.hwq[i];
        while (can_dispatch(R, q)) {
          const QueueEntry& e = (*q.ops)[q.head++];
          dispatch(r, R.base + e.index, e);
        }
      }
      first = 0;
    } while (R.again);
    R.pumping = false;
  }

  void complete(int r, int id) {
    RankState& R = ranks_[r];
    const int index = id - R.base;
    const Op& op = R.ops[index];
    StreamState& st = R.streams[op.stream];
    uint8_t& f = flags_[static_cast<size_t>(id)];
    assert(!(f & kDone) && R.queues->stream_ops[static_cast<size_t>(op.stream)][static_cast<size_t>(st.done)] == index);
    f |= kDone;
    ++st.done;
    if (handoffs_) {
      if (op.kind == OpKind::Kernel || op.kind == OpKind::Collective) st.dep = {EngineDep::Compute, engine_.now()}, st.own = EngineDep::Compute;
      else if (op.kind == OpKind::Memcpy) st.dep = {EngineDep::Copy, engine_.now()}, st.own = EngineDep::Copy;
      else if (op.kind == OpKind::EventRecord) R.event_dep[static_cast<size_t>(op.event)] = {op.stream, st.done - 1, st.dep};
    }
    if (o_.keep_records) {
      OpRecord& rec = records_[r][index];
      rec.end = engine_.now();
      rec.ran = true;
    } else {
      spans_.add(r, op, st.started, engine_.now());
    }
    R.last_end = std::max(R.last_end, engine_.now());
    pump(r);
    wake(r);
  }

  // An op's record; without ExecOptions::keep_records a scratch one, written and never read.
  OpRecord& record(int r, int index) { return o_.keep_records ? records_[static_cast<size_t>(r)][static_cast<size_t>(index)] : scratch_; }

  // The op's start: its record's, or its stream's (one op runs on a stream at a time).
  void mark_start(int r, int id, const Op& op) {
    if (o_.keep_records) records_[r][id - ranks_[r].base].start = engine_.now();
    else ranks_[r].streams[op.stream].started = engine_.now();
  }

  void dispatch(int r, int id, const QueueEntry& e) {
    flags_[static_cast<size_t>(id)] |= kDispatched;
    const Op& op = op_of(r, id);
    mark_start(r, id, op);
    // Hand-offs: an op whose stream last ran an op on the other engine
    // (however long ago), or that waited through an event on such an op
    // still running when the host issued it, pays the latency of the
    // hand-over from that engine (bench copy_after_idle: a copy after a
    // kernel long done on its stream paid it, one waiting on an event after
    // a kernel long done on another stream did not).
    Time handoff;
    if (handoffs_) {
      RankState& R = ranks_[r];
      StreamState& st = R.streams[op.stream];
      // A wait takes the later of the two: the stream's own, or the waited
      // stream's at the record (at its end, for a stream wait). The ops
      // issued to the stream by then waited on it.
      const EngineDep* d = nullptr;
      if (op.kind == OpKind::StreamWaitEvent) {
        const RankState::EventDep& ed = R.event_dep[static_cast<size_t>(op.event)];
        if (ed.stream == e.dep_stream && ed.pos == e.dep_pos) d = &ed.dep;
      } else if (op.kind == OpKind::StreamWaitStream) {
        d = &R.streams[op.stream2].dep;
      }
      if (d && d->kind != EngineDep::None && d->end >= st.dep.end) {
        st.dep = *d;
        st.dep_waiting = st.enqueued - 1;
        st.dep_released = engine_.now();
      }
      if (op.kind != OpKind::StreamWaitEvent && op.kind != OpKind::StreamWaitStream) {
        // On its own stream the switch adds the latency; through a wait it
        // runs from the wait's release, beside the ops between (the
        // validation runs' timing events: validate/handoff/).
        const bool waited = e.pos <= st.dep_waiting;
        const auto after = [&](EngineDep::Kind k, Time latency) {
          if (st.own == k) return latency;
          if (waited && st.dep.kind == k) return std::max(Time::zero(), st.dep_released + latency - engine_.now());
          return Time::zero();
        };
        if (op.kind == OpKind::Memcpy && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H))
          handoff = after(EngineDep::Compute, p_.handoff.copy_after_kernel_latency_for(op.copy == CopyKind::D2H));
        else if (op.kind == OpKind::Kernel)
          handoff = after(EngineDep::Copy, p_.handoff.kernel_after_copy_latency);
        if (handoff > Time::zero()) ++R.handoffs, R.handoff_time += handoff;
      }
    }
    switch (op.kind) {
      case OpKind::Kernel:
        if (handoff > Time::zero()) {
          engine_.after(handoff, &Engine::call<&Executor::start_kernel_event, Executor>, this, (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(id));
          return;
        }
        start_kernel(r, id);
        return;
      case OpKind::Memcpy: queue_copy(r, id, handoff); return;
      case OpKind::Collective: arrive_or_park(r, id); return;
      case OpKind::EventRecord: {
        // ModelParams::event_gpu_time: the stream is held that long (after
        // a copy: event_gpu_time_copy where calibrated).
        const RankState& R = ranks_[r];
        const bool after_copy = handoffs_ && p_.overheads.event_gpu_time_copy >= Time::zero() && R.streams[op.stream].own == EngineDep::Copy;
        const Time t = after_copy ? p_.overheads.event_gpu_time_copy : p_.overheads.event_gpu_time + (R.ce[kH2D].busy >= 0 ? p_.overheads.event_gpu_time_h2d : Time::zero());
        if (t > Time::zero()) {
          engine_.after(t, &Engine::call<&Executor::end_event_record, Executor>, this, (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(id));
          return;
        }
        complete(r, id);
        return;
      }
      default: complete(r, id); return;  // waits and markers take no time
    }
  }
  void end_event_record(uint64_t packed) { complete(static_cast<int>(packed >> 32), static_cast<int>(packed & 0xffffffffu)); }
  void start_kernel_event(uint64_t packed) { start_kernel(static_cast<int>(packed >> 32), static_cast<int>(packed & 0xffffffffu)); }

  // ---------------------------------------------------------------- SMs
  // R's sustained-load duty averages carried from their last update to
  // `now` at the busy state since then (the slow one only where it acts).
  LoadState load_at(const RankState& R, Time now) const {
    LoadState ls{R.duty, R.duty_slow};
    const double b = R.duty_busy ? 1.0 : 0.0, dt = (now - R.duty_t).s();
    if (dt > 0) {
      ls.duty = b + (R.duty - b) * std::exp(-dt / p_.power.sustained_time_constant.s());
      if (p_.power.sustained_slow_slowdown > 0) ls.duty_slow = b + (R.duty_slow - b) * std::exp(-dt / p_.power.sustained_slow_time_constant.s());
    }
    return ls;
  }

  double compute_factor(const RankState& R) const {
    double f = 1.0;
    if (R.comm_channels > 0) f *= std::max(0.05, 1.0 - (p_.interference.gemm_slowdown_base + p_.interference.gemm_slowdown_per_channel * R.comm_channels));
    for (const auto& e : R.ce)
      if (e.busy >= 0) f *= 1.0 - p_.interference.gemm_slowdown_per_copy;
    return f;
  }

  // How much slower a collective's flows from R run: beside compute kernels
  // (SM contention), and with R's clock down (ModelParams::comm_clock_share).
  double comm_slowdown(const RankState& R, int channels, bool via_host) const {
    const double contention = R.kernels.empty() ? 1.0 : std::max(1.0, p_.interference.comm_slowdown_base + p_.interference.comm_slowdown_per_channel * channels);
    return contention * clock_slowdown(R, via_host);
  }
  static bool through_host(hw::RouteKind k) { return k == hw::RouteKind::ViaHost || k == hw::RouteKind::NetworkViaHost; }
  // A collective group's transport, as its first pair of members routes.
  bool group_via_host(const CollInst& c) { return through_host(pair_route(c.members[0], c.members[1], false).kind); }
  double clock_slowdown(const RankState& R, bool via_host) const {
    const double share = via_host ? p_.power.comm_clock_share_host : p_.power.comm_clock_share;
    if (share <= 0 || R.clock >= 1.0) return 1.0;
    return 1.0 + std::round(share * (1.0 / R.clock - 1.0) * 256.0) / 256.0;
  }

  void start_kernel(int r, int id) {
    RankState& R = ranks_[r];
    const Op& op = op_of(r, id);
    const int demand = op.sm_limit > 0 ? std::min(op.sm_limit, R.sms) : R.sms;
    const bool compute = op.gemm.has_value() || op.attention.has_value() || op.flops > 0;
    ++R.kernel_changes;
    R.kernels.push_back(RunningKernel{id, (*R.work)[static_cast<size_t>(id - R.base)], 0, 0, engine_.now(), {}, demand, R.streams[op.stream].priority,
                                      compute, compute || op.hbm_bytes > 0, op.attention.has_value() && !op.gemm.has_value() && !op.realised});
    update_gpu(r);
  }

  void update_gpu(int r) {
    RankState& R = ranks_[r];
    const Time now = engine_.now();
    // Called again at the same instant with nothing changed (a collective
    // member finishing starts the stream's next kernel, which updates, then
    // updates itself): every speed, cap and completion stands.
    // Its NVLink awake (ModelParams::nvlink_awake_slowdown): a collective
    // over it running, or one ended less than nvlink_wake_after ago.
    const bool awake = p_.nvlink.nvlink_awake_slowdown > 0 && (R.nvlink_running > 0 || (R.nvlink_used && now - R.nvlink_quiet_since < p_.nvlink.nvlink_wake_after));
    const uint8_t engines = static_cast<uint8_t>((R.ce[0].busy >= 0 ? 1 : 0) | (R.ce[1].busy >= 0 ? 2 : 0) | (R.ce[2].busy >= 0 ? 4 : 0) | (awake ? 8 : 0));
    if (R.seen.time_ps == now.ps() && R.seen.kernels == R.kernel_changes && R.seen.channels == R.comm_channels && R.seen.engines == engines)
      return;
    R.seen = {now.ps(), R.kernel_changes, R.comm_channels, engines};
    for (auto& k : R.kernels) {
      k.remaining = std::max(0.0, k.remaining - k.speed * (now - k.last).s());
      k.last = now;
    }
    // SM shares: higher priority first; within a priority, proportional to demand.
    std::vector<size_t>& order = order_;
    order.resize(R.kernels.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (order.size() > 1)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return R.kernels[a].priority > R.kernels[b].priority; });
    double avail = R.sms;
    const double factor = compute_factor(R);
    double clock = 1.0, attention_clock = 1.0;
    if (p_.power.sustained_slowdown > 0) {
      if (now > R.duty_t) {  // no time passed: the averages stand (exp(0) would only add rounding)
        const LoadState ls = load_at(R, now);
        R.duty = ls.duty;
        R.duty_slow = ls.duty_slow;
        R.duty_t = now;
      }
      // The duty cycle counts every kernel that draws power, memory-bound
      // ones too (validation: counting only compute kernels left prefetching
      // runs' clock too high); only compute-bound kernels slow with the clock.
      R.duty_busy = std::any_of(R.kernels.begin(), R.kernels.end(), [](const RunningKernel& k) { return k.loads; });
      const double x = std::clamp((R.duty - p_.power.sustained_duty) / (1 - p_.power.sustained_duty), 0.0, 1.0);
      const double x_slow = std::clamp((R.duty_slow - p_.power.sustained_duty) / (1 - p_.power.sustained_duty), 0.0, 1.0);
      clock = 1.0 / (1.0 + p_.power.sustained_slowdown * x + p_.power.sustained_slow_slowdown * x_slow);
      attention_clock = 1.0 / (1.0 + p_.power.sustained_slowdown * x + p_.attention.attention_slow_share * p_.power.sustained_slow_slowdown * x_slow);
    }
    R.clock = clock;
    if (awake) {
      clock /= 1 + p_.nvlink.nvlink_awake_slowdown;
      attention_clock /= 1 + p_.nvlink.nvlink_awake_slowdown;
    }
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      double demand = 0;
      while (j < order.size() && R.kernels[order[j]].priority == R.kernels[order[i]].priority) demand += R.kernels[order[j++]].demand;
      const double give = std::min(avail, demand);
      for (size_t k = i; k < j; ++k) {
        const RunningKernel& rk = R.kernels[order[k]];
        R.kernels[order[k]].next_speed = (give / demand) * factor * (!rk.clocked ? 1.0 : rk.attention ? attention_clock : clock);
      }
      avail -= give;
      i = j;
    }
    for (auto& k : R.kernels) {
      // Same speed: the pending completion stands (progress is linear).
      if (k.next_speed == k.speed && engine_.pending(k.ev)) continue;
      k.speed = k.next_speed;
      engine_.cancel(k.ev);
      if (k.speed > 0) {
        const int gid = k.gop;
        k.ev = engine_.after(Time::from_ps(static_cast<int64_t>(std::ceil(k.remaining / k.speed * 1e12))),
                             &Engine::call<&Executor::end_kernel_event, Executor>, this,
                             (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(gid));
      }
    }
    for (size_t i = 0; i < R.closed.size();) {  // a closed form capped at another slowdown hands its flows back
      const auto [ci, m] = R.closed[i];
      const CollInst& c = insts_[ci];
      if (comm_slowdown(R, c.channels, c.closed->via_host) != c.closed->slow[static_cast<size_t>(m)]) hand_back(ci);
      else ++i;
    }
    for (auto& cf : R.coll_flows)
      if (flows_.running(cf.flow)) flows_.set_rate_cap(cf.flow, cf.base_cap / comm_slowdown(R, cf.channels, cf.via_host));
  }

  void end_kernel_event(uint64_t packed) { end_kernel(static_cast<int>(packed >> 32), static_cast<int>(packed & 0xffffffffu)); }
  void end_kernel(int r, int gid) {
    RankState& R = ranks_[r];
    auto it = std::find_if(R.kernels.begin(), R.kernels.end(), [&](const RunningKernel& k) { return k.gop == gid; });
    assert(it != R.kernels.end());
    R.kernels.erase(it);
    ++R.kernel_changes;
    complete(r, gid);
    update_gpu(r);
  }

  // ---------------------------------------------------------------- copies
  int engine_for(const RankState& R, CopyKind k) const {
    const int n = R.node->gpu.copy_engines.value_or(3);
    const int want = k == CopyKind::H2D ? kH2D : k == CopyKind::D2H ? kD2H : kOther;
    if (n >= 3) return want;
    if (n == 2) return want == kOther ? kD2H : want;
    return kH2D;
  }

  const hw::Route& route_between(int r, int peer, const hw::RouteOptions& o) {
    return topo_.route(ranks_[r].gpu, ranks_[peer].gpu, o);
  }

  // A route as the flows use it: solver constraints, latency, kind.
  struct FlowRoute {
    boost::container::small_vector<FlowUse, 6> uses;
    Time latency;
    hw::RouteKind kind = hw::RouteKind::Local;
    bool known = false;
  };
  void set_flow_route(FlowRoute& fr, const hw::Route& route) const {
    fr.uses.clear();
    for (const auto& u : route.uses) fr.uses.push_back({cons_[u.resource], u.coefficient});
    fr.latency = route.latency;
    fr.kind = route.kind;
    fr.known = true;
  }
  // The topology resources a flow's route crosses (for link samples).
  std::vector<hw::ResourceUse> resource_uses(const FlowRoute& fr) const {
    std::vector<hw::ResourceUse> out;
    for (const FlowUse& u : fr.uses) out.push_back({res_of_cons_[u.constraint], u.coefficient});
    return out;
  }
  // Routes between ranks, memoised for small jobs (a DiT run asks for the
  // same few pairs hundreds of thousands of times); large jobs ask the
  // topology (its own caches are bounded).
  static constexpr int kRouteMemoRanks = 64;
  const FlowRoute& pair_route(int a, int b, bool dma) {
    const hw::RouteOptions& o = dma ? dma_ : opts_;
    const int n = s_.ranks();
    if (n > kRouteMemoRanks) {
      set_flow_route(scratch_route_, route_between(a, b, o));
      return scratch_route_;
    }
    auto& memo = dma ? dma_routes_ : coll_routes_;
    if (memo.empty()) memo.resize(static_cast<size_t>(n) * static_cast<size_t>(n));
    FlowRoute& fr = memo[static_cast<size_t>(a) * static_cast<size_t>(n) + static_cast<size_t>(b)];
    if (!fr.known) set_flow_route(fr, route_between(a, b, o));
    return fr;
  }
  // Host <-> GPU routes of a rank's copies (index 2r: H2D, 2r+1: D2H).
  const FlowRoute& host_route(int r, bool h2d) {
    if (host_routes_.empty()) host_routes_.resize(2 * static_cast<size_t>(s_.ranks()));
    FlowRoute& fr = host_routes_[2 * static_cast<size_t>(r) + (h2d ? 0 : 1)];
    if (!fr.known) {
      const RankState& R = ranks_[r];
      set_flow_route(fr, h2d ? topo_.route(R.cpu, R.gpu, dma_) : topo_.route(R.gpu, R.cpu, dma_));
    }
    return fr;
  }

  void queue_copy(int r, int id, Time handoff) {
    RankState& R = ranks_[r];
    const int e = engine_for(R, op_of(r, id).copy);
    R.ce[e].queue.emplace_back(id, handoff);
    if (R.ce[e].busy < 0) start_copy(r, e);
  }

  void start_copy(int r, int e) {
    RankState& R = ranks_[r];
    CopyEngine& ce = R.ce[e];
    if (ce.queue.empty()) return;
    const auto [id, handoff] = ce.queue.front();
    ce.queue.pop_front();
    ce.busy = id;
    const Op& op = op_of(r, id);
    mark_start(r, id, op);  // a copy starts when its engine takes it
    FlowSpec f;
    f.bytes = static_cast<double>(op.bytes);
    // The calibrated engine rate is that of copies to and from host memory
    // (what the bench's pinned copies measure); a P2P copy is held by its
    // route (the NVLink port: the measured P2P rate), a D2D copy by HBM.
    double cap = std::numeric_limits<double>::infinity();
    const FlowRoute* route = nullptr;
    switch (op.copy) {
      case CopyKind::H2D: route = &host_route(r, true); break;
      case CopyKind::D2H: route = &host_route(r, false); break;
      case CopyKind::P2P: route = &pair_route(r, op.peer, true); break;
      case CopyKind::D2D: {
        const double hbm = R.node->gpu.hbm_bandwidth ? R.node->gpu.hbm_bandwidth->bytes_per_s : 1e12;
        cap = hbm * p_.memory.hbm_efficiency / 2;  // read + write
        break;
      }
    }
    if (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) cap = p_.copies.copy_engine_bandwidth_for(op.copy == CopyKind::D2H).bytes_per_s;
    if (op.host_mem == HostMem::Pageable && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H))
      cap = std::min(cap, p_.copies.pageable_bandwidth_for(op.copy == CopyKind::D2H).bytes_per_s);
    f.latency = op.copy == CopyKind::H2D || op.copy == CopyKind::D2H
                    ? p_.copies.host_copy_setup(op.copy == CopyKind::D2H, op.host_mem == HostMem::Pageable)
                    : p_.copies.copy_latency;
    // Both ways at once (copy_bidir_table): a pinned copy starting while
    // the other direction runs one waits the longer of the two set-ups.
    if ((op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) && op.host_mem == HostMem::Pinned && p_.copies.copy_bidir_tabled() && !bidir_.empty() &&
        bidir_active_[static_cast<size_t>(r)][op.copy == CopyKind::D2H ? 0 : 1] > 0)
      f.latency = std::max(f.latency, p_.copies.host_copy_setup(op.copy != CopyKind::D2H, false));
    if (route) {
      f.route = route->uses;
      f.latency += route->latency;
    }
    f.latency += handoff;
    if (std::isfinite(cap)) f.rate_cap = cap;
    f.weight = p_.interference.copy_weight_for(op.copy == CopyKind::D2H);
    const uint64_t key = (static_cast<uint64_t>(id) << 24) | (static_cast<uint64_t>(r) << 4) | static_cast<uint64_t>(e);
    f.on_done = [this, key](const FlowRecord& rec) {
      const int gid = static_cast<int>(key >> 24), rr = static_cast<int>((key >> 4) & 0xfffff), ee = static_cast<int>(key & 0xf);
      account(copy_bn_, rec);
      OpRecord& orec = record(rr, gid - ranks_[rr].base);
      const ConstraintId mb = rec.main_bottleneck();
      const int bound = mb < 0 ? -1 : res_of_cons_[mb];
      assert(bound < (1 << 30));  // OpRecord::bottleneck is 31 bits
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
      orec.bottleneck = bound;
#pragma GCC diagnostic pop
      for (const auto& [c, t] : rec.bottleneck_time)
        if (c == mb) orec.bottleneck_time = t;
      ranks_[rr].ce[ee].busy = -1;
      if (const CopyKind k = op_of(rr, gid).copy; (k == CopyKind::H2D || k == CopyKind::D2H) && !dma_limits_.empty())
        for (const FlowUse& u : host_route(rr, k == CopyKind::H2D).uses)
          if (const int d = dma_limit_of(u.constraint); d >= 0) copying_under(d, -1);
      if (const Op& done = op_of(rr, gid); (done.copy == CopyKind::H2D || done.copy == CopyKind::D2H) && done.host_mem == HostMem::Pinned && !bidir_.empty()) {
        const size_t d = done.copy == CopyKind::D2H ? 1 : 0;
        assert(bidir_active_[static_cast<size_t>(rr)][d] > 0);
        if (--bidir_active_[static_cast<size_t>(rr)][d] == 0) set_bidir_limit(rr, 1 - d);
      }
      complete(rr, gid);
      start_copy(rr, ee);
      update_gpu(rr);
    };
    if ((op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) && !bidir_.empty()) {
      const size_t d = op.copy == CopyKind::D2H ? 1 : 0;
      f.route.push_back({bidir_[static_cast<size_t>(r)][d], 1.0});
      if (op.host_mem == HostMem::Pinned && bidir_active_[static_cast<size_t>(r)][d]++ == 0) set_bidir_limit(r, 1 - d);
      set_bidir_limit(r, d);  // this copy's own share (copy_bidir_factor_for its size)
    }
    if ((op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) && !dma_limits_.empty()) {
      for (const FlowUse& u : route->uses)
        if (const int d = dma_limit_of(u.constraint); d >= 0) {
          f.route.push_back({dma_limits_[static_cast<size_t>(d)].constraint, 1.0});
          copying_under(d, +1);
        }
    }
    hand_back_route(f.route);
    const FlowId fid = flows_.start(std::move(f));
    if (o_.link_samples && route) flow_uses_[fid] = resource_uses(*route);  // rates are reported only after activation
    update_gpu(r);
  }

  // Rank r's engine limit of direction d (0 H2D, 1 D2H): the engine's rate,
  // times copy_bidir_factor_for(d, the size of the copy on d's engine) while
  // a pinned copy runs the other way.
  void set_bidir_limit(int r, size_t d) {
    const double full = p_.copies.copy_engine_bandwidth_for(d == 1).bytes_per_s;
    double share = p_.copies.copy_bidir_factor_for(d == 1);
    if (p_.copies.copy_bidir_tabled()) {
      const CopyKind k = d == 1 ? CopyKind::D2H : CopyKind::H2D;
      const int id = ranks_[r].ce[engine_for(ranks_[r], k)].busy;
      if (id >= 0 && op_of(r, id).copy == k) share = p_.copies.copy_bidir_factor_for(d == 1, op_of(r, id).bytes);
    }
    flows_.set_capacity(bidir_[static_cast<size_t>(r)][d], bidir_active_[static_cast<size_t>(r)][1 - d] > 0 ? full * share : full);
  }

  // The copy limit of the host bridge whose from-host (H2D) or to-host (D2H) constraint is c, or -1.
  int dma_limit_of(ConstraintId c) const {
    return static_cast<size_t>(c) < dma_limit_of_.size() ? dma_limit_of_[static_cast<size_t>(c)] : -1;
  }
  // A copy starts (+1) or ends (-1) under the bridge of dma_limits_[d]: the
  // bridge limits its copies of that direction together to the measured
  // aggregate for that many GPUs (ModelParams::host_h2d_aggregate or
  // host_d2h_aggregate), never above its own limit. One GPU's copy is held by
  // its link and engine (the table's first entry is that rate), so the limit
  // applies from two on. A rank has one engine per direction: one such copy
  // at a time, so copies count GPUs.
  void copying_under(int d, int delta) {
    DmaLimit& L = dma_limits_[static_cast<size_t>(d)];
    L.gpus += delta;
    assert(L.gpus >= 0);
    const auto& agg = *L.table;
    if (!closed_forms_.empty())
      if (const int ci = closed_owner_[static_cast<size_t>(L.constraint)]; ci >= 0) hand_back(ci);
    flows_.set_capacity(L.constraint, L.gpus < 2 ? L.nominal
                                                 : std::min(L.nominal, agg[std::min(static_cast<size_t>(L.gpus), agg.size()) - 1].bytes_per_s));
  }

  // ---------------------------------------------------------------- collectives
  void arrive_or_park(int r, int id) {
    RankState& R = ranks_[r];
    const Op& op = op_of(r, id);
    auto& [inst, seq] = coll_of(r, id);
    if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
      const bool send = op.coll == CollKind::Send;
      const int src = send ? r : op.peer, dst = send ? op.peer : r;
      const int n = send ? R.send_seq[op.peer]++ : R.recv_seq[op.peer]++;
      const auto key = std::make_tuple(-1 - src, dst, n);
      inst = instance(key, -1, n, {src, dst});
      arrive(r, id);
      return;
    }
    seq = R.group_seq[op.group]++;
    if (seq > R.group_done[op.group]) {
      R.parked[op.group].push_back(id);  // NCCL serialises collectives on a communicator
      return;
    }
    inst = instance(std::make_tuple(op.group, 0, seq), op.group, seq, s_.groups[op.group].ranks);
    arrive(r, id);
  }

  int instance(std::tuple<int, int, int> key, int group, int seq, const std::vector<int>& members) {
    auto it = inst_index_.find(key);
    if (it != inst_index_.end()) return it->second;
    // A finished instance's slot is reused, its buffers kept, but only from
    // the next engine event on: callers up the stack of the event that
    // finished it may still hold it.
    int ci;
    if (!free_insts_.empty() && free_insts_.front().second < engine_.events_processed()) {
      ci = free_insts_.front().first;
      free_insts_.pop_front();
    } else {
      ci = static_cast<int>(insts_.size());
      insts_.emplace_back();
    }
    CollInst& c = insts_[static_cast<size_t>(ci)];
    c.op = nullptr;
    c.key = key;
    c.group = group;
    c.seq = seq;
    c.members.assign(members.begin(), members.end());
    c.gops.assign(members.size(), -1);
    c.arrived = c.finished = 0;
    c.launched = false;
    c.wire = 0;
    c.channels = 0;
    c.step = c.steps = c.step_left = 0;
    c.partner.clear();
    c.tabled[0] = c.tabled[1] = CollInst::Tabled{};
    inst_index_.emplace(key, ci);
    return ci;
  }

  int channels_of(const Op& op) const { return op.channels > 0 ? op.channels : p_.nccl.nccl_channels; }

  void arrive(int r, int id) {
    RankState& R = ranks_[r];
    const int ci = coll_of(r, id).first;
    CollInst& c = insts_[ci];
    const size_t m = static_cast<size_t>(std::find(c.members.begin(), c.members.end(), r) - c.members.begin());
    assert(m < c.members.size());
    c.gops[m] = id;
    flags_[static_cast<size_t>(id)] |= kArrived;
    const Op& op = op_of(r, id);
    mark_start(r, id, op);  // a collective starts when its rank reaches it
    R.comm_channels += channels_of(op);  // the kernel holds its SMs while it waits for peers
    update_gpu(r);
    if (!c.op) c.op = &op;
    if (++c.arrived == static_cast<int>(c.members.size())) launch(ci);
  }

  [[noreturn]] void mismatch(const CollInst& c) {
    std::string msg = c.group >= 0 ? fmt::format("collectives issued in different orders or sizes on group '{}': call #{} is",
                                                 s_.groups[c.group].name, c.seq)
                                   : fmt::format("send #{} and its matching recv differ:", c.seq);
    for (size_t m = 0; m < c.members.size(); ++m) {
      const int r = c.members[m], index = c.gops[m] - ranks_[r].base;
      const Op& op = ranks_[r].ops[index];
      msg += fmt::format("\n  rank {}: {} {} ({} {}, {} channels) at {}", r, to_string(op.coll), op.label,
                         format_bytes(static_cast<double>(op.bytes)), to_string(op.dtype), channels_of(op), where(r, index));
    }
    throw SimulationError(msg);
  }

  void launch(int ci) {
    CollInst& c = insts_[ci];
    c.launched = true;
    const Op& op = *c.op;
    const bool p2p = c.group < 0;  // members are {sender, receiver}: kinds differ by design
    for (size_t m = 0; m < c.gops.size(); ++m) {
      const Op& o = op_of(c.members[m], c.gops[m]);
      if ((!p2p && (o.coll != op.coll || o.algo != op.algo)) || o.bytes != op.bytes || o.dtype != op.dtype ||
          channels_of(o) != channels_of(op))
        mismatch(c);
    }
    const Time now = engine_.now();
    Time delay = Time::zero();
    c.nvlink = (p_.nvlink.nvlink_wake_latency > Time::zero() || p_.nvlink.nvlink_copy_latency > Time::zero() || p_.nvlink.nvlink_awake_slowdown > 0) &&
               op.bytes >= p_.nvlink.nvlink_wake_min_bytes && !group_via_host(c);
    if (c.nvlink) {
      for (const int r : c.members) {
        ++ranks_[r].nvlink_running;
        if (p_.nvlink.nvlink_awake_slowdown > 0) update_gpu(r);
      }
      // A member quiet for nvlink_wake_after wakes first; beside a host copy
      // it waits nvlink_copy_latency (either 0 where not calibrated).
      if (std::any_of(c.members.begin(), c.members.end(), [&](int r) { return now - ranks_[r].nvlink_quiet_since >= p_.nvlink.nvlink_wake_after; }))
        delay = delay + p_.nvlink.nvlink_wake_latency;
      if (std::any_of(c.members.begin(), c.members.end(), [&](int r) { return ranks_[r].ce[kH2D].busy >= 0 || ranks_[r].ce[kD2H].busy >= 0; }))
        delay = delay + p_.nvlink.nvlink_copy_latency;
    }
    // The later rank under the power cap (ModelParams::straggler_share).
    const double full = p_.power.sustained_slowdown + p_.power.sustained_slow_slowdown;
    if (p_.power.straggler_share > 0 && full > 0) {
      double wait_s = 0;
      for (const int r : c.members) {
        const double down = std::clamp((1.0 / ranks_[r].clock - 1.0) / full, 0.0, 1.0);
        wait_s = std::max(wait_s, p_.power.straggler_share * down * (now - ranks_[r].last_coll_end).s());
      }
      delay = delay + Time::from_ps(static_cast<int64_t>(std::llround(wait_s * 1e12)));
    }
    if (delay > Time::zero()) {
      engine_.at(now + delay, &Engine::call<&Executor::start_launched, Executor>, this, static_cast<uint64_t>(ci));
      return;
    }
    start_launched(ci);
  }

  void start_launched(int ci) {
    CollInst& c = insts_[ci];
    const Op& op = *c.op;
    c.channels = channels_of(op);
    c.wire = static_cast<double>(op.bytes) * (op.dtype == DType::FP8 ? 1.0 + 4.0 / 128.0 : 1.0);
    const int U = static_cast<int>(c.members.size());
    c.member_done.assign(U, 0);
    c.outstanding.assign(U, 0);
    if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
      c.outstanding = {1, 1};
      coll_flow(ci, 0, 1, c.wire, 1);
      return;
    }
    if (op.coll == CollKind::AllToAll && op.algo == CollAlgo::Nccl) {
      c.outstanding.assign(static_cast<size_t>(U), 2 * (U - 1));  // a member sends to and receives from each peer
      if (try_closed_form(ci)) return;
      for_each_a2a_flow(U, [&](int i, int j) { coll_flow(ci, i, j, c.wire / U, U - 1); });
      return;
    }
    if (op.coll == CollKind::AllToAll) {  // pairwise round-robin, circle method
      const int n = U % 2 == 0 ? U : U + 1;
      std::vector<int> teams(n);
      for (int i = 0; i < n; ++i) teams[i] = i;
      for (int round = 0; round < n - 1; ++round) {
        std::vector<int> partner(U, -1);
        for (int i = 0; i < n / 2; ++i) {
          const int a = teams[i], b = teams[n - 1 - i];
          if (a < U && b < U) {
            partner[a] = b;
            partner[b] = a;
          }
        }
        c.partner.push_back(partner);
        std::rotate(teams.begin() + 1, teams.end() - 1, teams.end());
      }
      c.round.assign(U, 0);
      c.in_round.assign(U, 0);
      c.round_left.assign(U, 0);
      for (int i = 0; i < U; ++i) try_round(ci, i);
      return;
    }
    // Ring: all_gather / reduce_scatter: U-1 steps; all_reduce: 2(U-1).
    c.steps = op.coll == CollKind::AllReduce ? 2 * (U - 1) : U - 1;
    c.step = 0;
    ring_step(ci);
  }

  // An NCCL all-to-all's flows, (from, to) members, in the order launch()
  // starts them (each rank's peers rotated by its place); a closed form and
  // the link time of a measured one list them the same way.
  template <class F>
  static void for_each_a2a_flow(int U, F&& f) {
    for (int i = 0; i < U; ++i)
      for (int k = 1; k < U; ++k) f(i, (i + k) % U);
  }

  void coll_flow(int ci, int from, int to, double bytes, int peers_at_once) { coll_flow(ci, from, to, bytes, peers_at_once, p_.nccl.nccl_latency); }
  void coll_flow(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency) {
    double base = 0;
    FlowSpec f = coll_spec(ci, from, to, bytes, peers_at_once, protocol_latency, base);
    hand_back_route(f.route);
    start_coll_flow(ci, from, to, std::move(f), base, nullptr);
  }

  // A collective flow from member `from` to member `to`: its route, latency,
  // cap (`base`: the cap before the compute slowdown) and weight.
  FlowSpec coll_spec(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency, double& base_out) {
    CollInst& c = insts_[ci];
    const int ra = c.members[from], rb = c.members[to];
    const FlowRoute& route = pair_route(ra, rb, false);
    FlowSpec f;
    f.route = route.uses;
    f.bytes = bytes;
    f.latency = route.latency + protocol_latency;
    const bool via_host = through_host(route.kind);
    const double ceiling = (via_host ? p_.nccl.nccl_host_rank_bandwidth : p_.nccl.nccl_rank_bandwidth).bytes_per_s;
    double base = std::min(c.channels * p_.nccl.nccl_channel_bandwidth.bytes_per_s, ceiling) / peers_at_once;
    if (const CollInst::Tabled& t = tabled(c, route.kind, via_host); t.rate > 0) {
      base = t.rate;
      // Measured end to end: the route's latency is in it; a ring pays it once.
      f.latency = c.steps > 0 && c.step > 0 ? Time::zero() : t.latency;
    }
    f.rate_cap = base / comm_slowdown(ranks_[ra], c.channels, via_host);
    // Its latency runs on SM code as well.
    if (const double cs = clock_slowdown(ranks_[ra], via_host); cs != 1.0) f.latency = Time::from_ps(static_cast<int64_t>(std::llround(static_cast<double>(f.latency.ps()) * cs)));
    if (route.kind == hw::RouteKind::ViaHost && (p_.interference.host_transport_cost_h2d != 1.0 || p_.interference.host_transport_cost_d2h != 1.0)) {
      // Its bytes cost the PCIe links more than a copy's: those of the
      // sender's way up (what ra's D2H copies cross) and of the receiver's
      // way down (rb's H2D copies). Host bridges' limits and host memory
      // count bytes alike (fitted: costing the bridges too put four GPUs'
      // copies beside a 4-rank all-to-all 11-21 % off). Never so much that
      // the collective alone, its rank's flows at their cap, would fill the
      // link: its measured time already holds what its bytes cost there.
      const FlowRoute& up = host_route(ra, false);
      const FlowRoute& down = host_route(rb, true);
      auto on = [](const FlowRoute& fr, ConstraintId k) {
        return std::any_of(fr.uses.begin(), fr.uses.end(), [k](const FlowUse& u) { return u.constraint == k; });
      };
      for (FlowUse& u : f.route) {
        const int res = res_of_cons_[static_cast<size_t>(u.constraint)];
        if (!topo_.is_link(res)) continue;
        const bool is_up = on(up, u.constraint), is_down = on(down, u.constraint);
        if (is_up == is_down) continue;
        double cost = is_up ? p_.interference.host_transport_cost_d2h : p_.interference.host_transport_cost_h2d;
        if (cost > 1.0) cost = std::max(1.0, std::min(cost, topo_.resources()[static_cast<size_t>(res)].capacity / (u.coefficient * base * peers_at_once)));
        u.coefficient *= cost;
      }
    }
    // A rank's collective flows weigh 1/sqrt(peers at once) each: sqrt(k)
    // for k flows together (fitted: the copy weight against a 2-rank and a
    // 4-rank all-to-all through host memory, 2.66 and 2.77 on 2xH200 and
    // 4xH200 boxes; per flow 1 gave 2.66 / 4.79, per rank 2.66 / 1.60).
    f.weight = 1.0 / std::sqrt(static_cast<double>(peers_at_once));
    base_out = base;
    return f;
  }

  // Starts a collective flow (resumes it from `st` when given: a closed
  // form handing its flows back).
  void start_coll_flow(int ci, int from, int to, FlowSpec f, double base, const FlowState* st) {
    const CollInst& c = insts_[ci];
    const int ra = c.members[from];
    // Captures packed into 16 bytes so std::function stores them inline.
    const uint64_t key = (static_cast<uint64_t>(ci) << 32) | (static_cast<uint64_t>(from) << 16) | static_cast<uint64_t>(to);
    f.on_done = [this, key](const FlowRecord& rec) {
      coll_flow_done(static_cast<int>(key >> 32), static_cast<int>((key >> 16) & 0xffff), static_cast<int>(key & 0xffff), rec);
    };
    const FlowId fid = st ? flows_.resume(std::move(f), *st) : flows_.start(std::move(f));
    if (o_.link_samples) flow_uses_[fid] = resource_uses(pair_route(ra, c.members[to], false));
    auto& cfs = ranks_[ra].coll_flows;
    if (coll_flow_slot_.size() <= static_cast<size_t>(fid)) coll_flow_slot_.resize(static_cast<size_t>(fid) + 1, -1);
    coll_flow_slot_[static_cast<size_t>(fid)] = static_cast<int>(cfs.size());
    cfs.push_back({fid, base, c.channels, through_host(pair_route(ra, c.members[to], false).kind)});
  }

  // ---------------------------------------------------------------- closed form
  // An NCCL all-to-all whose links nothing else uses (no flow running or
  // about to start on them, no other closed form replaying over them) runs
  // exactly as it would by itself: when the same group moves the same bytes
  // at the same caps a second time, its flows are simulated once, privately
  // (core/isolated.hpp), and the result replayed, one event per instant at
  // which some of its flows end, from then on. When anything touches its links or caps before it
  // ends (a flow starts over them, a kernel slows its flows), it hands its
  // unfinished flows back to the shared flow model in the state they have
  // then, and the run goes on as if they had been there all along.
  bool try_closed_form(int ci) {
    if (!o_.closed_form_collectives || o_.link_samples) return false;
    CollInst& c = insts_[ci];
    const int U = static_cast<int>(c.members.size());
    ClosedKey& key = closed_key_;  // reused: no allocation per all-to-all
    key.group = c.group;
    key.wire = c.wire;
    key.channels = c.channels;
    key.slow.clear();
    const bool via_host = group_via_host(c);
    for (int m = 0; m < U; ++m) key.slow.push_back(comm_slowdown(ranks_[c.members[m]], c.channels, via_host));
    // Built when the same all-to-all recurs: one that runs once (a single
    // huge all-to-all) would pay for its flows twice.
    auto it = closed_forms_.find(key);
    if (it == closed_forms_.end()) it = closed_forms_.emplace(key, ClosedEntry{}).first;
    ClosedEntry& entry = it->second;
    if (!entry.form) {
      if (++entry.seen < 2) return false;
      entry.form = build_closed_form(ci, key.slow);
    }
    const ClosedForm& cf = *entry.form;
    assert(!cf.groups.empty());  // groups have two ranks or more: there are flows
    for (const ConstraintId k : cf.cons)
      if (sys_.holders(k) > 0 || closed_owner_[static_cast<size_t>(k)] >= 0) return false;
    ++closed_count_;
    for (const ConstraintId k : cf.cons) closed_owner_[static_cast<size_t>(k)] = ci;
    for (int m = 0; m < U; ++m) ranks_[c.members[m]].closed.emplace_back(ci, m);
    c.closed = &cf;
    c.t0 = engine_.now();
    c.next_group = 0;
    c.closed_ev = engine_.at(c.t0 + cf.groups.front().end, &Engine::call<&Executor::closed_group, Executor>, this, static_cast<uint64_t>(ci));
    return true;
  }

  std::unique_ptr<ClosedForm> build_closed_form(int ci, const std::vector<double>& slow) {
    const CollInst& c = insts_[ci];
    const int U = static_cast<int>(c.members.size());
    auto cf = std::make_unique<ClosedForm>();
    cf->slow = slow;
    cf->via_host = group_via_host(c);
    for_each_a2a_flow(U, [&](int i, int j) {
      double base = 0;
      cf->flows.flows.push_back(coll_spec(ci, i, j, c.wire / U, U - 1, p_.nccl.nccl_latency, base));
      cf->ends.emplace_back(i, j);
      cf->base.push_back(base);
    });
    cf->cons = localise(cf->flows);
    const IsolatedRun run = run_isolated(cf->flows);
    for (const int f : run.order) {
      const FlowRecord& rec = run.records[static_cast<size_t>(f)];
      if (cf->groups.empty() || cf->groups.back().end != rec.end) cf->groups.push_back({rec.end, {}, {}, {}, {}});
      ClosedForm::Group& g = cf->groups.back();
      g.flows.push_back(f);
      auto add = [](auto& list, int k, auto v) {
        auto at = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == k; });
        if (at == list.end()) list.emplace_back(k, v);
        else at->second += v;
      };
      for (const auto& [k, t] : rec.bottleneck_time) add(g.bottleneck_time, k, t);
      add(g.transfers, rec.main_bottleneck(), int64_t{1});
      for (const FlowUse& u : cf->flows.flows[static_cast<size_t>(f)].route) add(g.bytes, u.constraint, rec.bytes * u.coefficient);
    }
    return cf;
  }

  // Renumbers the flows' constraints 0.. (in the order of the executor's ids:
  // the solver breaks ties by id) and gives them their capacities; returns
  // local -> executor id.
  std::vector<ConstraintId> localise(IsolatedFlows& in) const {
    std::vector<ConstraintId> cons;
    for (const FlowSpec& f : in.flows)
      for (const FlowUse& u : f.route) cons.push_back(u.constraint);
    std::sort(cons.begin(), cons.end());
    cons.erase(std::unique(cons.begin(), cons.end()), cons.end());
    in.capacity.clear();
    for (const ConstraintId k : cons) in.capacity.push_back(sys_.capacity(k));
    for (FlowSpec& f : in.flows)
      for (FlowUse& u : f.route)
        u.constraint = static_cast<ConstraintId>(std::lower_bound(cons.begin(), cons.end(), u.constraint) - cons.begin());
    return cons;
  }

  void closed_group(int ci) {
    CollInst& c = insts_[ci];
    const ClosedForm& cf = *c.closed;
    const ClosedForm::Group& g = cf.groups[c.next_group++];
    auto stat = [&](int k) -> BottleneckStat& { return stat_of(coll_bn_, k < 0 ? k : cf.cons[static_cast<size_t>(k)]); };
    for (const auto& [k, t] : g.bottleneck_time) stat(k).time += t;
    for (const auto& [k, n] : g.transfers) stat(k).transfers += n;
    for (const auto& [k, b] : g.bytes) flows_.add_bytes(cf.cons[static_cast<size_t>(k)], b);
    if (c.next_group == cf.groups.size()) release_closed(ci);
    else c.closed_ev = engine_.at(c.t0 + cf.groups[c.next_group].end, &Engine::call<&Executor::closed_group, Executor>, this,
                                  static_cast<uint64_t>(ci));
    // As coll_flow_done would, flow by flow; members finish after the
    // counting, so a flow they start finds the group replayed.
    boost::container::small_vector<int, 16> done;
    for (const int f : g.flows)
      for (const int m : {cf.ends[static_cast<size_t>(f)].first, cf.ends[static_cast<size_t>(f)].second})
        if (--c.outstanding[static_cast<size_t>(m)] == 0) done.push_back(m);
    for (const int m : done) member_done(ci, m);
  }

  void release_closed(int ci) {
    CollInst& c = insts_[ci];
    for (const ConstraintId k : c.closed->cons) closed_owner_[static_cast<size_t>(k)] = -1;
    for (const int r : c.members) {
      auto& list = ranks_[r].closed;
      list.erase(std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == ci; }));
    }
    c.closed = nullptr;
  }

  // The closed form of instance ci hands its unfinished flows back to the
  // flow model, as they are just before now.
  void hand_back(int ci) {
    CollInst& c = insts_[ci];
    const ClosedForm& cf = *c.closed;
    ++handed_back_;
    engine_.cancel(c.closed_ev);
    const size_t first = c.next_group;
    release_closed(ci);
    const std::vector<FlowState> states = state_before(cf.flows, engine_.now() - c.t0);
    std::vector<int> left;
    for (size_t g = first; g < cf.groups.size(); ++g) left.insert(left.end(), cf.groups[g].flows.begin(), cf.groups[g].flows.end());
    std::sort(left.begin(), left.end());  // the order launch() started them
    auto global = [&](ConstraintId k) { return k < 0 ? k : cf.cons[static_cast<size_t>(k)]; };
    for (const int f : left) {
      FlowState st = states[static_cast<size_t>(f)];
      assert(st.running);
      st.record.start += c.t0;
      st.record.first_byte += c.t0;
      st.last_update += c.t0;
      st.bottleneck = global(st.bottleneck);
      for (auto& bt : st.record.bottleneck_time) bt.first = global(bt.first);
      FlowSpec spec = cf.flows.flows[static_cast<size_t>(f)];
      for (FlowUse& u : spec.route) {
        u.constraint = global(u.constraint);
        flows_.add_bytes(u.constraint, (spec.bytes - st.remaining) * u.coefficient);  // moved before last_update
      }
      start_coll_flow(ci, cf.ends[static_cast<size_t>(f)].first, cf.ends[static_cast<size_t>(f)].second, std::move(spec),
                      cf.base[static_cast<size_t>(f)], &st);
    }
  }

  // Before a flow starts over `route`: closed forms replaying over it hand back.
  void hand_back_route(const boost::container::small_vector<FlowUse, 6>& route) {
    if (closed_forms_.empty()) return;
    for (const FlowUse& u : route)
      if (const int ci = closed_owner_[static_cast<size_t>(u.constraint)]; ci >= 0) hand_back(ci);
  }

  // The measured table's per-flow rate and latency for a collective inside
  // one host at a measured channel count (ModelParams::nccl_tables).
  const CollInst::Tabled& tabled(CollInst& c, hw::RouteKind kind, bool via_host) {
    // Tables are measured inside one host: a flow between hosts keeps the
    // channel model (and must not decide for the collective's other flows).
    static const CollInst::Tabled kNone{};
    if (kind == hw::RouteKind::Network || kind == hw::RouteKind::NetworkViaHost) return kNone;
    CollInst::Tabled& t = c.tabled[via_host ? 1 : 0];
    if (t.looked) return t;
    t.looked = true;
    const Op& op = *c.op;
    const int U = static_cast<int>(c.members.size());
    if (p_.nccl.nccl_tables.empty() || U < 2) return t;
    // The schedule's channel count, or NCCL's choice (none given, or the model's default).
    const int channels = op.channels > 0 && op.channels != p_.nccl.nccl_channels ? op.channels : 0;
    using TC = TableColl;
    TC coll;
    switch (op.coll) {
      case CollKind::AllToAll: coll = op.algo == CollAlgo::Pairwise ? TC::AllToAllPairwise : TC::AllToAll; break;
      case CollKind::AllGather: coll = TC::AllGather; break;
      case CollKind::ReduceScatter: coll = TC::ReduceScatter; break;
      case CollKind::AllReduce: coll = TC::AllReduce; break;
      default: return t;  // send / recv
    }
    const NcclTable* tab = p_.nccl.nccl_table_for(coll, U, via_host, channels);
    if (!tab) return t;
    const double lat = tab->points.front().second, time = tab->time_at(c.wire);
    // ncclAlltoAll: U-1 flows of wire/U each per rank, together `time`.
    // Pairwise: one exchange of wire/U per round, a launch each. Ring: `steps`
    // exchanges of wire/U, the latency before the first.
    const int phases = coll == TC::AllToAllPairwise ? static_cast<int>(c.partner.size()) : c.steps > 0 ? c.steps : 1;
    const double transfer = coll == TC::AllToAllPairwise ? (time - lat) / phases : (time - lat) / phases;
    // The table's latency is what a small collective takes; a larger one
    // moves its bytes during that time too. Where the links alone need
    // longer for a phase than the table leaves it, the difference comes off
    // the latency (down to none), so that alone the collective takes the
    // table's time, and beside other traffic longer.
    const double overlap = phases * std::max(0.0, phase_link_time(c, coll) - transfer);
    const double lat_eff = std::max(0.0, lat - overlap);
    t.latency = Time::from_s(coll == TC::AllToAllPairwise ? lat_eff / phases : lat_eff);
    t.rate = c.wire / U / std::max(transfer, 1e-9);
    return t;
  }

  // How long one phase of the collective (the all-to-all; a pairwise round;
  // a ring step) takes alone on its links at their capacities: no protocol
  // cap, no latency. Memoised per members, kind and size.
  double phase_link_time(const CollInst& c, TableColl coll) {
    using TC = TableColl;
    auto& key = link_key_;  // reused: no allocation per collective
    std::get<0>(key).assign(c.members.begin(), c.members.end());
    std::get<1>(key) = static_cast<int>(coll);
    std::get<2>(key) = c.wire;
    if (auto it = link_times_.find(key); it != link_times_.end()) return it->second;
    const int U = static_cast<int>(c.members.size());
    IsolatedFlows in;
    auto add = [&](int from, int to, double weight) {
      FlowSpec f;
      f.route = pair_route(c.members[from], c.members[to], false).uses;
      f.bytes = c.wire / U;
      f.weight = weight;
      in.flows.push_back(std::move(f));
    };
    if (coll == TC::AllToAll) {
      for_each_a2a_flow(U, [&](int i, int j) { add(i, j, 1.0 / std::sqrt(static_cast<double>(U - 1))); });
    } else if (coll == TC::AllToAllPairwise) {
      for (int m = 0; m < U; ++m)
        if (const int p = c.partner.front()[m]; p >= 0) add(m, p, 1.0);
    } else {
      for (int i = 0; i < U; ++i) add(i, (i + 1) % U, 1.0);
    }
    (void)localise(in);
    double longest = 0;
    for (const FlowRecord& r : run_isolated(in).records) longest = std::max(longest, r.end.s());
    link_times_.emplace(key, longest);
    return longest;
  }

  void coll_flow_done(int ci, int from, int to, const FlowRecord& rec) {
    account(coll_bn_, rec);
    CollInst& c = insts_[ci];
    // Swap-remove the flow from its rank's list (a rank may hold thousands).
    auto& cf = ranks_[c.members[from]].coll_flows;
    const int slot = coll_flow_slot_[static_cast<size_t>(rec.id)];
    assert(slot >= 0 && cf[static_cast<size_t>(slot)].flow == rec.id);
    cf[static_cast<size_t>(slot)] = cf.back();
    coll_flow_slot_[static_cast<size_t>(cf[static_cast<size_t>(slot)].flow)] = slot;
    cf.pop_back();
    coll_flow_slot_[static_cast<size_t>(rec.id)] = -1;
    const Op& op = *c.op;
    if (op.coll == CollKind::AllToAll && op.algo == CollAlgo::Pairwise) {
      for (int m : {from, to})
        if (--c.round_left[m] == 0) {
          c.in_round[m] = 0;
          ++c.round[m];
        }
      try_round(ci, from);
      try_round(ci, to);
      return;
    }
    if (c.steps > 0) {  // ring
      if (--c.step_left == 0) {
        if (++c.step < c.steps) ring_step(ci);
        else
          for (size_t m = 0; m < c.members.size(); ++m) member_done(ci, static_cast<int>(m));
      }
      return;
    }
    for (int m : {from, to})
      if (--c.outstanding[m] == 0) member_done(ci, m);
  }

  void try_round(int ci, int m) {
    CollInst& c = insts_[ci];
    if (c.member_done[m] || c.in_round[m]) return;
    const int rounds = static_cast<int>(c.partner.size());
    while (c.round[m] < rounds && c.partner[c.round[m]][m] < 0) ++c.round[m];  // a bye
    if (c.round[m] >= rounds) {
      member_done(ci, m);
      return;
    }
    const int p = c.partner[c.round[m]][m];
    if (c.in_round[p] || c.member_done[p] || c.round[p] != c.round[m]) return;  // the partner is not there yet
    const int U = static_cast<int>(c.members.size());
    c.in_round[m] = c.in_round[p] = 1;
    c.round_left[m] = c.round_left[p] = 2;
    coll_flow(ci, m, p, c.wire / U, 1);
    coll_flow(ci, p, m, c.wire / U, 1);
  }

  void ring_step(int ci) {
    CollInst& c = insts_[ci];
    const int U = static_cast<int>(c.members.size());
    c.step_left = U;
    const Time lat = c.step == 0 ? p_.nccl.nccl_latency : p_.nccl.nccl_step_latency;
    for (int i = 0; i < U; ++i) coll_flow(ci, i, (i + 1) % U, c.wire / U, 1, lat);
  }

  void member_done(int ci, int m) {
    CollInst& c = insts_[ci];
    if (c.member_done[m]) return;
    c.member_done[m] = 1;
    const int gid = c.gops[m];
    const int rank = c.members[m];
    RankState& R = ranks_[rank];
    R.comm_channels -= c.channels;
    if (c.nvlink) {
      R.nvlink_quiet_since = engine_.now();
      R.nvlink_used = true;
      --R.nvlink_running;  // awake still: the update below sees it
    }
    R.last_coll_end = engine_.now();
    if (++c.finished == static_cast<int>(c.members.size())) {  // no flow of it is left
      inst_index_.erase(c.key);
      free_insts_.emplace_back(ci, engine_.events_processed());
    }
    complete(rank, gid);
    update_gpu(rank);
    if (c.group >= 0) {
      ++R.group_done[c.group];
      auto& parked = R.parked[c.group];
      if (!parked.empty() && coll_of(rank, parked.front()).second == R.group_done[c.group]) {
        const int next = parked.front();
        parked.pop_front();
        auto& [inst, seq] = coll_of(rank, next);
        inst = instance(std::make_tuple(c.group, 0, seq), c.group, seq, s_.groups[c.group].ranks);
        arrive(rank, next);
      }
    }
  }

  // ---------------------------------------------------------------- accounting
  void account(std::vector<BottleneckStat>& stats, const FlowRecord& rec) {
    for (const auto& [c, t] : rec.bottleneck_time) stat_of(stats, c).time += t;
    ++stat_of(stats, rec.main_bottleneck()).transfers;
  }
  // A constraint's resource entry; kOwnBound: the last, "the transfer's own
  // cap" (also a copy engine's limit in both directions at once: bidir_).
  BottleneckStat& stat_of(std::vector<BottleneckStat>& stats, ConstraintId c) const {
    const int res = c < 0 ? -1 : res_of_cons_[static_cast<size_t>(c)];
    return stats[res < 0 ? stats.size() - 1 : static_cast<size_t>(res)];
  }

  // ---------------------------------------------------------------- deadlock
  std::string stream_head(int r, int s) const {
    const RankState& R = ranks_[r];
    const StreamState& st = R.streams[s];
    if (st.done >= st.enqueued) return "";
    const int index = R.queues->stream_ops[static_cast<size_t>(s)][static_cast<size_t>(st.done)];
    const uint8_t f = flags_[static_cast<size_t>(R.base + index)];
    const Op& op = R.ops[index];
    std::string what = fmt::format("op {} {}{} ({})", index, to_string(op.kind), op.label.empty() ? "" : " " + op.label, where(r, index));
    if (op.kind == OpKind::Collective) {
      const auto [inst, seq] = R.coll[static_cast<size_t>(R.queues->coll_ord[static_cast<size_t>(index)])];
      if (!(f & kDispatched)) return what + ": not dispatched (queued behind another op)";
      if (!(f & kArrived)) return what + fmt::format(": waits for call #{} on group '{}' to finish first", seq - 1, s_.groups[op.group].name);
      const CollInst& c = insts_[inst];
      std::vector<int> missing;
      for (size_t m = 0; m < c.members.size(); ++m)
        if (c.gops[m] < 0) missing.push_back(c.members[m]);
      if (!missing.empty())
        return what + fmt::format(": {} waits for rank{} {} to reach it", c.group >= 0 ? fmt::format("call #{} on group '{}'", c.seq, s_.groups[c.group].name) : "send/recv",
                                  missing.size() > 1 ? "s" : "", fmt::join(missing, ", "));
      return what + ": running";
    }
    const QueueEntry* e = nullptr;  // still queued: its entry has the dependency
    for (const HwQueue& q : R.hwq)
      for (size_t i = q.head; i < q.ops->size(); ++i)
        if ((*q.ops)[i].index == index) e = &(*q.ops)[i];
    if (const int ds = e ? e->dep_stream : -1, dp = e ? e->dep_pos : -1; ds >= 0 && R.streams[ds].done <= dp)
      return what + fmt::format(": waits for stream {} to finish its op {}", s_.streams[ds].name,
                                R.queues->stream_ops[static_cast<size_t>(ds)][static_cast<size_t>(dp)]);
    return what + ((f & kDispatched) ? ": running" : ": waits in its hardware queue behind another stream's op");
  }

  void check_finished() {
    bool ok = true;
    for (const auto& R : ranks_) {
      if (R.state != RankState::Done) ok = false;
      for (const auto& st : R.streams)
        if (st.done < st.enqueued) ok = false;
    }
    if (ok) return;
    std::string msg = fmt::format("deadlock at {}: no rank can make progress", format_time(engine_.now()));
    for (int r = 0; r < s_.ranks(); ++r) {
      const RankState& R = ranks_[r];
      if (R.state == RankState::Done) msg += fmt::format("\n  rank {} ({}): host finished its program", r, R.node->name);
      else
        msg += fmt::format("\n  rank {} ({}): host blocked in {} at op {} ({})", r, R.node->name, waiting_in(R), R.pc, where(r, R.pc));
      for (size_t s = 0; s < R.streams.size(); ++s) {
        const std::string h = stream_head(r, static_cast<int>(s));
        if (!h.empty()) msg += fmt::format("\n    stream {}: {}", s_.streams[s].name, h);
      }
    }
    throw SimulationError(msg);
  }

  const Schedule& s_;
  const hw::Topology& topo_;
  ModelParams p_;
  // A hand-off between engines is calibrated: streams keep what they wait on (EngineDep).
  bool handoffs_ = p_.handoff.any(p_.overheads.event_gpu_time_copy);
  ExecOptions o_;
  std::vector<int> res_of_cons_;
  std::vector<BottleneckStat> copy_bn_, coll_bn_;
  std::vector<std::vector<std::pair<Time, Bytes>>> vram_;
  std::vector<double> usage_;
  std::vector<LinkSample> samples_;
  std::map<FlowId, std::vector<hw::ResourceUse>> flow_uses_;
  Engine engine_;
  MaxMinSystem sys_;
  FlowModel flows_;
  std::vector<ConstraintId> cons_;
  hw::RouteOptions opts_;          // collectives (NCCL_P2P_DISABLE as the schedule says)
  hw::RouteOptions dma_;           // copies
  std::vector<RankState> ranks_;
  std::vector<std::vector<OpRecord>> records_;  // with ExecOptions::keep_records
  RunSpans spans_;                               // without
  OpRecord scratch_;                             // what records get without them
  struct DmaLimit {
    ConstraintId constraint;
    double nominal;  // the bridge's from-host (to-host) limit (topology)
    int gpus;        // ranks with a copy of its direction through it now
    const std::vector<Bandwidth>* table;  // ModelParams::host_h2d_aggregate or host_d2h_aggregate
  };
  std::vector<DmaLimit> dma_limits_;  // per host bridge and direction with an aggregate table
  // Per rank, per direction (H2D, D2H): the engine's limit that its pinned
  // and pageable copies share, lowered to copy_bidir_factor_for while the
  // other direction runs a pinned copy (bidir_active_); empty = no such
  // effect (factors 1, or no calibrated engine rate).
  std::vector<std::array<ConstraintId, 2>> bidir_;
  std::vector<std::array<int, 2>> bidir_active_;
  std::vector<int> dma_limit_of_;     // per constraint: its bridge's entry in dma_limits_, or -1

  // A deque: instances are created while a CollInst& is held (parked collectives).
  BlockVector<CollInst> insts_;
  std::deque<std::pair<int, uint64_t>> free_insts_;  // (finished instance, the event that finished it)
  struct InstKeyHash {
    size_t operator()(const std::tuple<int, int, int>& k) const {
      uint64_t h = static_cast<uint32_t>(std::get<0>(k));
      h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(std::get<1>(k));
      h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(std::get<2>(k));
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<std::tuple<int, int, int>, int, InstKeyHash> inst_index_;
  std::map<int, Bytes> pinned_;
  std::vector<size_t> order_;       // scratch for update_gpu
  std::vector<int> coll_flow_slot_;  // flow id -> index in its rank's coll_flows, or -1
  // Closed forms by what determines them: the group, its bytes, channels and
  // the comm slowdown of each member's flows (routes and capacities are fixed).
  struct ClosedKey {
    int group;
    double wire;
    int channels;
    std::vector<double> slow;
    bool operator<(const ClosedKey& o) const { return std::tie(group, wire, channels, slow) < std::tie(o.group, o.wire, o.channels, o.slow); }
  };
  struct ClosedEntry {
    int seen = 0;  // launches before it was built
    std::unique_ptr<ClosedForm> form;
  };
  std::map<ClosedKey, ClosedEntry> closed_forms_;
  ClosedKey closed_key_;  // scratch for try_closed_form
  std::map<std::tuple<std::vector<int>, int, double>, double> link_times_;  // see phase_link_time
  std::tuple<std::vector<int>, int, double> link_key_;                      // its scratch key
  std::vector<int> closed_owner_;   // per constraint: the instance replaying a closed form over it, or -1
  int64_t closed_count_ = 0, handed_back_ = 0;  // ExecResult::closed_form, handed_back
  std::vector<FlowRoute> coll_routes_, dma_routes_, host_routes_;  // see pair_route, host_route
  FlowRoute scratch_route_;
  struct ProgramInfo {
    std::vector<double> work;       // solo seconds per op (kernels)
    ProgramQueues q;
    bool p2p = false;               // has peer-to-peer copies
  };
  // The queues' entries as the host will issue them (what enqueue() did op
  // by op when it wrote them per rank).
  void build_queues(const std::vector<Op>& ops, ProgramQueues& q) const {
    const size_t nq = static_cast<size_t>(s_.runtime.device_max_connections);
    q.queues.assign(nq, {});
    q.stream_ops.assign(s_.streams.size(), {});
    q.coll_ord.assign(ops.size(), -1);
    std::vector<std::pair<int, int>> event_pos(s_.events.size(), {-1, -1});
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == OpKind::Collective) q.coll_ord[i] = q.colls++;
      if (!is_gpu_op(op)) continue;
      auto& mine = q.stream_ops[static_cast<size_t>(op.stream)];
      QueueEntry e{static_cast<int32_t>(i), static_cast<int16_t>(op.stream), -1, static_cast<int32_t>(mine.size()), -1};
      if (op.kind == OpKind::StreamWaitEvent) {
        const auto [es, ep] = event_pos[static_cast<size_t>(op.event)];
        e.dep_stream = static_cast<int16_t>(es);
        e.dep_pos = ep;
      } else if (op.kind == OpKind::StreamWaitStream) {
        if (const int n = static_cast<int>(q.stream_ops[static_cast<size_t>(op.stream2)].size()); n > 0) {
          e.dep_stream = static_cast<int16_t>(op.stream2);
          e.dep_pos = n - 1;
        }
      }
      if (op.kind == OpKind::EventRecord) event_pos[static_cast<size_t>(op.event)] = {op.stream, e.pos};
      mine.push_back(static_cast<int32_t>(i));
      q.queues[static_cast<size_t>(op.stream) % nq].push_back(e);
    }
    for (size_t i = 0; i < nq; ++i)
      if (!q.queues[i].empty()) q.used.push_back(i);
  }
  std::map<std::pair<const std::vector<Op>*, const hw::NodeSpec*>, ProgramInfo> programs_;
  // The first GPU seen with the same rates (peak_tflops, hbm_bandwidth: all
  // kernel_time reads) as `n`: eight GPUs of a DGX share one ProgramInfo.
  std::vector<const hw::NodeSpec*> compute_kinds_;
  const hw::NodeSpec* compute_twin(const hw::NodeSpec* n) {
    for (const hw::NodeSpec* k : compute_kinds_) {
      const auto &a = k->gpu.hbm_bandwidth, &b = n->gpu.hbm_bandwidth;
      if (k->gpu.peak_tflops == n->gpu.peak_tflops && a.has_value() == b.has_value() && (!a || a->bytes_per_s == b->bytes_per_s)) return k;
    }
    compute_kinds_.push_back(n);
    return n;
  }
  std::vector<uint8_t> flags_;      // per op id: OpFlag bits
};

}  // namespace

ExecResult execute(const Schedule& s, const hw::Topology& topo, const ModelParams& params, const ExecOptions& options) {
  Executor ex(s, topo, params, options);
  return ex.run();
}

ExecResult execute_after_runs(const Schedule& s, const hw::Topology& topo, const ModelParams& params, int prior_runs,
                              const ExecOptions& options) {
  assert(prior_runs >= 0);
  ExecOptions o = options;
  for (int i = 0; i < prior_runs; ++i) {
    ExecOptions before = o;
    before.keep_records = false;
    before.link_samples = false;
    o.initial_load = execute(s, topo, params, before).final_load;
  }
  return execute(s, topo, params, o);
}

std::string format_exec_report(const Schedule& s, const ExecResult& r) {
  assert(r.ops.size() == static_cast<size_t>(s.ranks()) && "a run without ExecOptions::keep_records has no per-op records");
  std::string out = fmt::format("schedule {}: {} ranks, makespan {}\n", s.name, s.ranks(), format_time(r.makespan));
  for (size_t rank = 0; rank < r.ops.size(); ++rank) {
    const RankSummary& sum = r.ranks[rank];
    out += fmt::format("\nrank {} on {}: ends {}, peak VRAM {}\n", rank, sum.gpu, format_time(sum.end),
                       format_bytes(static_cast<double>(sum.peak_vram)));
    out += fmt::format("  {:>4} {:<18} {:<22} {:<10} {:>12} {:>12} {:>12} {:>12}\n", "#", "op", "label", "stream", "issued", "start",
                       "end", "duration");
    for (size_t index = 0; index < r.ops[rank].size(); ++index) {
      const OpRecord& rec = r.ops[rank][index];
      const Op& op = *rec.op;
      out += fmt::format("  {:>4} {:<18} {:<22} {:<10} {:>12} {:>12} {:>12} {:>12}\n", index, to_string(op.kind),
                         op.label.substr(0, 22), op.stream >= 0 ? s.streams[op.stream].name : "-", format_time(rec.issue),
                         format_time(rec.start), format_time(rec.end), format_time(rec.end - rec.start));
    }
  }
  return out;
}

}  // namespace osim
