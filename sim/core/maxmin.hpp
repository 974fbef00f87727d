// Max-min fair sharing of capacities among variables.
//
// What it solves
// --------------
// A system of constraints (resources with a capacity, e.g. one direction of a
// PCIe link) and variables (activities that want a rate, e.g. one DMA). A
// variable v uses constraint c with coefficient a(c,v) > 0. Every variable has
// a weight w(v) > 0 and an optional bound b(v) (its own cap, e.g. a copy
// engine's ceiling). The solver finds the weighted max-min fair allocation:
//
//   feasible:   for every c,  sum_v a(c,v) * r(v) <= capacity(c);  r(v) <= b(v)
//   max-min:    no r(v)/w(v) can grow without lowering some r(u)/w(u) that is
//               already smaller or equal.
//
// Equivalently every variable is *bottlenecked*: either r(v) = b(v), or it
// uses a saturated constraint c on which r(v)/w(v) is the largest among c's
// variables. The allocation is unique. The solver records, for every variable,
// the constraint that bottlenecked it (or kOwnBound).
//
// How (progressive filling, SimGrid lmm style)
// --------------------------------------------
// Raise a common level L from 0; each unfixed variable's rate is w(v)*L. The
// next event is the smallest of: a constraint saturating (remaining capacity /
// sum of unfixed a*w), or a variable reaching its bound (b/w). Saturation fixes
// every unfixed variable on that constraint; the bound fixes that variable.
// Fixed variables' use is subtracted from the other constraints they cross.
// A constraint with one unfixed variable left divides its remaining capacity
// by that variable's own coefficient * weight, not by the running sum less
// the fixed ones': so its share does not depend on the order the others
// were summed or fixed in (the order of a component's variables, which an
// all-to-all replayed beside one other flow of a link cannot know).
// Constraints' shares live in a lazy min-heap, so a component of E incidences
// costs O(E log E).
//
// Incremental: the allocation of one connected component (variables linked
// through shared constraints) does not depend on any other. Adding or
// removing a variable, or changing a capacity, marks constraints dirty;
// solve() recomputes only the components that hold a dirty constraint or
// variable and reports which variables' rates changed. A small component
// whose shape was solved before takes that solution again (set_memo).
//
// The solver knows only integer ids: nothing about links, GPUs or bytes.
// Invariants (asserted): capacities > 0, coefficients > 0, weights > 0, and a
// variable with no constraint has a finite bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inline_vector.hpp"
#include "slots.hpp"

namespace osim {

using ConstraintId = int32_t;
using VariableId = int32_t;

class MaxMinSystem {
 public:
  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  static constexpr ConstraintId kOwnBound = -1;

  ConstraintId add_constraint(double capacity);
  void set_capacity(ConstraintId c, double capacity);

  VariableId add_variable(double weight = 1.0, double bound = kUnbounded);
  /// A variable that takes no part in solves until activate_variable(): its
  /// constraints can be given now (a flow's route before its first byte) and
  /// it costs its constraints nothing meanwhile; its rate stays 0.
  VariableId add_dormant_variable(double weight = 1.0, double bound = kUnbounded);
  void activate_variable(VariableId v);
  /// Room for `more` variables about to be added (an all-to-all's flows):
  /// the storage grows once, not by doubling (each doubling copies every
  /// variable and touches fresh memory).
  void reserve_variables(size_t more);
  [[nodiscard]] bool dormant(VariableId v) const { return vars_[v].dormant; }
  /// How many live variables use constraint c, dormant ones included: 0
  /// means nothing running or about to run shares it.
  [[nodiscard]] uint32_t holders(ConstraintId c) const { return cons_[c].holders; }
  /// Variable v uses constraint c with the given coefficient (adds up if repeated).
  void expand(ConstraintId c, VariableId v, double coefficient = 1.0);
  void set_bound(VariableId v, double bound);
  void remove_variable(VariableId v);

  /// Recomputes the dirty components. Returns the variables whose rate
  /// changed (new variables included), sorted by id.
  const std::vector<VariableId>& solve();

  [[nodiscard]] double rate(VariableId v) const { return vars_[v].rate; }
  [[nodiscard]] ConstraintId bottleneck(VariableId v) const { return vars_[v].bottleneck; }
  [[nodiscard]] double weight(VariableId v) const { return vars_[v].weight; }
  [[nodiscard]] double bound(VariableId v) const { return vars_[v].bound; }
  [[nodiscard]] double capacity(ConstraintId c) const { return cons_[c].capacity; }
  /// sum over variables of coefficient * rate (after the last solve).
  [[nodiscard]] double usage(ConstraintId c) const;
  [[nodiscard]] bool alive(VariableId v) const { return v >= 0 && v < static_cast<VariableId>(vars_.size()) && vars_[v].alive; }
  [[nodiscard]] size_t constraint_count() const { return cons_.size(); }
  [[nodiscard]] size_t variable_slots() const { return vars_.size(); }
  struct Use {
    ConstraintId constraint;
    double coefficient;
  };
  [[nodiscard]] std::vector<Use> uses(VariableId v) const;
  /// f(constraint, coefficient) for each constraint v uses, in expand() order; no allocation.
  template <class F>
  void for_each_use(VariableId v, F&& f) const {
    for (const Elem& e : vars_[v].elems) f(e.c, e.coeff);
  }
  [[nodiscard]] std::vector<VariableId> users(ConstraintId c) const;
  /// How many variables take part in c's solves (holders less the dormant ones).
  [[nodiscard]] size_t user_count(ConstraintId c) const { return cons_[c].users.size(); }
  /// f(variable, coefficient) for each variable taking part in c's solves; no allocation.
  template <class F>
  void for_each_user(ConstraintId c, F&& f) const {
    for (const VariableId v : cons_[c].users) f(v, elem_of(v, c).coeff);
  }

  /// Components with at most this many constraints find their next
  /// saturating constraint by a scan, larger ones by a heap: the same
  /// choices, so the same rates to the bit (tests set it to compare).
  void set_scan_limit(size_t constraints) {
    scan_limit_ = constraints;
    set_memo(memo_on_);  // what was remembered is forgotten
  }
  /// Small components recur in the same shape (the same constraints and
  /// capacities; the same variables, in the same order, with the same
  /// weights, bounds and uses): each shape's solution is remembered and
  /// reused, the same rates to the bit. Tests turn it off to compare.
  void set_memo(bool on) {
    memo_on_ = on;
    memo_.clear();
    memo_words_ = 0;
  }

  /// Work counters, for benchmarks.
  struct Stats {
    uint64_t solves = 0;
    uint64_t components = 0;
    uint64_t variables_visited = 0;
    uint64_t reused = 0;  // components whose remembered solution was reused
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  struct Elem {
    double coeff;
    ConstraintId c;
    uint32_t pos;  // index in cons_[c].users
  };
  struct Var {
    // Wider fields first: no padding (a run may hold a million variables).
    double weight = 1.0;
    double bound = kUnbounded;
    double rate = 0.0;
    uint64_t mark = 0;            // scratch: BFS epoch
    InlineVector<Elem, 6> elems;  // routes cross a few resources: no allocation
    ConstraintId bottleneck = kOwnBound;
    bool alive = false;
    bool dormant = false;  // not in its constraints' users yet (Elem::pos unset)
    bool dirty = false;
    bool fixed = false;  // scratch
  };
  // What a solve reads of a constraint first, in one cache line: a
  // component's constraints lie scattered over the whole system.
  struct alignas(64) Cons {
    std::vector<VariableId> users;  // each one's Elem for this constraint is found by its id (a few to scan)
    uint64_t mark = 0;
    double capacity = 0;
    // scratch for one solve
    double remaining = 0;
    double sumw = 0;
    uint32_t unfixed = 0;
    VariableId unfixed_xor = 0;  // the ids of its unfixed users xor'ed: the last one's id when one is left
    bool touched = false;  // its share changed since its last heap entry
    bool dirty = false;
    uint32_t holders = 0;  // live variables using it, dormant ones included
    int32_t scan_at = -1;  // scratch: its entry in scan_ (a component solved by scan)
  };

  VariableId new_variable(double weight, double bound, bool dormant);
  void mark_dirty(ConstraintId c);
  void mark_dirty_var(VariableId v);
  void join_users(VariableId v, uint32_t i);
  [[nodiscard]] const Elem& elem_of(VariableId v, ConstraintId c) const;
  Elem& elem_of(VariableId v, ConstraintId c) { return const_cast<Elem&>(std::as_const(*this).elem_of(v, c)); }
  void solve_component(const std::vector<VariableId>& vars, const std::vector<ConstraintId>& cons);
  void fix(VariableId v, double r, ConstraintId why);
  void flush_touched(double level, bool scan);

  std::vector<Var> vars_;
  std::vector<Cons> cons_;
  std::vector<VariableId> free_vars_;
  std::vector<ConstraintId> dirty_cons_;
  std::vector<VariableId> dirty_vars_;
  std::vector<VariableId> changed_;
  uint64_t epoch_ = 0;
  size_t scan_limit_ = 48;
  Stats stats_;

  // scratch reused across solves
  struct HeapEntry {
    double share;
    ConstraintId c;
    bool operator>(const HeapEntry& o) const { return share != o.share ? share > o.share : c > o.c; }
  };
  std::vector<HeapEntry> heap_;    // an indexed min-heap: one entry per constraint at most
  std::vector<int32_t> heap_pos_;  // per constraint: its place in heap_, or -1
  void heap_set(ConstraintId c, double share);
  void heap_remove(ConstraintId c);
  void heap_sift(size_t i);
  void heap_place(size_t i, const HeapEntry& e) {
    heap_[i] = e;
    heap_pos_[static_cast<size_t>(e.c)] = static_cast<int32_t>(i);
  }
  // A small component's constraints, contiguous for the scan: each one's
  // last computed share (infinite once no unfixed variable uses it).
  struct ScanEntry {
    double share;
    ConstraintId c;
  };
  std::vector<ScanEntry> scan_;
  bool scanning_ = false;  // solve_component is scanning scan_ (else the heap)
  // Remembered solutions of small components, by the hash of their shape.
  static constexpr size_t kMemoVariables = 64;           // components of more are solved every time
  static constexpr size_t kMemoWords = size_t{1} << 20;  // forgotten all at once past this (8 MB of keys)
  struct Memo {
    std::vector<uint64_t> shape;
    std::vector<std::pair<double, ConstraintId>> solution;  // per variable, in the component's order: rate, bottleneck
  };
  bool memo_on_ = true;
  std::unordered_map<uint64_t, Memo> memo_;
  size_t memo_words_ = 0;
  std::vector<uint64_t> shape_;                                                                   // scratch: the component being solved
  uint64_t shape_of(const std::vector<VariableId>& vars, const std::vector<ConstraintId>& cons);  // fills shape_, returns its hash
  std::vector<std::pair<double, VariableId>> bounded_;
  std::vector<VariableId> comp_vars_;
  std::vector<ConstraintId> comp_cons_;
  std::vector<ConstraintId> queue_;
  std::vector<VariableId> to_fix_;
  std::vector<ConstraintId> touched_;
};

}  // namespace osim
