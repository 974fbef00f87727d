// Flows alone on their constraints, simulated by themselves.
//
// The max-min allocation of one connected component does not depend on any
// other (maxmin.hpp), so flows that share constraints with nothing else run
// exactly as they would inside a bigger model, shifted in time. A caller that
// knows a set of flows is alone (a collective on links nothing else uses) can
// simulate them once here, on a private engine from time zero, and replay the
// result wherever the same set recurs; if something joins them part-way,
// state_before() gives each flow's state to resume it in the shared model
// (FlowModel::resume).
#pragma once

#include <vector>

#include "flows.hpp"

namespace osim {

/// Flows over constraints 0..capacity.size()-1 (local ids), all started at
/// time zero in the given order; on_done is ignored.
struct IsolatedFlows {
  std::vector<double> capacity;
  std::vector<FlowSpec> flows;
};

struct IsolatedRun {
  std::vector<FlowRecord> records;  // per flow, times from zero; ids are flow indices
  std::vector<int> order;           // flow indices in the order they completed
  std::vector<double> rate;         // per flow: its last rate before it ended
  std::vector<int> rates;           // per flow: how many rates it ran at (1: one all along)
};

/// Runs the flows to completion.
IsolatedRun run_isolated(const IsolatedFlows& in);

/// Each flow's state just before time t (every event at t or later not yet
/// run), times from zero: running, or finished.
std::vector<FlowState> state_before(const IsolatedFlows& in, Time t);

}  // namespace osim
