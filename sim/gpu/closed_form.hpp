// Closed-form all-to-alls: an NCCL all-to-all whose links nothing else uses
// (no flow running or about to start on them, no other closed form replaying
// over them) runs exactly as it would by itself. When the same group moves
// the same bytes at the same caps a second time, its flows are simulated
// once, privately (core/isolated.hpp), and the result replayed, one event per
// instant at which some of its flows end. When anything touches its links or
// caps before it ends (a flow starts over them, a kernel slows its flows),
// it hands its unfinished flows back to the shared flow model in the state
// they have then, and the run goes on as if they had been there all along.
//
// Reservation (ExecOptions::closed_form_reserve): a link of the all-to-all
// that one other flow holds (a prefetch copy on the PCIe link the flows from
// the NIC reach the GPU by) does not stop the replay where the other flow
// cannot change the all-to-all's rates: while the all-to-all's flows over it
// run, the link's capacity is lowered to what they leave, and the other flow
// is solved on that (ClosedForms::reserve, its conditions), at the rate the
// flow-by-flow solve gives it, to the bit.
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
  // A link whose flows of the collective each run at one rate, all from
  // one first byte: what a flow beside them would find there, from that
  // first byte to each instant some of them end.
  struct Reservable {
    struct Stage {
      Time from;             // from the launch
      double residual = 0;   // capacity less each running flow's use, taken off as the solver does
      double level = 0;      // the highest rate / weight among its running flows
      int n = 0;             // how many run
    };
    std::vector<Stage> stages;  // then the link's own capacity from `to` on
    Time to;
    double unit = 0;  // each flow's coefficient * weight
  };
  std::vector<int> reservable;  // per local constraint: its entry in reservables, or -1
  std::vector<Reservable> reservables;
};

/// Renumbers the flows' constraints 0.. (in the order of the system's ids:
/// the solver breaks ties by id) and gives them their capacities; returns
/// local -> system id.
/// nominal: per constraint, its capacity where the system's is lowered for a
/// while (a reservation), else NaN; empty: none.
std::vector<ConstraintId> localise(const MaxMinSystem& sys, IsolatedFlows& in, const std::vector<double>& nominal = {});

/// Finds the form's links that can be reserved (ClosedForm::reservables).
void find_reservable(ClosedForm& cf, const IsolatedRun& run);

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
  [[nodiscard]] int64_t reserved() const { return reserved_; }
  /// Per constraint: its capacity while a replay has lowered it, else NaN (see localise).
  [[nodiscard]] const std::vector<double>& nominal() const { return nominal_; }

 private:
  std::unique_ptr<ClosedForm> build(int ci, const std::vector<double>& slow);
  void replay_group(int ci);
  void release(int ci);
  // A reservation of one constraint while instance ci replays.
  struct Held {
    ConstraintId k;
    const ClosedForm::Reservable* r;
    Time t0;             // the launch
    double nominal = 0;  // its capacity
    size_t made = 0;     // how many of r->stages were made
    bool back = false;   // its capacity given back
    EventId ev{};        // the event that makes the first stage
  };
  /// Whether constraint k (local kl) of form cf, held by another flow, can be
  /// reserved; appends the reservation to held_scratch_.
  bool reserve(const ClosedForm& cf, int kl, ConstraintId k, Time t0);
  void reserve_on(int ci);
  /// Makes the reservations' stages due by now (all: gives every link back at once).
  void reserve_step(int ci, bool all);

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
  std::vector<double> nominal_;
  std::map<int, std::vector<Held>> held_;  // per instance replaying with reservations
  std::vector<Held> held_scratch_;
  int64_t count_ = 0, handed_back_ = 0, reserved_ = 0;
};

}  // namespace osim::exec
