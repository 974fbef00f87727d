#include "flows.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace osim {

Bandwidth FlowRecord::achieved() const {
  const double s = duration().s();
  return s > 0 ? Bandwidth{bytes / s} : Bandwidth::unlimited();
}

ConstraintId FlowRecord::main_bottleneck() const {
  ConstraintId best = MaxMinSystem::kOwnBound;
  Time best_t = Time::from_ps(-1);
  for (const auto& [c, t] : bottleneck_time)
    if (t > best_t || (t == best_t && c < best)) {
      best = c;
      best_t = t;
    }
  return best;
}

FlowId FlowModel::start(FlowSpec spec) {
  assert(spec.bytes >= 0);
  assert((!spec.route.empty() || std::isfinite(spec.rate_cap)) && "a flow with no route needs a rate cap");
  const FlowId id = take_slot(free_ids_, flows_);
  Flow& fl = flows_[id];
  // Every field reset in place (a reused slot keeps its buffers; building a
  // fresh Flow and assigning it cost a few % of a workload run).
  fl.bytes = spec.bytes;
  fl.start = engine_.now();
  fl.first_byte = engine_.now() + spec.latency;
  fl.bottleneck_time.clear();
  fl.remaining = spec.bytes;
  fl.rate = 0;
  fl.bottleneck = MaxMinSystem::kOwnBound;
  fl.last_update = Time::zero();
  fl.completion_batch = -1;
  attach(id, std::move(spec));
  fl.active = false;
  fl.resumed = false;
  // Always through the engine, so a callback never runs inside start().
  schedule_activation(id);
  return id;
}

void FlowModel::reserve(size_t more) {
  sys_.reserve_variables(more);
  reserve_room(var_to_flow_, sys_.variable_slots() + more);
  reserve_activations_ = more;
}

// The route is held by the solver variable from the flow's start on, which
// takes part in solves from the first byte (activate()).
void FlowModel::attach(FlowId id, FlowSpec spec) {
  Flow& fl = flows_[id];
  fl.var = sys_.add_dormant_variable(spec.weight, spec.rate_cap);
  for (const FlowUse& u : spec.route) sys_.expand(u.constraint, fl.var, u.coefficient);
  if (var_to_flow_.size() <= static_cast<size_t>(fl.var)) {
    reserve_room(var_to_flow_, static_cast<size_t>(fl.var) + 1);
    var_to_flow_.resize(static_cast<size_t>(fl.var) + 1, -1);
  }
  var_to_flow_[fl.var] = id;
  fl.done_key = spec.on_done.key;
  fl.done = done_index(spec.on_done);
  fl.running = true;
  ++active_;
}

uint32_t FlowModel::done_index(const FlowDone& d) {
  if (d.fn == nullptr) return 0;
  for (size_t i = done_fns_.size(); i-- > 1;)  // the latest first: a few entries
    if (done_fns_[i].first == d.fn && done_fns_[i].second == d.ctx) return static_cast<uint32_t>(i);
  done_fns_.emplace_back(d.fn, d.ctx);
  return static_cast<uint32_t>(done_fns_.size() - 1);
}

void FlowModel::schedule_activation(FlowId id) {
  const Time t = flows_[id].first_byte;
  Open& o = open_activation_;
  if (o.batch < 0 || o.time != t || o.seq != engine_.next_seq()) {
    o.batch = new_batch(t, false);
    o.time = t;
    o.seq = engine_.next_seq();
  }
  if (reserve_activations_ > 0) {
    reserve_room(batches_[o.batch].flows, batches_[o.batch].flows.size() + reserve_activations_);
    reserve_activations_ = 0;
  }
  batches_[o.batch].flows.push_back(id);
}

FlowState FlowModel::state(FlowId f) const {
  const Flow& fl = flows_[f];
  FlowState st;
  st.record.id = f;
  st.record.bytes = fl.bytes;
  st.record.start = fl.start;
  st.record.first_byte = fl.first_byte;
  st.record.end = fl.running ? Time::zero() : fl.last_update;  // complete() settled it at its end
  st.record.bottleneck_time = fl.bottleneck_time;
  st.remaining = fl.remaining;
  st.rate = fl.rate;
  st.bottleneck = fl.bottleneck;
  st.last_update = fl.last_update;
  st.running = fl.running;
  st.active = fl.active;
  return st;
}

FlowId FlowModel::resume(FlowSpec spec, const FlowState& st) {
  assert(st.running && st.remaining >= 0 && st.last_update <= engine_.now());
  assert(st.active || st.record.first_byte >= engine_.now());
  const FlowId id = take_slot(free_ids_, flows_);
  Flow& fl = flows_[id];
  fl.bytes = st.record.bytes;
  fl.start = st.record.start;
  fl.first_byte = st.record.first_byte;
  fl.bottleneck_time = st.record.bottleneck_time;
  fl.remaining = st.remaining;
  fl.rate = st.active ? st.rate : 0;
  fl.bottleneck = st.bottleneck;
  fl.last_update = st.last_update;
  fl.completion_batch = -1;
  attach(id, std::move(spec));
  fl.active = st.active;
  fl.resumed = st.active;
  if (st.active) {
    // A fresh variable: the solve reports it changed, settles the progress
    // made at the old rate since last_update and schedules its completion.
    sys_.activate_variable(fl.var);
    request_solve();
    return id;
  }
  schedule_activation(id);
  return id;
}

void FlowModel::add_bytes(ConstraintId c, double bytes) {
  if (constraint_bytes_.size() <= static_cast<size_t>(c)) constraint_bytes_.resize(static_cast<size_t>(c) + 1, 0);
  constraint_bytes_[static_cast<size_t>(c)] += bytes;
}

int FlowModel::new_batch(Time t, bool completions) {
  const int b = take_slot(free_batches_, batches_);
  batches_[b].event =
      engine_.at(t, &Engine::call<&FlowModel::run_batch_event, FlowModel>, this, static_cast<uint64_t>(b) * 2 + (completions ? 1 : 0));
  batches_[b].live = 0;
  return b;
}

void FlowModel::run_batch(int b, bool completions) {
  Open& o = completions ? open_completion_ : open_activation_;
  if (o.batch == b) o.batch = -1;
  // Members' callbacks may open new batches (never join this one: it is
  // still held), which can move batches_: indexed afresh for each member.
  for (size_t i = 0; i < batches_[b].flows.size(); ++i) {
    const FlowId f = batches_[b].flows[i];
    if (f == kGone) continue;  // its completion was rescheduled
    if (!completions) {
      activate(f);
      continue;
    }
    assert(flows_[f].completion_batch == b && flows_[f].completion_slot == i);
    flows_[f].completion_batch = -1;
    complete(f);
  }
  batches_[b].flows.clear();  // keeps the capacity
  free_batches_.push_back(b);
}

void FlowModel::unschedule_completion(Flow& fl) {
  if (fl.completion_batch < 0) return;
  Batch& b = batches_[fl.completion_batch];
  b.flows[fl.completion_slot] = kGone;
  if (--b.live == 0) {  // nothing left in it: drop its event
    engine_.cancel(b.event);
    if (open_completion_.batch == fl.completion_batch) open_completion_.batch = -1;
    b.flows.clear();
    free_batches_.push_back(fl.completion_batch);
  }
  fl.completion_batch = -1;
}

double FlowModel::rate(FlowId f) const { return flows_[f].rate; }

void FlowModel::set_rate_cap(FlowId f, double cap) {
  Flow& fl = flows_[f];
  assert(fl.running && cap > 0);
  if (sys_.bound(fl.var) == cap) return;
  sys_.set_bound(fl.var, cap);
  if (fl.active) request_solve();
}

void FlowModel::set_capacity(ConstraintId c, double capacity) {
  if (sys_.capacity(c) == capacity) return;
  sys_.set_capacity(c, capacity);
  request_solve();
}

void FlowModel::activate(FlowId f) {
  Flow& fl = flows_[f];
  fl.last_update = engine_.now();
  if (fl.remaining <= 0) {
    complete(f);
    return;
  }
  fl.active = true;
  sys_.activate_variable(fl.var);
  request_solve();
}

void FlowModel::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  engine_.after(Time::zero(), &Engine::call<&FlowModel::solve_now, FlowModel>, this, 0);
}

void FlowModel::settle(Flow& fl) {
  const Time now = engine_.now();
  const Time dt = now - fl.last_update;
  if (dt > Time::zero()) {
    const double moved = std::min(fl.remaining, fl.rate * dt.s());
    fl.remaining -= moved;
    count_bytes(fl, moved);
    auto& bt = fl.bottleneck_time;
    auto it = std::find_if(bt.begin(), bt.end(), [&](const auto& p) { return p.first == fl.bottleneck; });
    if (it == bt.end())
      bt.emplace_back(fl.bottleneck, dt);
    else
      it->second += dt;
  }
  fl.last_update = now;
}

void FlowModel::count_bytes(const Flow& fl, double moved) {
  sys_.for_each_use(fl.var, [&](ConstraintId c, double coeff) { add_bytes(c, moved * coeff); });
}

void FlowModel::solve_now() {
  solve_pending_ = false;
  const auto& changed = sys_.solve();
  for (VariableId v : changed) {
    const FlowId f = var_to_flow_[v];
    assert(f >= 0);
    Flow& fl = flows_[f];
    if (fl.resumed) {
      fl.resumed = false;
      if (sys_.rate(v) == fl.rate) {
        // Its rate stands: finish where its old model would have, from
        // where it last changed (settling now would only add rounding).
        assert(fl.completion_batch < 0);
        schedule_completion(f, fl.last_update + transfer_time(fl.remaining, Bandwidth{fl.rate}));
        continue;
      }
    }
    settle(fl);
    if (rate_observer) rate_observer(f, fl.rate, sys_.rate(v));
    fl.rate = sys_.rate(v);
    fl.bottleneck = sys_.bottleneck(v);
    unschedule_completion(fl);
    assert(fl.rate > 0);
    schedule_completion(f, engine_.now() + transfer_time(fl.remaining, Bandwidth{fl.rate}));
  }
}

void FlowModel::schedule_completion(FlowId f, Time t) {
  Flow& fl = flows_[f];
  Open& o = open_completion_;
  if (o.batch < 0 || o.time != t || o.seq != engine_.next_seq()) {
    o.batch = new_batch(t, true);
    o.time = t;
    o.seq = engine_.next_seq();
  }
  fl.completion_batch = o.batch;
  fl.completion_slot = static_cast<uint32_t>(batches_[o.batch].flows.size());
  batches_[o.batch].flows.push_back(f);
  ++batches_[o.batch].live;
}

void FlowModel::complete(FlowId f) {
  Flow& fl = flows_[f];
  settle(fl);
  // The completion time was rounded up to a picosecond: count the last crumb.
  count_bytes(fl, fl.remaining);
  fl.remaining = 0;
  if (rate_observer && fl.rate > 0) rate_observer(f, fl.rate, 0.0);
  fl.rate = 0;
  var_to_flow_[fl.var] = -1;
  sys_.remove_variable(fl.var);
  if (fl.active) request_solve();
  fl.var = -1;
  fl.active = false;
  fl.running = false;
  --active_;
  // The slot is freed after the callback (a flow it starts takes another
  // slot); start() resets every field. The record lends the slot's
  // bottleneck list and gives it back: a reused slot keeps its buffer.
  const auto [fn, ctx] = done_fns_[fl.done];
  fl.done = 0;
  if (fn) {
    FlowRecord rec;
    rec.id = f;
    rec.bytes = fl.bytes;
    rec.start = fl.start;
    rec.first_byte = fl.first_byte;
    rec.end = engine_.now();
    rec.bottleneck_time = std::move(fl.bottleneck_time);
    fn(ctx, fl.done_key, rec);
    flows_[f].bottleneck_time = std::move(rec.bottleneck_time);
  }
  free_ids_.push_back(f);
}

}  // namespace osim
