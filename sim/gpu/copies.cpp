#include "gpu/copies.hpp"

#include <cassert>
#include <cmath>
#include <limits>

namespace osim::exec {

Copies::Copies(ExecContext& x, Routes& routes, OpCompletion& ops, SmShare& sm, LinkClaims& claims)
    : x_(x), routes_(routes), ops_(ops), sm_(sm), claims_(claims), ranks_(static_cast<size_t>(x.s.ranks())) {
  const CopyParams& cp = x_.p.copies;
  const std::vector<ConstraintId>& cons = routes_.constraints();
  // Per host bridge and direction, a limit that copy-engine copies alone
  // share; reports count it as the bridge's from-host or to-host limit.
  for (const bool h2d : {true, false}) {
    const std::vector<Bandwidth>& table = h2d ? cp.host_h2d_aggregate : cp.host_d2h_aggregate;
    if (table.empty()) continue;
    if (dma_limit_of_.empty()) dma_limit_of_.assign(cons.size(), -1);
    for (size_t n = 0; n < x_.topo.node_count(); ++n)
      if (const int res = h2d ? x_.topo.from_host_resource(static_cast<int>(n)) : x_.topo.to_host_resource(static_cast<int>(n)); res >= 0)
        dma_limit_of_[static_cast<size_t>(cons[static_cast<size_t>(res)])] =
            add_counted_limit(x_.topo.resources()[static_cast<size_t>(res)].capacity, &table, res);
  }
  // Per host bridge, both directions together; reported as its from-host limit.
  if (!cp.host_bidir_aggregate.empty()) {
    bidir_limit_of_.assign(cons.size(), -1);
    for (size_t n = 0; n < x_.topo.node_count(); ++n) {
      const int from = x_.topo.from_host_resource(static_cast<int>(n)), to = x_.topo.to_host_resource(static_cast<int>(n));
      if (from < 0 || to < 0) continue;
      const auto& res = x_.topo.resources();
      const int l =
          add_counted_limit(res[static_cast<size_t>(from)].capacity + res[static_cast<size_t>(to)].capacity, &cp.host_bidir_aggregate, from);
      limits_[static_cast<size_t>(l)].both_ways = true;
      bidir_limit_of_[static_cast<size_t>(cons[static_cast<size_t>(from)])] = l;
      bidir_limit_of_[static_cast<size_t>(cons[static_cast<size_t>(to)])] = l;
    }
  }
  // The whole host's, per direction, on pageable copies; one copy alone is
  // held by its own staging rate (the nominal, above every rank's staging
  // rate and the table's entries together, never binds).
  for (const bool d2h : {false, true}) {
    const std::vector<Bandwidth>& table = d2h ? cp.pageable_d2h_aggregate : cp.pageable_h2d_aggregate;
    if (table.empty()) continue;
    double nominal = cp.pageable_bandwidth[copy_direction(d2h)].bytes_per_s;
    for (const Bandwidth& b : table) nominal = std::max(nominal, b.bytes_per_s);
    nominal *= x_.s.ranks() + 1;
    pageable_limit_[d2h ? 1 : 0] = add_counted_limit(nominal, &table, -1);
    limits_.back().per_gpu_beyond = true;
  }
  if (cp.copy_bidir_modelled() && !cp.copy_engine_bandwidth[Direction::H2D].is_unlimited() &&
      !cp.copy_engine_bandwidth[Direction::D2H].is_unlimited()) {
    bidir_.resize(static_cast<size_t>(x_.s.ranks()));
    bidir_active_.assign(static_cast<size_t>(x_.s.ranks()), {0, 0});
    for (auto& b : bidir_)
      for (const int d : {0, 1}) {
        b[static_cast<size_t>(d)] = x_.sys.add_constraint(cp.copy_engine_bandwidth[copy_direction(d == 1)].bytes_per_s);
        routes_.add_constraint_alias(b[static_cast<size_t>(d)], -1);
      }
  }
}

int Copies::engine_for(int r, CopyKind k) const {
  const int n = x_.ranks[static_cast<size_t>(r)].node->gpu.copy_engines.value_or(3);
  const int want = k == CopyKind::H2D ? kH2D : k == CopyKind::D2H ? kD2H : kOther;
  if (n >= 3) return want;
  if (n == 2) return want == kOther ? kD2H : want;
  return kH2D;
}

void Copies::queue_copy(int r, int id, Time handoff) {
  const int e = engine_for(r, x_.op_of(r, id).copy);
  CopyEngine& ce = ranks_[static_cast<size_t>(r)].ce[e];
  ce.queue.emplace_back(id, handoff);
  if (ce.busy < 0) start_copy(r, e);
}

template <class F>
void Copies::for_each_counted_limit(int r, const Op& op, F&& f) const {
  const bool d2h = op.copy == CopyKind::D2H;
  for (const FlowUse& u : routes_.host_route(r, !d2h).uses) {
    if (const int l = limit_of(dma_limit_of_, u.constraint); l >= 0) f(l);
    if (const int l = limit_of(bidir_limit_of_, u.constraint); l >= 0) f(l);
  }
  if (op.host_mem == HostMem::Pageable && pageable_limit_[d2h ? 1 : 0] >= 0) f(pageable_limit_[d2h ? 1 : 0]);
}

void Copies::start_copy(int r, int e) {
  CopyEngine& ce = ranks_[static_cast<size_t>(r)].ce[e];
  if (ce.queue.empty()) return;
  const auto [id, handoff] = ce.queue.front();
  ce.queue.pop_front();
  ce.busy = id;
  sm_.copy_engines(r, busy_mask(r));
  const Op& op = x_.op_of(r, id);
  const CopyParams& cp = x_.p.copies;
  ops_.op_started(r, id, op);  // a copy starts when its engine takes it
  const bool host = op.copy == CopyKind::H2D || op.copy == CopyKind::D2H, d2h = op.copy == CopyKind::D2H;
  FlowSpec f;
  f.bytes = static_cast<double>(op.bytes);
  // The calibrated engine rate is that of copies to and from host memory
  // (what the bench's pinned copies measure), per host link kind; a P2P copy
  // is held by its route (the NVLink port: the measured P2P rate), a D2D
  // copy by HBM.
  double cap = std::numeric_limits<double>::infinity();
  const FlowRoute* route = nullptr;
  switch (op.copy) {
    case CopyKind::H2D: route = &routes_.host_route(r, true); break;
    case CopyKind::D2H: route = &routes_.host_route(r, false); break;
    case CopyKind::P2P: route = &routes_.pair_route(r, x_.peer_of(r, op), true); break;
    case CopyKind::D2D: {
      const auto& hbm = x_.ranks[static_cast<size_t>(r)].node->gpu.hbm_bandwidth;
      cap = (hbm ? hbm->bytes_per_s : 1e12) * x_.p.memory.hbm_efficiency / 2;  // read + write
      break;
    }
  }
  if (host) cap = engine_cap(r, d2h);
  if (host && op.host_mem == HostMem::Pageable) cap = std::min(cap, cp.pageable_bandwidth[copy_direction(d2h)].bytes_per_s);
  f.latency = host ? cp.host_copy_setup(d2h, op.host_mem == HostMem::Pageable) : cp.copy_latency.h2d;
  // Both ways at once (copy_bidir_table): a pinned copy starting while the
  // other direction runs one waits the longer of the two set-ups.
  if (host && op.host_mem == HostMem::Pinned && cp.copy_bidir_tabled() && !bidir_.empty() && bidir_active_[static_cast<size_t>(r)][d2h ? 0 : 1] > 0)
    f.latency = std::max(f.latency, cp.host_copy_setup(!d2h, false));
  if (route) {
    f.route = route->uses;
    f.latency += route->latency;
  }
  f.latency += handoff;
  if (std::isfinite(cap)) f.rate_cap = cap;
  f.weight = x_.p.interference.copy_weight[copy_direction(d2h)];
  const uint64_t key = (static_cast<uint64_t>(id) << 24) | (static_cast<uint64_t>(r) << 4) | static_cast<uint64_t>(e);
  f.on_done = {[](void* self, uint64_t k, const FlowRecord& rec) {
                 static_cast<Copies*>(self)->copy_done(static_cast<int>((k >> 4) & 0xfffff), static_cast<int>(k >> 24), static_cast<int>(k & 0xf),
                                                       rec);
               },
               this, key};
  if (host && !bidir_.empty()) {
    const size_t d = d2h ? 1 : 0;
    f.route.push_back({bidir_[static_cast<size_t>(r)][d], 1.0});
    if (op.host_mem == HostMem::Pinned && bidir_active_[static_cast<size_t>(r)][d]++ == 0) set_bidir_limit(r, 1 - d);
    set_bidir_limit(r, d);  // this copy's own share (copy_bidir_factor_for its size)
  }
  if (host && !limits_.empty())
    for_each_counted_limit(r, op, [&](int l) {
      f.route.push_back({limits_[static_cast<size_t>(l)].constraint, 1.0});
      copying_under(l, r, +1, d2h);
    });
  claims_.hand_back_route(f.route);
  const FlowId fid = x_.flows.start(std::move(f));
  running_starts_.insert(x_.engine.now());
  if (x_.o.link_samples && route) routes_.observe(fid, *route, x_.traced(r));  // rates are reported only after activation
  sm_.update(r);
}

void Copies::copy_done(int r, int id, int e, const FlowRecord& rec) {
  const auto started = running_starts_.find(rec.start);
  assert(started != running_starts_.end());
  running_starts_.erase(started);
  // Copies still to start start now or later, those running at their start.
  routes_.settled_before(Transfer::Copy, running_starts_.empty() ? x_.engine.now() : *running_starts_.begin());
  routes_.account(Transfer::Copy, rec);
  OpRecord& orec = x_.record(r, id);
  const ConstraintId mb = rec.main_bottleneck();
  const int bound = mb < 0 ? -1 : routes_.resource_of(mb);
  assert(bound < (1 << 30));  // OpRecord::bottleneck is 31 bits
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
  orec.bottleneck = bound;
#pragma GCC diagnostic pop
  for (const auto& [c, t] : rec.bottleneck_time)
    if (c == mb) orec.bottleneck_time = t;
  ranks_[static_cast<size_t>(r)].ce[e].busy = -1;
  sm_.copy_engines(r, busy_mask(r));
  const Op& done = x_.op_of(r, id);
  if ((done.copy == CopyKind::H2D || done.copy == CopyKind::D2H) && !limits_.empty())
    for_each_counted_limit(r, done, [&](int l) { copying_under(l, r, -1, done.copy == CopyKind::D2H); });
  if ((done.copy == CopyKind::H2D || done.copy == CopyKind::D2H) && done.host_mem == HostMem::Pinned && !bidir_.empty()) {
    const size_t d = done.copy == CopyKind::D2H ? 1 : 0;
    assert(bidir_active_[static_cast<size_t>(r)][d] > 0);
    if (--bidir_active_[static_cast<size_t>(r)][d] == 0) set_bidir_limit(r, 1 - d);
  }
  if (x_.mirrors.checked(r)) x_.mirrored_end(r, id);
  ops_.op_done(r, id);
  start_copy(r, e);
  sm_.update(r);
}

// Rank r's engine limit of direction d (0 H2D, 1 D2H): the engine's rate,
// times copy_bidir_factor_for(d, the size of the copy on d's engine) while a
// pinned copy runs the other way.
void Copies::set_bidir_limit(int r, size_t d) {
  const CopyParams& cp = x_.p.copies;
  const double full = engine_cap(r, d == 1);
  double share = cp.copy_bidir_factor[copy_direction(d == 1)];
  if (cp.copy_bidir_tabled()) {
    const CopyKind k = d == 1 ? CopyKind::D2H : CopyKind::H2D;
    const int id = ranks_[static_cast<size_t>(r)].ce[engine_for(r, k)].busy;
    if (id >= 0 && x_.op_of(r, id).copy == k) share = cp.copy_bidir_share(copy_direction(d == 1), x_.op_of(r, id).bytes);
  }
  x_.flows.set_capacity(bidir_[static_cast<size_t>(r)][d], bidir_active_[static_cast<size_t>(r)][1 - d] > 0 ? full * share : full);
}

double Copies::engine_cap(int r, bool d2h) {
  const bool c2c = routes_.host_route(r, !d2h).crosses(hw::LinkKind::NvLinkC2C);
  return x_.p.copies.engine_bandwidth(copy_direction(d2h), c2c).bytes_per_s;
}

int Copies::add_counted_limit(double nominal, const std::vector<Bandwidth>* table, int res) {
  const ConstraintId c = x_.sys.add_constraint(nominal);
  routes_.add_constraint_alias(c, res);
  limits_.push_back({c, nominal, table, std::vector<int>(static_cast<size_t>(x_.s.ranks()), 0), 0});
  return static_cast<int>(limits_.size()) - 1;
}

// A copy of rank r starts (+1) or ends (-1) under limits_[l]: its copies
// together are held to the measured aggregate for as many GPUs as copy under
// it now, never above its nominal limit. One GPU's copies are held by its
// link and engines (the table's first entry is that rate), so the limit
// applies from two on. More GPUs than the table measured: the calibration
// does not know the limit there (a box with fewer GPUs measured it), so only
// the topology's holds them, never the last entry stretched flat. The host's
// pageable limit is no capacity filled but each process's copy slowing as
// others copy (docs/accuracy.md, "Machines nobody measured"): beyond a table
// of two or more entries each GPU keeps at most the last entry's share, as
// more processes never copied faster each than fewer. A limit on
// both directions together applies only while both have copies (one
// direction alone is held by its own: a host may move less both ways at once
// than one way alone).
void Copies::copying_under(int l, int r, int delta, bool d2h) {
  CountedLimit& L = limits_[static_cast<size_t>(l)];
  L.by_direction[d2h ? 1 : 0] += delta;
  int& mine = L.copies_of_rank[static_cast<size_t>(r)];
  if (mine == 0 && delta > 0) ++L.gpus;
  mine += delta;
  assert(mine >= 0);
  if (mine == 0 && delta < 0) --L.gpus;
  const auto& agg = *L.table;
  claims_.hand_back_constraint(L.constraint);
  const bool binds = L.gpus >= 2 && static_cast<size_t>(L.gpus) <= agg.size() && (!L.both_ways || (L.by_direction[0] > 0 && L.by_direction[1] > 0));
  double cap = !binds ? L.nominal : std::min(L.nominal, agg[static_cast<size_t>(L.gpus) - 1].bytes_per_s);
  if (L.per_gpu_beyond && agg.size() >= 2 && static_cast<size_t>(L.gpus) > agg.size())
    cap = std::min(L.nominal, agg.back().bytes_per_s / static_cast<double>(agg.size()) * L.gpus);
  x_.flows.set_capacity(L.constraint, cap);
}

}  // namespace osim::exec
