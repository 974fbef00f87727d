#include "workload/placement.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace osim {

std::string to_string(Placement::Rule r) {
  switch (r) {
    case Placement::Rule::Pack: return "pack";
    case Placement::Rule::SpreadSwitches: return "spread_switches";
    case Placement::Rule::SpreadSockets: return "spread_sockets";
    case Placement::Rule::Named: return "named";
  }
  return "?";
}

namespace {

// The PCIe switch a GPU hangs from (its first PCIe link to a switch), or the
// GPU itself where it has none.
int switch_of(const hw::Topology& topo, int gpu) {
  const std::string& name = topo.node(gpu).name;
  for (const hw::LinkSpec& l : topo.spec().links) {
    if (l.kind != hw::LinkKind::Pcie || (l.a != name && l.b != name)) continue;
    const int other = topo.find(l.a == name ? l.b : l.a);
    if (other >= 0 && topo.node(other).kind == hw::NodeKind::PcieSwitch) return other;
  }
  return gpu;
}

// A group's rank among the groups, by its first GPU in the topology's order.
std::vector<int> group_order(const std::vector<int>& group_of_gpu) {
  std::map<int, int> first;
  std::vector<int> out;
  for (int g : group_of_gpu) {
    const auto it = first.emplace(g, static_cast<int>(first.size())).first;
    out.push_back(it->second);
  }
  return out;
}

std::string list_gpus(const hw::Topology& topo) {
  std::string s;
  for (int g : topo.gpus()) s += (s.empty() ? "" : ", ") + topo.node(g).name;
  return s;
}

}  // namespace

std::vector<std::string> place_ranks(const Placement& p, const hw::Topology& topo, int ranks) {
  const std::vector<int> gpus = topo.gpus();
  std::vector<std::string> out;
  if (p.rule == Placement::Rule::Named) {
    if (static_cast<int>(p.gpus.size()) != ranks)
      throw InputError(p.where, fmt::format("placement lists {} GPUs for {} ranks: name one GPU per rank", p.gpus.size(), ranks));
    for (size_t r = 0; r < p.gpus.size(); ++r) {
      const int n = topo.find(p.gpus[r]);
      if (n < 0 || topo.node(n).kind != hw::NodeKind::Gpu)
        throw InputError(
            p.where, fmt::format("placement[{}] = '{}' is not a GPU of topology '{}' (its GPUs: {})", r, p.gpus[r], topo.name(), list_gpus(topo)));
      const auto again = std::find(p.gpus.begin(), p.gpus.begin() + static_cast<std::ptrdiff_t>(r), p.gpus[r]);
      if (again != p.gpus.begin() + static_cast<std::ptrdiff_t>(r))
        throw InputError(p.where, fmt::format("placement names {} twice (ranks {} and {}): one rank a GPU", p.gpus[r], again - p.gpus.begin(), r));
    }
    return p.gpus;
  }
  if (ranks > static_cast<int>(gpus.size()))
    throw InputError(p.where, fmt::format("{} ranks but topology '{}' has {} GPUs ({}): fewer ranks, or a larger topology", ranks, topo.name(),
                                          gpus.size(), list_gpus(topo)));
  std::vector<int> sockets, switches;
  for (int g : gpus) {
    sockets.push_back(topo.nearest_cpu(g));
    switches.push_back(switch_of(topo, g));
  }
  const std::vector<int> socket_rank = group_order(sockets), switch_rank = group_order(switches);
  std::vector<size_t> order(gpus.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (p.rule == Placement::Rule::Pack) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::pair(socket_rank[a], switch_rank[a]) < std::pair(socket_rank[b], switch_rank[b]); });
  } else {
    // Round-robin over the groups: the i-th GPU of each group, in group order, before the (i+1)-th.
    const std::vector<int>& group = p.rule == Placement::Rule::SpreadSwitches ? switch_rank : socket_rank;
    std::vector<int> index_in_group(gpus.size());
    std::map<int, int> seen;
    for (size_t i = 0; i < gpus.size(); ++i) index_in_group[i] = seen[group[i]]++;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::pair(index_in_group[a], group[a]) < std::pair(index_in_group[b], group[b]); });
  }
  for (int r = 0; r < ranks; ++r) out.push_back(topo.node(gpus[order[static_cast<size_t>(r)]]).name);
  return out;
}

}  // namespace osim
