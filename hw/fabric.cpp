#include "fabric.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <deque>

#include <fmt/format.h>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>

namespace osim::hw {

std::string to_string(RouteKind k) {
  switch (k) {
    case RouteKind::Local: return "local";
    case RouteKind::NvLink: return "nvlink";
    case RouteKind::PcieP2P: return "pcie-p2p";
    case RouteKind::ViaHost: return "via-host";
    case RouteKind::HostMemory: return "host";
    case RouteKind::Network: return "network";
    case RouteKind::NetworkViaHost: return "network-via-host";
  }
  return "?";
}

namespace {
struct VertexP {
  int node = -1;
};
struct EdgeP {
  int link = -1;
  double weight = 0;
};
using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexP, EdgeP>;
using Edge = boost::graph_traits<G>::edge_descriptor;

struct EdgeFilter {
  const G* g = nullptr;
  const std::vector<LinkSpec>* links = nullptr;
  uint32_t kinds = 0;  // bit per LinkKind
  bool operator()(const Edge& e) const { return (kinds >> static_cast<int>((*links)[(*g)[e].link].kind)) & 1U; }
};
struct VertexFilter {
  const std::vector<NodeSpec>* nodes = nullptr;
  uint32_t kinds = 0;  // bit per NodeKind allowed as an intermediate
  int src = -1, dst = -1;
  bool operator()(size_t v) const {
    const int n = static_cast<int>(v);
    return n == src || n == dst || ((kinds >> static_cast<int>((*nodes)[n].kind)) & 1U);
  }
};
// Records, for each vertex, the edge that last relaxed it (the shortest-path tree).
struct EdgeRecorder : boost::base_visitor<EdgeRecorder> {
  using event_filter = boost::on_edge_relaxed;
  std::vector<Edge>* pe = nullptr;
  std::vector<char>* hp = nullptr;
  template <class E, class FG>
  void operator()(E e, const FG& fg) {
    const size_t t = boost::target(e, fg);
    (*pe)[t] = e;
    (*hp)[t] = 1;
  }
};
// Records the vertices a search discovers: the only ones whose scratch
// entries it changed.
struct DiscoverRecorder : boost::base_visitor<DiscoverRecorder> {
  using event_filter = boost::on_discover_vertex;
  std::vector<int>* seen = nullptr;
  template <class V, class FG>
  void operator()(V v, const FG&) {
    seen->push_back(static_cast<int>(v));
  }
};
constexpr uint32_t bit(LinkKind k) { return 1U << static_cast<int>(k); }
constexpr uint32_t bit(NodeKind k) { return 1U << static_cast<int>(k); }

// The host path: PCIe and what stands in for it (a Grace Hopper's NVLink-C2C to its CPU).
constexpr uint32_t kPcieLinks = bit(LinkKind::Pcie) | bit(LinkKind::Internal) | bit(LinkKind::InterSocket) | bit(LinkKind::NvLinkC2C);
constexpr uint32_t kPcieNodes = bit(NodeKind::PcieSwitch) | bit(NodeKind::HostBridge) | bit(NodeKind::Cpu);
constexpr uint32_t kNetLinks = bit(LinkKind::InfiniBand) | bit(LinkKind::Ethernet);
}  // namespace

struct Topology::Graph {
  G g;
  using Path = Topology::HopPath;

  // A shortest-path tree from one source over the vertices allowed as
  // intermediates. Routes are asked for one source at a time (a collective
  // launches every flow of a rank together), so a few recent trees answer
  // nearly every query: one Dijkstra per source instead of one per pair.
  // A tree keeps only the vertices it reached (a host's dozen, or a
  // network's NICs), sorted: a 1,024-GPU cluster has thousands of vertices,
  // and a dense tree per source cost more than the search.
  struct Reach {
    int v;
    double dist;
    Edge pred;  // the edge into v (unset for the source)
  };
  struct Tree {
    int src;
    uint32_t link_kinds, node_kinds;
    std::vector<Reach> reached;  // by vertex
    [[nodiscard]] const Reach* at(size_t v) const {
      auto it = std::lower_bound(reached.begin(), reached.end(), static_cast<int>(v), [](const Reach& r, int x) { return r.v < x; });
      return it != reached.end() && it->v == static_cast<int>(v) ? &*it : nullptr;
    }
  };
  static constexpr size_t kTrees = 16;
  mutable std::deque<Tree> trees;  // most recent first
  // Dense scratch for one search, left as found (infinite, white, unset)
  // for the vertices it touched: no per-search initialisation of all vertices.
  mutable std::vector<double> dist_;
  mutable std::vector<boost::default_color_type> color_;
  mutable std::vector<Edge> pred_edge_;
  mutable std::vector<char> has_pred_;
  mutable std::vector<int> seen_;

  const Tree& tree(const std::vector<NodeSpec>& nodes, const std::vector<LinkSpec>& links, int src, uint32_t link_kinds, uint32_t node_kinds) const {
    for (auto it = trees.begin(); it != trees.end(); ++it)
      if (it->src == src && it->link_kinds == link_kinds && it->node_kinds == node_kinds) {
        if (it != trees.begin()) {
          Tree t = std::move(*it);
          trees.erase(it);
          trees.push_front(std::move(t));
        }
        return trees.front();
      }
    EdgeFilter ef{&g, &links, link_kinds};
    VertexFilter vf{&nodes, node_kinds, src, -1};
    boost::filtered_graph<G, EdgeFilter, VertexFilter> fg(g, ef, vf);
    const size_t n = boost::num_vertices(g);
    if (dist_.size() != n) {
      dist_.assign(n, std::numeric_limits<double>::infinity());
      color_.assign(n, boost::white_color);
      pred_edge_.assign(n, Edge{});
      has_pred_.assign(n, 0);
    }
    seen_.clear();
    const size_t s = static_cast<size_t>(src);
    dist_[s] = 0;
    EdgeRecorder rec;
    rec.pe = &pred_edge_;
    rec.hp = &has_pred_;
    DiscoverRecorder disc;
    disc.seen = &seen_;
    const auto index = boost::get(boost::vertex_index, g);
    // Undirected: the relaxed edge's "target" is the vertex reached; for an
    // undirected edge descriptor boost reports source/target as traversed.
    boost::dijkstra_shortest_paths_no_init(fg, s, boost::dummy_property_map(), boost::make_iterator_property_map(dist_.begin(), index),
                                           boost::get(&EdgeP::weight, g), index, std::less<double>(), boost::closed_plus<double>(), 0.0,
                                           boost::make_dijkstra_visitor(std::make_pair(rec, disc)),
                                           boost::make_iterator_property_map(color_.begin(), index));
    Tree t{src, link_kinds, node_kinds, {}};
    t.reached.reserve(seen_.size() + 1);
    t.reached.push_back(Reach{src, 0.0, Edge{}});
    for (int v : seen_) {
      const size_t u = static_cast<size_t>(v);
      if (v != src && has_pred_[u]) t.reached.push_back(Reach{v, dist_[u], pred_edge_[u]});
      dist_[u] = std::numeric_limits<double>::infinity();
      color_[u] = boost::white_color;
      has_pred_[u] = 0;
    }
    dist_[s] = std::numeric_limits<double>::infinity();
    color_[s] = boost::white_color;
    std::sort(t.reached.begin(), t.reached.end(), [](const Reach& a, const Reach& b) { return a.v < b.v; });
    if (trees.size() >= kTrees) {
      trees.pop_back();
    }
    trees.push_front(std::move(t));
    return trees.front();
  }

  // The shortest path from src to dst whose intermediate vertices are of
  // `node_kinds` (src and dst may be of any kind).
  Path shortest(const std::vector<NodeSpec>& nodes, const std::vector<LinkSpec>& links, int src, int dst, uint32_t link_kinds,
                uint32_t node_kinds) const {
    Path p;
    shortest_into(p, nodes, links, src, dst, link_kinds, node_kinds);
    return p;
  }
  // The same into `p` (cleared first; its storage is reused): no allocation
  // once `p` has grown, for the million routes of a large all-to-all.
  void shortest_into(Path& p, const std::vector<NodeSpec>& nodes, const std::vector<LinkSpec>& links, int src, int dst, uint32_t link_kinds,
                     uint32_t node_kinds) const {
    p.nodes.clear();
    p.links.clear();
    p.weight = 0;
    if (src == dst) return;
    const Tree& t = tree(nodes, links, src, link_kinds, node_kinds);
    const size_t d = static_cast<size_t>(dst);
    int last = -1;  // the link into dst
    int cur = -1;   // the vertex before it
    if ((node_kinds >> static_cast<int>(nodes[d].kind)) & 1U) {
      const Reach* rd = t.at(d);
      if (!rd) return;
      p.weight = rd->dist;
      const Edge e = rd->pred;
      last = g[e].link;
      const int a = static_cast<int>(boost::source(e, g)), b = static_cast<int>(boost::target(e, g));
      cur = (a == dst) ? b : a;
    } else {
      // dst cannot be an intermediate, so the tree did not go through it:
      // arrive from the neighbour that gives the least distance.
      double best = std::numeric_limits<double>::infinity();
      for (auto [it, end] = boost::out_edges(d, g); it != end; ++it) {
        if (!((link_kinds >> static_cast<int>(links[g[*it].link].kind)) & 1U)) continue;
        const size_t u = boost::target(*it, g);
        const Reach* ru = t.at(u);
        if (!ru || !(static_cast<int>(u) == src || ((node_kinds >> static_cast<int>(nodes[u].kind)) & 1U))) continue;
        const double w = ru->dist + g[*it].weight;
        if (w < best) {
          best = w;
          last = g[*it].link;
          cur = static_cast<int>(u);
        }
      }
      if (cur < 0) return;
      p.weight = best;
    }
    p.nodes.push_back(dst);
    p.links.push_back(last);
    while (cur != src) {
      const Edge e = t.at(static_cast<size_t>(cur))->pred;
      p.nodes.push_back(cur);
      p.links.push_back(g[e].link);
      const int a = static_cast<int>(boost::source(e, g)), b = static_cast<int>(boost::target(e, g));
      cur = (a == cur) ? b : a;
    }
    p.nodes.push_back(src);
    std::reverse(p.nodes.begin(), p.nodes.end());
    std::reverse(p.links.begin(), p.links.end());
  }
};

Topology::~Topology() = default;

void Topology::HopPath::reverse() {
  std::reverse(nodes.begin(), nodes.end());
  std::reverse(links.begin(), links.end());
}

Topology::Topology(TopologySpec spec) : spec_(std::move(spec)), g_(std::make_unique<Graph>()) {
  G& g = g_->g;
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    index_[spec_.nodes[i].name] = static_cast<int>(i);
    boost::add_vertex(VertexP{static_cast<int>(i)}, g);
  }
  // Resources: link directions, then node aggregates, in file order.
  link_fwd_.resize(spec_.links.size());
  link_rev_.resize(spec_.links.size());
  link_a_.resize(spec_.links.size());
  for (size_t i = 0; i < spec_.links.size(); ++i) {
    const LinkSpec& l = spec_.links[i];
    const int a = index_.at(l.a), b = index_.at(l.b);
    link_a_[i] = a;
    boost::add_edge(static_cast<size_t>(a), static_cast<size_t>(b), EdgeP{static_cast<int>(i), 1e6 + l.latency.ns()}, g);
    if (l.bandwidth.is_unlimited()) {
      link_fwd_[i] = link_rev_[i] = -1;
    } else if (l.half_duplex) {
      link_fwd_[i] = link_rev_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{}<->{}", l.a, l.b), l.bandwidth.bytes_per_s});
    } else {
      link_fwd_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{}->{}", l.a, l.b), l.bandwidth.bytes_per_s});
      link_rev_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{}->{}", l.b, l.a), l.bandwidth.bytes_per_s});
    }
  }
  node_throughput_.assign(spec_.nodes.size(), -1);
  node_to_host_.assign(spec_.nodes.size(), -1);
  node_from_host_.assign(spec_.nodes.size(), -1);
  node_dram_.assign(spec_.nodes.size(), -1);
  link_resources_ = resources_.size();
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const NodeSpec& n = spec_.nodes[i];
    if (n.throughput) {
      node_throughput_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{} (aggregate)", n.name), n.throughput->bytes_per_s});
    }
    if (n.throughput_to_host) {
      node_to_host_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{} (to host)", n.name), n.throughput_to_host->bytes_per_s});
    }
    if (n.throughput_from_host) {
      node_from_host_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{} (from host)", n.name), n.throughput_from_host->bytes_per_s});
    }
    if (n.memory_bandwidth) {
      node_dram_[i] = static_cast<int>(resources_.size());
      resources_.push_back({fmt::format("{}.dram", n.name), n.memory_bandwidth->bytes_per_s});
    }
  }
  // Hosts: components without network links.
  {
    EdgeFilter ef{&g, &spec_.links, ~kNetLinks};
    VertexFilter vf{&spec_.nodes, ~0U, -1, -1};
    boost::filtered_graph<G, EdgeFilter, VertexFilter> fg(g, ef, vf);
    std::vector<int> comp(spec_.nodes.size(), 0);
    boost::connected_components(fg, boost::make_iterator_property_map(comp.begin(), boost::get(boost::vertex_index, g)));
    // Number hosts in node order; parts holding only network gear are no host (-1).
    std::map<int, int> renumber;
    host_.assign(spec_.nodes.size(), -1);
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeKind k = spec_.nodes[i].kind;
      if (k == NodeKind::NetworkSwitch) continue;
      auto [it, fresh] = renumber.emplace(comp[i], static_cast<int>(renumber.size()));
      host_[i] = it->second;
    }
    host_count_ = static_cast<int>(renumber.size());
    cpus_of_host_.resize(renumber.size());
    nics_of_host_.resize(renumber.size());
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      if (host_[i] < 0) continue;
      if (spec_.nodes[i].kind == NodeKind::Cpu) cpus_of_host_[static_cast<size_t>(host_[i])].push_back(static_cast<int>(i));
      if (spec_.nodes[i].kind == NodeKind::Nic) nics_of_host_[static_cast<size_t>(host_[i])].push_back(static_cast<int>(i));
    }
  }
  // Every GPU must reach host memory.
  for (int gpu : gpus()) {
    if (nearest_cpu(gpu) < 0)
      throw InputError(spec_.nodes[gpu].where,
                       fmt::format("GPU '{}' has no PCIe path to host memory: link it (through pcie_switch / host_bridge nodes) "
                                   "to a cpu node",
                                   spec_.nodes[gpu].name));
  }
}

int Topology::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> Topology::nodes_of_kind(NodeKind k) const {
  std::vector<int> out;
  for (size_t i = 0; i < spec_.nodes.size(); ++i)
    if (spec_.nodes[i].kind == k) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<ConstraintId> Topology::install(MaxMinSystem& sys) const {
  std::vector<ConstraintId> ids;
  ids.reserve(resources_.size());
  for (const Resource& r : resources_) ids.push_back(sys.add_constraint(r.capacity));
  return ids;
}

// Paths inside a host are few (GPU to NIC, to CPU, to peer GPUs): memoised per pair.
const Topology::HopPath& Topology::pcie_path(int src, int dst) const {
  auto [it, fresh] = host_paths_.try_emplace(std::make_tuple(src, dst, 0));
  if (fresh) it->second = g_->shortest(spec_.nodes, spec_.links, src, dst, kPcieLinks, kPcieNodes);
  return it->second;
}

const Topology::HopPath& Topology::nvlink_path(int src, int dst) const {
  auto [it, fresh] = host_paths_.try_emplace(std::make_tuple(src, dst, 1));
  if (fresh) it->second = g_->shortest(spec_.nodes, spec_.links, src, dst, bit(LinkKind::NvLink), bit(NodeKind::NvSwitch));
  return it->second;
}

void Topology::network_path(HopPath& out, int src, int dst) const {
  g_->shortest_into(out, spec_.nodes, spec_.links, src, dst, kNetLinks, bit(NodeKind::NetworkSwitch));
}

namespace {
// The candidate at the least path weight (the first on a tie); -1 where none is reachable.
template <class PathFn>
int nearest_of(const std::vector<int>& candidates, PathFn&& weight_of) {
  int best = -1;
  double best_w = std::numeric_limits<double>::infinity();
  for (int c : candidates) {
    const double w = weight_of(c);
    if (w < best_w) {
      best_w = w;
      best = c;
    }
  }
  return best;
}
}  // namespace

int Topology::nearest_cpu(int node) const {
  if (spec_.nodes[node].kind == NodeKind::Cpu) return node;
  if (nearest_cpu_.empty()) nearest_cpu_.assign(spec_.nodes.size(), -2);
  int& memo = nearest_cpu_[static_cast<size_t>(node)];
  if (memo != -2) return memo;
  if (host_[node] < 0) return memo = -1;
  return memo = nearest_of(cpus_of_host_[static_cast<size_t>(host_[node])], [&](int c) {
           auto p = g_->shortest(spec_.nodes, spec_.links, node, c, kPcieLinks, kPcieNodes);
           return p.empty() ? std::numeric_limits<double>::infinity() : p.weight;
         });
}

int Topology::nearest_nic(int node) const {
  if (spec_.nodes[node].kind == NodeKind::Nic) return node;
  if (nearest_nic_.empty()) nearest_nic_.assign(spec_.nodes.size(), -2);
  int& memo = nearest_nic_[static_cast<size_t>(node)];
  if (memo != -2) return memo;
  if (host_[node] < 0) return memo = -1;
  return memo = nearest_of(nics_of_host_[static_cast<size_t>(host_[node])], [&](int c) {
           auto p = g_->shortest(spec_.nodes, spec_.links, node, c, kPcieLinks, kPcieNodes);
           return p.empty() ? std::numeric_limits<double>::infinity() : p.weight;
         });
}

PathType Topology::classify_pcie(const HopPath& path) const {
  PathType t = PathType::Pix;
  int switches = 0;
  for (size_t i = 1; i + 1 < path.nodes.size(); ++i) {
    switch (spec_.nodes[path.nodes[i]].kind) {
      case NodeKind::PcieSwitch: ++switches; break;
      case NodeKind::HostBridge: t = std::max(t, PathType::Phb); break;
      case NodeKind::Cpu: t = std::max(t, PathType::Node); break;
      default: break;
    }
  }
  if (switches > 1) t = std::max(t, PathType::Pxb);
  for (int link : path.links)
    if (spec_.links[link].kind == LinkKind::InterSocket) t = PathType::Sys;
  return t;
}

PathType Topology::path_type(int a, int b) const {
  if (a == b) return PathType::Loc;
  if (host_[a] != host_[b]) return PathType::Net;
  if (!nvlink_path(a, b).empty()) return PathType::NvLink;
  const auto p = pcie_path(a, b);
  return p.empty() ? PathType::Net : classify_pcie(p);
}

void Topology::add_hop_path(Route& r, const HopPath& path, bool first_leg, bool host_limits) const {
  auto add = [&](int res, double c) {
    if (res < 0) return;
    for (ResourceUse& u : r.uses)
      if (u.resource == res) {
        u.coefficient += c;
        return;
      }
    r.uses.push_back({res, c});
  };
  for (size_t i = 0; i < path.links.size(); ++i) {
    const int link = path.links[i];
    const LinkSpec& l = spec_.links[link];
    add(link_a_[static_cast<size_t>(link)] == path.nodes[i] ? link_fwd_[link] : link_rev_[link], 1.0);
    r.latency += l.latency;
    r.link_kinds |= bit(l.kind);
  }
  for (size_t i = 0; i < path.nodes.size(); ++i) {
    const int n = path.nodes[i];
    const bool endpoint = i == 0 || i + 1 == path.nodes.size();
    add(node_throughput_[n], 1.0);
    if (endpoint)
      add(node_dram_[n], 1.0);
    else
      r.latency += spec_.nodes[n].latency;
    // A host bridge's limits on traffic to and from its CPU's memory: up when
    // the next hop is its CPU, down when the previous one was. They hold
    // copy-engine DMA (RouteOptions::dma) and GPU-to-GPU traffic bounced
    // through host memory (NCCL's host transport): `host_limits`.
    if (host_limits && !endpoint && spec_.nodes[path.nodes[i + 1]].kind == NodeKind::Cpu) add(node_to_host_[n], 1.0);
    if (host_limits && !endpoint && spec_.nodes[path.nodes[i - 1]].kind == NodeKind::Cpu) add(node_from_host_[n], 1.0);
  }
  if (first_leg)
    r.nodes = path.nodes;
  else
    r.nodes.insert(r.nodes.end(), path.nodes.begin() + 1, path.nodes.end());
}

void Topology::finish(Route& r) const {
  std::sort(r.uses.begin(), r.uses.end(), [](const ResourceUse& a, const ResourceUse& b) { return a.resource < b.resource; });
  r.bottleneck = Bandwidth::unlimited();
  for (const ResourceUse& u : r.uses) r.bottleneck.bytes_per_s = std::min(r.bottleneck.bytes_per_s, resources_[u.resource].capacity / u.coefficient);
}

void Topology::build_route(Route& r, int src, int dst, const RouteOptions& opt) const {
  const NodeSpec& s = spec_.nodes[src];
  const NodeSpec& d = spec_.nodes[dst];
  auto endpoint = [](NodeKind k) { return k == NodeKind::Gpu || k == NodeKind::Cpu || k == NodeKind::Nic; };
  if (!endpoint(s.kind) || !endpoint(d.kind))
    throw InputError(SourceLocation{},
                     fmt::format("cannot route '{}' -> '{}': transfers start and end at GPUs, host memory (cpu) or NICs", s.name, d.name));
  // `r` may be a reused scratch route: cleared, its storage kept.
  r.kind = RouteKind::Local;
  r.nodes.clear();
  r.uses.clear();
  r.latency = Time::zero();
  r.bottleneck = Bandwidth::unlimited();
  r.link_kinds = 0;
  r.uses.reserve(12);  // a route crosses a dozen resources at most in practice: one allocation
  if (src == dst) {
    r.nodes.push_back(src);
    return;
  }
  auto need_pcie = [&](int a, int b) -> const HopPath& {
    const HopPath& p = pcie_path(a, b);
    if (p.empty()) throw InputError(SourceLocation{}, fmt::format("no PCIe path between '{}' and '{}'", spec_.nodes[a].name, spec_.nodes[b].name));
    return p;
  };
  if (host_[src] != host_[dst]) {
    r.kind = RouteKind::Network;
    // Leg from an endpoint to its NIC, through host memory when GPUDirect RDMA
    // is out of reach; memoised per endpoint and direction.
    auto leg = [&](int end, bool outbound) -> const NetLeg& {
      if (net_legs_.empty()) net_legs_.resize(2 * spec_.nodes.size());
      std::optional<NetLeg>& memo = net_legs_[2 * static_cast<size_t>(end) + (outbound ? 1 : 0)];
      if (memo) return *memo;
      // Built apart and stored only when complete: a throw leaves no half-made entry.
      NetLeg L;
      L.nic = nearest_nic(end);
      if (L.nic < 0) throw InputError(SourceLocation{}, fmt::format("'{}' has no NIC on its host: cannot reach another host", spec_.nodes[end].name));
      if (spec_.nodes[end].kind == NodeKind::Gpu) {
        const auto& direct = need_pcie(end, L.nic);
        if (classify_pcie(direct) <= spec_.gdr_level) {
          L.parts.push_back(direct);
        } else {
          const int cpu = nearest_cpu(end);
          L.parts.push_back(need_pcie(end, cpu));
          L.parts.push_back(need_pcie(cpu, L.nic));
          L.via_host = true;
        }
      } else if (end != L.nic) {
        L.parts.push_back(need_pcie(end, L.nic));
      }
      if (!outbound) {
        std::reverse(L.parts.begin(), L.parts.end());
        for (auto& p : L.parts) p.reverse();
      }
      return memo.emplace(std::move(L));
    };
    const NetLeg& out_leg = leg(src, true);
    const NetLeg& in_leg = leg(dst, false);
    const int nic_a = out_leg.nic, nic_b = in_leg.nic;
    const auto& out_parts = out_leg.parts;
    const auto& in_parts = in_leg.parts;
    if (out_leg.via_host || in_leg.via_host) r.kind = RouteKind::NetworkViaHost;
    HopPath& net = net_path_scratch_;
    network_path(net, nic_a, nic_b);
    if (net.empty())
      throw InputError(SourceLocation{}, fmt::format("no network path between '{}' and '{}'", spec_.nodes[nic_a].name, spec_.nodes[nic_b].name));
    bool first = true;
    const RouteKind keep = r.kind;
    for (const auto& p : out_parts) add_hop_path(r, p, std::exchange(first, false), opt.dma);
    add_hop_path(r, net, std::exchange(first, false), opt.dma);
    for (const auto& p : in_parts) add_hop_path(r, p, false, opt.dma);
    r.kind = keep;
    finish(r);
    return;
  }
  if (s.kind == NodeKind::Gpu && d.kind == NodeKind::Gpu) {
    // NCCL_P2P_DISABLE turns off the P2P transport, NVLink included.
    if (const auto& nv = nvlink_path(src, dst); !nv.empty() && !opt.p2p_disabled) {
      r.kind = RouteKind::NvLink;
      add_hop_path(r, nv, true, opt.dma);
      finish(r);
      return;
    }
    const auto& p = need_pcie(src, dst);
    const bool pair_off = std::any_of(spec_.p2p_disabled_pairs.begin(), spec_.p2p_disabled_pairs.end(), [&](const auto& pr) {
      return (pr.first == s.name && pr.second == d.name) || (pr.first == d.name && pr.second == s.name);
    });
    if (!opt.p2p_disabled && !pair_off && s.gpu.p2p && d.gpu.p2p && classify_pcie(p) <= spec_.p2p_level) {
      r.kind = RouteKind::PcieP2P;
      add_hop_path(r, p, true, opt.dma);
    } else {
      r.kind = RouteKind::ViaHost;
      const int cpu = nearest_cpu(src);
      // Bounced through host memory: held by the host bridges' limits like a
      // copy (bench: four GPUs' 1 GiB H2D copies beside a 4-rank P2P-off
      // all-to-all, simulated within 2 % once both share them).
      add_hop_path(r, need_pcie(src, cpu), true, true);
      add_hop_path(r, need_pcie(cpu, dst), false, true);
    }
    finish(r);
    return;
  }
  r.kind = RouteKind::HostMemory;
  add_hop_path(r, need_pcie(src, dst), true, opt.dma);
  finish(r);
}

const Route& Topology::route(int src, int dst, const RouteOptions& opt) const {
  if (host_[src] != host_[dst] && host_[src] >= 0 && host_[dst] >= 0) {
    // Between hosts there are (GPUs)^2 pairs: each is built when asked, into
    // one reused route (composed from memoised legs and the cached network
    // tree, it allocates nothing once warm).
    build_route(net_route_scratch_, src, dst, opt);
    return net_route_scratch_;
  }
  const auto key = std::make_tuple(src, dst, opt);
  auto it = route_cache_.find(key);
  if (it != route_cache_.end()) return it->second;
  Route r;
  build_route(r, src, dst, opt);
  return route_cache_.emplace(key, std::move(r)).first->second;
}

const Route& Topology::switch_port(int gpu, bool up) const {
  const auto key = std::make_pair(gpu, up);
  if (auto it = port_cache_.find(key); it != port_cache_.end()) return it->second;
  HopPath p;
  for (size_t i = 0; i < spec_.links.size() && p.empty(); ++i) {
    const LinkSpec& l = spec_.links[i];
    if (l.kind != LinkKind::NvLink) continue;
    const int a = index_.at(l.a), b = index_.at(l.b);
    const int other = a == gpu ? b : b == gpu ? a : -1;
    if (other >= 0 && spec_.nodes[static_cast<size_t>(other)].kind == NodeKind::NvSwitch) {
      p.nodes = {gpu, other};
      p.links = {static_cast<int>(i)};
    }
  }
  if (p.empty())
    throw InputError(SourceLocation{}, fmt::format("'{}' has no NVLink to an NVSwitch (NVLink SHARP needs one)", spec_.nodes[static_cast<size_t>(gpu)].name));
  const int sw = p.nodes[1];
  if (!up) p.reverse();
  Route r;
  r.kind = RouteKind::NvLink;
  add_hop_path(r, p, true, false);
  if (!up)
    std::erase_if(r.uses, [&](const ResourceUse& u) { return u.resource == node_throughput_[static_cast<size_t>(sw)]; });
  finish(r);
  return port_cache_.emplace(key, std::move(r)).first->second;
}

std::string Topology::describe(const Route& r) const {
  std::string out;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (i) out += " -> ";
    out += spec_.nodes[r.nodes[i]].name;
  }
  return out;
}

std::vector<size_t> by_utilisation(const Topology& topo, const std::vector<double>& resource_bytes, double span_s) {
  std::vector<size_t> order;
  for (size_t i = 0; i < resource_bytes.size(); ++i)
    if (resource_bytes[i] > 0) order.push_back(i);
  auto util = [&](size_t i) { return resource_bytes[i] / span_s / topo.resources()[i].capacity; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return util(a) > util(b); });
  return order;
}

}  // namespace osim::hw
