// A workload's own `compute:` stays over the parameters a run starts from
// (here the measured defaults of its GPUs).
#include <doctest/doctest.h>

#include <string>

#include "calibrations/measured_defaults.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
hw::Topology topology(const std::string& name) { return hw::Topology(hw::parse_topology_file(kSrc + "/configs/topologies/" + name + ".yaml")); }
}  // namespace

TEST_CASE("measured defaults: a workload's own compute efficiencies stay over them") {
  DitWorkload w = parse_workload_string(
      "name: w\nmodel: {preset: wan2.2-14b}\nvideo: {width: 1280, height: 720, frames: 81}\ncompute: {gemm_efficiency: 0.5, hbm_efficiency: 0.6}\n",
      "w.yaml");
  const BaseParams b = base_params("", topology("dgx-h100"));
  REQUIRE(b.built_in);
  REQUIRE(b.params.attention.attention_efficiency != ModelParams{}.attention.attention_efficiency);
  set_base_params(w, b.params);
  CHECK(w.params.gemm.gemm_efficiency == 0.5);
  CHECK(w.params.memory.hbm_efficiency == 0.6);
  CHECK(w.params.attention.attention_efficiency == b.params.attention.attention_efficiency);  // not the workload's: the measured one
}
