// The coordinator: builds the run's components (exec_context.hpp) over the
// schedule and topology, starts the host threads, runs the engine, checks
// that every rank finished, and gathers the result.
#include "gpu/executor.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "core/slots.hpp"
#include "gpu/closed_form.hpp"
#include "gpu/collectives.hpp"
#include "gpu/compute.hpp"
#include "gpu/copies.hpp"
#include "gpu/exec_context.hpp"
#include "gpu/fabric_use.hpp"
#include "gpu/host.hpp"
#include "gpu/memory.hpp"
#include "gpu/programs.hpp"
#include "gpu/streams.hpp"

namespace osim {

namespace {

using namespace exec;

// Owns the components and wires them: each gets the ports it calls
// (ports.hpp), built bottom up, so that a component is built before those
// that call it; the ports that lead up the stack are the coordinator's own,
// forwarded to the component that offers them.
class Executor final : public OpCompletion, public HostWake, public ClockWatch, public CollFlows {
 public:
  Executor(const Schedule& s, const hw::Topology& t, const ModelParams& p, const ExecOptions& o)
      : x_(s, t, p, o),
        fabric_(x_),
        compute_(x_, *this, *this),
        closed_(x_, fabric_, *this, compute_),
        copies_(x_, fabric_, *this, compute_, closed_),
        collectives_(x_, fabric_, copies_, *this, compute_, compute_, closed_),
        memory_(x_, fabric_),
        streams_(x_, compute_, copies_, collectives_, memory_, *this),
        host_(x_, streams_, memory_, collectives_) {
    check_fits();
    assert((o.record_ranks.empty() || o.record_ranks.size() == static_cast<size_t>(s.ranks())) && "record_ranks: one flag per rank");
    x_.spans_on = !o.keep_records || !o.record_ranks.empty();
    if (x_.spans_on) x_.spans = RunSpans::for_schedule(s, o.fold_spans_at);
    assert((o.initial_load.empty() || o.initial_load.size() == static_cast<size_t>(s.ranks())) && "initial_load: one state per rank");
    x_.ranks.resize(static_cast<size_t>(s.ranks()));
    for (int r = 0; r < s.ranks(); ++r) place_rank(r);
    if (o.symmetric_ranks && !o.link_samples) find_mirrors();  // a trace's link samples follow the order flows change in
    keep_records();
    // P2P copies' routes, found (or refused) up front once every rank has its GPU.
    for (int r = 0; r < s.ranks(); ++r)
      if (p2p_ranks_[static_cast<size_t>(r)])
        for (const Op& op : *s.programs[static_cast<size_t>(r)].ops)
          if (op.kind == OpKind::Memcpy && op.copy == CopyKind::P2P)
            (void)fabric_.route_between(r, s.programs[static_cast<size_t>(r)].peer_of(op), true);
  }

  ExecResult run() {
    closed_.init();
    host_.start();
    x_.engine.run();
    check_finished();
    ExecResult out;
    if (x_.o.keep_records) {
      mirror_records();
      out.ops = std::move(x_.records);
    }
    if (x_.spans_on) {
      for (int r = 0; r < x_.s.ranks(); ++r)
        if (x_.mirrors.is_mirror(r)) x_.spans.mirror(r, x_.mirrors.rep_of(r));
      out.spans = std::move(x_.spans);
    }
    for (int r = 0; r < x_.s.ranks(); ++r) {
      const int q = x_.mirrors.rep_of(r);  // a mirror's figures are its representative's
      RankSummary sum;
      sum.gpu = x_.ranks[static_cast<size_t>(r)].node->name;
      sum.end = std::max(host_.end(q), x_.ranks[static_cast<size_t>(q)].last_end);
      sum.peak_vram = memory_.peak(q);
      sum.peak_parts = memory_.peak_parts(q);
      sum.peak_vram_held = memory_.peak_held(q);
      sum.vram_capacity = memory_.capacity(q);
      sum.stage_peaks = memory_.stage_peaks(q);
      sum.handoffs = streams_.handoffs(q);
      sum.handoff_time = streams_.handoff_time(q);
      const std::array<Time, 4> slowed = compute_.slowed(q);
      sum.slowed_by_collectives = slowed[0];
      sum.slowed_by_copies = slowed[1];
      sum.slowed_by_clock = slowed[2];
      sum.slowed_by_nvlink = slowed[3];
      out.makespan = std::max(out.makespan, sum.end);
      out.ranks.push_back(sum);
      out.mirrored += q != r;
    }
    // The duty averages carried from their last update to the makespan (the
    // GPU idle from its last kernel on).
    for (int r = 0; r < x_.s.ranks(); ++r) out.final_load.push_back(compute_.load_at(x_.mirrors.rep_of(r), out.makespan));
    if (x_.o.record_measured_clock)
      for (int r = 0; r < x_.s.ranks(); ++r) out.measured_clock.push_back(compute_.measured_clock(r));
    out.vram = memory_.take_timeline();
    for (int r = 0; r < x_.s.ranks() && x_.mirrors.on(); ++r)
      if (const int q = x_.mirrors.rep_of(r); q != r && static_cast<size_t>(q) < out.vram.size())
        out.vram[static_cast<size_t>(r)] = out.vram[static_cast<size_t>(q)];
    out.copy_binding = fabric_.binding(Transfer::Copy);
    out.collective_binding = fabric_.binding(Transfer::Collective);
    out.copy_bottlenecks = std::move(fabric_.copy_bottlenecks);
    out.collective_bottlenecks = std::move(fabric_.collective_bottlenecks);
    out.link_samples = fabric_.take_samples();
    out.most_ops_held = x_.most_ops_held;
    out.closed_form = closed_.replayed();
    out.handed_back = closed_.handed_back();
    out.reserved = closed_.reserved();
    // Whole bytes: what a link carried, summed as the flows moved, is exact
    // only to the last digit, and that digit follows the order flows ended
    // in at one instant (which mirrored ranks change).
    out.resource_bytes = fabric_.resource_bytes();
    for (double& b : out.resource_bytes) b = std::round(b);
    return out;
  }

 private:
  // The ports up the stack.
  void op_started(int r, int id, const Op& op) override { streams_.mark_start(r, id, op); }
  void op_done(int r, int id) override { streams_.complete(r, id); }
  void wake(int r) override { host_.wake(r); }
  void clock_changed(int r) override { collectives_.clock_changed(r); }
  CollInst& inst(int ci) override { return collectives_.inst(ci); }
  bool via_host(const CollInst& c) override { return collectives_.via_host(c); }
  FlowSpec flow_spec(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency, double& base_out) override {
    return collectives_.flow_spec(ci, from, to, bytes, peers_at_once, protocol_latency, base_out);
  }
  void start_flow(int ci, int from, int to, FlowSpec f, double base, const FlowState* st) override {
    collectives_.start_flow(ci, from, to, std::move(f), base, st);
  }
  void member_done(int ci, int m) override { collectives_.member_done(ci, m); }
  void add_closed(int r, int ci, int m) override { collectives_.add_closed(r, ci, m); }
  void remove_closed(int r, int ci) override { collectives_.remove_closed(r, ci); }

  // The schedule fits the topology and the executor's limits.
  void check_fits() const {
    const Schedule& s = x_.s;
    if (s.ranks() > static_cast<int>(x_.topo.gpus().size()) && s.gpus.empty())
      throw InputError(SourceLocation{s.file, 0, 0},
                       fmt::format("the schedule has {} ranks but topology '{}' has {} GPUs", s.ranks(), x_.topo.name(), x_.topo.gpus().size()));
    if (s.streams.size() > static_cast<size_t>(INT16_MAX))
      throw InputError(
          SourceLocation{s.file, 0, 0},
          fmt::format("the schedule declares {} streams; the simulator takes at most {}: share streams between ops", s.streams.size(), INT16_MAX));
  }

  // Rank r's GPU and program, its records, its components' state.
  void place_rank(int r) {
    const Schedule& s = x_.s;
    RankInfo& R = x_.ranks[static_cast<size_t>(r)];
    if (!x_.o.initial_load.empty()) compute_.set_load(r, x_.o.initial_load[static_cast<size_t>(r)]);
    if (!s.gpus.empty()) {
      R.gpu = x_.topo.find(s.gpus[static_cast<size_t>(r)]);
      if (R.gpu < 0 || x_.topo.node(R.gpu).kind != hw::NodeKind::Gpu)
        throw InputError(SourceLocation{s.file, 0, 0},
                         fmt::format("gpus[{}] = '{}' is not a GPU of topology '{}'", r, s.gpus[static_cast<size_t>(r)], x_.topo.name()));
    } else {
      R.gpu = x_.topo.gpus()[static_cast<size_t>(r)];
    }
    R.node = &x_.topo.node(R.gpu);
    R.cpu = x_.topo.nearest_cpu(R.gpu);
    R.sms = R.node->gpu.sms.value_or(1);
    ProgramInfo& info = programs_.of(s, r, *R.node, x_.p);
    R.program = &info;
    assert((!info.generated_as_run() || !x_.o.keep_records) && "a program generated as it runs keeps no records");
    if (info.end() > static_cast<int64_t>(INT32_MAX)) throw InputError(SourceLocation{s.file, 0, 0}, "a program holds more than 2^31 ops: split it");
    R.flags.grow_to(info.end());
    streams_.add_rank(r, info.q);
    memory_.add_rank(r);
    collectives_.add_rank(r);
    p2p_ranks_.push_back(info.p2p);
  }

  // The ranks whose records are kept (ExecOptions::record_ranks, and the
  // representatives of those that mirror one: their records are copied),
  // each with a record per op of its program.
  void keep_records() {
    const Schedule& s = x_.s;
    const auto& chosen = x_.o.record_ranks;
    x_.recorded.assign(static_cast<size_t>(s.ranks()), 0);
    x_.records.resize(static_cast<size_t>(s.ranks()));
    if (!x_.o.keep_records) return;
    for (int r = 0; r < s.ranks(); ++r)
      if (chosen.empty() || chosen[static_cast<size_t>(r)]) {
        x_.recorded[static_cast<size_t>(r)] = 1;
        x_.recorded[static_cast<size_t>(x_.mirrors.rep_of(r))] = 1;
      }
    for (int r = 0; r < s.ranks(); ++r) {
      if (!x_.keeps(r)) continue;
      auto& recs = x_.records[static_cast<size_t>(r)];
      const auto& ops = *s.programs[static_cast<size_t>(r)].ops;
      recs.reserve(ops.size());
      for (const Op& op : ops) {  // one pass over fresh memory
        OpRecord& rec = recs.emplace_back();
        rec.op = &op;
      }
    }
  }

  // Ranks that run one program on alike GPUs from the same load mirror the
  // first of them (ExecOptions::symmetric_ranks); none: every rank in full.
  void find_mirrors() {
    const int n = x_.s.ranks();
    const auto& load = x_.o.initial_load;
    auto alike = [&](int a, int b) {
      const RankInfo &A = x_.ranks[static_cast<size_t>(a)], &B = x_.ranks[static_cast<size_t>(b)];
      const hw::GpuParams &g = A.node->gpu, &h = B.node->gpu;
      const bool same_load = load.empty() || load[static_cast<size_t>(a)] == load[static_cast<size_t>(b)];
      return A.program == B.program && A.sms == B.sms && g.copy_engines == h.copy_engines && g.p2p == h.p2p &&
             g.memory.has_value() == h.memory.has_value() && (!g.memory || *g.memory == *h.memory) && same_load;
    };
    Mirrors& M = x_.mirrors;
    std::vector<int> rep(static_cast<size_t>(n));
    std::vector<std::vector<int>> of(static_cast<size_t>(n));
    bool any = false;
    for (int r = 0; r < n; ++r) {
      rep[static_cast<size_t>(r)] = r;
      for (const int q : x_.ranks[static_cast<size_t>(r)].program->ranks) {
        if (q >= r) break;
        if (rep[static_cast<size_t>(q)] == q && alike(q, r)) {
          rep[static_cast<size_t>(r)] = q;
          of[static_cast<size_t>(q)].push_back(r);
          any = true;
          break;
        }
      }
    }
    if (!any) return;
    M.rep = std::move(rep);
    M.of = std::move(of);
    M.pending.resize(static_cast<size_t>(n));
  }

  // A mirror's records are its representative's, but for where its own
  // copies were bound (its spans: RunSpans::mirror).
  void mirror_records() {
    for (int r = 0; r < x_.s.ranks() && x_.mirrors.on(); ++r) {
      const int q = x_.mirrors.rep_of(r);
      if (q == r || !x_.keeps(r)) continue;
      auto& to = x_.records[static_cast<size_t>(r)];
      const auto& from = x_.records[static_cast<size_t>(q)];
      for (size_t i = 0; i < to.size(); ++i) {
        const OpRecord own = to[i];
        to[i] = from[i];
        to[i].bottleneck = own.bottleneck;
        to[i].bottleneck_time = own.bottleneck_time;
      }
    }
  }

  void check_finished() const {
    for (const auto& pending : x_.mirrors.pending)
      if (!pending.empty()) throw AsymmetricRanks("a mirror's copy or collective did not end");
    bool ok = true;
    for (int r = 0; r < x_.s.ranks(); ++r) ok = ok && (x_.mirrors.is_mirror(r) || (host_.done(r) && streams_.drained(r)));
    if (ok) return;
    std::string msg = fmt::format("deadlock at {}: no rank can make progress", format_time(x_.engine.now()));
    for (int r = 0; r < x_.s.ranks(); ++r) {
      const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
      if (host_.done(r))
        msg += fmt::format("\n  rank {} ({}): host finished its program", r, R.node->name);
      else
        msg += fmt::format("\n  rank {} ({}): host blocked in {} at op {} ({})", r, R.node->name, host_.waiting_in(r), host_.pc(r),
                           x_.where(r, host_.pc(r)));
      for (size_t s = 0; s < x_.s.streams.size(); ++s) {
        const std::string h = streams_.head(r, static_cast<int>(s));
        if (!h.empty()) msg += fmt::format("\n    stream {}: {}", x_.s.streams[s].name, h);
      }
    }
    throw SimulationError(msg);
  }

  ExecContext x_;
  // In the order they are built (bottom up).
  FabricUse fabric_;
  Compute compute_;
  ClosedForms closed_;
  Copies copies_;  // its constraints after the topology's, as the solver's ids go
  Collectives collectives_;
  Memory memory_;
  Streams streams_;
  Host host_;
  Programs programs_;
  std::vector<bool> p2p_ranks_;  // ranks whose program holds a P2P copy
};

}  // namespace

namespace exec {

void ExecContext::mirrored_start(int r, int id) {
  mirrors.pending[static_cast<size_t>(r)].add(id, {Time::from_ps(-1), 1 + static_cast<int>(mirrors.of[static_cast<size_t>(r)].size())});
}

void ExecContext::mirrored_end(int r, int id) {
  auto& pending = mirrors.pending[static_cast<size_t>(mirrors.rep_of(r))];
  auto* it = pending.find(id);
  assert(it);
  auto& [at, left] = *it;
  if (at < Time::zero())
    at = engine.now();
  else if (at != engine.now())
    throw AsymmetricRanks("a mirror's op ended at another time than its representative's");
  if (--left == 0) pending.erase(id);
}

}  // namespace exec

ExecResult execute(const Schedule& s, const hw::Topology& topo, const ModelParams& params, const ExecOptions& options) {
  try {
    Executor ex(s, topo, params, options);
    return ex.run();
  } catch (const AsymmetricRanks&) {
    if (!options.symmetric_ranks) throw;
  }
  ExecOptions full = options;
  full.symmetric_ranks = false;
  Executor ex(s, topo, params, full);
  return ex.run();
}

ExecResult execute_after_runs(const Schedule& s, const hw::Topology& topo, const ModelParams& params, int prior_runs, const ExecOptions& options) {
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

std::string format_exec_report(const Schedule& s, const ExecResult& r, const std::vector<char>* ranks, const std::vector<std::string>* after,
                               const std::vector<size_t>* rows) {
  assert(r.ops.size() == static_cast<size_t>(s.ranks()) && "a run without ExecOptions::keep_records has no per-op records");
  std::string out = fmt::format("schedule {}: {} ranks, makespan {}\n", s.name, s.ranks(), format_time(r.makespan));
  for (size_t rank = 0; rank < r.ops.size(); ++rank) {
    if (ranks && !(*ranks)[rank]) continue;
    const RankSummary& sum = r.ranks[rank];
    out += fmt::format("\nrank {} on {}: ends {}, peak VRAM {}{}\n", rank, sum.gpu, format_time(sum.end),
                       format_bytes(static_cast<double>(sum.peak_vram)), sum.peak_vram > 0 ? " (" + format_vram_parts(sum.peak_parts) + ")" : "");
    out +=
        fmt::format("  {:>4} {:<18} {:<22} {:<10} {:>12} {:>12} {:>12} {:>12}\n", "#", "op", "label", "stream", "issued", "start", "end", "duration");
    const size_t n = r.ops[rank].size(), shown = rows && !rows->empty() ? std::min(n, (*rows)[rank]) : n;
    for (size_t index = 0; index < shown; ++index) {
      const OpRecord& rec = r.ops[rank][index];
      const Op& op = *rec.op;
      out += fmt::format("  {:>4} {:<18} {:<22} {:<10} {:>12} {:>12} {:>12} {:>12}\n", index, to_string(op.kind), op.label.substr(0, 22),
                         op.stream >= 0 ? s.streams[static_cast<size_t>(op.stream)].name : "-", format_time(rec.issue), format_time(rec.start),
                         format_time(rec.end), format_time(rec.end - rec.start));
    }
    if (shown < n) out += fmt::format("  (ops {}-{} of rank {} left out)\n", shown, n - 1, rank);
    if (after && !(*after)[rank].empty()) out += "  " + (*after)[rank] + "\n";
  }
  return out;
}

}  // namespace osim
