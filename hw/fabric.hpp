// Topology built: a Boost.Graph of the nodes and links, the resources
// (solver constraints) they define, and routes between endpoints.
//
// Routing rules (docs/formats/topology.md "Routes"):
//  * GPU <-> GPU on one host: over NVLink/NVSwitch when a path of NVLink
//    links exists and P2P is not disabled for the run; else PCIe peer-to-peer when both GPUs allow P2P, the pair is
//    not disabled, P2P is not disabled for the run (NCCL_P2P_DISABLE) and the
//    PCIe path type is no farther than the topology's p2p_level; else bounced
//    through the sender's nearest host memory (GPU->DRAM->GPU: both hops'
//    resources, DRAM twice).
//  * GPU <-> host memory: the PCIe path (fewest hops, then lowest latency).
//  * Across hosts: to the nearest NIC (GPUDirect RDMA when the GPU-NIC path
//    type is within gdr_level, else staged through host memory), over the
//    network, then from the remote NIC to the destination.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/maxmin.hpp"
#include "topology.hpp"

namespace osim::hw {

enum class RouteKind { Local, NvLink, PcieP2P, ViaHost, HostMemory, Network, NetworkViaHost };
std::string to_string(RouteKind k);

struct Resource {
  std::string name;
  double capacity = 0;  // bytes/s
};

struct ResourceUse {
  int resource;
  double coefficient;
};

struct Route {
  RouteKind kind = RouteKind::Local;
  std::vector<int> nodes;  // node indices, source first
  std::vector<ResourceUse> uses;
  Time latency;
  /// min over uses of capacity / coefficient: a lone flow's rate.
  Bandwidth bottleneck = Bandwidth::unlimited();
  uint32_t link_kinds = 0;  // one bit per LinkKind crossed
  [[nodiscard]] bool crosses(LinkKind k) const { return (link_kinds >> static_cast<int>(k)) & 1U; }
};

struct RouteOptions {
  bool p2p_disabled = false;  // like NCCL_P2P_DISABLE=1: no NVLink, no PCIe P2P
  bool dma = false;           // a copy-engine transfer: host bridges' limits apply (they do to bounced GPU traffic too)
  bool operator<(const RouteOptions& o) const { return std::tie(p2p_disabled, dma) < std::tie(o.p2p_disabled, o.dma); }
};

class Topology {
 public:
  explicit Topology(TopologySpec spec);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  [[nodiscard]] const TopologySpec& spec() const { return spec_; }
  [[nodiscard]] const std::string& name() const { return spec_.name; }
  [[nodiscard]] size_t node_count() const { return spec_.nodes.size(); }
  [[nodiscard]] const NodeSpec& node(int i) const { return spec_.nodes[i]; }
  /// -1 when unknown.
  [[nodiscard]] int find(const std::string& name) const;
  [[nodiscard]] std::vector<int> nodes_of_kind(NodeKind k) const;
  [[nodiscard]] std::vector<int> gpus() const { return nodes_of_kind(NodeKind::Gpu); }
  /// Hosts are the connected parts left when network links are removed.
  [[nodiscard]] int host_of(int node) const { return host_[node]; }
  [[nodiscard]] int host_count() const { return host_count_; }

  [[nodiscard]] const std::vector<Resource>& resources() const { return resources_; }
  /// Adds one constraint per resource; returns their ids, index = resource.
  std::vector<ConstraintId> install(MaxMinSystem& sys) const;

  /// Whether a resource is a link direction (not a node's aggregate, a host
  /// bridge's limit or a memory).
  [[nodiscard]] bool is_link(int resource) const { return resource >= 0 && static_cast<size_t>(resource) < link_resources_; }
  /// A host bridge's resource limiting traffic from host memory, or -1.
  [[nodiscard]] int from_host_resource(int node) const { return node_from_host_[static_cast<size_t>(node)]; }
  /// A host bridge's resource limiting traffic to host memory, or -1.
  [[nodiscard]] int to_host_resource(int node) const { return node_to_host_[static_cast<size_t>(node)]; }
  /// The host memory (CPU node) nearest to a node on its host.
  [[nodiscard]] int nearest_cpu(int node) const;
  [[nodiscard]] PathType path_type(int gpu_a, int gpu_b) const;
  /// Throws InputError if the endpoints cannot be joined. A route between
  /// hosts stays valid until the next route() call (it is built on demand
  /// into one reused route); one inside a host for the Topology's life.
  [[nodiscard]] const Route& route(int src, int dst, const RouteOptions& opt = {}) const;
  [[nodiscard]] std::string describe(const Route& r) const;
  /// GPU `gpu`'s NVLink port on the NVSwitch it is joined to (its first
  /// NVLink link to one): the way up to the switch (`up`: the link's
  /// direction into it and the switch's aggregate limit where it has one)
  /// or down from it (the link's direction out of it only: a byte through
  /// the switch counts once there, as a GPU-to-GPU route counts it). What
  /// NVLink SHARP traffic crosses, the switch reducing and multicasting in
  /// between. Throws InputError where the GPU has no NVLink to an NVSwitch.
  [[nodiscard]] const Route& switch_port(int gpu, bool up) const;

 private:
  struct Graph;
  struct HopPath {
    std::vector<int> nodes;
    std::vector<int> links;  // links[i] joins nodes[i] and nodes[i+1]
    double weight = 0;
    [[nodiscard]] bool empty() const { return nodes.empty(); }
    void reverse();
  };
  const HopPath& pcie_path(int src, int dst) const;
  const HopPath& nvlink_path(int src, int dst) const;
  void network_path(HopPath& out, int src, int dst) const;
  int nearest_nic(int node) const;
  PathType classify_pcie(const HopPath& path) const;
  void add_hop_path(Route& r, const HopPath& path, bool first_leg, bool host_limits) const;
  void build_route(Route& r, int src, int dst, const RouteOptions& opt) const;
  void finish(Route& r) const;

  TopologySpec spec_;
  std::unique_ptr<Graph> g_;
  std::map<std::string, int> index_;
  std::vector<int> host_;
  int host_count_ = 0;
  std::vector<Resource> resources_;
  size_t link_resources_ = 0;                       // resources [0, this) are link directions
  std::vector<int> link_fwd_, link_rev_;            // resource per link direction (a->b, b->a)
  std::vector<int> link_a_;                         // node index of each link's `a` end
  std::vector<int> node_throughput_;                // resource or -1
  std::vector<int> node_to_host_, node_from_host_;  // host bridges' directional limits, or -1
  std::vector<int> node_dram_;                      // resource or -1
  mutable std::map<std::tuple<int, int, RouteOptions>, Route> route_cache_;
  mutable std::map<std::pair<int, bool>, Route> port_cache_;  // switch_port's, by (gpu, up)
  mutable Route net_route_scratch_;  // the last route between hosts (see route())
  mutable HopPath net_path_scratch_;
  mutable std::vector<int> nearest_cpu_, nearest_nic_;               // memo; -2 = not yet
  std::vector<std::vector<int>> cpus_of_host_, nics_of_host_;        // each host's, in node order
  mutable std::map<std::tuple<int, int, int>, HopPath> host_paths_;  // (src, dst, 0 pcie / 1 nvlink)
  struct NetLeg {
    int nic = -1;
    std::vector<HopPath> parts;  // endpoint to NIC (outbound) or NIC to endpoint
    bool via_host = false;       // through host memory: GPUDirect RDMA out of reach
  };
  mutable std::vector<std::optional<NetLeg>> net_legs_;  // per (endpoint, outbound): 2 * node + outbound
};

/// Resources that carried bytes, busiest first (average utilisation over
/// `span_s`; ties keep resource order).
std::vector<size_t> by_utilisation(const Topology& topo, const std::vector<double>& resource_bytes, double span_s);

}  // namespace osim::hw
