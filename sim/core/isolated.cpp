#include "isolated.hpp"

#include <cassert>

namespace osim {

namespace {

struct Private {
  Engine engine;
  MaxMinSystem sys;
  FlowModel model{engine, sys};
  std::vector<FlowId> ids;

  Private(const IsolatedFlows& in, IsolatedRun* run) {
    for (const double c : in.capacity) sys.add_constraint(c);
    ids.reserve(in.flows.size());
    for (size_t i = 0; i < in.flows.size(); ++i) {
      FlowSpec f;
      f.route = in.flows[i].route;
      f.bytes = in.flows[i].bytes;
      f.latency = in.flows[i].latency;
      f.rate_cap = in.flows[i].rate_cap;
      f.weight = in.flows[i].weight;
      if (run)
        f.on_done = {[](void* ctx, uint64_t k, const FlowRecord& rec) {
                       IsolatedRun& out = *static_cast<IsolatedRun*>(ctx);
                       out.records[k] = rec;
                       out.records[k].id = static_cast<FlowId>(k);
                       out.order.push_back(static_cast<int>(k));
                     },
                     run, i};
      ids.push_back(model.start(std::move(f)));
    }
  }
};

}  // namespace

IsolatedRun run_isolated(const IsolatedFlows& in) {
  IsolatedRun run;
  run.records.resize(in.flows.size());
  run.order.reserve(in.flows.size());
  run.rate.assign(in.flows.size(), 0.0);
  run.rates.assign(in.flows.size(), 0);
  Private p(in, &run);
  std::vector<int> index;  // FlowId -> flow index
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (index.size() <= static_cast<size_t>(p.ids[i])) index.resize(static_cast<size_t>(p.ids[i]) + 1, -1);
    index[static_cast<size_t>(p.ids[i])] = static_cast<int>(i);
  }
  p.model.rate_observer = [&](FlowId f, double, double now) {
    if (now <= 0) return;  // it ends
    const auto i = static_cast<size_t>(index[static_cast<size_t>(f)]);
    run.rate[i] = now;
    ++run.rates[i];
  };
  p.engine.run();
  assert(run.order.size() == in.flows.size());
  return run;
}

std::vector<FlowState> state_before(const IsolatedFlows& in, Time t) {
  Private p(in, nullptr);
  if (t > Time::zero()) p.engine.run_until(t - Time::from_ps(1));
  std::vector<FlowState> out;
  out.reserve(p.ids.size());
  for (const FlowId f : p.ids) out.push_back(p.model.state(f));
  return out;
}

}  // namespace osim
