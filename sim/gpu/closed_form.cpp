#include "gpu/closed_form.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace osim::exec {

std::vector<ConstraintId> localise(const MaxMinSystem& sys, IsolatedFlows& in, const std::vector<double>& nominal) {
  std::vector<ConstraintId> cons;
  for (const FlowSpec& f : in.flows)
    for (const FlowUse& u : f.route) cons.push_back(u.constraint);
  std::sort(cons.begin(), cons.end());
  cons.erase(std::unique(cons.begin(), cons.end()), cons.end());
  in.capacity.clear();
  for (const ConstraintId k : cons)
    in.capacity.push_back(!nominal.empty() && !std::isnan(nominal[static_cast<size_t>(k)]) ? nominal[static_cast<size_t>(k)] : sys.capacity(k));
  for (FlowSpec& f : in.flows)
    for (FlowUse& u : f.route) u.constraint = static_cast<ConstraintId>(std::lower_bound(cons.begin(), cons.end(), u.constraint) - cons.begin());
  return cons;
}

ClosedForms::ClosedForms(ExecContext& x, Routes& routes, CollFlows& colls, SmShare& sm) : x_(x), routes_(routes), colls_(colls), sm_(sm) {}

void ClosedForms::init() {
  owner_.assign(x_.sys.constraint_count(), -1);
  nominal_.assign(x_.sys.constraint_count(), std::numeric_limits<double>::quiet_NaN());
}

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
  held_scratch_.clear();
  for (size_t kl = 0; kl < cf.cons.size(); ++kl) {
    const ConstraintId k = cf.cons[kl];
    if (owner_[static_cast<size_t>(k)] >= 0) return false;
    if (x_.sys.holders(k) > 0 && !reserve(cf, static_cast<int>(kl), k, x_.engine.now())) return false;
  }
  ++count_;
  for (const ConstraintId k : cf.cons) owner_[static_cast<size_t>(k)] = ci;
  for (int m = 0; m < U; ++m) colls_.add_closed(c.members[static_cast<size_t>(m)], ci, m);
  c.closed = &cf;
  c.t0 = x_.engine.now();
  c.next_group = 0;
  if (!held_scratch_.empty()) {
    // Its flows over the link start as their first bytes would.
    ++reserved_;
    std::vector<Held>& held = held_[ci];
    held = held_scratch_;
    std::stable_sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.r->stages.front().from < b.r->stages.front().from; });
    for (size_t i = 0; i < held.size(); ++i)
      if (i == 0 || held[i].r->stages.front().from != held[i - 1].r->stages.front().from)
        held[i].ev = x_.engine.at(c.t0 + held[i].r->stages.front().from, &Engine::call<&ClosedForms::reserve_on, ClosedForms>, this,
                                  static_cast<uint64_t>(ci));
  }
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
  cf->cons = localise(x_.sys, cf->flows, nominal_);
  const IsolatedRun run = run_isolated(cf->flows);
  find_reservable(*cf, run);
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

// Per link: whether its flows each run at one rate, all from one first
// byte, and then what they leave of it until each instant some end, taken
// off one flow at a time in the order the solver's fix() takes them
// (rising level: of one weight, slower first).
void find_reservable(ClosedForm& cf, const IsolatedRun& run) {
  const size_t K = cf.cons.size();
  std::vector<std::vector<std::pair<int, double>>> on(K);  // per local constraint: (flow, coefficient)
  for (size_t f = 0; f < cf.flows.flows.size(); ++f)
    for (const FlowUse& u : cf.flows.flows[f].route) on[static_cast<size_t>(u.constraint)].emplace_back(static_cast<int>(f), u.coefficient);
  cf.reservable.assign(K, -1);
  for (size_t kl = 0; kl < K; ++kl) {
    const auto& fs = on[kl];
    if (fs.empty()) continue;
    const auto f0 = static_cast<size_t>(fs.front().first);
    const Time from = run.records[f0].first_byte;
    const double coeff = fs.front().second, weight = cf.flows.flows[f0].weight;
    bool ok = true;
    std::vector<std::pair<Time, double>> flows;  // (end, rate)
    for (size_t i = 0; ok && i < fs.size(); ++i) {
      const auto f = static_cast<size_t>(fs[i].first);
      const FlowRecord& r = run.records[f];
      ok = run.rates[f] == 1 && run.rate[f] > 0 && fs[i].second == coeff && cf.flows.flows[f].weight == weight && r.first_byte == from &&
           r.end > from && (i == 0 || fs[i - 1].first != fs[i].first);  // a route crosses a link once
      flows.emplace_back(r.end, run.rate[f]);
    }
    if (!ok) continue;
    ClosedForm::Reservable res;
    res.unit = coeff * weight;
    std::vector<Time> ends;
    for (const auto& fl : flows) ends.push_back(fl.first);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    res.to = ends.back();
    Time at = from;
    for (const Time end : ends) {
      std::vector<double> rates;
      for (const auto& [e, rate] : flows)
        if (e > at) rates.push_back(rate);
      std::sort(rates.begin(), rates.end());
      double residual = cf.flows.capacity[kl];
      for (const double rate : rates) residual = std::max(0.0, residual - coeff * rate);
      res.stages.push_back({at, residual, rates.back() / weight, static_cast<int>(rates.size())});
      at = end;
    }
    cf.reservable[kl] = static_cast<int>(cf.reservables.size());
    cf.reservables.push_back(std::move(res));
  }
}

// A link of the form that another flow holds may be reserved where
//  - the collective's flows over it each run at one rate, all from one
//    first byte (find_reservable): what they leave is known at each instant;
//  - one flow holds it besides, past its first byte;
//  - at each stage no holder's use at the collective's highest level there
//    fills it (by a margin far above rounding): the link never saturates
//    before the collective's flows over it are fixed, so the other flow
//    cannot change their rates, and where the link binds it, it does so
//    above that level, on what they leave.
// The other flow then runs on the residual, to the bit as beside every flow:
// there the solver takes the collective's flows off the link smallest rate
// first (as find_reservable does), then, the other flow being the link's
// last unfixed user, divides what is left by that flow's own coefficient *
// weight (maxmin.hpp), as the replay's solve of it alone does.
bool ClosedForms::reserve(const ClosedForm& cf, int kl, ConstraintId k, Time t0) {
  if (!x_.o.closed_form_reserve) return false;
  const int ri = cf.reservable[static_cast<size_t>(kl)];
  if (ri < 0 || x_.sys.holders(k) != 1 || x_.sys.user_count(k) != 1) return false;
  const double cap = x_.sys.capacity(k);
  if (cap != cf.flows.capacity[static_cast<size_t>(kl)]) return false;
  const ClosedForm::Reservable& r = cf.reservables[static_cast<size_t>(ri)];
  double mine = 0;
  x_.sys.for_each_user(k, [&](VariableId v, double coeff) { mine = coeff * x_.sys.weight(v); });
  for (const auto& st : r.stages)
    if (!(st.level * (st.n * r.unit + mine) < cap * (1 - 1e-6)) || !(st.residual > 0) || !(st.residual / mine > st.level)) return false;
  held_scratch_.push_back({k, &r, t0, cap});
  return true;
}

void ClosedForms::reserve_on(int ci) { reserve_step(ci, false); }

void ClosedForms::reserve_step(int ci, bool all) {
  const auto it = held_.find(ci);
  if (it == held_.end()) return;
  const Time now = x_.engine.now();
  for (Held& h : it->second) {
    if (h.back) continue;
    const auto& stages = h.r->stages;
    if (all || h.t0 + h.r->to <= now) {
      h.back = true;
      if (h.made == 0) {
        if (h.ev.valid() && x_.engine.pending(h.ev)) x_.engine.cancel(h.ev);
        continue;
      }
      nominal_[static_cast<size_t>(h.k)] = std::numeric_limits<double>::quiet_NaN();
      x_.flows.set_capacity(h.k, h.nominal);
      continue;
    }
    size_t due = h.made;
    while (due < stages.size() && h.t0 + stages[due].from <= now) ++due;
    if (due == h.made) continue;
    h.made = due;
    nominal_[static_cast<size_t>(h.k)] = h.nominal;
    x_.flows.set_capacity(h.k, stages[due - 1].residual);
  }
  if (all) held_.erase(it);
}

void ClosedForms::replay_group(int ci) {
  CollInst& c = colls_.inst(ci);
  const ClosedForm& cf = *c.closed;
  reserve_step(ci, false);  // before the members go on, as the flows' completions solve before their callbacks
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
  reserve_step(ci, true);
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
