#include "maxmin.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <functional>

namespace osim {

ConstraintId MaxMinSystem::add_constraint(double capacity) {
  assert(capacity > 0 && std::isfinite(capacity));
  cons_.push_back(Cons{});
  cons_.back().capacity = capacity;
  return static_cast<ConstraintId>(cons_.size() - 1);
}

void MaxMinSystem::set_capacity(ConstraintId c, double capacity) {
  assert(capacity > 0 && std::isfinite(capacity));
  cons_[c].capacity = capacity;
  mark_dirty(c);
}

void MaxMinSystem::mark_dirty(ConstraintId c) {
  if (!cons_[c].dirty) {
    cons_[c].dirty = true;
    dirty_cons_.push_back(c);
  }
}

VariableId MaxMinSystem::new_variable(double weight, double bound, bool dormant) {
  assert(weight > 0 && std::isfinite(weight));
  assert(bound > 0);
  const VariableId v = take_slot(free_vars_, vars_);
  Var& x = vars_[v];
  x.weight = weight;
  x.bound = bound;
  x.rate = 0;
  x.bottleneck = kOwnBound;
  x.elems.clear();
  x.alive = true;
  x.dormant = dormant;
  x.fixed = false;
  if (!dormant) mark_dirty_var(v);
  return v;
}

void MaxMinSystem::mark_dirty_var(VariableId v) {
  Var& x = vars_[v];
  if (!x.dirty) {
    x.dirty = true;
    dirty_vars_.push_back(v);
  }
}

// Element i of v joins its constraint's user list (and marks it dirty).
void MaxMinSystem::join_users(VariableId v, uint32_t i) {
  Elem& e = vars_[v].elems[i];
  Cons& k = cons_[e.c];
  e.pos = static_cast<uint32_t>(k.users.size());
  // Room for every variable that holds it, dormant ones about to join
  // included (an all-to-all's thousand flows over one link): it grows once.
  if (k.users.size() == k.users.capacity()) k.users.reserve(std::max<size_t>(k.holders, 2 * k.users.capacity()));
  k.users.push_back(v);
  mark_dirty(e.c);
}

// A variable holds a constraint once (expand() adds up repeats).
const MaxMinSystem::Elem& MaxMinSystem::elem_of(VariableId v, ConstraintId c) const {
  for (const Elem& e : vars_[v].elems)
    if (e.c == c) return e;
  assert(false && "the variable does not use the constraint");
  __builtin_unreachable();
}

void MaxMinSystem::reserve_variables(size_t more) {
  if (more > free_vars_.size()) reserve_room(vars_, vars_.size() + (more - free_vars_.size()));
}

VariableId MaxMinSystem::add_variable(double weight, double bound) { return new_variable(weight, bound, false); }

VariableId MaxMinSystem::add_dormant_variable(double weight, double bound) { return new_variable(weight, bound, true); }

void MaxMinSystem::activate_variable(VariableId v) {
  assert(alive(v) && vars_[v].dormant);
  Var& x = vars_[v];
  x.dormant = false;
  for (uint32_t i = 0; i < x.elems.size(); ++i) join_users(v, i);
  mark_dirty_var(v);
}

void MaxMinSystem::expand(ConstraintId c, VariableId v, double coefficient) {
  assert(alive(v) && c >= 0 && c < static_cast<ConstraintId>(cons_.size()));
  assert(coefficient > 0 && std::isfinite(coefficient));
  Var& x = vars_[v];
  for (Elem& e : x.elems) {
    if (e.c == c) {
      e.coeff += coefficient;
      if (!x.dormant) mark_dirty(c);
      return;
    }
  }
  x.elems.push_back(Elem{coefficient, c, 0});
  ++cons_[c].holders;
  if (!x.dormant) join_users(v, static_cast<uint32_t>(x.elems.size() - 1));  // a dormant one joins when activated
}

void MaxMinSystem::set_bound(VariableId v, double bound) {
  assert(alive(v) && bound > 0);
  Var& x = vars_[v];
  x.bound = bound;
  if (x.dormant) return;  // takes effect when activated
  mark_dirty_var(v);
  for (const Elem& e : x.elems) mark_dirty(e.c);
}

void MaxMinSystem::remove_variable(VariableId v) {
  assert(alive(v));
  Var& x = vars_[v];
  for (const Elem& e : x.elems) --cons_[e.c].holders;
  for (const Elem& e : x.elems) {
    if (x.dormant) break;  // in no constraint's user list: nothing to unlink
    Cons& k = cons_[e.c];
    // swap-remove the user entry, fixing the moved entry's back-pointer
    const uint32_t last = static_cast<uint32_t>(k.users.size() - 1);
    if (e.pos != last) {
      k.users[e.pos] = k.users[last];
      elem_of(k.users[e.pos], e.c).pos = e.pos;
    }
    k.users.pop_back();
    mark_dirty(e.c);
  }
  x.elems.clear();
  x.alive = false;
  x.dormant = false;
  x.rate = 0;
  free_vars_.push_back(v);
}

double MaxMinSystem::usage(ConstraintId c) const {
  double u = 0;
  for (const VariableId v : cons_[c].users) u += elem_of(v, c).coeff * vars_[v].rate;
  return u;
}

std::vector<MaxMinSystem::Use> MaxMinSystem::uses(VariableId v) const {
  std::vector<Use> out;
  for (const Elem& e : vars_[v].elems) out.push_back(Use{e.c, e.coeff});
  return out;
}

std::vector<VariableId> MaxMinSystem::users(ConstraintId c) const {
  std::vector<VariableId> out;
  out.assign(cons_[c].users.begin(), cons_[c].users.end());
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<VariableId>& MaxMinSystem::solve() {
  changed_.clear();
  ++stats_.solves;
  ++epoch_;
  // Components reachable from dirty constraints.
  for (ConstraintId start : dirty_cons_) {
    cons_[start].dirty = false;
    if (cons_[start].mark == epoch_) continue;
    comp_vars_.clear();
    comp_cons_.clear();
    queue_.clear();
    queue_.push_back(start);
    cons_[start].mark = epoch_;
    for (size_t qi = 0; qi < queue_.size(); ++qi) {
      const ConstraintId c = queue_[qi];
      comp_cons_.push_back(c);
      for (const VariableId v : cons_[c].users) {
        Var& x = vars_[v];
        if (x.mark == epoch_) continue;
        x.mark = epoch_;
        comp_vars_.push_back(v);
        for (const Elem& e : x.elems) {
          if (cons_[e.c].mark != epoch_) {
            cons_[e.c].mark = epoch_;
            queue_.push_back(e.c);
          }
        }
      }
    }
    if (!comp_vars_.empty()) solve_component(comp_vars_, comp_cons_);
  }
  dirty_cons_.clear();
  // Variables touching no constraint run at their bound.
  for (VariableId v : dirty_vars_) {
    Var& x = vars_[v];
    x.dirty = false;
    if (!x.alive || x.dormant || x.mark == epoch_) continue;
    assert(x.elems.empty());
    assert(std::isfinite(x.bound) && "a variable with no constraint needs a finite bound");
    x.mark = epoch_;
    if (x.rate != x.bound) changed_.push_back(v);
    x.rate = x.bound;
    x.bottleneck = kOwnBound;
  }
  dirty_vars_.clear();
  std::sort(changed_.begin(), changed_.end());
  return changed_;
}

// Fixing a variable at the current level never lowers a constraint's share
// ((remaining - a w L) / (sumw - a w) >= remaining / sumw when L <= the
// share), so a heap entry left from before is a lower bound: new entries are
// pushed lazily, once per touched constraint, when the exact minimum is needed.
void MaxMinSystem::fix(VariableId v, double r, ConstraintId why) {
  Var& x = vars_[v];
  x.fixed = true;
  if (x.rate != r) changed_.push_back(v);
  x.rate = r;
  x.bottleneck = why;
  for (const Elem& e : x.elems) {
    Cons& k = cons_[e.c];
    if (k.unfixed == 0) continue;
    if (--k.unfixed == 0 && scanning_) scan_[static_cast<size_t>(k.scan_at)].share = kUnbounded;
    k.remaining = std::max(0.0, k.remaining - e.coeff * r);
    k.unfixed_xor ^= v;
    if (k.unfixed == 1) {
      // One user left: its own coefficient * weight, not the running
      // difference (that depends on the order the others were summed and
      // fixed in when the weights are not whole numbers).
      const Var& last = vars_[k.unfixed_xor];
      k.sumw = elem_of(k.unfixed_xor, e.c).coeff * last.weight;
    } else {
      k.sumw -= e.coeff * x.weight;
    }
    if (!k.touched) {
      k.touched = true;
      touched_.push_back(e.c);
    }
  }
}

// The heap holds at most one entry per constraint, updated in place (a
// touched constraint keeps its old share, a lower bound, until the flush).
void MaxMinSystem::heap_sift(size_t i) {
  const HeapEntry e = heap_[i];
  while (i > 0) {  // up
    const size_t parent = (i - 1) / 2;
    if (!(heap_[parent] > e)) break;
    heap_place(i, heap_[parent]);
    i = parent;
  }
  for (;;) {  // down
    size_t child = 2 * i + 1;
    if (child >= heap_.size()) break;
    if (child + 1 < heap_.size() && heap_[child] > heap_[child + 1]) ++child;
    if (!(e > heap_[child])) break;
    heap_place(i, heap_[child]);
    i = child;
  }
  heap_place(i, e);
}

void MaxMinSystem::heap_set(ConstraintId c, double share) {
  const int32_t at = heap_pos_[static_cast<size_t>(c)];
  if (at < 0) {
    heap_.push_back(HeapEntry{share, c});
    heap_sift(heap_.size() - 1);
  } else {
    heap_[static_cast<size_t>(at)].share = share;
    heap_sift(static_cast<size_t>(at));
  }
}

void MaxMinSystem::heap_remove(ConstraintId c) {
  const int32_t at = heap_pos_[static_cast<size_t>(c)];
  if (at < 0) return;
  heap_pos_[static_cast<size_t>(c)] = -1;
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  if (static_cast<size_t>(at) < heap_.size()) {
    heap_place(static_cast<size_t>(at), last);
    heap_sift(static_cast<size_t>(at));
  }
}

void MaxMinSystem::flush_touched(double level, bool scan) {
  for (ConstraintId c : touched_) {
    Cons& k = cons_[c];
    k.touched = false;
    if (k.unfixed > 0) {
      // Shares never fall below the current level (rounding guard).
      const double share = std::max(level, k.sumw > 0 ? k.remaining / k.sumw : level);
      if (scan)
        scan_[static_cast<size_t>(k.scan_at)].share = share;
      else
        heap_set(c, share);
    } else if (!scan) {
      heap_remove(c);
    }
  }
  touched_.clear();
}

// What a component's solution depends on, in the order the solve reads it
// (the order of the variables sets the order of floating-point sums), and
// its hash (a multiply a word, over four independent lanes so that the
// multiplies overlap: a collision costs only a comparison).
uint64_t MaxMinSystem::shape_of(const std::vector<VariableId>& vars, const std::vector<ConstraintId>& cons) {
  size_t words = 1 + 2 * cons.size();
  for (const VariableId v : vars) words += 3 + 2 * vars_[v].elems.size();
  shape_.resize(words);
  uint64_t* out = shape_.data();
  auto put = [&](uint64_t w) { *out++ = w; };
  put(cons.size());
  for (const ConstraintId c : cons) {
    put(static_cast<uint64_t>(c));
    put(std::bit_cast<uint64_t>(cons_[c].capacity));
  }
  for (const VariableId v : vars) {
    const Var& x = vars_[v];
    put(std::bit_cast<uint64_t>(x.weight));
    put(std::bit_cast<uint64_t>(x.bound));
    put(x.elems.size());
    for (const Elem& e : x.elems) {
      put(static_cast<uint64_t>(e.c));
      put(std::bit_cast<uint64_t>(e.coeff));
    }
  }
  assert(out == shape_.data() + words);
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h0 = 0, h1 = 1, h2 = 2, h3 = 3;
  const uint64_t* w = shape_.data();
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    h0 = (h0 ^ w[i]) * kMul;
    h1 = (h1 ^ w[i + 1]) * kMul;
    h2 = (h2 ^ w[i + 2]) * kMul;
    h3 = (h3 ^ w[i + 3]) * kMul;
  }
  for (; i < words; ++i) h0 = (h0 ^ w[i]) * kMul;
  uint64_t h = ((h0 * kMul ^ h1) * kMul ^ h2) * kMul ^ h3;
  h *= kMul;
  return h ^ (h >> 32);
}

void MaxMinSystem::solve_component(const std::vector<VariableId>& vars, const std::vector<ConstraintId>& cons) {
  ++stats_.components;
  stats_.variables_visited += vars.size();
  const bool memo = memo_on_ && cons.size() <= scan_limit_ && vars.size() <= kMemoVariables;
  uint64_t hash = 0;
  if (memo) {
    hash = shape_of(vars, cons);
    if (const auto it = memo_.find(hash); it != memo_.end() && it->second.shape == shape_) {
      ++stats_.reused;
      for (size_t i = 0; i < vars.size(); ++i) {
        Var& x = vars_[vars[i]];
        const auto& [rate, why] = it->second.solution[i];
        x.fixed = true;
        if (x.rate != rate) changed_.push_back(vars[i]);
        x.rate = rate;
        x.bottleneck = why;
      }
      return;
    }
  }
  heap_.clear();
  bounded_.clear();
  bounded_.reserve(vars.size());
  for (ConstraintId c : cons) {
    Cons& k = cons_[c];
    k.remaining = k.capacity;
    k.sumw = 0;
    k.unfixed = 0;
    k.unfixed_xor = 0;
  }
  for (VariableId v : vars) {
    Var& x = vars_[v];
    x.fixed = false;
    for (const Elem& e : x.elems) {
      Cons& k = cons_[e.c];
      k.sumw += e.coeff * x.weight;
      ++k.unfixed;
      k.unfixed_xor ^= v;
    }
    if (std::isfinite(x.bound)) bounded_.emplace_back(x.bound / x.weight, v);
  }
  // The constraint to saturate next: the least (share, id) among those with
  // unfixed users, from a scan of a small component's constraints or the top
  // of a heap (a heap entry whose constraint has none left is dropped when it
  // surfaces; that is never the least).
  const bool scan = cons.size() <= scan_limit_;
  scanning_ = scan;
  if (scan) {
    scan_.clear();
    for (ConstraintId c : cons) {
      Cons& k = cons_[c];
      k.scan_at = static_cast<int32_t>(scan_.size());
      scan_.push_back(ScanEntry{k.unfixed > 0 ? k.remaining / k.sumw : kUnbounded, c});
    }
  } else {
    heap_.reserve(cons.size());
    if (heap_pos_.size() < cons_.size()) heap_pos_.resize(cons_.size(), -1);
    for (ConstraintId c : cons) {
      const Cons& k = cons_[c];
      if (k.unfixed > 0) heap_.push_back(HeapEntry{k.remaining / k.sumw, c});
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    for (size_t i = 0; i < heap_.size(); ++i) heap_pos_[static_cast<size_t>(heap_[i].c)] = static_cast<int32_t>(i);
  }
  auto least = [&]() -> HeapEntry {
    HeapEntry top{kUnbounded, -1};
    if (scan) {  // shares of constraints with unfixed users are finite
      for (const ScanEntry& e : scan_)
        if (e.share < top.share || (e.share == top.share && e.share != kUnbounded && (top.c < 0 || e.c < top.c))) top = HeapEntry{e.share, e.c};
      return top;
    }
    while (!heap_.empty() && cons_[heap_.front().c].unfixed == 0) heap_remove(heap_.front().c);
    return heap_.empty() ? top : heap_.front();
  };
  std::sort(bounded_.begin(), bounded_.end());

  size_t unfixed = vars.size();
  size_t bi = 0;
  double level = 0;
  touched_.clear();
  // Whether no unfixed constraint's share is below `lb` (the shares of
  // touched ones are lower bounds): least().share >= lb, by a scan that stops
  // at the first share below it.
  auto none_below = [&](double lb) {
    if (!scan) return lb <= least().share;
    for (const ScanEntry& e : scan_)
      if (e.share < lb) return false;
    return true;
  };
  auto fix_next_bound = [&] {  // the least bound not yet reached is the level now
    const auto [lb, v] = bounded_[bi++];
    level = std::max(level, lb);
    fix(v, vars_[v].bound, kOwnBound);
    --unfixed;
  };
  while (unfixed > 0) {
    while (bi < bounded_.size() && vars_[bounded_[bi].second].fixed) ++bi;
    const double lb = bi < bounded_.size() ? bounded_[bi].first : kUnbounded;
    if (!touched_.empty()) {
      // The shares are lower bounds until flushed: a bound at or below them
      // all is next; else the exact minimum is needed.
      if (bi < bounded_.size() && none_below(lb))
        fix_next_bound();
      else
        flush_touched(level, scan);
      continue;
    }
    const HeapEntry top = least();
    const double lc = top.share;
    if (lb <= lc && bi < bounded_.size()) {
      fix_next_bound();
      continue;
    }
    assert((std::isfinite(lc) || std::isfinite(lb)) && "unconstrained, unbounded variable");
    level = std::max(level, lc);
    const ConstraintId c = top.c;
    if (!scan) heap_remove(c);
    // Saturate c: every unfixed user runs at weight * level. Collect first,
    // because fix() edits the counters we iterate by.
    std::vector<VariableId>& to_fix = to_fix_;
    to_fix.clear();
    for (const VariableId v : cons_[c].users)
      if (!vars_[v].fixed) to_fix.push_back(v);
    for (VariableId v : to_fix) {
      fix(v, std::min(vars_[v].bound, vars_[v].weight * level), c);
      --unfixed;
    }
  }
  scanning_ = false;
  for (ConstraintId c : touched_) cons_[c].touched = false;  // flags must not leak into the next solve
  touched_.clear();
  for (const HeapEntry& e : heap_) heap_pos_[static_cast<size_t>(e.c)] = -1;
  heap_.clear();
  if (memo) {
    if (memo_words_ + shape_.size() > kMemoWords) {
      memo_.clear();
      memo_words_ = 0;
    }
    Memo& m = memo_[hash];
    memo_words_ = memo_words_ - m.shape.size() + shape_.size();  // a shape of the same hash replaced
    m.shape = shape_;
    m.solution.clear();
    for (const VariableId v : vars) m.solution.emplace_back(vars_[v].rate, vars_[v].bottleneck);
  }
}

}  // namespace osim
