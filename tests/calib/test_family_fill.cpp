// Calibration completeness: a field left at its default that another machine
// of the GPU family measured is warned of, and taken with
// --fill-from-family, said in the provenance; what depends on the GPU count
// or the box is never taken.
#include <doctest/doctest.h>

#include <string>

#include "calib/calibrate.hpp"
#include "calib/family_fill.hpp"
#include "gpu/params_io.hpp"
#include "hw/topology.hpp"

using namespace osim;

namespace {

ModelParams params_of(const std::string& model_lines) {
  return parse_calibration_string("schema: overlapsim.calibration/v1\nmodel:\n" + model_lines, "test calibration");
}

const std::string kH200 = "NVIDIA H200";

}  // namespace

TEST_CASE("family fill: a field a sibling measured and this one defaulted is warned of and taken, with its provenance") {
  const ModelParams sib = params_of("  sustained_attention_load: 0.75\n");
  const std::vector<FamilySibling> siblings{{"configs/calibrations/h200.yaml", {kH200, 1}, &sib, {}}};
  const ModelParams here;  // 4 GPUs, nothing measured of the attention's load
  const std::vector<FamilyGap> gaps = family_gaps(here, "H200", 4, siblings);
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0].step == "power attention_load");
  CHECK(family_gap_warning(gaps[0]) ==
        "warning: power.sustained_attention_load: default 1.0000 here; measured 0.7500 on NVIDIA H200 (configs/calibrations/h200.yaml): "
        "`overlapsim calibrate --fill-from-family` takes it");

  Calibration c;
  c.params = family_base(gaps);
  CHECK(c.params.power.sustained_attention_load == doctest::Approx(0.75));
  c.params = here;
  c.provenance_yaml = "provenance:\n  gpu: \"NVIDIA H200\"\n  gpus: 4\n  sources:\n    - {file: \"bench.json\"}\n";
  take_from_family(c, gaps);
  CHECK(c.params.power.sustained_attention_load == doctest::Approx(0.75));
  const std::string yaml = calibration_yaml(c);
  CHECK(yaml.find("  taken_from_family:\n    power.sustained_attention_load: \"taken from configs/calibrations/h200.yaml, measured there on "
                  "NVIDIA H200\"\n") != std::string::npos);
  CHECK(yaml.find("  sustained_attention_load: 0.7500\n") != std::string::npos);
  // The file loads, and names what it took: a later calibration does not count it as measured there.
  CHECK(parse_calibration_string(yaml, "filled").power.sustained_attention_load == doctest::Approx(0.75));
  CHECK(taken_from_family(yaml, "filled") == std::set<std::string>{"power.sustained_attention_load"});
  // Filled, nothing is left to warn of.
  CHECK(family_gaps(c.params, "H200", 4, siblings).empty());
}

TEST_CASE("family fill: no sibling measured it, or not one of the family: no warning") {
  const ModelParams here, unmeasured;
  const ModelParams h100 = params_of("  sustained_attention_load: 0.75\n");
  CHECK(family_gaps(here, "H200", 4, {{"h200.yaml", {kH200, 1}, &unmeasured, {}}}).empty());
  CHECK(family_gaps(here, "H200", 4, {{"h100-sxm.yaml", {"NVIDIA H100 80GB HBM3", 1}, &h100, {}}}).empty());
  CHECK(family_gaps(here, "H200-NVL-PCIe", 4, {{"h200.yaml", {kH200, 1}, &h100, {}}}).empty());  // a PCIe card is not the SXM module
  // Measured here: nothing to take.
  const ModelParams measured = params_of("  sustained_attention_load: 0.8\n");
  CHECK(family_gaps(measured, "H200", 4, {{"h200.yaml", {kH200, 1}, &h100, {}}}).empty());
  // An older copy of this very calibration is no sibling.
  CHECK(family_gaps(here, "H200", 4, {{"configs/calibrations/h200x4-nvlink.yaml", {kH200, 4}, &h100, {}}}, "/tmp/h200x4-nvlink.yaml").empty());
}

TEST_CASE("family fill: the nearest sibling in GPU count that measured it, not one that took it itself") {
  const ModelParams one = params_of("  sustained_attention_load: 0.75\n"), two = params_of("  sustained_attention_load: 0.78\n");
  const std::vector<FamilySibling> both{{"h200.yaml", {kH200, 1}, &one, {}}, {"h200x2.yaml", {kH200, 2}, &two, {}}};
  const ModelParams here;
  REQUIRE(family_gaps(here, "H200", 4, both).size() == 1);
  CHECK(family_gaps(here, "H200", 4, both)[0].file == "h200x2.yaml");
  CHECK(family_gaps(here, "H200", 1, both)[0].file == "h200.yaml");
  const std::vector<FamilySibling> borrowed{{"h200.yaml", {kH200, 1}, &one, {}},
                                            {"h200x2.yaml", {kH200, 2}, &two, {"power.sustained_attention_load"}}};
  CHECK(family_gaps(here, "H200", 4, borrowed)[0].file == "h200.yaml");
}

TEST_CASE("family fill: what depends on the GPU count or the box is never taken") {
  for (const char* f : {"nccl.nccl_latency", "nccl.nccl_tables", "copies.host_h2d_aggregate", "copies.copy_engine_bandwidth",
                        "nvlink.nvlink_wake_latency", "interference.comm_slowdown_base", "power.comm_clock_share", "power.straggler_share",
                        "power.sustained_comm_load", "overheads.framework_collective_call", "vram.nccl_communicator", "sustained_attention_load"})
    CHECK_MESSAGE(!borrowable_field(f), f);
  for (const char* f : {"power.sustained_attention_load", "power.sustained_slowdown", "gemm.gemm_efficiency", "attention.attention_efficiency",
                        "overheads.framework_view_call", "handoff.handoff_phase_min", "vram.cuda_context"})
    CHECK_MESSAGE(borrowable_field(f), f);
  // A sibling that measured its collectives, host copy limits and the collectives' clock share lends none of them.
  const ModelParams sib = params_of(
      "  nccl_latency: 20 us\n  nccl_channel_bandwidth: 25 GB/s\n  host_h2d_aggregate: [50 GB/s, 90 GB/s]\n  comm_clock_share: 0.5\n"
      "  framework_collective_call: 30 us\n  framework_p2p_round: 60 us\n");
  CHECK(family_gaps(ModelParams{}, "H200", 4, {{"h200x2.yaml", {kH200, 2}, &sib, {}}}).empty());
}

TEST_CASE("family fill: the shipped 4xH200 calibration's gaps, from its siblings") {
  const std::vector<FamilySibling> shipped = shipped_siblings();
  const FamilySibling* x4 = nullptr;
  for (const FamilySibling& s : shipped)
    if (s.file == "configs/calibrations/h200x4-nvlink.yaml") x4 = &s;
  REQUIRE(x4);
  const std::vector<FamilyGap> gaps = family_gaps(*x4->params, "H200", 4, shipped, x4->file);
  const FamilyGap* attention = nullptr;
  for (const FamilyGap& g : gaps) {
    if (g.step == "power attention_load") attention = &g;
    for (const std::string& f : g.fields) CHECK_MESSAGE(borrowable_field(f), f);
  }
  REQUIRE(attention);
  // The 2xH200 box's (nearer in GPU count than the 1xH200's 0.7484).
  CHECK(attention->file == "configs/calibrations/h200x2-nvlink.yaml");
  CHECK(attention->there == std::vector<std::string>{"0.7782"});
}

TEST_CASE("host limits measured with fewer GPUs than the topology has: one warning naming each table and its GPUs") {
  const hw::Topology box4(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  // A 1-GPU box's calibration: one entry per host table, no pageable ones.
  const ModelParams one = params_of(
      "  host_h2d_aggregate: [55 GB/s]\n  host_d2h_aggregate: [55 GB/s]\n  host_bidir_aggregate: [99 GB/s]\n");
  const std::string w = host_limit_gap(one, box4);
  CHECK(w.find("this topology has (4 GPUs, 4 under one host bridge)") != std::string::npos);
  CHECK(w.find("host_h2d_aggregate (1), host_d2h_aggregate (1), host_bidir_aggregate (1), pageable_h2d_aggregate (none), "
               "pageable_d2h_aggregate (none);") != std::string::npos);
  // Two GPUs measured: short of four still; four measured: nothing to say.
  const ModelParams two = params_of(
      "  host_h2d_aggregate: [55 GB/s, 110 GB/s]\n  host_d2h_aggregate: [55 GB/s, 110 GB/s, 140 GB/s, 150 GB/s]\n"
      "  host_bidir_aggregate: [84 GB/s, 131 GB/s, 146 GB/s, 150 GB/s]\n  pageable_h2d_aggregate: [8 GB/s, 15 GB/s]\n"
      "  pageable_d2h_aggregate: [15 GB/s, 27 GB/s, 36 GB/s, 47 GB/s]\n");
  CHECK(host_limit_gap(two, box4).find(": host_h2d_aggregate (2), pageable_h2d_aggregate (2);") != std::string::npos);
  const ModelParams four = params_of(
      "  host_h2d_aggregate: [55 GB/s, 110 GB/s, 140 GB/s, 150 GB/s]\n  host_d2h_aggregate: [55 GB/s, 110 GB/s, 140 GB/s, 150 GB/s]\n"
      "  host_bidir_aggregate: [84 GB/s, 131 GB/s, 146 GB/s, 150 GB/s]\n  pageable_h2d_aggregate: [8 GB/s, 13 GB/s, 19 GB/s, 23 GB/s]\n"
      "  pageable_d2h_aggregate: [15 GB/s, 27 GB/s, 36 GB/s, 47 GB/s]\n");
  CHECK(host_limit_gap(four, box4).empty());
  // Two sockets of two GPUs each: the host tables need two entries, the pageable ones (the whole host's) four.
  const hw::Topology sockets(hw::parse_topology_string(R"(
name: two-sockets
nodes:
  - {name: "cpu{i}", kind: cpu, repeat: 2}
  - {name: "rc{i}", kind: host_bridge, throughput_from_host: 100 GB/s, throughput_to_host: 100 GB/s, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: H200, memory: 141 GB, repeat: 4}
links:
  - {a: "rc{i}", b: "cpu{i}", kind: internal, repeat: 2}
  - {a: cpu0, b: cpu1, kind: inter_socket, bandwidth: 100 GB/s, latency: 1 us}
  - {a: "gpu{i}", b: "rc{i/2}", pcie: gen5 x16, latency: 1 us, repeat: 4}
)"));
  CHECK(host_limit_gap(two, sockets).find("this topology has (4 GPUs, 2 under one host bridge): pageable_h2d_aggregate (2);") != std::string::npos);
  // One GPU: nothing copies beside it, whatever the tables hold.
  const hw::Topology single(hw::parse_topology_string(R"(
name: one-gpu
nodes:
  - {name: cpu0, kind: cpu}
  - {name: rc0, kind: host_bridge, throughput_from_host: 100 GB/s, throughput_to_host: 100 GB/s}
  - {name: gpu0, kind: gpu, model: H200, memory: 141 GB}
links:
  - {a: rc0, b: cpu0, kind: internal}
  - {a: gpu0, b: rc0, pcie: gen5 x16, latency: 1 us}
)"));
  CHECK(host_limit_gap(ModelParams{}, single).empty());
}

TEST_CASE("a calibration of fewer GPUs than the topology: the families it could not measure for them, named") {
  const hw::Topology box4(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  // One GPU measured: no NCCL table, NCCL's own model standing in; no framework table; one host entry each.
  const ModelParams one = params_of(
      "  nccl_model: 1\n  host_h2d_aggregate: [55 GB/s]\n  host_d2h_aggregate: [55 GB/s]\n  host_bidir_aggregate: [99 GB/s]\n"
      "  pageable_h2d_aggregate: [8 GB/s, 13 GB/s, 19 GB/s, 23 GB/s]\n  pageable_d2h_aggregate: [15 GB/s, 27 GB/s, 36 GB/s, 47 GB/s]\n");
  CHECK(gpu_count_gap(one, 1, box4) ==
        "not measured for 4 GPUs (the calibration measured 1): NCCL's collectives (NCCL's own model stands in: its channels, latencies and "
        "rates by size); PyTorch's pairwise all-to-all (its rounds cost what NCCL's do, with no framework time between them); the host's "
        "limits with more GPUs copying at once: host_h2d_aggregate (1), host_d2h_aggregate (1), host_bidir_aggregate (1)");
  // Two GPUs measured, tables of 2 ranks (the framework's too), every host table of 4: the tables' rank count named.
  const ModelParams two = params_of(
      "  nccl_tables:\n"
      "    - {collective: all_to_all, ranks: 2, transport: p2p, points: [[1024, 6.4], [1073741824, 1614.8]]}\n"
      "    - {collective: framework_all_to_all_pairwise, ranks: 2, transport: p2p, points: [[1024, 60], [1073741824, 1700]]}\n"
      "  host_h2d_aggregate: [55 GB/s, 110 GB/s, 140 GB/s, 150 GB/s]\n  host_d2h_aggregate: [55 GB/s, 110 GB/s, 140 GB/s, 150 GB/s]\n"
      "  host_bidir_aggregate: [84 GB/s, 131 GB/s, 146 GB/s, 150 GB/s]\n  pageable_h2d_aggregate: [8 GB/s, 13 GB/s, 19 GB/s, 23 GB/s]\n"
      "  pageable_d2h_aggregate: [15 GB/s, 27 GB/s, 36 GB/s, 47 GB/s]\n");
  CHECK(gpu_count_gap(two, 2, box4) ==
        "not measured for 4 GPUs (the calibration measured 2): NCCL's collectives on more than 2 ranks (the 2-rank tables stand in); "
        "PyTorch's pairwise all-to-all on more than 2 ranks (the 2-rank table stands in)");
  // A run without collectives: the host's limits alone.
  CHECK(gpu_count_gap(one, 1, box4, {.collectives = false, .framework_pairwise = false}) ==
        "not measured for 4 GPUs (the calibration measured 1): the host's limits with more GPUs copying at once: host_h2d_aggregate (1), "
        "host_d2h_aggregate (1), host_bidir_aggregate (1)");
  // As many GPUs as the topology, or a count the calibration did not record: nothing to say.
  CHECK(gpu_count_gap(one, 4, box4).empty());
  CHECK(gpu_count_gap(one, 0, box4).empty());
}
