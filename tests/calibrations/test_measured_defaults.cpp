// Without a calibration a run starts from the shipped measured calibration
// of its GPUs' family (built in), the one of the machine nearest in GPU
// count; the datasheet defaults only where no such GPU was measured, or
// when asked for (a workload's own `compute:` over them: tests/workload/test_base_params.cpp).
#include <doctest/doctest.h>

#include <string>

#include "calibrations/measured_defaults.hpp"
#include "gpu/params_io.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
hw::Topology topology(const std::string& name) { return hw::Topology(hw::parse_topology_file(kSrc + "/configs/topologies/" + name + ".yaml")); }
}  // namespace

TEST_CASE("measured defaults: the family's shipped calibration, nearest in GPU count, none for an unmeasured family") {
  const auto h100 = measured_defaults("H100-SXM5", 8);
  REQUIRE(h100);
  CHECK(h100->file == "configs/calibrations/h100-sxm.yaml");
  CHECK(h100->origin.gpus == 1);
  // The built-in copy is the file in the tree (the build re-reads it when it changes).
  CHECK(model_yaml(h100->params) == model_yaml(load_calibration(kSrc + "/" + h100->file)));
  CHECK(measured_defaults("H100-PCIe", 4)->file == "configs/calibrations/h100-sxm.yaml");  // the same family
  CHECK(measured_defaults("H200", 1)->file == "configs/calibrations/h200.yaml");
  CHECK(measured_defaults("H200", 2)->file == "configs/calibrations/h200x2-nvlink.yaml");
  CHECK(measured_defaults("H200", 4)->file == "configs/calibrations/h200x4-nvlink.yaml");
  CHECK(measured_defaults("H200", 3)->file == "configs/calibrations/h200x2-nvlink.yaml");  // a tie: the fewer GPUs
  CHECK(measured_defaults("H200", 64)->file == "configs/calibrations/h200x4-nvlink.yaml");
  CHECK_FALSE(measured_defaults("RTX-4090", 8));
  CHECK_FALSE(measured_defaults("", 1));
}

TEST_CASE("base parameters: a file, none (the datasheet's), or the topology's measured defaults") {
  const hw::Topology dgx = topology("dgx-h100");
  const BaseParams measured = base_params("", dgx);
  CHECK(measured.built_in);
  CHECK(measured.file == "configs/calibrations/h100-sxm.yaml");
  CHECK(base_params_note(measured, &dgx)
            .rfind("calibration: the measured defaults for these GPUs (configs/calibrations/h100-sxm.yaml, measured on NVIDIA H100 80GB HBM3", 0) ==
        0);
  const BaseParams none = base_params("none", dgx);
  CHECK_FALSE(none.built_in);
  CHECK(model_yaml(none.params) == model_yaml(ModelParams{}));
  CHECK(base_params_note(none, &dgx).rfind("uncalibrated: the model's datasheet defaults", 0) == 0);
  const BaseParams file = base_params(kSrc + "/configs/calibrations/h200.yaml", dgx);
  CHECK_FALSE(file.built_in);
  CHECK(file.origin.gpu == "NVIDIA H200");  // read with the parameters, from the file's provenance
  CHECK(file.origin.gpus == 1);
  CHECK(base_params_note(file, &dgx).find("warning: the calibration was measured on NVIDIA H200, the topology's GPUs are H100-SXM5") !=
        std::string::npos);
  CHECK_FALSE(base_params("", topology("rtx4090x8-pcie")).built_in);
}

TEST_CASE("borrowed calibration: a GH200's nvlink_c2c copies name the public engine caps that stand in, until a calibration sets its own") {
  const hw::Topology gh(hw::parse_topology_string(R"(name: gh200
nodes:
  - {name: cpu0, kind: cpu, memory: 480 GB}
  - {name: gpu0, kind: gpu, model: NVIDIA H200, memory: 96 GB, copy_engines: 3}
links:
  - {a: gpu0, b: cpu0, kind: nvlink_c2c, bandwidth: 450 GB/s, latency: 0.5 us}
)",
                                                  "gh200.yaml"));
  BaseParams b = base_params(kSrc + "/configs/calibrations/h200.yaml", gh);  // the same GPU family: only the link is new
  const std::string note = borrowed_calibration_note(b, gh);
  CHECK(note.rfind("borrowed calibration: ", 0) == 0);
  CHECK(note.find("was measured on NVIDIA H200, over PCIe, not over this topology's nvlink_c2c: ") != std::string::npos);
  CHECK(note.find("it cannot know the copy-engine caps over nvlink_c2c (public GH200 figures stand in: 346 GB/s H2D, 300 GB/s D2H; "
                  "copy_engine_bandwidth_c2c)") != std::string::npos);
  CHECK(note.find("run no faster") == std::string::npos);
  b.params.copies.copy_engine_bandwidth_c2c.h2d = Bandwidth::from_GBps(380);  // a GH200's own calibration
  CHECK(borrowed_calibration_note(b, gh).empty());
}
