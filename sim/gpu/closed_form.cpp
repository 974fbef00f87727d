#include "gpu/closed_form.hpp"

#include <algorithm>
#include <cassert>

namespace osim::exec {

std::vector<ConstraintId> localise(const MaxMinSystem& sys, IsolatedFlows& in) {
  std::vector<ConstraintId> cons;
  for (const FlowSpec& f : in.flows)
    for (const FlowUse& u : f.route) cons.push_back(u.constraint);
  std::sort(cons.begin(), cons.end());
  cons.erase(std::unique(cons.begin(), cons.end()), cons.end());
  in.capacity.clear();
  for (const ConstraintId k : cons) in.capacity.push_back(sys.capacity(k));
  for (FlowSpec& f : in.flows)
    for (FlowUse& u : f.route) u.constraint = static_cast<ConstraintId>(std::lower_bound(cons.begin(), cons.end(), u.constraint) - cons.begin());
  return cons;
}

ClosedForms::ClosedForms(ExecContext& x, Routes& routes, CollFlows& colls, SmShare& sm) : x_(x), routes_(routes), colls_(colls), sm_(sm) {}

void ClosedForms::init() { owner_.assign(x_.sys.constraint_count(), -1); }

bool ClosedForms::try_closed_form(int ci) {
  if (!x_.o.closed_form_collectives || x_.o.link_samples) return false;
  CollInst& c = colls_.inst(ci);
  const int U = static_cast<int>(c.members.size());
  Key& key = key_;  // reused: no allocation per all-to-all
  key.group = c.group;
  key.wire = c.wire;
  key.channels = c.channels;
  key.slow.clear();
  const bool via_host = colls_.via_host(c);
  for (int m = 0; m < U; ++m) key.slow.push_back(sm_.comm_slowdown(c.members[static_cast<size_t>(m)], c.channels, via_host));
  if (x_.p.interference.comm_slowdown_receiver != 1.0)
    for (int m = 0; m < U; ++m) key.slow.push_back(sm_.comm_receiver_slowdown(c.members[static_cast<size_t>(m)]));
  // Built when the same all-to-all recurs: one that runs once (a single
  // huge all-to-all) would pay for its flows twice.
  auto it = forms_.find(key);
  if (it == forms_.end()) it = forms_.emplace(key, Entry{}).first;
  Entry& entry = it->second;
  if (!entry.form) {
    if (++entry.seen < 2) return false;
    entry.form = build(ci, key.slow);
  }
  const ClosedForm& cf = *entry.form;
  assert(!cf.groups.empty());  // groups have two ranks or more: there are flows
  for (const ConstraintId k : cf.cons)
    if (x_.sys.holders(k) > 0 || owner_[static_cast<size_t>(k)] >= 0) return false;
  ++count_;
  for (const ConstraintId k : cf.cons) owner_[static_cast<size_t>(k)] = ci;
  for (int m = 0; m < U; ++m) colls_.add_closed(c.members[static_cast<size_t>(m)], ci, m);
  c.closed = &cf;
  c.t0 = x_.engine.now();
  c.next_group = 0;
  c.closed_ev = x_.engine.at(c.t0 + cf.groups.front().end, &Engine::call<&ClosedForms::replay_group, ClosedForms>, this, static_cast<uint64_t>(ci));
  return true;
}

std::unique_ptr<ClosedForm> ClosedForms::build(int ci, const std::vector<double>& slow) {
  const CollInst& c = colls_.inst(ci);
  const int U = static_cast<int>(c.members.size());
  auto cf = std::make_unique<ClosedForm>();
  cf->slow = slow;
  cf->via_host = colls_.via_host(c);
  for_each_a2a_flow(U, [&](int i, int j) {
    double base = 0;
    cf->flows.flows.push_back(colls_.flow_spec(ci, i, j, c.wire / U, U - 1, x_.p.nccl.nccl_latency, base));
    cf->ends.emplace_back(i, j);
    cf->base.push_back(base);
  });
  cf->cons = localise(x_.sys, cf->flows);
  const IsolatedRun run = run_isolated(cf->flows);
  for (const int f : run.order) {
    const FlowRecord& rec = run.records[static_cast<size_t>(f)];
    if (cf->groups.empty() || cf->groups.back().end != rec.end) cf->groups.push_back({rec.end, {}, {}, {}, {}, {}});
    ClosedForm::Group& g = cf->groups.back();
    g.flows.push_back(f);
    auto add = [](auto& list, int k, auto v) {
      auto at = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == k; });
      if (at == list.end())
        list.emplace_back(k, v);
      else
        at->second += v;
    };
    for (const auto& [k, t] : rec.bottleneck_time) add(g.bottleneck_time, k, t);
    add(g.transfers, rec.main_bottleneck(), int64_t{1});
    auto at = std::find_if(g.first_byte.begin(), g.first_byte.end(), [&](const auto& e) { return e.first == rec.main_bottleneck(); });
    if (at == g.first_byte.end())
      g.first_byte.emplace_back(rec.main_bottleneck(), rec.first_byte);
    else
      at->second = std::min(at->second, rec.first_byte);
    for (const FlowUse& u : cf->flows.flows[static_cast<size_t>(f)].route) add(g.bytes, u.constraint, rec.bytes * u.coefficient);
  }
  return cf;
}

void ClosedForms::replay_group(int ci) {
  CollInst& c = colls_.inst(ci);
  const ClosedForm& cf = *c.closed;
  const ClosedForm::Group& g = cf.groups[c.next_group++];
  auto stat = [&](int k) -> BottleneckStat& { return routes_.stat_of(Transfer::Collective, k < 0 ? k : cf.cons[static_cast<size_t>(k)]); };
  for (const auto& [k, t] : g.bottleneck_time) stat(k).time += t;
  for (const auto& [k, n] : g.transfers) stat(k).transfers += n;
  for (const auto& [k, first] : g.first_byte)
    routes_.bound_span(Transfer::Collective, k < 0 ? k : cf.cons[static_cast<size_t>(k)], c.t0 + first, c.t0 + g.end);
  for (const auto& [k, b] : g.bytes) x_.flows.add_bytes(cf.cons[static_cast<size_t>(k)], b);
  if (c.next_group == cf.groups.size())
    release(ci);
  else
    c.closed_ev =
        x_.engine.at(c.t0 + cf.groups[c.next_group].end, &Engine::call<&ClosedForms::replay_group, ClosedForms>, this, static_cast<uint64_t>(ci));
  // As the flows' ends would, flow by flow; members finish after the
  // counting, so a flow they start finds the group replayed.
  boost::container::small_vector<int, 16> done;
  for (const int f : g.flows)
    for (const int m : {cf.ends[static_cast<size_t>(f)].first, cf.ends[static_cast<size_t>(f)].second})
      if (--c.outstanding[static_cast<size_t>(m)] == 0) done.push_back(m);
  for (const int m : done) colls_.member_done(ci, m);
}

void ClosedForms::release(int ci) {
  CollInst& c = colls_.inst(ci);
  for (const ConstraintId k : c.closed->cons) owner_[static_cast<size_t>(k)] = -1;
  for (const int r : c.members) colls_.remove_closed(r, ci);
  c.closed = nullptr;
}

bool ClosedForms::ends_now(int ci) {
  const CollInst& c = colls_.inst(ci);
  return c.t0 + c.closed->groups.back().end == x_.engine.now();
}

void ClosedForms::hand_back(int ci) {
  CollInst& c = colls_.inst(ci);
  const ClosedForm& cf = *c.closed;
  ++handed_back_;
  x_.engine.cancel(c.closed_ev);
  const size_t first = c.next_group;
  release(ci);
  const std::vector<FlowState> states = state_before(cf.flows, x_.engine.now() - c.t0);
  std::vector<int> left;
  for (size_t g = first; g < cf.groups.size(); ++g) left.insert(left.end(), cf.groups[g].flows.begin(), cf.groups[g].flows.end());
  std::sort(left.begin(), left.end());  // the order the launch started them
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
      x_.flows.add_bytes(u.constraint, (spec.bytes - st.remaining) * u.coefficient);  // moved before last_update
    }
    colls_.start_flow(ci, cf.ends[static_cast<size_t>(f)].first, cf.ends[static_cast<size_t>(f)].second, std::move(spec),
                      cf.base[static_cast<size_t>(f)], &st);
  }
}

void ClosedForms::hand_back_route(const RouteUses& route) {
  if (forms_.empty()) return;
  for (const FlowUse& u : route)
    if (const int ci = owner_[static_cast<size_t>(u.constraint)]; ci >= 0) hand_back(ci);
}

void ClosedForms::hand_back_constraint(ConstraintId c) {
  if (forms_.empty()) return;
  if (const int ci = owner_[static_cast<size_t>(c)]; ci >= 0) hand_back(ci);
}

}  // namespace osim::exec
