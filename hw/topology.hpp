// Topology: GPUs, PCIe switches, host bridges, CPU sockets with their DRAM,
// NVSwitches, NICs and network switches, joined by links. Read from YAML into
// plain structs (TopologySpec), validated, then built into a Boost.Graph
// (Topology). The format: docs/formats/topology.md.
//
// Every link direction is one *resource* (a solver constraint); a half-duplex
// link is one resource for both directions. A node's aggregate limit
// (`throughput`, e.g. a host bridge) is a resource that every route through
// the node uses; a CPU's `memory_bandwidth` is a resource used by every route
// that starts or ends in that socket's DRAM (twice by a route that bounces
// through it: written, then read).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "io/override.hpp"

namespace osim::hw {

enum class NodeKind { Gpu, PcieSwitch, HostBridge, Cpu, NvSwitch, Nic, NetworkSwitch };
// NvLinkC2C: a Grace Hopper superchip's GPU to its CPU (the host path, like PCIe).
enum class LinkKind { Pcie, NvLink, InterSocket, Internal, InfiniBand, Ethernet, NvLinkC2C };

/// nvidia-smi topo -m / NCCL path types, nearest first.
enum class PathType { Loc = 0, NvLink = 1, Pix = 2, Pxb = 3, Phb = 4, Node = 5, Sys = 6, Net = 7 };

std::string to_string(NodeKind k);
std::string to_string(LinkKind k);
std::string to_string(PathType p);
std::optional<PathType> path_type_from_string(const std::string& s);

struct GpuParams {
  std::string model;
  std::optional<Bytes> memory;  // VRAM capacity
  std::optional<Bandwidth> hbm_bandwidth;
  std::optional<int> sms;
  std::optional<int> copy_engines;
  bool p2p = true;                            // false: the card cannot do peer-to-peer (e.g. RTX 4090)
  std::map<std::string, double> peak_tflops;  // dense tensor-core rate per dtype ("bf16", "fp8", ...)
};

struct NodeSpec {
  std::string name;
  NodeKind kind = NodeKind::Gpu;
  SourceLocation where;
  std::optional<Bandwidth> throughput;            // aggregate limit through the node
  std::optional<Bandwidth> throughput_to_host;    // host_bridge: traffic going up to its CPU
  std::optional<Bandwidth> throughput_from_host;  // host_bridge: traffic coming down from its CPU
  std::optional<Bandwidth> memory_bandwidth;      // cpu: DRAM
  std::optional<Bytes> memory;                    // cpu: host DRAM capacity
  Time latency;                                   // per traversal
  GpuParams gpu;                                  // kind == Gpu only
};

struct LinkSpec {
  std::string name;  // the line's `name:` (may be empty): addresses it in --set and sweep keys
  std::string a, b;
  LinkKind kind = LinkKind::Pcie;
  Bandwidth bandwidth = Bandwidth::unlimited();  // per direction
  Time latency;
  bool half_duplex = false;
  std::string label;  // "gen5 x16", "nvlink x18", ...
  SourceLocation where;
};

struct TopologySpec {
  std::string file;
  std::string name;
  std::string description;
  PathType p2p_level = PathType::Pxb;  // NCCL_P2P_LEVEL: farthest path type that still uses P2P
  PathType gdr_level = PathType::Pxb;  // NCCL_NET_GDR_LEVEL: farthest GPU<->NIC path using GPUDirect RDMA
  std::vector<std::pair<std::string, std::string>> p2p_disabled_pairs;
  std::vector<NodeSpec> nodes;
  std::vector<LinkSpec> links;
};

/// Parses and validates; throws InputError naming file:line.
/// `overrides`: "key=value" edits applied before parsing (overlapsim sweep's
/// topology.* keys), e.g. "nodes.gpu{i}.memory=141 GiB", "links.gpu_pcie.pcie=gen4 x16".
TopologySpec parse_topology_file(const std::string& path, const std::vector<std::string>& overrides = {});
/// The same with each edit's own place (a sweep's line): errors in its value name it.
TopologySpec parse_topology_file(const std::string& path, const std::vector<Override>& overrides);
TopologySpec parse_topology_string(const std::string& yaml, const std::string& name = "<string>");

}  // namespace osim::hw
