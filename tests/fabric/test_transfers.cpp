// Whole runs of `overlapsim flows` on the shipped configs: closed-form
// checks of the numbers that carry the seeds' point, and golden outputs.
// Set OVERLAPSIM_UPDATE_GOLDEN=1 to rewrite tests/golden/ after an intended change.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fabric/transfers.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

struct Run {
  std::unique_ptr<hw::Topology> topo;
  Scenario sc;
  FabricRun run;
  std::string text;
};

Run run(const std::string& topo, const std::string& scenario) {
  Run r;
  r.topo = std::make_unique<hw::Topology>(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo + ".yaml"));
  r.sc = parse_scenario_file(kSrc + "/configs/scenarios/" + scenario + ".yaml", *r.topo);
  r.run = run_transfers(*r.topo, r.sc);
  r.text = format_fabric_report(*r.topo, r.sc, r.run);
  return r;
}

void check_golden(const std::string& name, const std::string& text) {
  const std::string path = kSrc + "/tests/golden/" + name + ".txt";
  if (const char* u = std::getenv("OVERLAPSIM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << text;
    MESSAGE("updated " << path);
    return;
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (run with OVERLAPSIM_UPDATE_GOLDEN=1)");
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == text);
}

double ms(Time t) { return t.ms(); }
const double kGen5 = 32.0 * 128 / 130 / 8 * 16 * 0.87 * 1e9;  // bytes/s of the gen5 x16 shorthand
const double kGiB = 1073741824.0;
}  // namespace

TEST_CASE("PCIe node: the exchange and the H2D copies slow each other") {
  const Run alone = run("aces-4xh100-pcie", "h2d-4gpu");
  const Run both = run("aces-4xh100-pcie", "h2d-plus-exchange-4gpu");
  // Alone: each copy owns its GPU's x16 link: 1 us + 1 GiB / 54.82 GB/s.
  const double t_alone = 1e-3 + kGiB / kGen5 * 1e3;
  for (const auto& t : alone.run.transfers) CHECK(ms(t.end) == doctest::Approx(t_alone).epsilon(1e-6));
  // With the exchange: 3 incoming bounces + 1 H2D share each downlink (4 ways)
  // until the 256 MiB bounces end; then the H2D copy finishes alone.
  const double share = kGen5 / 4;
  const double t_x = 256 * 1048576.0 / share;
  const double t_h2d = t_x + (kGiB - share * t_x) / kGen5;
  for (const auto& t : both.run.transfers) {
    if (t.spec->name.rfind("h2d", 0) == 0)
      CHECK(ms(t.end) == doctest::Approx(t_h2d * 1e3).epsilon(1e-4));
    else {
      // Bounces start after 2 or 2.5 us of latency, and the first ones get
      // more than a quarter of the link until the others arrive: they end
      // between t_x + 1 us and t_x + 2.5 us.
      CHECK(ms(t.end) >= t_x * 1e3 + 1e-3);
      CHECK(ms(t.end) <= t_x * 1e3 + 2.5e-3 + 1e-6);
    }
  }
  CHECK(ms(both.run.makespan) > 1.7 * ms(alone.run.makespan));
  check_golden("flows-aces-h2d", alone.text);
  check_golden("flows-aces-h2d-exchange", both.text);
}

TEST_CASE("NVLink node: the exchange leaves H2D alone, and only the host-side limit binds") {
  const Run alone = run("h200x4-nvlink", "h2d-4gpu");
  const Run both = run("h200x4-nvlink", "h2d-plus-exchange-4gpu");
  // 4 copies share the host bridge's 157.6 GB/s downward: 39.4 GB/s each.
  const double t_h2d = 1e-3 + kGiB / (157.6e9 / 4) * 1e3;
  for (size_t i = 0; i < 4; ++i) {
    CHECK(ms(alone.run.transfers[i].end) == doctest::Approx(t_h2d).epsilon(1e-6));
    CHECK(both.run.transfers[i].end == alone.run.transfers[i].end);
    CHECK(alone.topo->resources()[alone.run.transfers[i].main_bottleneck].name == "rc0 (from host)");
  }
  // The exchange: each GPU's 394 GB/s NVSwitch port carries its three outgoing flows.
  for (size_t i = 4; i < both.run.transfers.size(); ++i)
    CHECK(ms(both.run.transfers[i].end) == doctest::Approx(1e-3 + 256 * 1048576.0 / (394e9 / 3) * 1e3).epsilon(1e-6));
  check_golden("flows-h200-h2d", alone.text);
  check_golden("flows-h200-h2d-exchange", both.text);
}

TEST_CASE("NCCL_P2P_DISABLE on the NVLink node brings back the PCIe contention") {
  // With P2P off NCCL bounces through host memory even where NVLink exists:
  // the way MODEL.md reproduces a PCIe-only node on the 4xH200 box.
  hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  Scenario sc = parse_scenario_file(kSrc + "/configs/scenarios/h2d-plus-exchange-4gpu.yaml", topo);
  sc.route_options.p2p_disabled = true;
  const FabricRun r = run_transfers(topo, sc);
  CHECK(r.transfers[4].route_kind == hw::RouteKind::ViaHost);
  // Downward through the host bridge (157.6 GB/s): 4 GiB of H2D plus the 3 GiB
  // of bounces on their way down, so the makespan is at least 7 GiB / 157.6 GB/s.
  CHECK(r.makespan.s() >= 7 * kGiB / 157.6e9);
  const Run alone = run("h200x4-nvlink", "h2d-4gpu");
  CHECK(r.makespan > alone.run.makespan);
}

TEST_CASE("transfers listed out of start order run as listed in start order") {
  // Transfers start one event per start time, in scenario order: the order
  // they are listed in changes nothing but the report's row order.
  hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const std::string in_order =
      "name: s\ntransfers:\n  - {name: a, src: host, dst: gpu0, bytes: 1 GiB}\n  - {name: b, src: gpu1, dst: gpu0, bytes: 1 GiB}\n"
      "  - {name: c, src: host, dst: gpu0, bytes: 1 GiB, start: 1 ms}\n  - {name: d, src: gpu2, dst: gpu0, bytes: 512 MiB, start: 1 ms}\n";
  const std::string shuffled =
      "name: s\ntransfers:\n  - {name: c, src: host, dst: gpu0, bytes: 1 GiB, start: 1 ms}\n  - {name: a, src: host, dst: gpu0, bytes: 1 GiB}\n"
      "  - {name: d, src: gpu2, dst: gpu0, bytes: 512 MiB, start: 1 ms}\n  - {name: b, src: gpu1, dst: gpu0, bytes: 1 GiB}\n";
  const Scenario s1 = parse_scenario_string(in_order, "s.yaml", topo), s2 = parse_scenario_string(shuffled, "s.yaml", topo);
  const FabricRun r1 = run_transfers(topo, s1), r2 = run_transfers(topo, s2);
  auto by_name = [](const FabricRun& r, const std::string& n) -> const TransferResult& {
    for (const TransferResult& t : r.transfers)
      if (t.spec->name == n) return t;
    FAIL("no transfer " << n);
    return r.transfers.front();
  };
  for (const char* n : {"a", "b", "c", "d"}) {
    CAPTURE(n);
    CHECK(by_name(r1, n).end == by_name(r2, n).end);
    CHECK(by_name(r1, n).first_byte == by_name(r2, n).first_byte);
  }
  CHECK(r1.makespan == r2.makespan);
  CHECK(by_name(r2, "c").first_byte > Time::from_ms(1.0));  // starts at 1 ms, not with the first event
}

TEST_CASE("the same input gives byte-identical output") {
  CHECK(run("aces-4xh100-pcie", "h2d-plus-exchange-4gpu").text == run("aces-4xh100-pcie", "h2d-plus-exchange-4gpu").text);
}

TEST_CASE("bad scenario input names file:line") {
  hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  auto err = [&](const std::string& yaml) -> std::string {
    try {
      parse_scenario_string(yaml, "s.yaml", topo);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dst: gpu9, bytes: 1 MB}\n").find("s.yaml:3:") == 0);
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dst: gpu9, bytes: 1 MB}\n").find("'gpu9' is not a node of topology") != std::string::npos);
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dst: gpu1, bytes: 1 MX}\n").find("unknown size unit 'MX'") != std::string::npos);
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dst: gpu0, bytes: 1 MB}\n").find("same node") != std::string::npos);
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dst: rc0, bytes: 1 MB}\n").find("transfers start and end at GPUs") != std::string::npos);
  CHECK(err("name: s\ntransfers:\n  - {src: gpu0, dts: gpu1, bytes: 1 MB}\n").find("did you mean 'dst'?") != std::string::npos);
}
