#include "workload/program.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "gpu/executor.hpp"

namespace osim {
namespace {
// host_issue_s: per timed run, each rank's issue time; the slowest rank's in
// the run whose makespan is the median (the one median_s names).
double median_run_host_issue(const nlohmann::json& doc, const SourceLocation& at) {
  const auto& runs = doc.at("host_issue_s");
  const auto& makespans = doc.at("makespans_s");
  if (!runs.is_array() || runs.size() != makespans.size())
    throw InputError(at, "host_issue_s must hold one list of ranks' issue times per timed run (as makespans_s)");
  const double median_s = doc.at("median_s").get<double>();
  for (size_t i = 0; i < runs.size(); ++i) {
    if (makespans[i].get<double>() != median_s) continue;
    double slowest = 0;
    for (const auto& rank : runs[i]) slowest = std::max(slowest, rank.get<double>());
    if (!(slowest > 0)) throw InputError(at, fmt::format("host_issue_s[{}] has no positive issue time", i));
    return slowest;
  }
  throw InputError(at, "no timed run in makespans_s has the makespan median_s names");
}

// A request's median_stages_s, each stage with the median of its timed runs'
// peak_allocated_bytes (where they measured it).
std::vector<ProgramRun::Stage> request_stages(const nlohmann::json& doc, const SourceLocation& at) {
  std::vector<ProgramRun::Stage> out;
  for (const auto& [name, t] : doc.at("median_stages_s").items()) {
    ProgramRun::Stage st{name, t.get<double>(), std::nullopt};
    if (!(st.time_s > 0)) throw InputError(at, "median_stages_s: stage '" + name + "' must take a positive time");
    std::vector<double> peaks;
    for (const auto& run : doc.value("runs", nlohmann::json::array()))
      if (run.contains("peak_allocated_bytes") && run.at("peak_allocated_bytes").contains(name))
        peaks.push_back(run.at("peak_allocated_bytes").at(name).get<double>());
    if (!peaks.empty()) st.peak_allocated = median(peaks);
    if (st.peak_allocated && !(*st.peak_allocated > 0))
      throw InputError(at, "runs' peak_allocated_bytes: stage '" + name + "' must hold a positive peak");
    out.push_back(std::move(st));
  }
  return out;
}

// A request written without runs_before: its runs went back to back after the
// warm-up ones, so the median-wall run had warmup + its rank among the timed
// runs before it (the GPU starts that run in their sustained-load state).
int request_runs_before(const nlohmann::json& doc, const SourceLocation& at) {
  const auto& runs = doc.value("runs", nlohmann::json::array());
  if (runs.empty()) return 0;
  std::vector<std::pair<double, size_t>> walls;
  for (size_t i = 0; i < runs.size(); ++i) walls.emplace_back(runs[i].at("wall_s").get<double>(), i);
  std::sort(walls.begin(), walls.end());
  const int warmup = doc.value("warmup", 0);
  if (warmup < 0) throw InputError(at, "warmup must not be negative");
  return warmup + static_cast<int>(walls[walls.size() / 2].second);
}
}  // namespace

ProgramRun read_program_run(const std::string& path) {
  const SourceLocation at{path, 0, 0};
  std::ifstream in(path);
  if (!in) throw InputError(at, "cannot read this file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, std::string("not JSON: ") + e.what());
  }
  // A request (request_pipeline.py) is measured end to end: its median wall time.
  const std::string schema = doc.is_object() ? doc.value("schema", "") : "";
  const bool request = schema == "overlapsim.request/v1";
  if (schema != "overlapsim.program/v1" && !request)
    throw InputError(at, "not a program result (schema overlapsim.program/v1 or overlapsim.request/v1, written by validate/programs/)");
  try {
    ProgramRun r;
    r.file = path;
    r.name = doc.at("name").get<std::string>();
    r.group = doc.value("group", request ? "request" : "");
    r.measured_s = doc.at(request ? "median_wall_s" : "median_s").get<double>();
    r.runs_before = doc.contains("runs_before") || !request ? doc.value("runs_before", 0) : request_runs_before(doc, at);
    r.workload_yaml = doc.at("workload").dump();
    if (doc.contains("memory")) {
      const auto& m = doc.at("memory");
      r.peak_allocated = m.at("peak_allocated_bytes").get<double>();
      r.peak_device = m.at("device_used_bytes").get<double>() - m.at("reserved_bytes").get<double>() + m.at("peak_reserved_bytes").get<double>();
      if (!(*r.peak_allocated > 0 && *r.peak_device > 0)) throw InputError(at, "memory: peak_allocated_bytes and the device's use must be positive");
    }
    if (doc.contains("host_issue_s")) r.host_issue_s = median_run_host_issue(doc, at);
    if (request && doc.contains("median_stages_s")) r.stages = request_stages(doc, at);
    if (!(r.measured_s > 0) || r.runs_before < 0) throw InputError(at, "median_s must be positive and runs_before not negative");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, std::string("a program result is malformed: ") + e.what());
  }
}

TwinRun simulate_twin(const ProgramRun& run, const hw::Topology& topo, const ModelParams& params) {
  DitWorkload w = parse_workload_string(run.workload_yaml, run.file);
  w.params = params;  // the twin names shapes, offload and its attention's backend; the rates are the calibration's
  TwinRun t{generate_schedule(w), {}};
  t.result = execute_after_runs(t.schedule, topo, w.params, run.runs_before);
  return t;
}

ProgramPrediction predict_program(const ProgramRun& run, const hw::Topology& topo, const ModelParams& params) {
  return prediction_of(run, simulate_twin(run, topo, params).result);
}

ProgramPrediction prediction_of(const ProgramRun& run, const ExecResult& res) {
  ProgramPrediction p;
  p.name = run.name;
  p.group = run.group;
  p.session = std::filesystem::path(run.file).parent_path().lexically_normal().string();
  p.measured_s = run.measured_s;
  p.simulated_s = res.makespan.s();
  p.measured_allocated = run.peak_allocated;
  p.measured_device = run.peak_device;
  p.simulated_device = static_cast<double>(res.ranks.at(0).peak_vram_held);
  p.measured_host_s = run.host_issue_s;
  for (const auto& ops : res.ops)
    if (!ops.empty()) p.simulated_host_s = std::max(p.simulated_host_s, ops.back().issue.s());
  p.simulated_allocated = allocated_as_torch_counts(res.ranks.at(0).peak_vram, res.ranks.at(0).peak_parts);
  return p;
}

double allocated_as_torch_counts(Bytes vram, const std::array<Bytes, kMemParts>& parts) {
  return static_cast<double>(vram) - static_cast<double>(parts[static_cast<size_t>(MemPart::Runtime)] +
                                                         parts[static_cast<size_t>(MemPart::Reserve)] + parts[static_cast<size_t>(MemPart::Comm)]);
}

std::vector<std::string> program_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// The items sharing each key (`key(item)`), the keys in the order they first appear.
template <class T, class Key>
std::vector<std::pair<std::string, std::vector<const T*>>> grouped(const std::vector<T>& items, Key key) {
  std::vector<std::pair<std::string, std::vector<const T*>>> out;
  for (const auto& x : items) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == key(x); });
    if (it == out.end()) it = out.insert(out.end(), {key(x), {}});
    it->second.push_back(&x);
  }
  return out;
}
// The runs of each group, in their order.
std::vector<std::pair<std::string, std::vector<const ProgramPrediction*>>> by_group(const std::vector<ProgramPrediction>& runs) {
  return grouped(runs, [](const ProgramPrediction& r) { return r.group; });
}
// Errors' median and worst (0 and 0 for none).
std::pair<double, double> median_and_worst(const std::vector<double>& errs) {
  return {median(errs), errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end())};
}
// Calls f(mask) for splits of n sessions (bit i: session i in the first half
// of floor(n/2)): every split once, each sampled alike past `most`; for even n
// the first half holds session 0 (the other is its complement).
template <class F>
void for_each_split(int n, int most, F f) {
  const int k = n / 2;
  double count = 1;
  for (int i = 0; i < k; ++i) count = count * (n - i) / (i + 1);
  if (n % 2 == 0) count /= 2;
  if (count <= most) {
    for (uint64_t m = (uint64_t{1} << k) - 1; m < (uint64_t{1} << n);) {
      if (n % 2 != 0 || (m & 1)) f(m);
      const uint64_t low = m & -m, ripple = m + low;  // the next mask with k bits set (Gosper)
      m = ripple | (((m ^ ripple) >> 2) / low);
    }
    return;
  }
  // Random halves from splitmix64 (the same on every platform), by a partial Fisher-Yates shuffle.
  uint64_t state = 0;
  const auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<int> order(n);
  for (int s = 0; s < most; ++s) {
    for (int i = 0; i < n; ++i) order[i] = i;
    uint64_t m = 0;
    for (int i = 0; i < k; ++i) {
      std::swap(order[i], order[i + static_cast<int>(next() % static_cast<uint64_t>(n - i))]);
      m |= uint64_t{1} << order[i];
    }
    f(m);
  }
}
// A group's ranking by halves of its sessions (RepeatedFigures::GroupRanking;
// `simulated`: the twins against the medians over every session); none
// with fewer than two sessions, more than 63, or no split comparing three
// programs.
std::optional<RepeatedFigures::GroupRanking> ranking_by_halves(const std::string& group, const std::vector<const RepeatedProgram*>& g,
                                                               const std::map<std::string, std::map<std::string, double>>& by_session,
                                                               double simulated) {
  std::vector<std::string> sessions;
  for (const auto* p : g)
    for (const auto& [session, ms] : by_session.at(p->name)) sessions.push_back(session);
  std::sort(sessions.begin(), sessions.end());
  sessions.erase(std::unique(sessions.begin(), sessions.end()), sessions.end());
  const int n = static_cast<int>(sessions.size());
  if (n < 2 || n > 63) return std::nullopt;  // a split is a 64-bit mask
  // Each program's runs as (session's index, makespan), looked up once.
  std::vector<std::vector<std::pair<int, double>>> at(g.size());
  for (size_t j = 0; j < g.size(); ++j)
    for (const auto& [session, ms] : by_session.at(g[j]->name))
      at[j].emplace_back(static_cast<int>(std::lower_bound(sessions.begin(), sessions.end(), session) - sessions.begin()), ms);
  std::vector<double> halves, simulated_halves;
  for_each_split(n, 100000, [&](uint64_t mask) {
    std::vector<double> first, second, twins;
    for (size_t j = 0; j < g.size(); ++j) {
      std::vector<double> a, b;
      for (const auto& [i, ms] : at[j]) (mask >> i & 1 ? a : b).push_back(ms);
      if (a.empty() || b.empty()) continue;
      first.push_back(median(a)), second.push_back(median(b)), twins.push_back(g[j]->simulated_s);
    }
    if (first.size() < 3) return;
    halves.push_back(spearman(first, second));
    simulated_halves.push_back(spearman(twins, first));
    simulated_halves.push_back(spearman(twins, second));
  });
  if (halves.empty()) return std::nullopt;
  return RepeatedFigures::GroupRanking{group,          static_cast<int>(g.size()), n, static_cast<int>(halves.size()), simulated,
                                       median(halves), median(simulated_halves)};
}
double spearman_of(const std::vector<const ProgramPrediction*>& g) {
  std::vector<double> m, s;
  for (const auto* r : g) m.push_back(r->measured_s), s.push_back(r->simulated_s);
  return spearman(m, s);
}
}  // namespace

ProgramFigures program_figures(std::vector<ProgramPrediction> runs) {
  ProgramFigures f;
  std::vector<double> errs;
  for (const auto& r : runs) errs.push_back(100 * std::abs(r.error()));
  std::tie(f.median_pct, f.worst_pct) = median_and_worst(errs);
  for (const auto& [name, g] : by_group(runs))
    if (g.size() >= 3) f.spearman_min = std::min(f.spearman_min, spearman_of(g));
  std::vector<double> alloc_errs, device_errs;
  for (const auto& r : runs)
    if (r.measured_allocated) {
      alloc_errs.push_back(100 * std::abs(r.allocated_error()));
      device_errs.push_back(100 * std::abs(r.device_error()));
    }
  f.memory_runs = static_cast<int>(alloc_errs.size());
  std::tie(f.allocated_median_pct, f.allocated_worst_pct) = median_and_worst(alloc_errs);
  std::tie(f.device_median_pct, f.device_worst_pct) = median_and_worst(device_errs);
  std::vector<double> host_errs;
  for (const auto& r : runs)
    if (r.measured_host_s) host_errs.push_back(100 * std::abs(r.host_error()));
  f.host_runs = static_cast<int>(host_errs.size());
  std::tie(f.host_median_pct, f.host_worst_pct) = median_and_worst(host_errs);
  f.runs = std::move(runs);
  return f;
}

std::string format_program_figures(const ProgramFigures& f) {
  std::string out = fmt::format("  {:<40} {:>12} {:>12} {:>8}\n", "program", "measured", "simulated", "error");
  for (const auto& r : f.runs)
    out += fmt::format("  {:<40} {:>9.2f} ms {:>9.2f} ms {:>+7.1f}%\n", r.name, r.measured_s * 1e3, r.simulated_s * 1e3, 100 * r.error());
  for (const auto& [name, g] : by_group(f.runs)) {
    std::vector<double> errs;
    for (const auto* r : g) errs.push_back(100 * std::abs(r->error()));
    out += fmt::format("  {}: {} programs, makespan error median {:.1f} %, worst {:.1f} %", name.empty() ? "(no group)" : name, g.size(),
                       median(errs), *std::max_element(errs.begin(), errs.end()));
    out += g.size() >= 3 ? fmt::format(", rank correlation {:.2f}\n", spearman_of(g)) : "\n";
  }
  out += fmt::format(
      "{} programs: makespan error median {:.1f} %, worst {:.1f} %; configurations ranked alike within each group: rank "
      "correlation (Spearman) at least {:.2f}\n",
      f.runs.size(), f.median_pct, f.worst_pct, f.spearman_min);
  if (f.memory_runs) {
    out += fmt::format("  {:<40} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8}\n", "peak memory (GiB)", "allocated", "simulated", "error", "in use",
                       "simulated", "error");
    constexpr double GiB = 1024.0 * 1024 * 1024;
    for (const auto& r : f.runs)
      if (r.measured_allocated)
        out += fmt::format("  {:<40} {:>11.3f} {:>11.3f} {:>+7.1f}% {:>11.3f} {:>11.3f} {:>+7.1f}%\n", r.name, *r.measured_allocated / GiB,
                           r.simulated_allocated / GiB, 100 * r.allocated_error(), *r.measured_device / GiB, r.simulated_device / GiB,
                           100 * r.device_error());
    out += fmt::format(
        "{} programs measured their memory: peak allocated error median {:.1f} %, worst {:.1f} %; peak in use (with the runtime "
        "and the allocator's reserve) median {:.1f} %, worst {:.1f} %\n",
        f.memory_runs, f.allocated_median_pct, f.allocated_worst_pct, f.device_median_pct, f.device_worst_pct);
  }
  if (f.host_runs) {
    out += fmt::format("  {:<40} {:>12} {:>12} {:>8}\n", "host issue time", "measured", "simulated", "error");
    for (const auto& r : f.runs)
      if (r.measured_host_s)
        out += fmt::format("  {:<40} {:>9.2f} ms {:>9.2f} ms {:>+7.1f}%\n", r.name, *r.measured_host_s * 1e3, r.simulated_host_s * 1e3,
                           100 * r.host_error());
    out += fmt::format("{} programs measured their host issue time: error median {:.1f} %, worst {:.1f} %\n", f.host_runs, f.host_median_pct,
                       f.host_worst_pct);
    std::string host_bound;
    for (const auto& r : f.runs)
      if (r.host_bound_measured_only()) host_bound += " " + r.name;
    if (!host_bound.empty())
      out +=
          "  their hosts set the pace, the twins' not (a framework's host is slower than a generated twin's; import the program's "
          "trace, docs/import-trace.md):" +
          host_bound + "\n";
  }
  return out;
}

RepeatedFigures repeated_figures(const std::vector<ProgramPrediction>& runs) {
  RepeatedFigures f;
  std::vector<double> errs;
  for (const auto& [name, rs] : grouped(runs, [](const ProgramPrediction& r) { return r.name; })) {
    if (rs.size() < 2) continue;
    RepeatedProgram p{name, rs.front()->group, static_cast<int>(rs.size())};
    std::vector<double> measured, simulated;
    for (const auto* r : rs) measured.push_back(r->measured_s), simulated.push_back(r->simulated_s);
    p.measured_median_s = median(measured);
    p.measured_min_s = *std::min_element(measured.begin(), measured.end());
    p.measured_max_s = *std::max_element(measured.begin(), measured.end());
    p.simulated_s = median(simulated);
    errs.push_back(100 * std::abs(p.error()));
    f.within_range += p.within_range();
    f.programs.push_back(std::move(p));
  }
  std::tie(f.median_pct, f.worst_pct) = median_and_worst(errs);
  // Each program's measured makespan by session, for the pairs every session
  // ordered alike and the halves' rankings.
  std::map<std::string, std::map<std::string, double>> by_session;
  for (const auto& r : runs) by_session[r.name][r.session] = r.measured_s;
  for (const auto& [group, g] : grouped(f.programs, [](const RepeatedProgram& p) { return p.group; })) {
    if (g.size() < 3) continue;
    std::vector<double> m, s;
    for (const auto* p : g) m.push_back(p->measured_median_s), s.push_back(p->simulated_s);
    const double simulated = spearman(m, s);
    f.spearman_min = std::min(f.spearman_min, simulated);
    if (auto gr = ranking_by_halves(group, g, by_session, simulated)) {
      f.halves_spearman_min = std::min(f.halves_spearman_min, gr->halves);
      f.rankings.push_back(std::move(*gr));
    }
  }
  for (const auto& [group, g] : grouped(f.programs, [](const RepeatedProgram& p) { return p.group; }))
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = i + 1; j < g.size(); ++j) {
        const auto& a = by_session[g[i]->name];
        const auto& b = by_session[g[j]->name];
        int both = 0, a_faster = 0, b_faster = 0;
        for (const auto& [session, ms] : a)
          if (const auto it = b.find(session); it != b.end()) {
            ++both;
            a_faster += ms < it->second;
            b_faster += it->second < ms;
          }
        if (both < 3 || (a_faster != both && b_faster != both)) continue;
        ++f.pairs_ordered;
        const RepeatedProgram* fast = a_faster == both ? g[i] : g[j];
        const RepeatedProgram* slow = a_faster == both ? g[j] : g[i];
        if (!(fast->simulated_s < slow->simulated_s))
          f.pairs_misordered.push_back(fmt::format("{} / {}{}", fast->name, slow->name, fast->simulated_s == slow->simulated_s ? " (tied)" : ""));
      }
  return f;
}

std::string format_repeated_figures(const RepeatedFigures& f) {
  if (f.programs.empty()) return "";
  std::string out =
      fmt::format("  {:<48} {:>4} {:>12} {:>21} {:>12} {:>8}\n", "measured more than once", "runs", "median", "range (spread)", "simulated", "error");
  for (const auto& p : f.programs)
    out += fmt::format("  {:<48} {:>4} {:>9.2f} ms {:>8.2f}-{:<8.2f}({:>3.0f} %) {:>9.2f} ms {:>+7.1f}%{}\n", p.name, p.runs,
                       p.measured_median_s * 1e3, p.measured_min_s * 1e3, p.measured_max_s * 1e3, 100 * (p.measured_max_s / p.measured_min_s - 1),
                       p.simulated_s * 1e3, 100 * p.error(), p.within_range() ? "" : "  outside");
  for (const std::string& p : f.pairs_misordered) out += "  ordered otherwise by the simulation (measured faster / slower): " + p + "\n";
  for (const auto& r : f.rankings)
    out += fmt::format(
        "  {}: {} programs' medians ranked against the simulation: rank correlation {:.2f}; half the {} sessions' medians against "
        "the other half's {:.2f}, the simulation against a half's {:.2f} (the median over {} splits)\n",
        r.group, r.programs, r.simulated, r.sessions, r.halves, r.simulated_halves, r.splits);
  out += fmt::format(
      "{} programs measured more than once: makespan error against each one's median run: median {:.1f} %, worst {:.1f} %; "
      "{} simulated within their measured range; medians ranked alike within each group: rank correlation at least {:.2f}",
      f.programs.size(), f.median_pct, f.worst_pct, f.within_range, f.spearman_min);
  if (!f.rankings.empty()) out += fmt::format(" (half the sessions' medians against the other half's: at least {:.2f})", f.halves_spearman_min);
  if (f.pairs_ordered > 0)
    out += fmt::format(
        "; of the {} configuration pairs every session ran in the same order (three or more measured both), the simulation "
        "orders {} alike",
        f.pairs_ordered, f.pairs_ordered - static_cast<int>(f.pairs_misordered.size()));
  return out + "\n";
}

}  // namespace osim
