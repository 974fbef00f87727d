#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/maxmin.hpp"

using namespace osim;

namespace {

// A slow, dense reference: progressive filling recomputed from scratch every
// round, no heap, no components, no incrementality.
struct RefProblem {
  std::vector<double> cap;             // per constraint
  std::vector<double> weight, bound;   // per variable
  std::vector<std::vector<double>> a;  // a[c][v]
};

std::vector<double> reference_solve(const RefProblem& p) {
  const size_t C = p.cap.size(), V = p.weight.size();
  std::vector<double> r(V, 0);
  std::vector<bool> fixed(V, false);
  size_t left = V;
  while (left > 0) {
    double level = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < C; ++c) {
      double used = 0, w = 0;
      for (size_t v = 0; v < V; ++v) {
        if (p.a[c][v] == 0) continue;
        if (fixed[v])
          used += p.a[c][v] * r[v];
        else
          w += p.a[c][v] * p.weight[v];
      }
      if (w > 0) level = std::min(level, std::max(0.0, p.cap[c] - used) / w);
    }
    for (size_t v = 0; v < V; ++v)
      if (!fixed[v]) level = std::min(level, p.bound[v] / p.weight[v]);
    REQUIRE(std::isfinite(level));
    // Fix variables at their bound, then every variable on a saturated constraint.
    std::vector<size_t> now;
    for (size_t v = 0; v < V; ++v)
      if (!fixed[v] && p.bound[v] / p.weight[v] <= level * (1 + 1e-12)) now.push_back(v);
    for (size_t c = 0; c < C; ++c) {
      double used = 0, w = 0;
      for (size_t v = 0; v < V; ++v) {
        if (p.a[c][v] == 0) continue;
        if (fixed[v])
          used += p.a[c][v] * r[v];
        else
          w += p.a[c][v] * p.weight[v];
      }
      if (w > 0 && std::max(0.0, p.cap[c] - used) / w <= level * (1 + 1e-12))
        for (size_t v = 0; v < V; ++v)
          if (p.a[c][v] > 0 && !fixed[v]) now.push_back(v);
    }
    std::sort(now.begin(), now.end());
    now.erase(std::unique(now.begin(), now.end()), now.end());
    for (size_t v : now) {
      r[v] = std::min(p.bound[v], p.weight[v] * level);
      fixed[v] = true;
      --left;
    }
  }
  return r;
}

// The definition of max-min fairness, checked directly.
void check_maxmin_properties(const MaxMinSystem& s, const std::vector<VariableId>& vars, const std::vector<ConstraintId>& cons) {
  const double eps = 1e-9;
  for (ConstraintId c : cons) CHECK(s.usage(c) <= s.capacity(c) * (1 + eps));
  for (VariableId v : vars) {
    const double r = s.rate(v);
    CHECK(r <= s.bound(v) * (1 + eps));
    if (r >= s.bound(v) * (1 - eps)) continue;  // bottlenecked by its own cap
    // Else some saturated constraint where v has the largest weighted rate.
    bool ok = false;
    for (const auto& use : s.uses(v)) {
      const ConstraintId c = use.constraint;
      if (s.usage(c) < s.capacity(c) * (1 - eps)) continue;
      bool largest = true;
      for (VariableId u : s.users(c))
        if (s.rate(u) / s.weight(u) > r / s.weight(v) * (1 + eps)) largest = false;
      if (largest) ok = true;
    }
    CHECK_MESSAGE(ok, "variable " << v << " is not bottlenecked anywhere");
  }
}

}  // namespace

TEST_CASE("one flow on one link gets the whole link") {
  MaxMinSystem s;
  auto c = s.add_constraint(10);
  auto v = s.add_variable();
  s.expand(c, v);
  CHECK(s.solve() == std::vector<VariableId>{v});
  CHECK(s.rate(v) == doctest::Approx(10));
  CHECK(s.bottleneck(v) == c);
}

TEST_CASE("n equal flows on one link share it equally") {
  MaxMinSystem s;
  auto c = s.add_constraint(100);
  std::vector<VariableId> v;
  for (int i = 0; i < 4; ++i) {
    v.push_back(s.add_variable());
    s.expand(c, v.back());
  }
  s.solve();
  for (auto x : v) CHECK(s.rate(x) == doctest::Approx(25));
}

TEST_CASE("a chain of two links: the slower one binds") {
  MaxMinSystem s;
  auto fast = s.add_constraint(10), slow = s.add_constraint(4);
  auto v = s.add_variable();
  s.expand(fast, v);
  s.expand(slow, v);
  s.solve();
  CHECK(s.rate(v) == doctest::Approx(4));
  CHECK(s.bottleneck(v) == slow);
}

TEST_CASE("a flow bottlenecked elsewhere leaves the rest to the others") {
  // f2 crosses A (10) and B (2); f1 and f3 cross only A.
  MaxMinSystem s;
  auto A = s.add_constraint(10), B = s.add_constraint(2);
  auto f1 = s.add_variable(), f2 = s.add_variable(), f3 = s.add_variable();
  s.expand(A, f1);
  s.expand(A, f2);
  s.expand(B, f2);
  s.expand(A, f3);
  s.solve();
  CHECK(s.rate(f2) == doctest::Approx(2));
  CHECK(s.bottleneck(f2) == B);
  CHECK(s.rate(f1) == doctest::Approx(4));
  CHECK(s.rate(f3) == doctest::Approx(4));
  CHECK(s.bottleneck(f1) == A);
}

TEST_CASE("a per-flow cap below the fair share") {
  MaxMinSystem s;
  auto c = s.add_constraint(10);
  auto capped = s.add_variable(1.0, 3.0);
  auto free = s.add_variable();
  s.expand(c, capped);
  s.expand(c, free);
  s.solve();
  CHECK(s.rate(capped) == doctest::Approx(3));
  CHECK(s.bottleneck(capped) == MaxMinSystem::kOwnBound);
  CHECK(s.rate(free) == doctest::Approx(7));
}

TEST_CASE("weights and coefficients") {
  MaxMinSystem s;
  auto c = s.add_constraint(8);
  auto light = s.add_variable(1.0), heavy = s.add_variable(3.0);
  s.expand(c, light);
  s.expand(c, heavy);
  auto d = s.add_constraint(10);
  auto twice = s.add_variable();
  s.expand(d, twice, 2.0);  // e.g. a bounce through DRAM: written, then read
  s.solve();
  CHECK(s.rate(light) == doctest::Approx(2));
  CHECK(s.rate(heavy) == doctest::Approx(6));
  CHECK(s.rate(twice) == doctest::Approx(5));
}

// A PCIe link that an all-to-all's flows from the NIC (weight 1/sqrt(127),
// each bound below its share there: by a link of its own or its own cap, at
// three levels) share with one prefetch copy (weight 1), which takes what
// they leave. Its rate is the link's capacity less their rates (the smallest
// taken off first, as the solver fixes them) over its own weight, to the
// bit, whatever order the variables were added in: the order the solver sums
// and fixes their weights in, which a replay of the all-to-all beside the
// copy cannot know.
TEST_CASE("one variable left on a constraint: its share does not depend on the order of the others") {
  const double w = 1 / std::sqrt(127.0), cap = 54.82e9;
  const int n = 120;
  auto own = [](int i) { return i % 3 == 0 ? 0.30e9 : i % 3 == 1 ? 0.33e9 : 0.35e9; };
  double expected = -1;
  // Where the copy is added among the flows, and a stride that permutes them.
  for (const std::pair<int, int>& order : std::vector<std::pair<int, int>>{{0, 1}, {60, 1}, {120, 1}, {7, 37}, {93, 89}}) {
    const int copy_at = order.first, stride = order.second;  // named, not bound: CAPTURE's lambda takes them
    CAPTURE(copy_at);
    CAPTURE(stride);
    MaxMinSystem s;
    const ConstraintId link = s.add_constraint(cap);
    std::vector<ConstraintId> mine(n);
    for (int i = 0; i < n; ++i) mine[i] = s.add_constraint(own(i));
    std::vector<VariableId> flow(n, -1);
    VariableId copy = -1;
    for (int k = 0; k < n; ++k) {
      if (k == copy_at) {
        copy = s.add_variable(1.0);
        s.expand(link, copy);
      }
      const int i = k * stride % n;  // a permutation of 0..n-1: the strides are prime to n
      REQUIRE(flow[i] < 0);
      flow[i] = s.add_variable(w, i % 2 ? MaxMinSystem::kUnbounded : own(i) * 0.9);
      s.expand(link, flow[i]);
      s.expand(mine[i], flow[i]);
    }
    if (copy < 0) {
      copy = s.add_variable(1.0);
      s.expand(link, copy);
    }
    s.solve();
    std::vector<double> rates;
    for (const VariableId f : flow) rates.push_back(s.rate(f));
    std::sort(rates.begin(), rates.end());
    double left = cap;
    for (const double r : rates) left = std::max(0.0, left - r);
    CHECK(s.bottleneck(copy) == link);
    CHECK(s.rate(copy) == 1.0 * (left / (1.0 * 1.0)));
    if (expected < 0) expected = s.rate(copy);
    CHECK(s.rate(copy) == expected);
  }
}

TEST_CASE("a variable with no constraint runs at its bound") {
  MaxMinSystem s;
  auto v = s.add_variable(1.0, 42.0);
  s.solve();
  CHECK(s.rate(v) == doctest::Approx(42));
}

TEST_CASE("incremental solve touches only the changed component") {
  MaxMinSystem s;
  auto a = s.add_constraint(10), b = s.add_constraint(20);
  auto va = s.add_variable(), vb = s.add_variable();
  s.expand(a, va);
  s.expand(b, vb);
  s.solve();
  const auto visited = s.stats().variables_visited;
  auto va2 = s.add_variable();
  s.expand(a, va2);
  const auto& changed = s.solve();
  CHECK(changed == std::vector<VariableId>{va, va2});
  CHECK(s.stats().variables_visited - visited == 2);  // vb's component was not recomputed
  CHECK(s.rate(vb) == doctest::Approx(20));
  s.remove_variable(va);
  s.solve();
  CHECK(s.rate(va2) == doctest::Approx(10));
}

TEST_CASE("a variable crossing more constraints than fit in place: removals keep the others' places") {
  // Nine links of 9, 10, ..., 17: a long variable `v` crosses them all
  // (more than the six uses held in place), link 8 twice; short ones
  // u0..u8 each cross one. v binds on link 0 at 9 / 2 and each u takes its
  // link's rest. Removing u's in a scrambled order moves v within the
  // links' user lists; its rate follows the least share left.
  MaxMinSystem s;
  std::vector<ConstraintId> links;
  for (int i = 0; i < 9; ++i) links.push_back(s.add_constraint(9.0 + i));
  std::vector<VariableId> us;
  for (int i = 0; i < 9; ++i) {
    us.push_back(s.add_variable());
    s.expand(links[i], us.back());
  }
  const VariableId v = s.add_variable();
  for (const ConstraintId c : links) s.expand(c, v, 1.0);
  s.expand(links[8], v, 1.0);  // repeated: coefficient 2 on link 8
  REQUIRE(s.uses(v).size() == 9);
  CHECK(s.uses(v)[8].coefficient == 2.0);
  s.solve();
  CHECK(s.rate(v) == doctest::Approx(4.5));
  CHECK(s.bottleneck(v) == links[0]);
  for (int i = 0; i < 8; ++i) CHECK(s.rate(us[i]) == doctest::Approx(9.0 + i - 4.5));
  CHECK(s.rate(us[8]) == doctest::Approx(17.0 - 2 * 4.5));
  CHECK(s.usage(links[8]) == doctest::Approx(17.0));
  for (const int i : {0, 5, 2, 8, 1}) s.remove_variable(us[i]);
  s.solve();
  // Left: u3, u4, u6, u7. Shares for v: 12 / 2 on link 3, the least (then 13 / 2, 15 / 2, 16 / 2, 17 / 2).
  CHECK(s.rate(v) == doctest::Approx(6.0));
  CHECK(s.bottleneck(v) == links[3]);
  for (const ConstraintId c : links) CHECK(s.users(c).size() == (c == links[3] || c == links[4] || c == links[6] || c == links[7] ? 2u : 1u));
  for (const int i : {3, 4, 6, 7}) s.remove_variable(us[i]);
  s.solve();
  CHECK(s.rate(v) == doctest::Approx(8.5));
  CHECK(s.bottleneck(v) == links[8]);
  CHECK(s.usage(links[8]) == doctest::Approx(17.0));
  s.remove_variable(v);
  s.solve();
  for (const ConstraintId c : links) CHECK(s.users(c).empty());
}

TEST_CASE("randomised: the solver matches the reference and the definition") {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    const int C = 1 + static_cast<int>(rng() % 7), V = 1 + static_cast<int>(rng() % 14);
    RefProblem p;
    p.a.assign(C, std::vector<double>(V, 0));
    MaxMinSystem s;
    std::vector<ConstraintId> cons;
    std::vector<VariableId> vars;
    for (int c = 0; c < C; ++c) {
      p.cap.push_back(1.0 + static_cast<double>(rng() % 100));
      cons.push_back(s.add_constraint(p.cap.back()));
    }
    const double coeffs[] = {1.0, 1.0, 2.0, 0.5};
    for (int v = 0; v < V; ++v) {
      const double w = (rng() % 3 == 0) ? 2.0 : 1.0;
      const double bound = (rng() % 4 == 0) ? 1.0 + static_cast<double>(rng() % 50) : MaxMinSystem::kUnbounded;
      p.weight.push_back(w);
      p.bound.push_back(bound);
      vars.push_back(s.add_variable(w, bound));
      const int uses = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < uses; ++k) {
        const int c = static_cast<int>(rng() % C);
        const double a = coeffs[rng() % 4];
        p.a[c][v] += a;
        s.expand(cons[c], vars.back(), a);
      }
    }
    s.solve();
    const auto ref = reference_solve(p);
    for (int v = 0; v < V; ++v) CHECK(s.rate(vars[v]) == doctest::Approx(ref[v]).epsilon(1e-9));
    check_maxmin_properties(s, vars, cons);
  }
}

namespace {
// A variable of a randomised test, as the test made it.
struct Live {
  VariableId id;
  double w, bound;
  std::vector<std::pair<int, double>> uses;  // (index into the test's constraints, coefficient)
  bool active = true;                        // false: dormant
};

// Every live variable of `s` has the rate a fresh system of the active ones
// gives it (a dormant one: 0).
void check_against_fresh(const MaxMinSystem& s, const std::vector<ConstraintId>& cons, const std::vector<Live>& live) {
  MaxMinSystem fresh;
  std::vector<ConstraintId> fc;
  for (ConstraintId c : cons) fc.push_back(fresh.add_constraint(s.capacity(c)));
  std::vector<VariableId> fv(live.size(), -1);
  for (size_t k = 0; k < live.size(); ++k) {
    if (!live[k].active) continue;
    fv[k] = fresh.add_variable(live[k].w, live[k].bound);
    for (auto [c, a] : live[k].uses) fresh.expand(fc[static_cast<size_t>(c)], fv[k], a);
  }
  fresh.solve();
  for (size_t k = 0; k < live.size(); ++k) {
    if (!live[k].active) {
      REQUIRE(s.rate(live[k].id) == 0);
      continue;
    }
    REQUIRE(s.rate(live[k].id) == doctest::Approx(fresh.rate(fv[k])).epsilon(1e-9));
  }
}
}  // namespace

TEST_CASE("randomised: incremental updates equal a solve from scratch") {
  std::mt19937_64 rng(777);
  MaxMinSystem s;
  std::vector<ConstraintId> cons;
  for (int c = 0; c < 12; ++c) cons.push_back(s.add_constraint(5.0 + static_cast<double>(rng() % 50)));
  std::vector<Live> live;
  for (int step = 0; step < 400; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      Live l;
      l.w = 1.0 + static_cast<double>(rng() % 2);
      l.bound = rng() % 5 == 0 ? 2.0 + static_cast<double>(rng() % 20) : MaxMinSystem::kUnbounded;
      l.id = s.add_variable(l.w, l.bound);
      const int uses = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < uses; ++k) {
        const int c = static_cast<int>(rng() % cons.size());
        l.uses.emplace_back(c, 1.0);
        s.expand(cons[c], l.id, 1.0);
      }
      live.push_back(l);
    } else {
      const size_t k = rng() % live.size();
      s.remove_variable(live[k].id);
      live.erase(live.begin() + static_cast<long>(k));
    }
    s.solve();
    check_against_fresh(s, cons, live);
  }
}

TEST_CASE("a dormant variable takes no share until activated") {
  MaxMinSystem s;
  auto c = s.add_constraint(12);
  auto a = s.add_variable();
  s.expand(c, a);
  auto d = s.add_dormant_variable(2.0, 100.0);
  s.expand(c, d);
  CHECK(s.dormant(d));
  CHECK(s.solve() == std::vector<VariableId>{a});  // d changes nothing and is not reported
  CHECK(s.rate(a) == doctest::Approx(12));
  CHECK(s.rate(d) == 0);
  CHECK(s.users(c) == std::vector<VariableId>{a});
  s.set_bound(d, 6.0);  // before activation: kept for it
  CHECK(s.solve().empty());
  s.activate_variable(d);
  CHECK(!s.dormant(d));
  CHECK(s.solve() == std::vector<VariableId>{a, d});
  // weight 2 against 1 would take 8 of 12; its bound 6 leaves 6 to a
  CHECK(s.rate(d) == doctest::Approx(6));
  CHECK(s.bottleneck(d) == MaxMinSystem::kOwnBound);
  CHECK(s.rate(a) == doctest::Approx(6));
  auto gone = s.add_dormant_variable();
  s.expand(c, gone);
  s.remove_variable(gone);  // never active: nothing to recompute
  CHECK(s.solve().empty());
  CHECK(s.users(c) == std::vector<VariableId>{a, d});
}

TEST_CASE("randomised: dormant variables, activated or removed, equal a solve of the active ones") {
  std::mt19937_64 rng(4242);
  MaxMinSystem s;
  std::vector<ConstraintId> cons;
  for (int c = 0; c < 10; ++c) cons.push_back(s.add_constraint(5.0 + static_cast<double>(rng() % 50)));
  std::vector<Live> live;
  for (int step = 0; step < 500; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (live.empty() || op == 0) {
      Live l;
      l.w = 1.0 + static_cast<double>(rng() % 3);
      l.bound = rng() % 4 == 0 ? 2.0 + static_cast<double>(rng() % 20) : MaxMinSystem::kUnbounded;
      l.active = rng() % 2 == 0;
      l.id = l.active ? s.add_variable(l.w, l.bound) : s.add_dormant_variable(l.w, l.bound);
      const int uses = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < uses; ++k) {
        const int c = static_cast<int>(rng() % cons.size());
        const double a = 1.0 + static_cast<double>(rng() % 2);
        l.uses.emplace_back(c, a);
        s.expand(cons[c], l.id, a);
      }
      live.push_back(l);
    } else if (op == 1) {
      const size_t k = rng() % live.size();
      if (!live[k].active) {
        s.activate_variable(live[k].id);
        live[k].active = true;
      }
    } else if (op == 2) {
      const size_t k = rng() % live.size();
      live[k].bound = 1.0 + static_cast<double>(rng() % 30);
      s.set_bound(live[k].id, live[k].bound);
    } else {
      const size_t k = rng() % live.size();
      s.remove_variable(live[k].id);
      live.erase(live.begin() + static_cast<long>(k));
    }
    s.solve();
    check_against_fresh(s, cons, live);
  }
}

TEST_CASE("randomised: a scan and a heap choose the same constraints, to the bit") {
  // Ties are common (integer capacities, equal weights), so the id order of
  // equal shares decides as often as the shares do.
  std::mt19937_64 rng(4711);
  for (int trial = 0; trial < 200; ++trial) {
    const int C = 1 + static_cast<int>(rng() % 80), V = 1 + static_cast<int>(rng() % 60);
    MaxMinSystem scan, heap;
    scan.set_scan_limit(1000);
    heap.set_scan_limit(0);
    RefProblem p;
    p.a.assign(static_cast<size_t>(C), std::vector<double>(static_cast<size_t>(V), 0));
    for (int c = 0; c < C; ++c) {
      p.cap.push_back(1.0 + static_cast<double>(rng() % 8));
      scan.add_constraint(p.cap.back());
      heap.add_constraint(p.cap.back());
    }
    for (int v = 0; v < V; ++v) {
      const double w = rng() % 4 == 0 ? 2.0 : 1.0;
      const double bound = rng() % 5 == 0 ? 0.5 + static_cast<double>(rng() % 6) : MaxMinSystem::kUnbounded;
      p.weight.push_back(w);
      p.bound.push_back(bound);
      scan.add_variable(w, bound);
      heap.add_variable(w, bound);
      const int uses = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < uses; ++k) {
        const int c = static_cast<int>(rng() % static_cast<uint64_t>(C));
        const double a = rng() % 3 == 0 ? 0.5 : 1.0;
        p.a[static_cast<size_t>(c)][static_cast<size_t>(v)] += a;
        scan.expand(c, v, a);
        heap.expand(c, v, a);
      }
    }
    CHECK(scan.solve() == heap.solve());
    const auto ref = reference_solve(p);
    for (int v = 0; v < V; ++v) {
      CAPTURE(trial);
      CAPTURE(v);
      REQUIRE(scan.rate(v) == heap.rate(v));
      REQUIRE(scan.bottleneck(v) == heap.bottleneck(v));
      REQUIRE(scan.rate(v) == doctest::Approx(ref[static_cast<size_t>(v)]).epsilon(1e-9));
    }
  }
}

TEST_CASE("randomised: a remembered component's solution is the one a solve gives, to the bit") {
  // Eight groups of five constraints; each round one group's variables are
  // replaced by one to four drawn from six templates, which differ from the
  // first in one thing each (weight, bound, a coefficient, a constraint), so
  // component shapes recur, in the same order and in others; now and then a
  // capacity changes.
  struct Template {
    double w, bound;
    std::vector<std::pair<int, double>> uses;  // (constraint within the group, coefficient)
  };
  constexpr double inf = MaxMinSystem::kUnbounded;
  const std::vector<Template> templates = {{1, inf, {{0, 1}, {1, 1}}},   {2, inf, {{0, 1}, {1, 1}}}, {1, 0.25, {{0, 1}, {1, 1}}},
                                           {1, inf, {{0, 0.5}, {1, 1}}}, {1, inf, {{0, 1}, {2, 1}}}, {1, inf, {{3, 1}, {4, 0.5}}}};
  std::mt19937_64 rng(99);
  MaxMinSystem memo, plain;
  plain.set_memo(false);
  for (int c = 0; c < 40; ++c) {
    memo.add_constraint(1.0 + static_cast<double>(c % 3));
    plain.add_constraint(1.0 + static_cast<double>(c % 3));
  }
  std::vector<std::vector<VariableId>> group(8);
  for (int round = 0; round < 2000; ++round) {
    CAPTURE(round);
    const int g = static_cast<int>(rng() % 8);
    if (rng() % 10 == 0) {
      const double cap = 1.0 + static_cast<double>(rng() % 3);
      memo.set_capacity(5 * g + 1, cap);
      plain.set_capacity(5 * g + 1, cap);
    }
    for (const VariableId v : group[static_cast<size_t>(g)]) {
      memo.remove_variable(v);
      plain.remove_variable(v);
    }
    group[static_cast<size_t>(g)].clear();
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
      const Template& t = templates[rng() % templates.size()];
      const VariableId v = memo.add_variable(t.w, t.bound);
      REQUIRE(plain.add_variable(t.w, t.bound) == v);
      for (const auto& [c, a] : t.uses) {
        memo.expand(5 * g + c, v, a);
        plain.expand(5 * g + c, v, a);
      }
      group[static_cast<size_t>(g)].push_back(v);
    }
    REQUIRE(memo.solve() == plain.solve());
    for (const auto& vars : group)
      for (const VariableId v : vars) {
        REQUIRE(memo.rate(v) == plain.rate(v));
        REQUIRE(memo.bottleneck(v) == plain.bottleneck(v));
      }
  }
  CHECK(memo.stats().reused > 1000);  // most shapes recur
  CHECK(plain.stats().reused == 0);
}
