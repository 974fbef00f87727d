#include "gpu/collectives.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/isolated.hpp"
#include "gpu/closed_form.hpp"
#include "gpu/nccl_model.hpp"

namespace osim::exec {

Collectives::Collectives(ExecContext& x, Routes& routes, const CopyEngines& copies, OpCompletion& ops, SmShare& sm, NvlinkWake& nvlink,
                         ClosedForms& closed)
    : x_(x),
      routes_(routes),
      copies_(copies),
      ops_(ops),
      sm_(sm),
      nvlink_(nvlink),
      closed_(closed),
      ranks_(static_cast<size_t>(x.s.ranks())),
      group_open_(x.s.groups.size()) {
  if (x.s.runtime.nccl_nvls_enable) model().check_nvls(x.s.runtime.nccl_nvls_at);
}

Collectives::~Collectives() = default;

int Collectives::default_channels() const { return x_.p.nccl.nccl_model && model().nvlink() ? model().channels() : x_.p.nccl.nccl_channels; }

const NcclModel& Collectives::model() const {
  if (!model_) model_ = std::make_unique<NcclModel>(x_.topo, x_.s.runtime.nccl_nvls_enable);
  return *model_;
}

void Collectives::add_rank(int r) {
  Rank& K = ranks_[static_cast<size_t>(r)];
  K.group_seq.assign(x_.s.groups.size(), 0);
  K.group_done.assign(x_.s.groups.size(), 0);
  K.parked.resize(x_.s.groups.size());
}

std::pair<int32_t, int32_t>& Collectives::coll_of(int r, int id) {
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  Rank& K = ranks_[static_cast<size_t>(r)];
  const int32_t ord = R.program->q.coll_ord[id];
  assert(ord >= K.coll_first);
  const auto i = static_cast<size_t>(ord - K.coll_first);
  if (i >= K.coll.size()) K.coll.resize(i + 1, {-1, -1});  // at the end: references to the others stay valid
  return K.coll[i];
}

std::pair<int32_t, int32_t> Collectives::coll_at(int r, int id) const {
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  const Rank& K = ranks_[static_cast<size_t>(r)];
  const auto i = static_cast<size_t>(R.program->q.coll_ord[id] - K.coll_first);
  return i < K.coll.size() ? K.coll[i] : std::pair<int32_t, int32_t>{-1, -1};
}

void Collectives::coll_finished(int r, int id) {
  Rank& K = ranks_[static_cast<size_t>(r)];
  coll_of(r, id).first = kCollFinished;
  while (!K.coll.empty() && K.coll.front().first == kCollFinished) {
    K.coll.pop_front();
    ++K.coll_first;
  }
}

void Collectives::remove_closed(int r, int ci) {
  auto& list = ranks_[static_cast<size_t>(r)].closed;
  list.erase(std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == ci; }));
}

bool Collectives::via_host(const CollInst& c) { return through_host(routes_.pair_route(c.members[0], c.members[1], false).kind); }

const NcclTable* Collectives::framework_pairwise_table(const Op& op, std::span<const int> members) const {
  if (x_.s.runtime.framework == Framework::None || op.kind != OpKind::Collective || op.coll != CollKind::AllToAll || op.algo != CollAlgo::Pairwise ||
      members.size() < 2)
    return nullptr;
  const hw::RouteKind kind = routes_.pair_route(members[0], members[1], false).kind;
  if (kind == hw::RouteKind::Network || kind == hw::RouteKind::NetworkViaHost) return nullptr;  // measured inside one host
  return x_.p.nccl.nccl_table_for(TableColl::FrameworkAllToAllPairwise, static_cast<int>(members.size()), through_host(kind));
}

const NcclTable* Collectives::framework_pairwise_table(int r, const Op& op) const {
  if (op.kind != OpKind::Collective) return nullptr;
  return framework_pairwise_table(op, x_.s.groups[static_cast<size_t>(x_.group_of(r, op))].ranks);
}

void Collectives::arrive_or_park(int r, int id) {
  Rank& K = ranks_[static_cast<size_t>(r)];
  const Op& op = x_.op_of(r, id);
  auto& [inst, seq] = coll_of(r, id);
  if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
    const bool send = op.coll == CollKind::Send;
    const int peer = x_.peer_of(r, op);
    const int src = send ? r : peer, dst = send ? peer : r;
    P2pLink& l = link(src, dst);
    const int n = send ? l.sends++ : l.recvs++;
    const std::array<int, 2> pair{src, dst};
    inst = instance(l.open, -1, n, pair);
    arrive(r, id);
    return;
  }
  const int group = x_.group_of(r, op);
  seq = K.group_seq[static_cast<size_t>(group)]++;
  if (seq > K.group_done[static_cast<size_t>(group)]) {
    K.parked[static_cast<size_t>(group)].push_back(id);  // NCCL serialises collectives on a communicator
    return;
  }
  inst = instance(group_open_[static_cast<size_t>(group)], group, seq, x_.s.groups[static_cast<size_t>(group)].ranks);
  arrive(r, id);
}

Collectives::P2pLink& Collectives::link(int from, int peer) {
  auto& to = ranks_[static_cast<size_t>(from)].to;
  auto it = std::lower_bound(to.begin(), to.end(), peer, [](const P2pLink& l, int p) { return l.peer < p; });
  if (it == to.end() || it->peer != peer) {
    it = to.insert(it, P2pLink{});
    it->peer = peer;
  }
  return *it;
}

int Collectives::instance(IdWindow<int>& open, int group, int seq, std::span<const int> members) {
  if (const int* held = open.find(seq)) return *held;
  // A finished instance's slot is reused, its buffers kept, but only from
  // the next engine event on: callers up the stack of the event that
  // finished it may still hold it.
  int ci;
  if (!free_insts_.empty() && free_insts_.front().second < x_.engine.events_processed()) {
    ci = free_insts_.front().first;
    free_insts_.pop_front();
  } else {
    ci = static_cast<int>(insts_.size());
    insts_.emplace_back();
  }
  CollInst& c = insts_[static_cast<size_t>(ci)];
  c.op = nullptr;
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
  c.in_switch = false;
  open.add(seq, ci);
  return ci;
}

void Collectives::arrive(int r, int id) {
  const int ci = coll_of(r, id).first;
  CollInst& c = insts_[static_cast<size_t>(ci)];
  const size_t m = static_cast<size_t>(std::find(c.members.begin(), c.members.end(), r) - c.members.begin());
  assert(m < c.members.size());
  c.gops[m] = id;
  x_.flag(r, id) |= kArrived;
  const Op& op = x_.op_of(r, id);
  ops_.op_started(r, id, op);            // a collective starts when its rank reaches it
  sm_.add_channels(r, channels_of(op));  // the kernel holds its SMs while it waits for peers
  sm_.update(r);
  if (!c.op) c.op = &op;
  if (++c.arrived == static_cast<int>(c.members.size())) launch(ci);
}

void Collectives::mismatch(const CollInst& c) {
  std::string msg = c.group >= 0 ? fmt::format("collectives issued in different orders or sizes on group '{}': call #{} is",
                                               x_.s.groups[static_cast<size_t>(c.group)].name, c.seq)
                                 : fmt::format("send #{} and its matching recv differ:", c.seq);
  for (size_t m = 0; m < c.members.size(); ++m) {
    const int r = c.members[m], index = c.gops[m];
    const Op& op = x_.op_of(r, index);
    msg += fmt::format("\n  rank {}: {} {} ({} {}, {} channels) at {}", r, to_string(op.coll), op.label, format_bytes(static_cast<double>(op.bytes)),
                       to_string(op.dtype), channels_of(op), x_.where(r, index));
  }
  throw SimulationError(msg);
}

void Collectives::launch(int ci) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  c.launched = true;
  const Op& op = *c.op;
  const bool p2p = c.group < 0;  // members are {sender, receiver}: kinds differ by design
  for (size_t m = 0; m < c.gops.size(); ++m) {
    const Op& o = x_.op_of(c.members[m], c.gops[m]);
    if ((!p2p && (o.coll != op.coll || o.algo != op.algo)) || o.bytes != op.bytes || o.dtype != op.dtype || channels_of(o) != channels_of(op))
      mismatch(c);
  }
  const Time now = x_.engine.now();
  const NvlinkParams& nv = x_.p.nvlink;
  Time delay = Time::zero();
  c.nvlink = nv.any() && op.bytes >= nv.nvlink_wake_min_bytes && !via_host(c);
  if (c.nvlink) {
    for (const int r : c.members) {
      nvlink_.nvlink_started(r);
      if (nv.nvlink_awake_slowdown > 0) sm_.update(r);
    }
    // A member quiet for nvlink_wake_after wakes first; beside a host copy
    // it waits nvlink_copy_latency (either 0 where not calibrated).
    if (std::any_of(c.members.begin(), c.members.end(), [&](int r) { return nvlink_.nvlink_quiet(r, now) >= nv.nvlink_wake_after; }))
      delay = delay + nv.nvlink_wake_latency;
    if (std::any_of(c.members.begin(), c.members.end(), [&](int r) { return copies_.busy(r, kH2D) || copies_.busy(r, kD2H); }))
      delay = delay + nv.nvlink_copy_latency;
  }
  // The later rank under the power cap (PowerParams::straggler_share).
  const PowerParams& pw = x_.p.power;
  const double full = pw.sustained_slowdown + pw.sustained_slow_slowdown;
  if (pw.straggler_share > 0 && full > 0) {
    double wait_s = 0;
    for (const int r : c.members) {
      const double down = std::clamp((1.0 / sm_.clock(r) - 1.0) / full, 0.0, 1.0);
      wait_s = std::max(wait_s, pw.straggler_share * down * (now - ranks_[static_cast<size_t>(r)].last_coll_end).s());
    }
    delay = delay + Time::from_ps(static_cast<int64_t>(std::llround(wait_s * 1e12)));
  }
  if (delay > Time::zero()) {
    x_.engine.at(now + delay, &Engine::call<&Collectives::start_launched, Collectives>, this, static_cast<uint64_t>(ci));
    return;
  }
  start_launched(ci);
}

void Collectives::start_launched(int ci) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  c.started = x_.engine.now();
  c.start_no = starts_++;
  running_starts_.add(c.start_no, c.started);
  const Op& op = *c.op;
  c.channels = channels_of(op);
  c.wire = static_cast<double>(op.bytes) * (op.dtype == DType::FP8 ? 1.0 + 4.0 / 128.0 : 1.0);
  const int U = static_cast<int>(c.members.size());
  c.member_done.assign(static_cast<size_t>(U), 0);
  c.outstanding.assign(static_cast<size_t>(U), 0);
  const Time lat = x_.p.nccl.nccl_latency;
  if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
    c.outstanding = {1, 1};
    coll_flow(ci, 0, 1, c.wire, 1, lat);
    return;
  }
  if (op.coll == CollKind::AllToAll && op.algo == CollAlgo::Nccl) {
    c.outstanding.assign(static_cast<size_t>(U), 2 * (U - 1));  // a member sends to and receives from each peer
    if (closed_.try_closed_form(ci)) return;
    x_.flows.reserve(static_cast<size_t>(U) * static_cast<size_t>(U - 1));
    for_each_a2a_flow(U, [&](int i, int j) { coll_flow(ci, i, j, c.wire / U, U - 1, lat); });
    return;
  }
  if (op.coll == CollKind::AllToAll) {  // pairwise round-robin, circle method
    const int n = U % 2 == 0 ? U : U + 1;
    std::vector<int> teams(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) teams[static_cast<size_t>(i)] = i;
    for (int round = 0; round < n - 1; ++round) {
      std::vector<int> partner(static_cast<size_t>(U), -1);
      for (int i = 0; i < n / 2; ++i) {
        const int a = teams[static_cast<size_t>(i)], b = teams[static_cast<size_t>(n - 1 - i)];
        if (a < U && b < U) {
          partner[static_cast<size_t>(a)] = b;
          partner[static_cast<size_t>(b)] = a;
        }
      }
      c.partner.push_back(partner);
      std::rotate(teams.begin() + 1, teams.end() - 1, teams.end());
    }
    c.round.assign(static_cast<size_t>(U), 0);
    c.in_round.assign(static_cast<size_t>(U), 0);
    c.round_left.assign(static_cast<size_t>(U), 0);
    for (int i = 0; i < U; ++i) try_round(ci, i);
    return;
  }
  // Ring: all_gather / reduce_scatter: U-1 steps; all_reduce: 2(U-1).
  c.steps = op.coll == CollKind::AllReduce ? 2 * (U - 1) : U - 1;
  c.step = 0;
  // Where NCCL's model picks NVLink SHARP, the switch reduces instead.
  if (x_.s.runtime.nccl_nvls_enable && U >= 2) {
    const FlowRoute& first = routes_.pair_route(c.members[0], c.members[1], false);
    if (tabled(c, first.kind, through_host(first.kind)).nvls) {
      start_in_switch(ci);
      return;
    }
  }
  ring_step(ci);
}

// What an NVLS all-reduce puts on each member's GPU port, each way, per
// byte of the buffer (NVIDIA/nccl src/device/all_reduce.h, NCCL_ALGO_NVLS in
// one node; src/transport/nvls.cc binds each rank's NVLS buffer to the
// switch's multicast object): its reduce-scatter half reads every rank's
// buffer through the switch with multimem.ld_reduce (the whole buffer out
// of each GPU, its reduced 1/n share back in), its all-gather half stores
// each rank's share once with multimem.st and the switch copies it to all n
// (1/n out, the whole buffer in). The copies between the user's buffers and
// NCCL's stay in each GPU's memory.
static double nvls_port_share(int n) { return 1.0 + 1.0 / n; }

RouteUses Collectives::nvls_route(const CollInst& c, int m) {
  const int r = c.members[static_cast<size_t>(m)];
  const double share = nvls_port_share(static_cast<int>(c.members.size()));
  RouteUses uses;
  for (const bool up : {true, false})
    for (const FlowUse& u : routes_.switch_port(r, up).uses) {
      auto it = std::find_if(uses.begin(), uses.end(), [&](const FlowUse& v) { return v.constraint == u.constraint; });
      if (it != uses.end())
        it->coefficient += u.coefficient * share;  // a half-duplex link: both ways on one resource
      else
        uses.push_back({u.constraint, u.coefficient * share});
    }
  return uses;
}

// NVLink SHARP (the model's NVLS all-reduce, tabled()): each member moves
// the whole buffer as one flow over its GPU's switch port, both ways at once
// at nvls_port_share's coefficient, capped at NCCL's NVLS rate; the switch's
// reduction and multicast are no resource. Every member finishes when the
// last flow does (each rank's output needs every rank's bytes).
void Collectives::start_in_switch(int ci) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  const int U = static_cast<int>(c.members.size());
  const CollInst::Tabled& t = c.tabled[0];
  c.in_switch = true;
  c.steps = 0;
  c.step_left = U;
  for (int m = 0; m < U; ++m) {
    const int r = c.members[static_cast<size_t>(m)];
    FlowRoute port;
    port.uses = nvls_route(c, m);
    port.kind = hw::RouteKind::NvLink;
    port.known = true;
    FlowSpec f;
    f.route = port.uses;
    f.bytes = c.wire;
    f.latency = t.latency;  // the model's, end to end
    slow_by_sm(f, r, r, c.channels, false, t.rate);
    start_flow(ci, m, m, std::move(f), t.rate, nullptr, &port);
  }
}

void Collectives::coll_flow(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency) {
  double base = 0;
  FlowSpec f = flow_spec(ci, from, to, bytes, peers_at_once, protocol_latency, base);
  closed_.hand_back_route(f.route);
  start_flow(ci, from, to, std::move(f), base, nullptr);
}

FlowSpec Collectives::flow_spec(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency, double& base_out) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  const NcclParams& nc = x_.p.nccl;
  const InterferenceParams& in = x_.p.interference;
  const int ra = c.members[static_cast<size_t>(from)], rb = c.members[static_cast<size_t>(to)];
  const FlowRoute& route = routes_.pair_route(ra, rb, false);
  FlowSpec f;
  f.route = route.uses;
  f.bytes = bytes;
  f.latency = route.latency + protocol_latency;
  const bool via = through_host(route.kind);
  double ceiling = (via ? nc.nccl_host_rank_bandwidth : nc.nccl_rank_bandwidth).bytes_per_s;
  // Measured nowhere: through host memory NCCL's SHM transport sets it.
  if (via && nc.nccl_model && nc.nccl_host_rank_bandwidth.is_unlimited())
    if (const double shm = model().shm_rank_bandwidth(); shm > 0) ceiling = shm;
  double base = std::min(c.channels * nc.nccl_channel_bandwidth.bytes_per_s, ceiling) / peers_at_once;
  if (const CollInst::Tabled& t = tabled(c, route.kind, via); t.rate > 0) {
    base = t.rate;
    // Measured end to end: the route's latency is in it; a ring pays it once.
    f.latency = c.steps > 0 && c.step > 0 ? Time::zero() : t.latency;
  }
  slow_by_sm(f, ra, rb, c.channels, via, base);
  if (route.kind == hw::RouteKind::ViaHost && (in.host_transport_cost.h2d != 1.0 || in.host_transport_cost.d2h != 1.0)) {
    // Its bytes cost the PCIe links more than a copy's: those of the
    // sender's way up (what ra's D2H copies cross) and of the receiver's way
    // down (rb's H2D copies). Host bridges' limits and host memory count
    // bytes alike. Never so much that the collective alone, its rank's flows
    // at their cap, would fill the link: its measured time already holds
    // what its bytes cost there.
    const FlowRoute& up = routes_.host_route(ra, false);
    const FlowRoute& down = routes_.host_route(rb, true);
    auto on = [](const FlowRoute& fr, ConstraintId k) {
      return std::any_of(fr.uses.begin(), fr.uses.end(), [k](const FlowUse& u) { return u.constraint == k; });
    };
    for (FlowUse& u : f.route) {
      const int res = routes_.resource_of(u.constraint);
      if (!x_.topo.is_link(res)) continue;
      const bool is_up = on(up, u.constraint), is_down = on(down, u.constraint);
      if (is_up == is_down) continue;
      double cost = is_up ? in.host_transport_cost.d2h : in.host_transport_cost.h2d;
      if (cost > 1.0)
        cost = std::max(1.0, std::min(cost, x_.topo.resources()[static_cast<size_t>(res)].capacity / (u.coefficient * base * peers_at_once)));
      u.coefficient *= cost;
    }
  }
  // A rank's collective flows weigh 1/sqrt(peers at once) each: sqrt(k) for
  // k flows together (fitted on the copy weight against 2- and 4-rank
  // all-to-alls through host memory).
  f.weight = 1.0 / std::sqrt(static_cast<double>(peers_at_once));
  base_out = base;
  return f;
}

void Collectives::slow_by_sm(FlowSpec& f, int ra, int rb, int channels, bool via, double base) {
  f.rate_cap = base / sm_.comm_slowdown(ra, channels, via);
  if (receivers_count()) f.rate_cap /= sm_.comm_receiver_slowdown(rb);
  // Its latency runs on SM code as well.
  if (const double cs = sm_.clock_slowdown(ra, via); cs != 1.0)
    f.latency = Time::from_ps(static_cast<int64_t>(std::llround(static_cast<double>(f.latency.ps()) * cs)));
}

void Collectives::start_flow(int ci, int from, int to, FlowSpec f, double base, const FlowState* st, const FlowRoute* via_route) {
  const CollInst& c = insts_[static_cast<size_t>(ci)];
  const int ra = c.members[static_cast<size_t>(from)];
  const uint64_t key = (static_cast<uint64_t>(ci) << 32) | (static_cast<uint64_t>(from) << 16) | static_cast<uint64_t>(to);
  f.on_done = {[](void* self, uint64_t k, const FlowRecord& rec) {
                 static_cast<Collectives*>(self)->flow_done(static_cast<int>(k >> 32), static_cast<int>((k >> 16) & 0xffff),
                                                            static_cast<int>(k & 0xffff), rec);
               },
               this, key};
  const FlowId fid = st ? x_.flows.resume(std::move(f), *st) : x_.flows.start(std::move(f));
  const FlowRoute& route = via_route ? *via_route : routes_.pair_route(ra, c.members[static_cast<size_t>(to)], false);
  const int rb = c.members[static_cast<size_t>(to)];
  if (x_.o.link_samples) routes_.observe(fid, route, x_.traced(ra) || x_.traced(rb));
  auto& cfs = ranks_[static_cast<size_t>(ra)].coll_flows;
  if (coll_flow_slot_.size() <= static_cast<size_t>(fid)) coll_flow_slot_.resize(static_cast<size_t>(fid) + 1, -1);
  coll_flow_slot_[static_cast<size_t>(fid)] = static_cast<int>(cfs.size());
  cfs.push_back({.base_cap = base, .flow = fid, .channels = c.channels, .peer = rb, .via_host = through_host(route.kind)});
  if (receivers_count()) {
    auto& in = ranks_[static_cast<size_t>(rb)].coll_in;
    if (coll_in_slot_.size() <= static_cast<size_t>(fid)) coll_in_slot_.resize(static_cast<size_t>(fid) + 1, -1);
    coll_in_slot_[static_cast<size_t>(fid)] = static_cast<int>(in.size());
    in.push_back({.base_cap = base, .flow = fid, .channels = c.channels, .peer = ra, .via_host = through_host(route.kind)});
  }
}

// The measured table's per-flow rate and latency for a collective inside one
// host at a measured channel count (NcclParams::nccl_tables).
const CollInst::Tabled& Collectives::tabled(CollInst& c, hw::RouteKind kind, bool via) {
  // Tables are measured inside one host: a flow between hosts keeps the
  // channel model (and must not decide for the collective's other flows).
  static const CollInst::Tabled kNone{};
  if (kind == hw::RouteKind::Network || kind == hw::RouteKind::NetworkViaHost) return kNone;
  CollInst::Tabled& t = c.tabled[via ? 1 : 0];
  if (t.looked) return t;
  t.looked = true;
  const Op& op = *c.op;
  const int U = static_cast<int>(c.members.size());
  const NcclParams& nc = x_.p.nccl;
  if ((nc.nccl_tables.empty() && !nc.nccl_model) || U < 2) return t;
  // The schedule's channel count, or NCCL's choice (none given, or the model's default).
  const int channels = op.channels > 0 && op.channels != default_channels() ? op.channels : 0;
  TableColl coll;
  switch (op.coll) {
    case CollKind::AllToAll: coll = op.algo == CollAlgo::Pairwise ? TableColl::AllToAllPairwise : TableColl::AllToAll; break;
    case CollKind::AllGather: coll = TableColl::AllGather; break;
    case CollKind::ReduceScatter: coll = TableColl::ReduceScatter; break;
    case CollKind::AllReduce: coll = TableColl::AllReduce; break;
    default: return t;  // send / recv
  }
  double lat = 0, time = 0;
  bool nvls = false;
  if (const NcclTable* fw = coll == TableColl::AllToAllPairwise ? framework_pairwise_table(op, c.members) : nullptr) {
    // The framework's call, timed from before it: launched as the call
    // begins (Host), it takes the table's time, per round as many rounds as
    // this group has; no less than the host takes to issue its rounds.
    const double per_round = static_cast<double>(c.partner.size()) / static_cast<double>(fw->ranks + fw->ranks % 2 - 1);
    const double host = x_.p.overheads.framework_p2p_round.s() * static_cast<double>(U - 1);
    lat = std::max(fw->points.front().second * per_round, host);
    time = std::max(fw->time_at(c.wire) * per_round, host);
  } else if (const NcclTable* tab = nc.nccl_table_for(coll, U, via, channels)) {
    lat = tab->points.front().second;
    time = tab->time_at(c.wire);
  } else {
    // No table: NCCL's model, for a communicator inside one NVLink host (NcclModel::nvlink).
    if (!nc.nccl_model || via || !model().nvlink()) return t;
    for (const int r : c.members)
      if (x_.topo.host_of(x_.ranks[static_cast<size_t>(r)].gpu) != x_.topo.host_of(x_.ranks[static_cast<size_t>(c.members[0])].gpu)) return t;
    const auto m = model().timing(coll, U, c.wire, via, channels);
    if (!m) return t;
    lat = m->latency_s;
    time = m->time_s;
    nvls = m->algo == NcclAlgo::Nvls && coll == TableColl::AllReduce;  // all-gather, reduce-scatter: ring flows at NVLS's rate
  }
  // ncclAlltoAll: U-1 flows of wire/U each per rank, together `time`.
  // Pairwise: one exchange of wire/U per round, a launch each. Ring: `steps`
  // exchanges of wire/U, the latency before the first. NVLS: one flow of
  // wire a member (start_in_switch).
  const int phases = nvls ? 1 : coll == TableColl::AllToAllPairwise ? static_cast<int>(c.partner.size()) : c.steps > 0 ? c.steps : 1;
  const double transfer = (time - lat) / phases;
  // The table's latency is what a small collective takes; a larger one
  // moves its bytes during that time too. Where the links alone need longer
  // for a phase than the table leaves it, the difference comes off the
  // latency (down to none), so that alone the collective takes the table's
  // time, and beside other traffic longer.
  const double overlap = phases * std::max(0.0, phase_link_time(c, coll, nvls) - transfer);
  const double lat_eff = std::max(0.0, lat - overlap);
  t.latency = Time::from_s(coll == TableColl::AllToAllPairwise ? lat_eff / phases : lat_eff);
  t.rate = (nvls ? c.wire : c.wire / U) / std::max(transfer, 1e-9);
  t.nvls = nvls;
  return t;
}

// How long one phase of the collective (the all-to-all; a pairwise round; a
// ring step; NVLS's member flows) takes alone on its links at their
// capacities: no protocol cap, no latency. Memoised per members, kind and size.
double Collectives::phase_link_time(const CollInst& c, TableColl coll, bool nvls) {
  auto& key = link_key_;  // reused: no allocation per collective
  std::get<0>(key).assign(c.members.begin(), c.members.end());
  std::get<1>(key) = 2 * static_cast<int>(coll) + (nvls ? 1 : 0);
  std::get<2>(key) = c.wire;
  if (auto it = link_times_.find(key); it != link_times_.end()) return it->second;
  const int U = static_cast<int>(c.members.size());
  IsolatedFlows in;
  auto add = [&](int from, int to, double weight) {
    FlowSpec f;
    f.route = routes_.pair_route(c.members[static_cast<size_t>(from)], c.members[static_cast<size_t>(to)], false).uses;
    f.bytes = c.wire / U;
    f.weight = weight;
    in.flows.push_back(std::move(f));
  };
  if (nvls) {
    for (int m = 0; m < U; ++m) {
      FlowSpec f;
      f.route = nvls_route(c, m);
      f.bytes = c.wire;
      in.flows.push_back(std::move(f));
    }
  } else if (coll == TableColl::AllToAll) {
    for_each_a2a_flow(U, [&](int i, int j) { add(i, j, 1.0 / std::sqrt(static_cast<double>(U - 1))); });
  } else if (coll == TableColl::AllToAllPairwise) {
    for (int m = 0; m < U; ++m)
      if (const int p = c.partner.front()[static_cast<size_t>(m)]; p >= 0) add(m, p, 1.0);
  } else {
    for (int i = 0; i < U; ++i) add(i, (i + 1) % U, 1.0);
  }
  (void)localise(x_.sys, in, closed_.nominal());
  double longest = 0;
  for (const FlowRecord& r : run_isolated(in).records) longest = std::max(longest, r.end.s());
  link_times_.emplace(key, longest);
  return longest;
}

void Collectives::flow_done(int ci, int from, int to, const FlowRecord& rec) {
  routes_.account(Transfer::Collective, rec);
  CollInst& c = insts_[static_cast<size_t>(ci)];
  // Off its sender's list (and its receiver's, where kept).
  swap_remove(ranks_[static_cast<size_t>(c.members[static_cast<size_t>(from)])].coll_flows, coll_flow_slot_, rec.id);
  if (receivers_count()) swap_remove(ranks_[static_cast<size_t>(c.members[static_cast<size_t>(to)])].coll_in, coll_in_slot_, rec.id);
  const Op& op = *c.op;
  if (op.coll == CollKind::AllToAll && op.algo == CollAlgo::Pairwise) {
    for (int m : {from, to})
      if (--c.round_left[static_cast<size_t>(m)] == 0) {
        c.in_round[static_cast<size_t>(m)] = 0;
        ++c.round[static_cast<size_t>(m)];
      }
    try_round(ci, from);
    try_round(ci, to);
    return;
  }
  if (c.in_switch) {
    if (--c.step_left == 0)
      for (size_t m = 0; m < c.members.size(); ++m) member_done(ci, static_cast<int>(m));
    return;
  }
  if (c.steps > 0) {  // ring
    if (--c.step_left == 0) {
      if (++c.step < c.steps)
        ring_step(ci);
      else
        for (size_t m = 0; m < c.members.size(); ++m) member_done(ci, static_cast<int>(m));
    }
    return;
  }
  for (int m : {from, to})
    if (--c.outstanding[static_cast<size_t>(m)] == 0) member_done(ci, m);
}

void Collectives::try_round(int ci, int m) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  const size_t mi = static_cast<size_t>(m);
  if (c.member_done[mi] || c.in_round[mi]) return;
  const int rounds = static_cast<int>(c.partner.size());
  while (c.round[mi] < rounds && c.partner[static_cast<size_t>(c.round[mi])][mi] < 0) ++c.round[mi];  // a bye
  if (c.round[mi] >= rounds) {
    member_done(ci, m);
    return;
  }
  const int p = c.partner[static_cast<size_t>(c.round[mi])][mi];
  const size_t pi = static_cast<size_t>(p);
  if (c.in_round[pi] || c.member_done[pi] || c.round[pi] != c.round[mi]) return;  // the partner is not there yet
  const int U = static_cast<int>(c.members.size());
  c.in_round[mi] = c.in_round[pi] = 1;
  c.round_left[mi] = c.round_left[pi] = 2;
  coll_flow(ci, m, p, c.wire / U, 1, x_.p.nccl.nccl_latency);
  coll_flow(ci, p, m, c.wire / U, 1, x_.p.nccl.nccl_latency);
}

void Collectives::ring_step(int ci) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  const int U = static_cast<int>(c.members.size());
  c.step_left = U;
  const Time lat = c.step == 0 ? x_.p.nccl.nccl_latency : x_.p.nccl.nccl_step_latency;
  for (int i = 0; i < U; ++i) coll_flow(ci, i, (i + 1) % U, c.wire / U, 1, lat);
}

void Collectives::member_done(int ci, int m) {
  CollInst& c = insts_[static_cast<size_t>(ci)];
  if (c.member_done[static_cast<size_t>(m)]) return;
  c.member_done[static_cast<size_t>(m)] = 1;
  const int gid = c.gops[static_cast<size_t>(m)];
  const int rank = c.members[static_cast<size_t>(m)];
  Rank& K = ranks_[static_cast<size_t>(rank)];
  // The op the instance reads stays a running member's: a program generated
  // as it runs drops the ops all its ranks are past.
  if (c.op == &x_.op_of(rank, gid))
    for (size_t o = 0; o < c.members.size(); ++o)
      if (!c.member_done[o]) {
        c.op = &x_.op_of(c.members[o], c.gops[o]);
        break;
      }
  sm_.add_channels(rank, -c.channels);
  if (c.nvlink) nvlink_.nvlink_ended(rank);
  K.last_coll_end = x_.engine.now();
  if (++c.finished == static_cast<int>(c.members.size())) {  // no flow of it is left
    (c.group >= 0 ? group_open_[static_cast<size_t>(c.group)] : link(c.members[0], c.members[1]).open).erase(c.seq);
    free_insts_.emplace_back(ci, x_.engine.events_processed());
    running_starts_.erase(c.start_no);
    // Instances still to start start now or later, those running at their start.
    routes_.settled_before(Transfer::Collective, running_starts_.empty() ? x_.engine.now() : running_starts_.front());
  }
  if (x_.mirrors.checked(rank)) x_.mirrored_end(rank, gid);
  ops_.op_done(rank, gid);
  sm_.update(rank);
  if (c.group >= 0) {
    ++K.group_done[static_cast<size_t>(c.group)];
    auto& parked = K.parked[static_cast<size_t>(c.group)];
    if (!parked.empty() && coll_of(rank, parked.front()).second == K.group_done[static_cast<size_t>(c.group)]) {
      const int next = parked.front();
      parked.pop_front();
      auto& [inst, seq] = coll_of(rank, next);
      inst = instance(group_open_[static_cast<size_t>(c.group)], c.group, seq, x_.s.groups[static_cast<size_t>(c.group)].ranks);
      arrive(rank, next);
    }
  }
  coll_finished(rank, gid);
}

void Collectives::recap(int r) {
  Rank& K = ranks_[static_cast<size_t>(r)];
  for (size_t i = 0; i < K.closed.size();) {  // a closed form capped at another slowdown hands its flows back
    const auto [ci, m] = K.closed[i];
    const CollInst& c = insts_[static_cast<size_t>(ci)];
    const auto& slow = c.closed->slow;  // senders' slowdowns, then (where receivers count) receivers'
    const size_t U = c.members.size();
    if ((sm_.comm_slowdown(r, c.channels, c.closed->via_host) != slow[static_cast<size_t>(m)] ||
         (slow.size() > U && sm_.comm_receiver_slowdown(r) != slow[U + static_cast<size_t>(m)])) &&
        !closed_.ends_now(ci))  // (a mirror's representative starts its next kernel before the mirror's last flows end)
      closed_.hand_back(ci);
    else
      ++i;
  }
  for (auto& cf : K.coll_flows)
    if (x_.flows.running(cf.flow)) x_.flows.set_rate_cap(cf.flow, capped(cf, r, cf.peer));
  for (auto& cf : K.coll_in)
    if (x_.flows.running(cf.flow)) x_.flows.set_rate_cap(cf.flow, capped(cf, cf.peer, r));
}

// Swap-remove flow `id` from a rank's list (a rank may hold thousands); `slots` maps flow ids to list indices.
void Collectives::swap_remove(std::vector<CollFlow>& list, std::vector<int>& slots, FlowId id) {
  const int at = slots[static_cast<size_t>(id)];
  assert(at >= 0 && list[static_cast<size_t>(at)].flow == id);
  list[static_cast<size_t>(at)] = list.back();
  slots[static_cast<size_t>(list[static_cast<size_t>(at)].flow)] = at;
  list.pop_back();
  slots[static_cast<size_t>(id)] = -1;
}

double Collectives::capped(const CollFlow& f, int from, int to) const {
  const double cap = f.base_cap / sm_.comm_slowdown(from, f.channels, f.via_host);
  return receivers_count() ? cap / sm_.comm_receiver_slowdown(to) : cap;
}

std::string Collectives::waiting(int r, int index, uint8_t f) const {
  const Op& op = x_.op_of(r, index);
  const auto [inst, seq] = coll_at(r, index);
  if (!(f & kDispatched)) return ": not dispatched (queued behind another op)";
  if (!(f & kArrived))
    return fmt::format(": waits for call #{} on group '{}' to finish first", seq - 1, x_.s.groups[static_cast<size_t>(x_.group_of(r, op))].name);
  const CollInst& c = insts_[static_cast<size_t>(inst)];
  std::vector<int> missing;
  for (size_t m = 0; m < c.members.size(); ++m)
    if (c.gops[m] < 0) missing.push_back(c.members[m]);
  if (!missing.empty())
    return fmt::format(": {} waits for rank{} {} to reach it",
                       c.group >= 0 ? fmt::format("call #{} on group '{}'", c.seq, x_.s.groups[static_cast<size_t>(c.group)].name) : "send/recv",
                       missing.size() > 1 ? "s" : "", fmt::join(missing, ", "));
  return ": running";
}

}  // namespace osim::exec
