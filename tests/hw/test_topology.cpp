#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hw/fabric.hpp"

using namespace osim;
using namespace osim::hw;

namespace {
const std::string kDir = std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/";

// Parses and builds; returns the InputError text, or "" if none.
std::string error_of(const std::string& yaml) {
  try {
    Topology t(parse_topology_string(yaml, "t.yaml"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kMinimal = R"(name: mini
nodes:
  - {name: cpu0, kind: cpu}
  - {name: gpu0, kind: gpu}
links:
  - {a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}
)";
}  // namespace

TEST_CASE("a minimal topology parses, with the pcie shorthand") {
  Topology t(parse_topology_string(kMinimal, "t.yaml"));
  CHECK(t.gpus().size() == 1);
  // gen4 x16: 16 GT/s x 128/130 / 8 x 16 lanes x 0.87
  CHECK(t.resources()[0].capacity == doctest::Approx(16.0 * 128 / 130 / 8 * 16 * 0.87 * 1e9));
  CHECK(t.resources()[0].name == "gpu0->cpu0");
  CHECK(t.resources()[1].name == "cpu0->gpu0");
}

TEST_CASE("the pcie shorthand: generation 1-6, any case, lanes 1/2/4/8/16, nothing else") {
  auto with = [](const std::string& pcie) {
    return "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\nlinks:\n  - {a: gpu0, b: cpu0, pcie: '" + pcie +
           "', latency: 1 us}\n";
  };
  for (const auto& spelled : std::vector<std::pair<std::string, double>>{
           {"GEN3 X8", 8.0 * 128 / 130 / 8 * 8}, {"gen5x16", 32.0 * 128 / 130 / 8 * 16}, {"gen6 \t x1", 64.0 * 242 / 256 / 8}, {"gen1 x2", 0.5}}) {
    const std::string& text = spelled.first;  // (no structured binding: CAPTURE's lambda cannot take one under clang)
    const double gbps = spelled.second;
    CAPTURE(text);
    Topology t(parse_topology_string(with(text), "t.yaml"));
    CHECK(t.resources()[0].capacity == doctest::Approx(gbps * 0.87 * 1e9));
  }
  for (const std::string bad :
       {"gen7 x16", "gen0 x16", "gen5 x3", "gen5 x016", "gen5 x 16", "gen5 x16 ", " gen5 x16", "gen5", "pcie5 x16", "gen5 x32"}) {
    CAPTURE(bad);
    const auto e = error_of(with(bad));
    CHECK(e.find("t.yaml:6:") == 0);
    CHECK(e.find("is not like 'gen5 x16' (gen1..gen6, x1/x2/x4/x8/x16)") != std::string::npos);
  }
}

TEST_CASE("bad topologies are errors naming file:line and what to do") {
  SUBCASE("unknown key, with a suggestion") {
    const auto e = error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu, memory_bandwith: 1 GB/s}\n");
    CHECK(e.find("t.yaml:3:") == 0);
    CHECK(e.find("unknown key 'memory_bandwith' in cpu node; did you mean 'memory_bandwidth'?") != std::string::npos);
  }
  SUBCASE("a key of another node kind") {
    const auto e = error_of("name: x\nnodes:\n  - {name: sw, kind: pcie_switch, memory: 1 GiB}\n");
    CHECK(e.find("unknown key 'memory' in pcie_switch node") != std::string::npos);
  }
  SUBCASE("unknown node kind") {
    const auto e = error_of("name: x\nnodes:\n  - {name: g, kind: gpuu}\n");
    CHECK(e.find("t.yaml:3:") == 0);
    CHECK(e.find("unknown node kind 'gpuu' (did you mean 'gpu'?)") != std::string::npos);
  }
  SUBCASE("missing field") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu0, pcie: gen5 x16}\n");
    CHECK(e.find("t.yaml:6:") == 0);
    CHECK(e.find("needs 'latency'") != std::string::npos);
  }
  SUBCASE("missing name") {
    const auto e = error_of("nodes:\n  - {name: cpu0, kind: cpu}\n");
    CHECK(e.find("missing the required key 'name'") != std::string::npos);
  }
  SUBCASE("zero bandwidth") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: 0 GB/s, latency: 1 us}\n");
    CHECK(e.find("t.yaml:6:") == 0);
    CHECK(e.find("must be positive") != std::string::npos);
  }
  SUBCASE("negative bandwidth") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: -3 GB/s, latency: 1 us}\n");
    CHECK(e.find("must be positive") != std::string::npos);
  }
  SUBCASE("duplicate names") {
    const auto e = error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: cpu0, kind: cpu}\n  - {name: g, kind: gpu}\n");
    CHECK(e.find("t.yaml:4:") == 0);
    CHECK(e.find("duplicate node name 'cpu0' (first defined at t.yaml:3:") != std::string::npos);
  }
  SUBCASE("duplicate names made by repeat") {
    const auto e = error_of("name: x\nnodes:\n  - {name: \"g{i/2}\", kind: gpu, repeat: 2}\n");
    CHECK(e.find("duplicate node name 'g0'") != std::string::npos);
  }
  SUBCASE("a link to an unknown node") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu1, pcie: gen5 x16, latency: 1 us}\n");
    CHECK(e.find("t.yaml:6:") == 0);
    CHECK(e.find("unknown node 'cpu1'; did you mean 'cpu0'?") != std::string::npos);
  }
  SUBCASE("a GPU with no route to host memory") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "  - {name: gpu1, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu0, pcie: gen5 x16, latency: 1 us}\n"
        "  - {a: gpu0, b: gpu1, nvlinks: 4, latency: 1 us}\n");
    CHECK(e.find("t.yaml:5:") == 0);
    CHECK(e.find("GPU 'gpu1' has no PCIe path to host memory") != std::string::npos);
  }
  SUBCASE("a bad repeat expression") {
    const auto e = error_of("name: x\nnodes:\n  - {name: \"g{k}\", kind: gpu, repeat: 2}\n");
    CHECK(e.find("t.yaml:3:") == 0);
    CHECK(e.find("unknown variable 'k'") != std::string::npos);
  }
  SUBCASE("a YAML syntax error") {
    const auto e = error_of("name: x\nnodes: [\n");
    CHECK(e.find("t.yaml:") == 0);
    CHECK(e.find("YAML syntax error") != std::string::npos);
  }
  SUBCASE("nvlink to a cpu") {
    const auto e = error_of(
        "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n"
        "links:\n  - {a: gpu0, b: cpu0, nvlinks: 2, latency: 1 us}\n");
    CHECK(e.find("nvlink links join GPUs and NVSwitches") != std::string::npos);
  }
}

TEST_CASE("links by name: one key edits the GPUs' PCIe line on any shipped topology") {
  // Gen5 x16 at the default efficiency, then Gen4 x16: half the lane rate.
  const double gen5 = 32.0 * 128 / 130 / 8 * 16 * 0.87 * 1e9;
  for (const char* file : {"aces-4xh100-pcie.yaml", "dgx-h100.yaml", "h100-2node-ib.yaml"}) {
    CAPTURE(file);
    const TopologySpec spec = parse_topology_file(kDir + file, {"links.gpu_pcie.pcie=gen4 x16"});
    int edited = 0;
    for (const LinkSpec& l : spec.links)
      if (l.name == "gpu_pcie") {
        CHECK(l.label == "gen4 x16");
        CHECK(l.bandwidth.bytes_per_s == doctest::Approx(gen5 / 2));
        ++edited;
      } else if (l.kind == LinkKind::Pcie) {
        CHECK(l.label == "gen5 x16");  // switch uplinks and NICs keep theirs
      }
    CHECK(edited == static_cast<int>(Topology(spec).gpus().size()));
  }
  // By index the same edit would hit the DGX's inter-socket line, and fail.
  CHECK_THROWS_AS(parse_topology_file(kDir + "dgx-h100.yaml", {"links.1.pcie=gen4 x16"}), InputError);
}

TEST_CASE("a link's name is a plain name, one per line") {
  CHECK(error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\nlinks:\n"
                 "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n"
                 "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("t.yaml:7:") == 0);
  CHECK(error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\nlinks:\n"
                 "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n"
                 "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("link name 'up' is used already on line 6: give each link line its own name") != std::string::npos);
  CHECK(error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\nlinks:\n"
                 "  - {name: '12', a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("a link's name must be a plain name") != std::string::npos);
  CHECK(error_of("name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\nlinks:\n"
                 "  - {name: a.b, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("not 'a.b'") != std::string::npos);
  // A role (several lines may share one) is a plain name too, and no line's name: a key would pick that line alone.
  const std::string two = "name: x\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: \"gpu{i}\", kind: gpu, repeat: 2}\nlinks:\n";
  CHECK_NOTHROW(parse_topology_string(two + "  - {name: p0, role: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n"
                                            "  - {name: p1, role: up, a: gpu1, b: cpu0, pcie: gen4 x16, latency: 1 us}\n",
                                      "t.yaml"));
  CHECK(error_of(two + "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n"
                       "  - {name: p1, role: up, a: gpu1, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("t.yaml:7:") == 0);
  CHECK(error_of(two + "  - {name: up, a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n"
                       "  - {name: p1, role: up, a: gpu1, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("role 'up' is the name of the link on line 6: a key would pick that line alone") != std::string::npos);
  CHECK(error_of(two + "  - {name: p0, role: 'a b', a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n").find("a link's role must be a plain name") !=
        std::string::npos);
}

TEST_CASE("ACES 4xH100 PCIe: GPU pairs bounce through host memory") {
  Topology t(parse_topology_file(kDir + "aces-4xh100-pcie.yaml"));
  const int g0 = t.find("gpu0"), g1 = t.find("gpu1"), g2 = t.find("gpu2");
  CHECK(t.path_type(g0, g1) == PathType::Phb);
  CHECK(t.path_type(g0, g2) == PathType::Sys);
  const Route& same = t.route(g0, g1);
  CHECK(same.kind == RouteKind::ViaHost);
  // gpu0->rc0, cpu0.dram twice, rc0->gpu1
  CHECK(t.describe(same) == "gpu0 -> rc0 -> cpu0 -> rc0 -> gpu1");
  bool dram_twice = false;
  for (const auto& u : same.uses)
    if (t.resources()[u.resource].name == "cpu0.dram") dram_twice = u.coefficient == 2.0;
  CHECK(dram_twice);
  CHECK(same.latency == Time::from_us(2));
  const Route& cross = t.route(g0, g2);
  CHECK(t.describe(cross) == "gpu0 -> rc0 -> cpu0 -> cpu1 -> rc1 -> gpu2");
  CHECK(cross.latency == Time::from_us(2.5));
  CHECK(t.route(t.find("cpu1"), g2).kind == RouteKind::HostMemory);
  CHECK(t.nearest_cpu(g2) == t.find("cpu1"));
}

TEST_CASE("4xH200: NVSwitch between every pair, at the measured P2P rate") {
  Topology t(parse_topology_file(kDir + "h200x4-nvlink.yaml"));
  for (int a : t.gpus())
    for (int b : t.gpus())
      if (a != b) {
        CHECK(t.path_type(a, b) == PathType::NvLink);
        CHECK(t.route(a, b).kind == RouteKind::NvLink);
        CHECK(t.route(a, b).bottleneck.GBps() == doctest::Approx(394));
        CHECK(t.describe(t.route(a, b)) == t.node(a).name + " -> nvswitch -> " + t.node(b).name);
      }
}

TEST_CASE("a GPU's NVSwitch port: its link up with the switch's aggregate, down without, and none without an NVLink to a switch") {
  Topology t(parse_topology_string(R"(name: sw
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvswitch, kind: nvswitch, throughput: 1000 GB/s}
  - {name: "gpu{i}", kind: gpu, repeat: 3}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen4 x16, latency: 1 us, repeat: 3}
  - {a: "gpu{i}", b: nvswitch, kind: nvlink, bandwidth: 300 GB/s, latency: 0.5 us, repeat: 2}
)",
                                   "sw.yaml"));
  auto names = [&](const Route& r) {
    std::vector<std::string> out;
    for (const ResourceUse& u : r.uses) out.push_back(t.resources()[static_cast<size_t>(u.resource)].name + " x" + std::to_string(u.coefficient));
    return out;
  };
  const int g0 = t.find("gpu0");
  const Route& up = t.switch_port(g0, true);
  CHECK(up.kind == RouteKind::NvLink);
  CHECK(names(up) == std::vector<std::string>{"gpu0->nvswitch x1.000000", "nvswitch (aggregate) x1.000000"});
  CHECK(up.bottleneck.GBps() == doctest::Approx(300));
  CHECK(up.latency.us() == doctest::Approx(0.5));
  const Route& down = t.switch_port(g0, false);
  CHECK(names(down) == std::vector<std::string>{"nvswitch->gpu0 x1.000000"});
  // A GPU-to-GPU route crosses the aggregate once too: the way up and the way down together.
  CHECK(t.route(g0, t.find("gpu1")).uses.size() == up.uses.size() + t.switch_port(t.find("gpu1"), false).uses.size());
  // gpu2 reaches the others over PCIe only.
  try {
    (void)t.switch_port(t.find("gpu2"), true);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("'gpu2' has no NVLink to an NVSwitch") != std::string::npos);
  }
}

TEST_CASE("P2P rules: switch-local pairs, disabled cards, NCCL_P2P_DISABLE") {
  const char* yaml = R"(name: p2p
nodes:
  - {name: cpu0, kind: cpu}
  - {name: sw0, kind: pcie_switch}
  - {name: "gpu{i}", kind: gpu, repeat: 3}
links:
  - {a: sw0, b: cpu0, pcie: gen5 x16, latency: 1 us}
  - {a: "gpu{i}", b: sw0, pcie: gen5 x16, latency: 1 us, repeat: 3}
p2p_disabled_pairs: [[gpu0, gpu2]]
)";
  Topology t(parse_topology_string(yaml, "p2p.yaml"));
  const int g0 = t.find("gpu0"), g1 = t.find("gpu1"), g2 = t.find("gpu2");
  CHECK(t.path_type(g0, g1) == PathType::Pix);
  CHECK(t.route(g0, g1).kind == RouteKind::PcieP2P);
  CHECK(t.describe(t.route(g0, g1)) == "gpu0 -> sw0 -> gpu1");
  CHECK(t.route(g0, g2).kind == RouteKind::ViaHost);  // pair disabled
  RouteOptions off;
  off.p2p_disabled = true;
  CHECK(t.route(g0, g1, off).kind == RouteKind::ViaHost);
  CHECK(t.describe(t.route(g0, g1, off)) == "gpu0 -> sw0 -> cpu0 -> sw0 -> gpu1");
}

TEST_CASE("RTX 4090 box: no P2P, and the switch uplink carries both directions of a bounce") {
  Topology t(parse_topology_file(kDir + "rtx4090x8-pcie.yaml"));
  const Route& r = t.route(t.find("gpu0"), t.find("gpu1"));
  CHECK(r.kind == RouteKind::ViaHost);
  CHECK(t.path_type(t.find("gpu0"), t.find("gpu1")) == PathType::Pix);
  int uplink_dirs = 0;
  for (const auto& u : r.uses) {
    const auto& n = t.resources()[u.resource].name;
    if (n == "pcisw0->rc0" || n == "rc0->pcisw0") ++uplink_dirs;
  }
  CHECK(uplink_dirs == 2);
}

TEST_CASE("host bridges limit copy-engine DMA per direction, and NCCL's bounce through host memory too") {
  Topology t(parse_topology_file(kDir + "h200x4-nvlink.yaml"));
  auto count = [&](const Route& r, const std::string& name) {
    int n = 0;
    for (const auto& u : r.uses) n += t.resources()[u.resource].name == name;
    return n;
  };
  const int cpu = t.find("cpu0"), g0 = t.find("gpu0"), g1 = t.find("gpu1");
  RouteOptions copy;
  copy.dma = true;
  CHECK(count(t.route(cpu, g0, copy), "rc0 (from host)") == 1);
  CHECK(count(t.route(cpu, g0, copy), "rc0 (to host)") == 0);
  CHECK(count(t.route(g0, cpu, copy), "rc0 (to host)") == 1);
  RouteOptions nccl_off;
  nccl_off.p2p_disabled = true;                     // NCCL's SHM bounce: SM-driven, yet held by the bridges' limits like a copy
  const Route& bounce = t.route(g0, g1, nccl_off);  // (measured: copies and a P2P-off all-to-all share ~160 GB/s down)
  CHECK(bounce.kind == RouteKind::ViaHost);
  CHECK(count(bounce, "rc0 (to host)") == 1);
  CHECK(count(bounce, "rc0 (from host)") == 1);
  CHECK(count(bounce, "gpu0->rc0") == 1);  // but it does cross both GPUs' links
  CHECK(count(bounce, "rc0->gpu1") == 1);
}

TEST_CASE("2-node cluster: hosts, GPUDirect RDMA over the nearest NIC") {
  Topology t(parse_topology_file(kDir + "h100-2node-ib.yaml"));
  CHECK(t.host_count() == 2);
  const int a = t.find("n0_gpu3"), b = t.find("n1_gpu5");
  CHECK(t.host_of(a) != t.host_of(b));
  CHECK(t.path_type(a, b) == PathType::Net);
  const Route& r = t.route(a, b);
  CHECK(r.kind == RouteKind::Network);
  CHECK(t.describe(r) == "n0_gpu3 -> n0_pcisw3 -> n0_nic3 -> ibswitch -> n1_nic5 -> n1_pcisw5 -> n1_gpu5");
  CHECK(r.bottleneck.GBps() == doctest::Approx(50));
  // 0.5 (gpu-sw) + 0.5 (sw-nic) + 0.5 (nic-ib) + 0.6 (switch) + 0.5 + 0.5 + 0.5
  CHECK(r.latency == Time::from_us(3.6));
  CHECK(t.route(t.find("n0_gpu0"), t.find("n0_gpu7")).kind == RouteKind::NvLink);
}

TEST_CASE("DGX H100: NVSwitch for GPUs, the GPU's own PCIe switch to host memory") {
  Topology t(parse_topology_file(kDir + "dgx-h100.yaml"));
  CHECK(t.route(t.find("gpu1"), t.find("gpu6")).bottleneck.GBps() == doctest::Approx(450));
  CHECK(t.describe(t.route(t.find("cpu1"), t.find("gpu6"))) == "cpu1 -> rc1 -> pcisw6 -> gpu6");
}

TEST_CASE("Grace Hopper: NVLink-C2C is each GPU's host path, and joins a GPU and a CPU only") {
  const std::string yaml = R"(name: gh200x2
nodes:
  - {name: "cpu{i}", kind: cpu, memory_bandwidth: 500 GB/s, memory: 480 GB, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: GH200, memory: 96 GB, hbm_bandwidth: 4 TB/s, sms: 132, copy_engines: 3, repeat: 2}
links:
  - {a: "gpu{i}", b: "cpu{i}", kind: nvlink_c2c, bandwidth: 450 GB/s, latency: 0.5 us, repeat: 2}
  - {a: cpu0, b: cpu1, kind: inter_socket, bandwidth: 100 GB/s, latency: 1 us}
)";
  Topology t(parse_topology_string(yaml, "gh.yaml"));
  const int cpu0 = t.find("cpu0"), gpu0 = t.find("gpu0"), gpu1 = t.find("gpu1");
  const Route& h2d = t.route(cpu0, gpu0);
  CHECK(h2d.kind == RouteKind::HostMemory);
  CHECK(h2d.bottleneck.GBps() == doctest::Approx(450));
  CHECK(h2d.crosses(LinkKind::NvLinkC2C));  // copies take the C2C engine cap (CopyParams)
  CHECK(!h2d.crosses(LinkKind::Pcie));
  CHECK(t.path_type(gpu0, gpu1) == PathType::Sys);
  CHECK(t.route(gpu0, gpu1).crosses(LinkKind::InterSocket));
  // GPU to GPU bounces through the sender's host memory and crosses the sockets' link.
  CHECK(t.route(gpu0, gpu1).bottleneck.GBps() == doctest::Approx(100));
  std::string bad = yaml;
  const std::string from = "{a: \"gpu{i}\", b: \"cpu{i}\"";
  bad.replace(bad.find(from), from.size(), "{a: \"gpu{i}\", b: \"gpu{1-i}\"");
  try {
    Topology bt(parse_topology_string(bad, "gh.yaml"));
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("nvlink_c2c links join a GPU and its CPU") != std::string::npos);
  }
}
