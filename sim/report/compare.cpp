#include "report/compare.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/intervals.hpp"
#include "core/stats.hpp"

namespace osim {

namespace {

using Interval = std::pair<double, double>;

// Length of [a, b) covered by a merged interval list.
double covered(const std::vector<Interval>& v, double a, double b) {
  auto it = std::lower_bound(v.begin(), v.end(), Interval{a, a}, [](const Interval& x, const Interval& y) { return x.second < y.first; });
  double t = 0;
  for (; it != v.end() && it->first < b; ++it) t += std::max(0.0, std::min(b, it->second) - std::max(a, it->first));
  return t;
}

// The category another op contributes to an overlap window.
std::string category(const std::string& cls) {
  for (const char* c : {"h2d", "d2h", "d2d", "p2p"})
    if (cls.rfind(c, 0) == 0) return c;
  if (cls == "gemm" || cls.rfind("attention", 0) == 0 || cls == "memory kernel" || cls == "kernel") return "compute";
  if (cls.rfind("all_", 0) == 0 || cls == "reduce_scatter" || cls == "send" || cls == "recv") return "comm";
  return "";
}

struct Acc {
  int count = 0;
  double m = 0, s = 0;
  std::vector<double> errs;
  void add(double meas, double sim) {
    ++count;
    m += meas;
    s += sim;
    if (meas > 0) errs.push_back(std::abs(sim - meas) / meas);
  }
  ErrorRow row(const std::string& key) const {
    ErrorRow r;
    r.key = key;
    r.count = count;
    r.measured_s = m * 1e-9;
    r.simulated_s = s * 1e-9;
    r.median_op_error = median(errs);
    r.worst_op_error = errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end());
    return r;
  }
};

// "l12 qkv" -> "l12"; "" when the label does not start with a layer tag.
std::string layer_tag(const std::string& label) {
  if (label.size() < 2 || label[0] != 'l' || !std::isdigit(static_cast<unsigned char>(label[1]))) return "";
  size_t i = 1;
  while (i < label.size() && std::isdigit(static_cast<unsigned char>(label[i]))) ++i;
  if (i < label.size() && label[i] != ' ') return "";
  return label.substr(0, i);
}

}  // namespace

RecordComparison compare_records(const Records& meas, const Records& sim) {
  auto mismatch = [&](const std::string& what) {
    return InputError(SourceLocation{sim.file, 0, 0},
                      fmt::format("is not a run of the same schedule as {}: {}; simulate the schedule the measured run wrote", meas.file, what));
  };
  if (meas.ranks.size() != sim.ranks.size()) throw mismatch(fmt::format("{} ranks against {}", sim.ranks.size(), meas.ranks.size()));
  RecordComparison c;
  c.name = meas.name;
  c.makespan_measured_s = meas.makespan_ns * 1e-9;
  c.makespan_simulated_s = sim.makespan_ns * 1e-9;
  std::map<std::string, Acc> classes, windows;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> gaps;  // measured, simulated (ns)
  Acc layer_all;
  for (size_t r = 0; r < meas.ranks.size(); ++r) {
    const auto& mo = meas.ranks[r].ops;
    const auto& so = sim.ranks[r].ops;
    if (mo.size() != so.size()) throw mismatch(fmt::format("rank {} has {} ops against {}", r, so.size(), mo.size()));
    for (size_t i = 0; i < mo.size(); ++i)
      if (mo[i].index != so[i].index || mo[i].label != so[i].label || mo[i].cls != so[i].cls)
        throw mismatch(fmt::format("rank {} op {} is '{}' ({}) against '{}' ({})", r, mo[i].index, so[i].label, so[i].cls, mo[i].label, mo[i].cls));
    // Measured intervals per category, for the overlap windows.
    std::map<std::string, std::vector<Interval>> by_cat;
    for (const auto& o : mo)
      if (const std::string cat = category(o.cls); !cat.empty()) by_cat[cat].emplace_back(o.start, o.end);
    for (auto& [k, v] : by_cat) v = merge_intervals(std::move(v));
    // Gaps between adjacent compute ops (one after the other in the program,
    // the second started after the first ended in both runs).
    for (size_t i = 0; i + 1 < mo.size(); ++i) {
      if (category(mo[i].cls) != "compute" || category(mo[i + 1].cls) != "compute") continue;
      const double gm = mo[i + 1].start - mo[i].end, gs = so[i + 1].start - so[i].end;
      if (gm < 0 || gs < 0) continue;
      const double mid = 0.5 * (mo[i].end + mo[i + 1].start);
      const auto h2d = by_cat.find("h2d");
      const bool copying = h2d != by_cat.end() &&
                           std::any_of(h2d->second.begin(), h2d->second.end(), [&](const Interval& v) { return v.first <= mid && mid <= v.second; });
      auto& g = gaps[copying ? "|| h2d" : "alone"];
      g.first.push_back(gm);
      g.second.push_back(gs);
    }
    // Steps and layers.
    struct Span {
      double m0 = 1e300, m1 = -1e300, s0 = 1e300, s1 = -1e300;
    };
    std::map<std::string, Span> layers;
    std::vector<std::string> layer_order;
    std::vector<std::pair<std::string, std::pair<double, double>>> marks_m, marks_s;  // step markers
    int forward = -1;
    std::optional<std::pair<double, double>> steps_end;  // measured, simulated
    for (size_t i = 0; i < mo.size(); ++i) {
      const RecordOp& m = mo[i];
      const RecordOp& s = so[i];
      if (m.cls == "marker" && m.label == kStepsEndMarker) {
        steps_end = {m.start, s.start};
        continue;
      }
      if (m.cls == "marker" && m.label.rfind("step ", 0) == 0) {
        ++forward;
        marks_m.push_back({m.label, {m.start, 0}});
        marks_s.push_back({s.label, {s.start, 0}});
        continue;
      }
      const std::string cat = category(m.cls);
      if (cat.empty()) continue;
      classes[m.cls].add(m.end - m.start, s.end - s.start);
      std::set<std::string> beside;
      const double d = m.end - m.start;
      for (const auto& [k, v] : by_cat)
        if (k != cat && d > 0 && covered(v, m.start, m.end) >= 0.5 * d) beside.insert(k);
      std::string key = m.cls;
      if (beside.empty())
        key += " alone";
      else {
        std::string sep = " || ";
        for (const auto& b : beside) {
          key += sep + b;
          sep = " + ";
        }
      }
      windows[key].add(m.end - m.start, s.end - s.start);
      if (cat == "compute" || cat == "comm") {
        if (const std::string tag = layer_tag(m.label); !tag.empty()) {
          const std::string lk = fmt::format("f{}.{}", std::max(forward, 0), tag);
          auto [it, fresh] = layers.try_emplace(lk);
          if (fresh) layer_order.push_back(lk);
          Span& sp = it->second;
          sp.m0 = std::min(sp.m0, m.start);
          sp.m1 = std::max(sp.m1, m.end);
          sp.s0 = std::min(sp.s0, s.start);
          sp.s1 = std::max(sp.s1, s.end);
        }
      }
    }
    for (const auto& lk : layer_order) {
      const Span& sp = layers[lk];
      layer_all.add(sp.m1 - sp.m0, sp.s1 - sp.s0);
      if (r == 0) {
        Acc a;
        a.add(sp.m1 - sp.m0, sp.s1 - sp.s0);
        c.layers.push_back(a.row(lk));
      }
    }
    if (r == 0) {
      double mend = 0, send = 0;
      for (const auto& o : mo) mend = std::max(mend, std::max(o.end, o.returned));
      for (const auto& o : so) send = std::max(send, std::max(o.end, o.returned));
      if (steps_end) mend = steps_end->first, send = steps_end->second;
      for (size_t k = 0; k < marks_m.size(); ++k) {
        const double m1 = k + 1 < marks_m.size() ? marks_m[k + 1].second.first : mend;
        const double s1 = k + 1 < marks_s.size() ? marks_s[k + 1].second.first : send;
        Acc a;
        a.add(m1 - marks_m[k].second.first, s1 - marks_s[k].second.first);
        c.steps.push_back(a.row(marks_m[k].first));
      }
    }
  }
  for (const auto& [k, a] : classes) c.classes.push_back(a.row(k));
  for (const auto& [k, a] : windows) c.windows.push_back(a.row(k));
  for (const auto& [k, v] : gaps) {
    GapRow g;
    g.key = k;
    g.count = static_cast<int>(v.first.size());
    for (size_t i = 0; i < v.first.size(); ++i) g.measured_s += v.first[i] * 1e-9, g.simulated_s += v.second[i] * 1e-9;
    g.median_measured_us = median(v.first) * 1e-3;
    g.median_simulated_us = median(v.second) * 1e-3;
    c.gaps.push_back(g);
  }
  c.layer_summary = layer_all.row("layers");
  return c;
}

std::string format_record_comparison(const RecordComparison& c, bool per_layer) {
  std::string out = fmt::format("{}: makespan measured {:.3f} ms, simulated {:.3f} ms, error {:+.1f} %\n", c.name, c.makespan_measured_s * 1e3,
                                c.makespan_simulated_s * 1e3, 100 * c.makespan_error());
  auto table = [&](const char* title, const std::vector<ErrorRow>& rows) {
    if (rows.empty()) return;
    out += fmt::format("  {:<44} {:>6} {:>12} {:>12} {:>8} {:>10} {:>10}\n", title, "ops", "measured", "simulated", "error", "op median", "op worst");
    for (const auto& r : rows)
      out += fmt::format("  {:<44} {:>6} {:>9.3f} ms {:>9.3f} ms {:>+7.1f}% {:>9.1f}% {:>9.1f}%\n", r.key, r.count, r.measured_s * 1e3,
                         r.simulated_s * 1e3, 100 * r.error(), 100 * r.median_op_error, 100 * r.worst_op_error);
  };
  table("step (rank 0)", c.steps);
  table("op class (all ranks, summed durations)", c.classes);
  table("overlap window (what ran beside it, measured)", c.windows);
  if (!c.gaps.empty()) {
    out += fmt::format("  {:<44} {:>6} {:>12} {:>12} {:>10} {:>10}\n", "gap to the next compute op (own H2D beside)", "gaps", "measured", "simulated",
                       "median m.", "median s.");
    for (const auto& g : c.gaps)
      out += fmt::format("  {:<44} {:>6} {:>9.3f} ms {:>9.3f} ms {:>7.2f} us {:>7.2f} us\n", g.key, g.count, g.measured_s * 1e3, g.simulated_s * 1e3,
                         g.median_measured_us, g.median_simulated_us);
  }
  if (c.layer_summary.count > 0) {
    out += fmt::format("  layers: {} spans (all ranks): summed error {:+.1f} %, median {:.1f} %, worst {:.1f} %\n", c.layer_summary.count,
                       100 * c.layer_summary.error(), 100 * c.layer_summary.median_op_error, 100 * c.layer_summary.worst_op_error);
    if (per_layer) table("layer (rank 0)", c.layers);
  }
  return out;
}

}  // namespace osim
