#include "calib/bench_doc.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"

namespace osim {

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Measured quantities, by the field's name: times, sizes, rates. Offsets from
// another event (a copy's start against the kernel it overlaps, the time past
// an expected end) may be negative; every other one is at least 0.
bool measured_quantity(const std::string& k) {
  for (const char* tail : {"_us", "_ms", "_ns", "bytes", "GBps", "GBps_min", "GBps_max", "TFLOPs"})
    if (ends_with(k, tail)) return true;
  return false;
}
bool signed_offset(const std::string& k) { return k == "copy_start_ms" || k == "copy_end_ms" || k == "extra_us" || k == "gap_us"; }
// Counts a median or a rate divides by: whole, at least 1.
bool divisor_count(const std::string& k) { return k == "reps" || k == "iters" || k == "samples" || k == "m" || k == "n" || k == "k"; }
// What a measured value may be past its sign: a size whole and at most 2^47
// bytes (128 TiB), a time at most an hour (a testcase's samples are
// milliseconds); "" where it is within them.
std::string out_of_range(const std::string& k, double x) {
  if (ends_with(k, "bytes") && (x != std::floor(x) || x > 140737488355328.0)) return fmt::format("{} is not a size (whole bytes, at most 2^47)", x);
  const double hour = ends_with(k, "_us") ? 3.6e9 : ends_with(k, "_ms") ? 3.6e6 : ends_with(k, "_ns") ? 3.6e12 : 0;
  if (hour > 0 && std::abs(x) > hour) return fmt::format("{} is over an hour", x);
  return "";
}
// The GPUs a row ran on: their indices (at least one, 0 to 65535) or their count (1 to 65535).
std::string bad_gpus(const json& v) {
  const auto index = [](const json& g) { return g.is_number_integer() && g.get<int64_t>() >= 0 && g.get<int64_t>() < 65536; };
  if (v.is_array()) {
    if (v.empty()) return "[] names no GPU";
    for (const json& g : v)
      if (!index(g)) return fmt::format("{} holds {}, no GPU index (0 to 65535)", v.dump(), g.dump());
    return "";
  }
  return index(v) && v.get<int64_t>() >= 1 ? "" : fmt::format("{} is no GPU count (1 to 65535) nor list of GPU indices", v.dump());
}

}  // namespace

void check_bench_values(const json& doc, const std::string& file) {
  if (!doc.is_object() || !doc.contains("results") || !doc.at("results").is_array()) return;  // not a bench document: its reader refuses it
  const json& results = doc.at("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    if (!r.is_object()) continue;
    const std::string key = r.contains("key") && r.at("key").is_string() ? r.at("key").get<std::string>() : "?";
    const auto bad = [&](const std::string& field, const std::string& what) {
      return InputError(SourceLocation{file, 0, 0}, fmt::format("results[{}] (testcase {}): {} {}: the bench result is damaged; run the "
                                                                "testcase again (overlapsim-validate bench) or drop the row",
                                                                i, key, field, what));
    };
    for (const auto& [k, v] : r.items()) {
      if (k == "gpus") {
        if (const std::string why = bad_gpus(v); !why.empty()) throw bad(k, why);
      } else if (v.is_number()) {
        const double x = v.get<double>();
        if (!std::isfinite(x)) throw bad(k, "is not a finite number");
        if (measured_quantity(k) && !signed_offset(k) && x < 0) throw bad(k, fmt::format("{} is negative", x));
        if (measured_quantity(k))
          if (const std::string why = out_of_range(k, x); !why.empty()) throw bad(k, why);
        if (k == "time_us" && x == 0) throw bad(k, "0 is no measured time (no testcase runs in no time)");
        if (divisor_count(k) && x < 1) throw bad(k, fmt::format("{} is no count (at least 1)", x));
        if (divisor_count(k) && x != std::floor(x)) throw bad(k, fmt::format("{} is no count (a whole number)", x));
      } else if (v.is_array() && measured_quantity(k)) {
        if (v.empty() && ends_with(k, "samples_us")) throw bad(k, "holds no samples");
        for (size_t e = 0; e < v.size(); ++e) {
          if (!v[e].is_number()) continue;
          const double x = v[e].get<double>();
          if (!std::isfinite(x)) throw bad(fmt::format("{}[{}]", k, e), "is not a finite number");
          if (!signed_offset(k) && x < 0) throw bad(fmt::format("{}[{}]", k, e), fmt::format("{} is negative", x));
          if (const std::string why = out_of_range(k, x); !why.empty()) throw bad(fmt::format("{}[{}]", k, e), why);
        }
      }
    }
  }
}

json read_bench_json(const std::string& path) {
  const std::string text = read_maybe_gzip(path);  // bench documents may be kept gzipped
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error; out_of_range for a number past a double's (1e400)
    throw InputError(SourceLocation{path, 0, 0}, std::string("not valid JSON: ") + e.what());
  }
  check_bench_values(doc, path);
  return doc;
}

std::vector<json> rows(const json& doc, const std::string& key) {
  std::vector<json> out;
  for (const auto& r : doc.at("results"))
    if (r.at("key") == key) out.push_back(r);
  return out;
}

bool has_key(const json& doc, const std::string& key) {
  for (const auto& r : doc.at("results"))
    if (r.at("key") == key) return true;
  return false;
}

bool p2p_disabled_run(const json& doc) {
  const auto& env = doc.at("environment").value("env", json::object());
  return env.contains("NCCL_P2P_DISABLE") && env.at("NCCL_P2P_DISABLE") == "1";
}

bool machine_run(const json& doc) { return has_key(doc, "nccl_all_to_all") || has_key(doc, "h2d_pinned"); }

const json* find_doc(const BenchDocs& runs, bool p2p_disabled) {
  for (const auto& [name, d] : runs)
    if (machine_run(d) && p2p_disabled_run(d) == p2p_disabled) return &d;
  return nullptr;
}

int interference_ranks(const json& doc) {
  if (doc.contains("environment") && doc.at("environment").contains("gpus"))
    return std::clamp(static_cast<int>(doc.at("environment").at("gpus").size()), 2, 4);
  return 4;
}

std::vector<std::string> bench_gpu_names(const json& doc) {
  const json env = doc.value("environment", json::object());
  std::vector<std::string> out;
  if (env.contains("gpus") && env["gpus"].is_array())
    for (const auto& g : env["gpus"]) out.push_back(g.value("name", ""));
  else if (env.contains("gpu") && env["gpu"].is_string())
    out.push_back(env["gpu"].get<std::string>());
  return out;
}

std::string nvidia_smi_column(const json& doc, const std::string& column) {
  const json env = doc.value("environment", json::object());
  if (!env.contains("nvidia_smi") || !env["nvidia_smi"].is_string()) return "";
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    for (std::istringstream in(line); std::getline(in, cell, ',');) {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(" \r");
      out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
    }
    return out;
  };
  std::istringstream csv(env["nvidia_smi"].get<std::string>());
  std::string header, row;
  if (!std::getline(csv, header) || !std::getline(csv, row)) return "";
  const std::vector<std::string> names = cells(header), values = cells(row);
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    if (names[i] == column) return values[i];
  return "";
}

BenchDocs merge_bench_runs(const BenchDocs& docs) {
  BenchDocs out;
  for (const auto& [name, d] : docs) {
    const bool off = p2p_disabled_run(d);
    // PyTorch's SDPA timings (attention.py, one document per kind of shapes) stand apart: another one's rows add to them.
    bool attention_only = true;
    for (const auto& r : d.at("results")) attention_only = attention_only && (r.at("key") == "attention_sdpa" || r.at("key") == "attention_default");
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& o) { return p2p_disabled_run(o.second) == off && machine_run(o.second); });
    if (attention_only || same == out.end()) {
      out.emplace_back(name, d);
      continue;
    }
    // Interference rows are one testcase per pair: a later row replaces the
    // earlier one of the same pair and channel count, other pairs stay.
    auto identity = [](const json& r) {
      std::string id = r.at("key").get<std::string>();
      if (id == "interference")
        id += "/" + r.at("a").get<std::string>() + "/" + r.at("b").get<std::string>() + "/" + std::to_string(r.at("channels").get<int>());
      return id;
    };
    std::set<std::string> keys;
    for (const auto& r : d.at("results")) keys.insert(identity(r));
    json merged = json::array();
    for (const auto& r : same->second.at("results"))
      if (!keys.count(identity(r))) merged.push_back(r);
    for (const auto& r : d.at("results")) merged.push_back(r);
    same->second["results"] = std::move(merged);
    same->first += " + " + name;
  }
  return out;
}

std::string one_of(const json& r, const char* key, std::initializer_list<std::string_view> allowed) {
  const std::string v = r.at(key).get<std::string>();
  std::string list;
  for (const std::string_view a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw std::invalid_argument(fmt::format("{} row with {} '{}': expected one of {}", r.at("key").get<std::string>(), key, v, list));
}

json upgrade_bench_doc(json doc) {
  if (!doc.is_object() || !doc.contains("results") || !doc.at("results").is_array()) return doc;  // calibrate refuses it
  for (json& r : doc.at("results")) {
    if (!r.is_object() || !r.contains("key")) continue;
    const json& key = r.at("key");
    // Pinned copies without `reps`: the bench's rule then, 20 per burst below
    // 1 MiB, 5 below 64 MiB, 1 above.
    if ((key == "h2d_pinned" || key == "d2h_pinned") && !r.contains("reps") && r.contains("bytes")) {
      const double bytes = r.at("bytes").get<double>();
      r["reps"] = bytes < 1048576 ? 20 : bytes < 64.0 * 1048576 ? 5 : 1;
    }
    // Both ways at once without `reps`: one copy each way per sample, each
    // behind its own gate.
    if (key == "bidir_pinned" && !r.contains("reps")) {
      r["reps"] = 1;
      r["one_copy_per_gate"] = true;
    }
    // SDPA rows that say "flash" forced FlashAttention-2.
    if (key == "attention_sdpa" && r.value("backend", "") == "flash") r["backend"] = "flash2";
  }
  return doc;
}

BenchDocs upgrade_bench_docs(BenchDocs docs) {
  for (auto& [name, d] : docs) d = upgrade_bench_doc(std::move(d));
  return docs;
}

bool one_copy_per_gate(const json& r) { return r.value("one_copy_per_gate", false); }

std::string copy_reps_gate(const std::string& gate) {
  return gate == "kernel" ? "spin kernel" : gate == "host" ? "host function" : gate == "kernel_wait" ? "kernel on another stream, waited on" : gate;
}

}  // namespace osim
