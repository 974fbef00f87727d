// Closed-form all-to-alls: an NCCL all-to-all whose links nothing else uses
// (no flow running or about to start on them, no other closed form replaying
// over them) runs exactly as it would by itself. When the same group moves
// the same bytes at the same caps a second time, its flows are simulated
// once, privately (core/isolated.hpp), and the result replayed, one event per
// instant at which some of its flows end. When anything touches its links or
// caps before it ends (a flow starts over them, a kernel slows its flows),
// it hands its unfinished flows back to the shared flow model in the state
// they have then, and the run goes on as if they had been there all along.
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "core/isolated.hpp"
#include "gpu/coll_inst.hpp"
#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"

namespace osim::exec {

// An NCCL all-to-all alone on its links, simulated once by itself.
struct ClosedForm {
  IsolatedFlows flows;                    // the collective's flows, constraints numbered locally
  std::vector<ConstraintId> cons;         // local -> the executor's constraint
  std::vector<std::pair<int, int>> ends;  // per flow: (from, to) members
  std::vector<double> base;               // per flow: its cap before the compute slowdown
  std::vector<double> slow;               // per member: the comm slowdown its flows were capped by
  bool via_host = false;                  // its flows go through host memory (which clock share they take)
  // Flows that complete at one instant, with what they add to the reports
  // (local constraint ids; -1: the flows' own caps).
  struct Group {
    Time end;
    std::vector<int> flows;  // in the order the flow model completed them
    std::vector<std::pair<int, Time>> bottleneck_time;
    std::vector<std::pair<int, int64_t>> transfers;
    // Per main bottleneck, its flows' earliest first byte: with the group's end, the union of their spans.
    std::vector<std::pair<int, Time>> first_byte;
    std::vector<std::pair<int, double>> bytes;
  };
  std::vector<Group> groups;
};

/// Renumbers the flows' constraints 0.. (in the order of the system's ids:
/// the solver breaks ties by id) and gives them their capacities; returns
/// local -> system id.
std::vector<ConstraintId> localise(const MaxMinSystem& sys, IsolatedFlows& in);

class ClosedForms final : public LinkClaims {
 public:
  ClosedForms(ExecContext& x, Routes& routes, CollFlows& colls, SmShare& sm);
  /// Once every constraint exists (at the run's start).
  void init();
  /// Replays all-to-all instance ci in closed form where it may; false: simulate its flows.
  bool try_closed_form(int ci);
  /// Instance ci hands its unfinished flows back to the flow model, as they are just before now.
  void hand_back(int ci);
  /// Whether all of instance ci's flows not replayed yet end at this instant
  /// (a cap changed now changes none of them).
  [[nodiscard]] bool ends_now(int ci);
  /// Before a flow starts over `route` (or a constraint's capacity changes):
  /// closed forms replaying over it hand back.
  void hand_back_route(const RouteUses& route) override;
  void hand_back_constraint(ConstraintId c) override;
  [[nodiscard]] int64_t replayed() const { return count_; }
  [[nodiscard]] int64_t handed_back() const { return handed_back_; }

 private:
  std::unique_ptr<ClosedForm> build(int ci, const std::vector<double>& slow);
  void replay_group(int ci);
  void release(int ci);

  ExecContext& x_;
  Routes& routes_;
  CollFlows& colls_;
  SmShare& sm_;
  // Closed forms by what determines them: the group, its bytes, channels and
  // the comm slowdown of each member's flows (routes and capacities are fixed).
  struct Key {
    int group;
    double wire;
    int channels;
    std::vector<double> slow;
    bool operator<(const Key& o) const { return std::tie(group, wire, channels, slow) < std::tie(o.group, o.wire, o.channels, o.slow); }
  };
  struct Entry {
    int seen = 0;  // launches before it was built
    std::unique_ptr<ClosedForm> form;
  };
  std::map<Key, Entry> forms_;
  Key key_;                 // scratch for try_closed_form
  std::vector<int> owner_;  // per constraint: the instance replaying a closed form over it, or -1
  int64_t count_ = 0, handed_back_ = 0;
};

}  // namespace osim::exec
