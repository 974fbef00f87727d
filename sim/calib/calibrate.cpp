#include "calib/calibrate.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calib/pipeline.hpp"
#include "core/stats.hpp"
#include "gpu/params_io.hpp"
#include "io/file_hash.hpp"
#include "schedule/bench_keys.hpp"

namespace osim {

namespace {

// The bench documents' GPUs, by name, in order: a machine run's list, else an SDPA/framework file's one.
std::vector<std::string> bench_gpus(const BenchDocs& docs) {
  std::vector<std::string> out;
  for (const auto& [name, d] : docs)
    if (std::vector<std::string> g = bench_gpu_names(d); g.size() > out.size()) out = std::move(g);
  return out;
}

// The `provenance:` mapping: what the sources recorded of the machine.
std::string provenance_yaml(const BenchDocs& docs) {
  const auto q = [](const std::string& v) { return json(v).dump(); };  // a JSON string is a YAML scalar
  std::string out = "provenance:\n";
  const std::vector<std::string> gpus = bench_gpus(docs);
  if (!gpus.empty()) out += fmt::format("  gpu: {}\n  gpus: {}\n", q(gpus.front()), gpus.size());
  std::map<std::string, std::string> seen;  // key -> value, first source that has it
  for (const auto& [name, d] : docs) {
    const json env = d.value("environment", json::object());
    const auto put = [&](const char* key, const json& v) {
      if (!v.is_null() && !seen.count(key)) seen[key] = v.is_string() ? q(v.get<std::string>()) : v.dump();
    };
    if (env.contains("gpus") && env["gpus"].is_array() && !env["gpus"].empty()) {
      put("sms", env["gpus"][0].value("sms", json()));
      put("memory_bytes", env["gpus"][0].value("memory_bytes", json()));
    }
    if (const std::string driver = nvidia_smi_column(d, "driver_version"); !driver.empty()) put("driver", driver);
    put("cuda_runtime", env.value("cuda_runtime_version", json()));
    put("nccl", env.value("nccl_version", json()));
    put("torch", env.value("torch", json()));
    put("cudnn", env.value("cudnn", json()));
    put("measured", env.value("date", json()));
  }
  for (const char* key : {"sms", "memory_bytes", "driver", "cuda_runtime", "nccl", "torch", "cudnn", "measured"})
    if (seen.count(key)) out += fmt::format("  {}: {}\n", key, seen[key]);
  out += "  sources:\n";
  for (const auto& [name, d] : docs) {
    const std::string h = fnv1a64_of(name);
    // The file's name (the header lists the paths as given) and a hash of its bytes.
    const size_t slash = name.find_last_of('/');
    out +=
        fmt::format("    - {{file: {}{}}}\n", q(slash == std::string::npos ? name : name.substr(slash + 1)), h.empty() ? "" : ", fnv1a64: " + q(h));
  }
  return out;
}

Calibration fit_all(const BenchDocs& docs, const hw::Topology& topo, const ModelParams& base) {
  for (const auto& [name, d] : docs)
    if (!d.is_object() || d.value("schema", "") != "overlapsim.bench/v1" || !d.contains("results"))
      throw InputError(SourceLocation{name, 0, 0}, "not an overlapsim-validate bench result (schema overlapsim.bench/v1)");
  Calibration c;
  c.params = base;
  for (const auto& [name, d] : docs) c.sources.push_back(name);
  for (const bench::Testcase& t : bench::kTestcases) {
    bool held = false;
    for (const auto& [name, d] : docs) held = held || !rows(d, std::string(t.key)).empty();
    if (held && t.fitted) c.family_testcases[std::string(t.family)].emplace_back(t.key);
  }
  const BenchDocs runs = merge_bench_runs(docs);
  const json* def = find_doc(runs, false);
  if (!def) {
    bool machine = false;
    for (const auto& [name, d] : docs) machine = machine || machine_run(d);
    throw InputError(SourceLocation{docs.front().first, 0, 0},
                     machine ? "calibration needs a run with NCCL defaults (no NCCL_P2P_DISABLE=1): add the bench run made without it"
                             : "calibration needs a machine run (a bench with pinned copies or NCCL collectives, e.g. the full `overlapsim-validate "
                               "bench`); these files hold neither (a --filter run or SDPA timings only can only be added to one)");
  }
  const int gpu0 = topo.gpus().front();
  FitContext ctx(docs, runs, *def, topo, c);
  run_fit_pipeline(ctx);  // every family's steps, in the pipeline table's order
  // No NCCL measured: collectives take NCCL's own model over the run's topology.
  c.params.nccl.nccl_model = c.family_testcases.count("nccl") ? 0 : 1;
  c.provenance_yaml = provenance_yaml(docs);
  // What was fitted must be a calibration a run can load: within every field's range
  // (an efficiency above 1 means the topology's peaks are not this GPU's).
  try {
    parse_calibration_string(calibration_yaml(c), "the fitted calibration");
  } catch (const InputError& e) {
    const std::vector<std::string> gpus = bench_gpus(docs);
    const auto& g = topo.node(gpu0).gpu;
    throw InputError(SourceLocation{docs.front().first, 0, 0},
                     fmt::format("the fit is out of range ({}): the bench ran on {}, the topology's GPU is {} (peak bf16 {} TFLOP/s); give "
                                 "calibrate the measured node's topology",
                                 e.message(), gpus.empty() ? std::string("an unnamed GPU") : gpus.front(), g.model,
                                 g.peak_tflops.count("bf16") ? fmt::format("{:g}", g.peak_tflops.at("bf16")) : std::string("unknown")));
  }
  return c;
}

// Each row of the document, in order, replayed by its key's replay (the pipeline's table).
std::vector<Comparison> compare_bench_once(const json& doc, const hw::Topology& topo, const ModelParams& params) {
  ReplayContext ctx(doc, topo, params);
  std::vector<Comparison> out;
  for (const auto& r : doc.at("results")) {
    const std::string key = r.at("key");
    const ReplayFn replay = replay_for(key);
    if (!replay) continue;
    Comparison c;
    c.key = key;
    replay(ctx, r, c, out);
  }
  return out;
}

}  // namespace

Calibration calibrate(const BenchDocs& docs, const hw::Topology& topo, const ModelParams& base) {
  try {
    return fit_all(upgrade_bench_docs(docs), topo, base);
  } catch (const json::exception& e) {  // a testcase row without a field the fit reads, or of the wrong type
    // The fits read merged runs, so the row may be in any of the files.
    std::string names;
    for (const auto& [name, d] : docs) names += (names.empty() ? "" : ", ") + name;
    throw InputError(SourceLocation{docs.size() == 1 ? docs.front().first : names, 0, 0},
                     fmt::format("a bench testcase is malformed ({}): re-run overlapsim-validate bench, or fix that row", e.what()));
  }
}

void check_bench_gpus(const BenchDocs& docs, const hw::Topology& topo) {
  const std::vector<std::string> gpus = bench_gpus(docs);
  if (gpus.empty() || topo.gpus().empty()) return;
  const std::string& model = topo.node(topo.gpus().front()).gpu.model;
  if (gpu_in_family(gpus.front(), model)) return;
  throw InputError(SourceLocation{docs.front().first, 0, 0},
                   fmt::format("the bench ran on {}, but topology {}'s GPUs are {}: fit against the measured node's topology (`overlapsim topo "
                               "--import-nvidia-smi {} -o node.yaml` writes one from this bench), or pass --allow-gpu-mismatch",
                               gpus.front(), topo.name(), model, docs.front().first));
}

std::string calibration_yaml(const Calibration& c) {
  std::string out = "# overlapsim calibration, written by `overlapsim calibrate` from:\n";
  for (const auto& s : c.sources) out += "#   " + s + "\n";
  out += "# Fits (informational; `model:` is what runs load):\n";
  for (const auto& f : c.fits) {
    out += fmt::format("#   {}: {} ({} points", f.name, f.formula, f.points);
    if (f.rms_residual_pct > 0) out += fmt::format(", rms residual {:.2f} %", f.rms_residual_pct);
    out += ")\n#     ";
    for (const auto& [k, v] : f.values) out += fmt::format("{} = {:.4g}  ", k, v);
    out += "\n";
  }
  // Per family, what its fields were fitted from; `# default` marks a field
  // that holds the model's default (nothing the sources measured moved it).
  ModelYamlNotes notes;
  for (const std::string& family : calib_families()) {
    const auto it = c.family_testcases.find(family);
    std::string from;
    if (it != c.family_testcases.end())
      for (const auto& k : it->second) from += (from.empty() ? "" : ", ") + k;
    notes.family_notes[family] = from.empty() ? "nothing measured: every field its default" : "fitted from " + from;
  }
  notes.provenance = c.provenance_yaml;
  return out + model_yaml(c.params, &notes) + std::string(kCalibrationEnd) + "\n";
}

std::vector<Comparison> compare_bench(const json& given, const hw::Topology& topo, const ModelParams& params) {
  const json doc = upgrade_bench_doc(given);
  std::vector<Comparison> rows = compare_bench_once(doc, topo, params);
  if (!params.handoff.has_handoff_phase()) return rows;
  // The hand-off's phase: every row replayed again with each hand-off the
  // model has (a latency above zero) at either end; a row whose time moves
  // has one.
  const auto at = [&](Time t) {
    ModelParams q = params;
    for (Time* l : {&q.handoff.copy_after_kernel_latency.h2d, &q.handoff.copy_after_kernel_latency.d2h, &q.handoff.kernel_after_copy_latency})
      if (*l > Time::zero()) *l = t;
    return compare_bench_once(doc, topo, q);
  };
  const std::vector<Comparison> lo = at(params.handoff.handoff_phase_min), hi = at(params.handoff.handoff_phase_max);
  assert(lo.size() == rows.size() && hi.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    assert(lo[i].what == rows[i].what && hi[i].what == rows[i].what);
    if (std::abs(hi[i].simulated_us - lo[i].simulated_us) < 1e-6) continue;
    rows[i].simulated_lo_us = std::min(lo[i].simulated_us, hi[i].simulated_us);
    rows[i].simulated_hi_us = std::max(lo[i].simulated_us, hi[i].simulated_us);
  }
  return rows;
}

std::vector<ClassSummary> summarise(const std::vector<Comparison>& rows) {
  std::vector<ClassSummary> out;
  std::map<std::string, std::vector<double>> by;
  std::vector<std::string> order;
  for (const auto& c : rows) {
    if (!by.count(c.cls)) order.push_back(c.cls);
    by[c.cls].push_back(std::abs(c.error_pct()));
  }
  for (const auto& cls : order) {
    const auto& v = by[cls];
    out.push_back({cls, static_cast<int>(v.size()), median(v), *std::max_element(v.begin(), v.end())});
  }
  return out;
}

std::string format_comparison(const std::vector<Comparison>& rows) {
  std::string out = fmt::format("{:<18} {:<36} {:>12} {:>12} {:>8}\n", "benchmark", "case", "measured", "simulated", "error");
  for (const auto& c : rows)
    out += fmt::format("{:<18} {:<36} {:>9.1f} us {:>9.1f} us {:>+7.1f}%\n", c.key, c.what, c.measured_us, c.simulated_us, c.error_pct());
  out += fmt::format("\n{:<48} {:>6} {:>14} {:>12}\n", "class", "cases", "median |err|", "worst |err|");
  for (const auto& s : summarise(rows)) out += fmt::format("{:<48} {:>6} {:>13.1f}% {:>11.1f}%\n", s.cls, s.cases, s.median_abs_pct, s.worst_abs_pct);
  return out;
}

}  // namespace osim
