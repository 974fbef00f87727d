// Flows: byte transfers whose rates come from the max-min solver.
//
// A flow has a route (constraint ids with coefficients), a size, a start-up
// latency before its first byte and an optional rate cap. From its first byte
// on it is a solver variable. Whenever any rate in its component changes, the
// flow's progress is settled at the old rate and its completion event is
// rescheduled at the new one. Solves are batched: all flows that start or end
// at one instant trigger a single solve at that instant.
//
// Each flow also keeps, for reports, how long each constraint was its
// bottleneck.
#pragma once

#include <functional>

#include <boost/container/small_vector.hpp>
#include <string>
#include <vector>

#include "engine.hpp"
#include "inline_vector.hpp"
#include "maxmin.hpp"
#include "slots.hpp"
#include "units.hpp"

namespace osim {

using FlowId = int32_t;

struct FlowUse {
  ConstraintId constraint;
  double coefficient = 1.0;
};

struct FlowRecord {
  FlowId id = -1;
  double bytes = 0;
  Time start;       // when start() was called
  Time first_byte;  // start + latency
  Time end;
  /// (constraint, time it bottlenecked this flow); kOwnBound = the flow's cap.
  /// Room for one in place: most flows have one bottleneck all along (every
  /// flow of the 1,024-GPU all-to-all), and a run may hold a million.
  InlineVector<std::pair<ConstraintId, Time>, 1> bottleneck_time;
  [[nodiscard]] Time duration() const { return end - start; }
  /// bytes / (end - start): what a user measuring the transfer would see.
  [[nodiscard]] Bandwidth achieved() const;
  /// The constraint that bound this flow for the longest time (ties: lowest id).
  [[nodiscard]] ConstraintId main_bottleneck() const;
};

/// What a flow calls when it ends: fn(ctx, key, record), where a
/// captureless lambda converts to fn. Plain data: a run may hold a million
/// flows, each keeping its key and an index into its model's few (fn, ctx).
struct FlowDone {
  using Fn = void (*)(void* ctx, uint64_t key, const FlowRecord& record);
  Fn fn = nullptr;
  void* ctx = nullptr;
  uint64_t key = 0;
};

struct FlowSpec {
  boost::container::small_vector<FlowUse, 6> route;
  double bytes = 0;
  Time latency;
  double rate_cap = MaxMinSystem::kUnbounded;  // bytes/s
  double weight = 1.0;
  FlowDone on_done;
};

/// A flow's state between two rate changes: enough to carry it from one
/// flow model into another (FlowModel::state, FlowModel::resume).
struct FlowState {
  FlowRecord record;                                  // start, first byte, bytes, bottleneck times so far
  double remaining = 0;                               // bytes left at last_update
  double rate = 0;                                    // since last_update
  ConstraintId bottleneck = MaxMinSystem::kOwnBound;  // since last_update
  Time last_update;
  bool running = false;  // false: it has finished
  bool active = false;   // past its first byte
};

class FlowModel {
 public:
  FlowModel(Engine& engine, MaxMinSystem& system) : engine_(engine), sys_(system) {}
  FlowModel(const FlowModel&) = delete;
  FlowModel& operator=(const FlowModel&) = delete;

  /// Starts a flow now. A flow with no route needs a finite rate_cap.
  FlowId start(FlowSpec spec);
  /// Room for `more` flows about to start at this instant (an all-to-all's
  /// million): their solver variables and the batch they start in grow
  /// once, not by doubling. Changes no result.
  void reserve(size_t more);
  [[nodiscard]] size_t active() const { return active_; }
  /// A flow's state as last settled (its rate holds from last_update on).
  [[nodiscard]] FlowState state(FlowId f) const;
  /// Starts a flow that has run elsewhere until now (a closed-form
  /// collective handing its flows back, see Executor): `st` from state(),
  /// its times already in this model's clock, its constraint ids in this
  /// model's. It keeps its record, progress and rate; the next solve at this
  /// instant settles it at that rate up to now. Bytes it moved before
  /// st.last_update are not counted here: see add_bytes.
  FlowId resume(FlowSpec spec, const FlowState& st);
  /// Counts bytes moved across a constraint outside this model (utilisation reports).
  void add_bytes(ConstraintId c, double bytes);
  /// Changes a running flow's cap (e.g. interference); takes effect in the
  /// next solve at this instant.
  void set_rate_cap(FlowId f, double cap);
  /// Changes a constraint's capacity; takes effect in the next solve at this instant.
  void set_capacity(ConstraintId c, double capacity);
  [[nodiscard]] bool running(FlowId f) const { return f >= 0 && static_cast<size_t>(f) < flows_.size() && flows_[f].running; }
  /// Current rate of a running flow (0 before its first byte).
  [[nodiscard]] double rate(FlowId f) const;
  /// Called whenever a flow's rate changes (new_rate 0 when it ends); for traces.
  std::function<void(FlowId, double old_rate, double new_rate)> rate_observer;
  /// Bytes moved across each constraint so far (coefficient-weighted), for
  /// utilisation reports; settled up to the last rate change.
  [[nodiscard]] const std::vector<double>& constraint_bytes() const { return constraint_bytes_; }

 private:
  struct Flow {
    // What a running flow needs of its FlowSpec (bytes and latency go to
    // its record's fields at start; route, weight and cap to its solver
    // variable, dormant until the first byte): a run may hold a million
    // flows at once. Its FlowRecord is built when it ends (id: its slot;
    // end: the time then).
    // (Eight-byte fields first, then four, then one: no padding.)
    uint64_t done_key = 0;  // FlowDone::key
    double bytes = 0;       // FlowRecord's
    Time start;
    Time first_byte;
    decltype(FlowRecord::bottleneck_time) bottleneck_time;
    double remaining = 0;
    double rate = 0;
    Time last_update;
    VariableId var = -1;
    ConstraintId bottleneck = MaxMinSystem::kOwnBound;
    int completion_batch = -1;     // the batch holding this flow's completion, if scheduled
    uint32_t completion_slot = 0;  // its entry there
    uint32_t done = 0;             // FlowDone's fn and ctx: their entry in done_fns_ (0: none)
    bool running = false;
    bool active = false;   // past its first byte: its variable takes part in solves
    bool resumed = false;  // resume()d and not solved since (see solve_now)
  };
  // Flows that start, or end, at the same instant (an all-to-all's dozens of
  // pairs) share one engine event: a batch. A flow joins the last batch only
  // when that batch is at the same time and no other event was scheduled
  // since, so events run in exactly the order one event per flow would give.
  // A rescheduled completion leaves kGone in its old batch.
  static constexpr FlowId kGone = -1;
  struct Batch {
    std::vector<FlowId> flows;
    EventId event;
    int live = 0;
  };
  void attach(FlowId id, FlowSpec spec);
  void schedule_activation(FlowId id);
  int new_batch(Time t, bool completions);
  void run_batch(int b, bool completions);
  void run_batch_event(uint64_t packed) { run_batch(static_cast<int>(packed / 2), packed % 2 != 0); }
  void unschedule_completion(Flow& fl);
  void activate(FlowId f);
  void request_solve();
  void solve_now();
  void schedule_completion(FlowId f, Time t);
  void settle(Flow& fl);
  void count_bytes(const Flow& fl, double moved);
  void complete(FlowId f);

  Engine& engine_;
  MaxMinSystem& sys_;
  BlockVector<Flow> flows_;  // stable addresses; no relocation as it grows
  std::vector<FlowId> free_ids_;
  // The distinct (fn, ctx) of flows' FlowDone, entry 0 none: a flow keeps
  // an index here, not two words (its owners are a few components).
  std::vector<std::pair<FlowDone::Fn, void*>> done_fns_{{nullptr, nullptr}};
  uint32_t done_index(const FlowDone& d);
  std::vector<FlowId> var_to_flow_;
  std::vector<double> constraint_bytes_;
  std::vector<Batch> batches_;
  std::vector<int> free_batches_;
  struct Open {  // the batch new flows may join
    int batch = -1;
    Time time;
    uint64_t seq = 0;  // engine_.next_seq() right after it was last extended
  } open_activation_, open_completion_;
  size_t reserve_activations_ = 0;  // room for the activation batch the next flow joins (reserve())
  bool solve_pending_ = false;
  size_t active_ = 0;
};

}  // namespace osim
