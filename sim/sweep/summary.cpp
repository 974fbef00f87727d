// The summary of a sweep's table: failures, then per topology the best
// point, the Pareto front (peak VRAM vs step time, or request time where the
// sweep has stages) and a recommendation.
#include "sweep.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace osim {

namespace {

struct Pt {
  size_t row;
  double step_ms, vram_gib;
};

std::string describe(const SweepTable& t, size_t row, const std::vector<int>& cols) {
  std::string out;
  for (int c : cols) {
    if (t.rows[row][static_cast<size_t>(c)].empty()) continue;
    if (!out.empty()) out += ", ";
    out += t.header[static_cast<size_t>(c)] + "=" + t.rows[row][static_cast<size_t>(c)];
  }
  return out.empty() ? "the base point" : out;
}

}  // namespace

std::string sweep_summary(const SweepTable& t, double tolerance) {
  // A sweep with stages ranks by the request end to end (makespan_ms, as its
  // request_ms): the DiT's step time leaves out what stage keys change.
  const bool request = t.column("request_ms") >= 0;
  const char* unit = request ? "ms/request" : "ms/step";
  const int st = t.column("status"), err = t.column("error"), topo = t.column("topology_name"),
            step = t.column(request ? "makespan_ms" : "step_ms"), vram = t.column("peak_vram_GiB");
  if (st < 0 || err < 0 || topo < 0 || step < 0 || vram < 0) throw std::invalid_argument("sweep_summary: not a sweep table");
  std::vector<int> params;  // parameter columns other than the topology file
  for (int c = 1; c < st; ++c)
    if (t.header[static_cast<size_t>(c)] != "topology") params.push_back(c);
  std::string out;
  std::vector<size_t> failed;
  std::map<std::string, std::vector<Pt>> groups;  // by topology name, in name order
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    if (row[static_cast<size_t>(st)] != "ok") {
      failed.push_back(r);
      continue;
    }
    groups[row[static_cast<size_t>(topo)]].push_back(Pt{r, std::stod(row[static_cast<size_t>(step)]), std::stod(row[static_cast<size_t>(vram)])});
  }
  out += fmt::format("{} points: {} ran, {} failed\n", t.rows.size(), t.rows.size() - failed.size(), failed.size());
  std::vector<int> all_params(params);
  for (int c = 1; c < st; ++c)
    if (t.header[static_cast<size_t>(c)] == "topology") all_params.insert(all_params.begin(), c);
  for (size_t k = 0; k < failed.size() && k < 5; ++k)
    out += fmt::format("  point {} ({}) failed: {}\n", t.rows[failed[k]][0], describe(t, failed[k], all_params),
                       t.rows[failed[k]][static_cast<size_t>(err)]);
  if (failed.size() > 5) out += fmt::format("  ... and {} more (the CSV's error column has each)\n", failed.size() - 5);
  for (auto& [name, pts] : groups) {
    // Best: least time, then least VRAM, then first point.
    const auto faster = [](const Pt& a, const Pt& b) {
      if (a.step_ms != b.step_ms) return a.step_ms < b.step_ms;
      if (a.vram_gib != b.vram_gib) return a.vram_gib < b.vram_gib;
      return a.row < b.row;
    };
    const Pt best = *std::min_element(pts.begin(), pts.end(), faster);
    out += fmt::format("\non {} ({} point{}):\n", name, pts.size(), pts.size() == 1 ? "" : "s");
    out += fmt::format("  best: point {}, {:.2f} {}, peak VRAM {:.2f} GiB: {}\n", t.rows[best.row][0], best.step_ms, unit, best.vram_gib,
                       describe(t, best.row, params));
    // Pareto front: sorted by VRAM, keep points faster than every point with less VRAM.
    std::vector<Pt> by_vram = pts;
    std::sort(by_vram.begin(), by_vram.end(), [](const Pt& a, const Pt& b) {
      if (a.vram_gib != b.vram_gib) return a.vram_gib < b.vram_gib;
      if (a.step_ms != b.step_ms) return a.step_ms < b.step_ms;
      return a.row < b.row;
    });
    std::vector<Pt> front;
    for (const Pt& p : by_vram)
      if (front.empty() || p.step_ms < front.back().step_ms) front.push_back(p);
    out += fmt::format("  Pareto front, peak VRAM vs {} time ({} point{}):\n", request ? "request" : "step", front.size(), front.size() == 1 ? "" : "s");
    for (size_t k = 0; k < front.size(); ++k) {
      if (k == 8 && front.size() > 10) {
        out += fmt::format("    ... {} more\n", front.size() - 9);
        k = front.size() - 1;
      }
      const Pt& p = front[k];
      out += fmt::format("    {:>8.2f} GiB {:>10.2f} {}  point {}: {}\n", p.vram_gib, p.step_ms, unit, t.rows[p.row][0], describe(t, p.row, params));
    }
    // Recommendation: least VRAM within the tolerance of the best.
    Pt rec = best;
    for (const Pt& p : pts)
      if (p.step_ms <= best.step_ms * (1 + tolerance) && (p.vram_gib < rec.vram_gib || (p.vram_gib == rec.vram_gib && faster(p, rec)))) rec = p;
    std::vector<int> same, differ;
    for (int c : params) {
      const auto& a = t.rows[rec.row][static_cast<size_t>(c)];
      const auto& b = t.rows[best.row][static_cast<size_t>(c)];
      (a == b ? same : differ).push_back(c);
    }
    const std::string context = same.empty() ? "" : " with " + describe(t, rec.row, same);
    if (rec.row == best.row || differ.empty()) {
      out += fmt::format("  recommendation: on {}, run {}: it is the fastest ({:.2f} {}), and no point within {:g} % of it needs less VRAM\n",
                         name, describe(t, best.row, params), best.step_ms, unit, 100 * tolerance);
    } else {
      out += fmt::format("  recommendation: on {}{}, {} is within {:.1f} % of the best ({}, {:.2f} {}) and needs {:.2f} GiB less peak VRAM\n",
                         name, context, describe(t, rec.row, differ), 100 * (rec.step_ms / best.step_ms - 1), describe(t, best.row, differ),
                         best.step_ms, unit, best.vram_gib - rec.vram_gib);
    }
  }
  return out;
}

}  // namespace osim
