// Calibration on the reference machines' measurements
// (validate/reference/<machine>/): the committed calibration files are what
// calibrate writes today and load back to the same parameters; bad bench
// input is refused with the file named; the both-ways share is recovered
// from rows the model made; malformed rows are refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "calib/calibrate.hpp"
#include "core/errors.hpp"
#include "io/text_file.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

nlohmann::json load(const std::string& path) {  // a bench document, plain or gzipped
  REQUIRE(std::filesystem::is_regular_file(path));
  return nlohmann::json::parse(read_maybe_gzip(path));
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// The calibration file from "# Fits" on (the sources above name paths as given).
std::string from_fits(const std::string& text) { return text.substr(text.find("# Fits")); }

struct Reference {
  std::string machine;
  BenchDocs docs;
  hw::Topology topo;
  std::string calibration;  // the committed file's path
};
Reference reference(const std::string& machine) {
  const std::string dir = kSrc + "/validate/reference/" + machine + "/";
  const YAML::Node m = YAML::LoadFile(dir + "manifest.yaml");
  BenchDocs docs;
  for (const auto& s : m["calibration"]["sources"])  // named as `overlapsim reference` names them
    docs.emplace_back(std::filesystem::path("validate/reference/" + machine + "/" + s.as<std::string>()).lexically_normal().string(),
                      load(dir + s.as<std::string>()));
  return {machine, std::move(docs), hw::Topology(hw::parse_topology_file(dir + m["topology"].as<std::string>())),
          dir + m["calibration"]["file"].as<std::string>()};
}
}  // namespace

TEST_CASE("each reference machine's calibration file is what calibrate writes today, and loads back to the same parameters") {
  for (const char* machine : {"h100-sxm", "h200", "h200x2-nvlink", "h200x4-nvlink"}) {
    CAPTURE(machine);
    const Reference r = reference(machine);
    const Calibration c = calibrate(r.docs, r.topo);
    const std::string text = slurp(r.calibration);
    CHECK(text == calibration_yaml(c));  // the sources too: run from the repository's root
    CHECK(from_fits(text) == from_fits(calibration_yaml(c)));
    // Written, read, written again: the same model.
    const ModelParams loaded = load_calibration(r.calibration);
    CHECK(model_yaml(loaded) == model_yaml(c.params));
  }
}

TEST_CASE("bad bench input is refused with the file named and what to do") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  CHECK_THROWS_AS(calibrate({{"x.json", nlohmann::json{{"schema", "other"}}}}, topo), InputError);
  // A testcase row without a field a fit reads: an input error naming the file, not a JSON exception.
  nlohmann::json doc = load(kSrc + "/validate/reference/h200x2-nvlink/bench-default.json.gz");
  for (auto& r : doc["results"])
    if (r["key"] == "gemm_sustained_copy") r.erase("copy");
  try {
    calibrate({{"edited.json", doc}}, topo);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("edited.json") != std::string::npos);
    CHECK(std::string(e.what()).find("key 'copy' not found") != std::string::npos);
  }
  // No run to fit copies and collectives on: a GEMM-only (--filter) run, or only a P2P-off one.
  nlohmann::json gemm_only = load(kSrc + "/validate/reference/h200/bench-default.json.gz");
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& r : gemm_only["results"])
    if (r["key"] == "gemm_bf16") kept.push_back(r);
  gemm_only["results"] = kept;
  CHECK_THROWS_WITH_AS(calibrate({{"gemm.json", gemm_only}}, topo), doctest::Contains("needs a machine run"), InputError);
  const nlohmann::json off = load(kSrc + "/validate/reference/h200x2-nvlink/bench-p2p-disable.json.gz");
  CHECK_THROWS_WITH_AS(calibrate({{"off.json", off}, {"gemm.json", gemm_only}}, topo), doctest::Contains("add the bench run made without it"),
                       InputError);
}

TEST_CASE("a hand-off bench row with a value outside its testcase's cases is refused, not read as another case") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams p = load_calibration(kSrc + "/configs/calibrations/h200.yaml");
  const nlohmann::json good = load(kSrc + "/validate/reference/h200/bench-default.json.gz");
  for (const auto& [key, field, value] : {std::tuple{"copy_reps", "gate", "kernl"}, std::tuple{"copy_reps", "dir", "up"},
                                          std::tuple{"copy_after_idle", "before", "kernel_dne"}, std::tuple{"handoff_wait", "mode", "other"}}) {
    const std::string case_name = std::string(key) + " " + field;  // clang 14 cannot capture a structured binding
    INFO(case_name);
    nlohmann::json bad = good;
    bool edited = false;
    for (auto& r : bad["results"])
      if (r.at("key") == key) {
        r[field] = value;
        edited = true;
        break;
      }
    REQUIRE(edited);
    const std::string expected = std::string(field) + " '" + value + "': expected one of";
    CHECK_THROWS_WITH_AS(compare_bench(bad, topo, p), doctest::Contains(expected.c_str()), std::invalid_argument);
  }
}

TEST_CASE("calibrate recovers the share both ways per size from rows the model made with a known table") {
  // The H100 reference's bench (one-way rows, set-ups, bursts as measured),
  // with its both-ways rows (bidir_pinned, copy_span, copy_reps) replaced by
  // what the model gives them with a known table: 0.6 / 0.7 at 256 KiB, 0.85
  // / 0.95 at 4 MiB, 0.75 / 0.9 at 1 GiB (between, interpolated in
  // log(bytes)). calibrate must find each measured size's share back.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  const std::string f = "validate/reference/h100-sxm/bench-default.json.gz";
  const nlohmann::json doc = load(kSrc + "/" + f);
  ModelParams made = calibrate({{f, doc}}, topo).params;
  made.copies.copy_bidir_table = {{262144, 0.6, 0.7}, {4194304, 0.85, 0.95}, {1073741824, 0.75, 0.9}};
  // compare_bench replays a testcase's rows in order, H2D before D2H on each.
  nlohmann::json synth = doc;
  std::map<std::string, std::vector<double>> sim;
  for (const Comparison& c : compare_bench(doc, topo, made)) sim[c.key].push_back(c.simulated_us);
  std::map<std::string, size_t> at;
  for (auto& r : synth.at("results")) {
    const std::string key = r.at("key");
    if (key != "bidir_pinned" && key != "copy_span" && key != "copy_reps") continue;
    for (const char* t : {"h2d_time_us", "d2h_time_us"})
      if (r.contains(t)) r[t] = sim.at(key).at(at[key]++);
  }
  for (const char* key : {"bidir_pinned", "copy_span", "copy_reps"}) CHECK(at[key] == sim[key].size());
  const ModelParams p = calibrate({{f, synth}}, topo).params;
  REQUIRE(p.copies.copy_bidir_tabled());
  CHECK(p.copies.copy_bidir_table.front()[0] == 65536);  // the bytes take >= 1 us from 64 KiB
  CHECK(p.copies.copy_bidir_table.back()[0] == 1073741824);
  // Each size within 1.5 % of the share that made it (the bench's first copy
  // of a burst starts before the other direction's and keeps its own set-up:
  // the fit charges every copy the longer one).
  for (const auto& e : p.copies.copy_bidir_table) {
    CAPTURE(e[0]);
    CHECK(e[1] == doctest::Approx(made.copies.copy_bidir_share(Direction::H2D, static_cast<Bytes>(e[0]))).epsilon(0.015));
    CHECK(e[2] == doctest::Approx(made.copies.copy_bidir_share(Direction::D2H, static_cast<Bytes>(e[0]))).epsilon(0.015));
  }
}
