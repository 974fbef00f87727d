// A calibration you can trust: what it was measured on travels with it, a
// bench of another GPU family is refused, and nothing out of range is written.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "calib/calibrate.hpp"
#include "gpu/params_io.hpp"
#include "io/text_file.hpp"
#include "io/yaml_reader.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
json read_json_file(const std::string& p) { return json::parse(read_maybe_gzip(p)); }
}  // namespace

TEST_CASE("GPU families: the token a GPU's name must hold") {
  CHECK(gpu_family("H100-SXM5") == "H100");
  CHECK(gpu_family("H200") == "H200");
  CHECK(gpu_family("RTX-4090") == "RTX4090");
  CHECK(gpu_family("NVIDIA-L4") == "NVIDIAL4");
  CHECK(gpu_family("") == "");
}

TEST_CASE("provenance: the bench's GPU, versions and file hashes, written and read back") {
  const std::string dir = kSrc + "/validate/reference/h100-sxm/";
  const BenchDocs docs = {{dir + "bench-default.json.gz", read_json_file(dir + "bench-default.json.gz")},
                          {dir + "attention.json", read_json_file(dir + "attention.json")}};
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  CHECK_NOTHROW(check_bench_gpus(docs, topo));
  const Calibration c = calibrate(docs, topo);
  const std::string yaml = calibration_yaml(c);
  CHECK(yaml.find("provenance:\n  gpu: \"NVIDIA H100 80GB HBM3\"\n  gpus: 1\n  sms: 132\n") != std::string::npos);
  CHECK(yaml.find("  torch: \"2.11.0+cu130\"\n") != std::string::npos);
  CHECK(yaml.find("    - {file: \"bench-default.json.gz\", fnv1a64: \"97d7d8ebbc1c95bd\"}") != std::string::npos);
  const std::string path = (std::filesystem::temp_directory_path() / "osim-provenance.yaml").string();
  std::ofstream(path) << yaml;
  const CalibrationFile back = read_calibration_file(path);
  CHECK(back.origin.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(back.origin.gpus == 1);
  // The model reads back as fitted.
  CHECK(back.params.copies.copy_engine_bandwidth.h2d.GBps() == doctest::Approx(c.params.copies.copy_engine_bandwidth.h2d.GBps()).epsilon(1e-3));
  // The committed benches predate the date; a bench that records one (environment.date) gives `measured:`.
  CHECK(yaml.find("  measured:") == std::string::npos);
  BenchDocs dated = docs;
  dated[0].second["environment"]["date"] = "2026-11-27T08:12:40Z";
  CHECK(calibration_yaml(calibrate(dated, topo)).find("  measured: \"2026-11-27T08:12:40Z\"\n") != std::string::npos);
}

TEST_CASE("a bench of another GPU family is refused, and a fit above the topology's peaks is never written") {
  const std::string dir = kSrc + "/validate/reference/h100-sxm/";
  const BenchDocs docs = {{dir + "bench-default.json.gz", read_json_file(dir + "bench-default.json.gz")}};
  const hw::Topology rtx(hw::parse_topology_file(kSrc + "/configs/topologies/rtx4090x8-pcie.yaml"));
  try {
    check_bench_gpus(docs, rtx);
    FAIL("expected a refusal");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("the bench ran on NVIDIA H100 80GB HBM3, but topology rtx4090x8-pcie's GPUs are RTX-4090") != std::string::npos);
  }
  // The same family at lower peaks (H100 PCIe: 756 TFLOP/s against the SXM's 989 the bench reached ~80 % of).
  const hw::Topology pcie(hw::parse_topology_file(kSrc + "/configs/topologies/aces-4xh100-pcie.yaml"));
  CHECK_NOTHROW(check_bench_gpus(docs, pcie));
  try {
    calibrate(docs, pcie);
    FAIL("expected the fit out of range");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("the fit is out of range (calibration model 'gemm_efficiency': must be in [0.001, 1]") != std::string::npos);
  }
}

TEST_CASE("a calibration calibrate wrote and that was cut short is refused, a hand-written one without provenance is read") {
  const std::string full = [] {
    std::ifstream in(kSrc + "/configs/calibrations/h200.yaml");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  REQUIRE(full.size() > 100);
  CHECK_NOTHROW(parse_calibration_string(full, "whole.yaml"));
  // Cut at a line boundary inside model: the YAML still parses; the missing end line gives it away.
  const std::string cut = full.substr(0, full.rfind("\n", full.size() - 30) + 1);
  try {
    parse_calibration_string(cut, "cut.yaml");
    FAIL("expected the cut file refused");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("cut.yaml: error: does not end with '# end of calibration'") == 0);
  }
  CHECK_NOTHROW(parse_calibration_string("schema: overlapsim.calibration/v1\nmodel:\n  kernel_launch: 3 us\n", "hand.yaml"));
}

TEST_CASE("a calibration's origin is read from its provenance block alone, as from the whole file") {
  int shipped = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSrc + "/configs/calibrations")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string path = entry.path().string();
    CAPTURE(path);
    ++shipped;
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const YAML::Node provenance = load_yaml_file(path)["provenance"];
    const CalibrationOrigin o = calibration_origin_string(text, path);
    CHECK(o.gpu == provenance["gpu"].as<std::string>());
    CHECK(o.gpus == provenance["gpus"].as<int>());
    const std::string block = provenance_block(text);
    CHECK(block.find("\nmodel:") == std::string::npos);                           // up to the next top-level key
    CHECK(block.find("    - {file: \"bench-default.json") != std::string::npos);  // plain or .gz
  }
  CHECK(shipped >= 4);
  // Any place in the file, comments and blank lines inside it, the file's line numbers in errors.
  CHECK(provenance_block("schema: x\nprovenance:\n  gpu: G\n\n  # note\n  gpus: 2\nmodel: {}\n") == "\nprovenance:\n  gpu: G\n\n  # note\n  gpus: 2");
  CHECK(provenance_block("provenance: {gpu: G, gpus: 4}") == "provenance: {gpu: G, gpus: 4}");
  CHECK(calibration_origin_string("provenance: {gpu: G, gpus: 4}\n", "c.yaml").gpus == 4);
  CHECK(provenance_block("schema: x\nmodel: {}\n").empty());
  CHECK(calibration_origin_string("schema: x\nmodel: {}\n", "c.yaml").gpu.empty());
  try {
    (void)calibration_origin_string("schema: x\nprovenance:\n  gpu: [G\nmodel: {}\n", "c.yaml");
    FAIL("expected a syntax error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("c.yaml:3") != std::string::npos);
  }
}
