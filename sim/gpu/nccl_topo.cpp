// NCCL's view of a topology (nccl_topo.hpp); rules from NVIDIA/nccl 2.30.7.
#include "gpu/nccl_topo.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <regex>

namespace osim::exec {

std::string to_string(NcclPath p) {
  static const std::array<const char*, 12> names = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  return names[static_cast<size_t>(p)];
}

std::string to_string(NcclTransport t) {
  switch (t) {
    case NcclTransport::P2pNvLink: return "P2P/NVLink";
    case NcclTransport::P2pPcie: return "P2P/PCIe";
    case NcclTransport::Shm: return "SHM";
    case NcclTransport::Net: return "NET";
  }
  return "?";
}

std::string to_string(NcclCpu c) {
  static const std::array<const char*, 6> names = {"intel-bdw", "intel-skl", "intel-spr", "intel-emr", "amd", "arm"};
  return names[static_cast<size_t>(c)];
}

std::optional<NcclCpu> nccl_cpu_from_string(const std::string& s) {
  for (NcclCpu c : {NcclCpu::IntelBdw, NcclCpu::IntelSkl, NcclCpu::IntelSrp, NcclCpu::IntelErp, NcclCpu::Amd, NcclCpu::Arm})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

std::optional<int> nccl_sm_of(const std::string& model) {
  std::string m;
  for (char c : model) m += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  if (has("B200") || has("B100") || has("GB200") || has("B300")) return 100;
  if (has("H100") || has("H200") || has("H800") || has("GH200") || has("H20")) return 90;
  if (has("L40") || has("L4") || has("4090") || has("ADA")) return 89;
  if (has("A100") || has("A800") || has("A30")) return 80;
  if (has("A10") || has("A40") || has("A6000") || has("3090")) return 86;
  if (has("V100")) return 70;
  if (has("P100")) return 60;
  return std::nullopt;
}

// topo.h: SM60 18.0, SM70 20.0, SM80 20.0, SM86 12.0, SM90 20.6, SM100 40.1 GB/s per link.
double nccl_nvlink_bw(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  return 18.0;
}

namespace {

constexpr double kLocBw = 5000.0;  // topo.h LOC_BW

// topo.h: BDW_QPI_BW 6, SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40, AMD_BW 16, ARM_BW 6.
double inter_cpu_bw(NcclCpu c) {
  switch (c) {
    case NcclCpu::IntelBdw: return 6.0;
    case NcclCpu::IntelSkl: return 10.0;
    case NcclCpu::IntelSrp: return 22.0;
    case NcclCpu::IntelErp: return 40.0;
    case NcclCpu::Amd: return 16.0;
    case NcclCpu::Arm: return 6.0;
  }
  return 10.0;
}

// Without a CPU given, the one its GPU generation usually ships with: DGX-1
// (V100) Broadwell/Skylake, DGX A100 AMD Rome, Hopper boxes Sapphire Rapids,
// Blackwell Emerald Rapids.
NcclCpu default_cpu(int sm) {
  if (sm >= 100) return NcclCpu::IntelErp;
  if (sm >= 89) return NcclCpu::IntelSrp;
  if (sm >= 80) return NcclCpu::Amd;
  return NcclCpu::IntelSkl;
}

bool is_intel(NcclCpu c) { return c == NcclCpu::IntelBdw || c == NcclCpu::IntelSkl || c == NcclCpu::IntelSrp || c == NcclCpu::IntelErp; }

// topo.cc: a PCIe link is width x lane rate / 80 GB/s, lane rate in 100 Mb/s
// units: gen1 15, gen2 30, gen3 60, gen4 120, gen5 240, gen6 480 (x16: 3, 6,
// 12, 24, 48, 96 GB/s). Links without a 'genN xW' label keep their bandwidth.
double pcie_bw(const hw::LinkSpec& l) {
  static const std::regex re(R"(gen(\d+) x(\d+))");
  std::smatch m;
  if (std::regex_search(l.label, m, re)) {
    const int gen = std::stoi(m[1]), width = std::stoi(m[2]);
    static const std::array<double, 7> rate = {0, 15, 30, 60, 120, 240, 480};
    return width * rate[static_cast<size_t>(std::clamp(gen, 1, 6))] / 80.0;
  }
  return l.bandwidth.GBps();
}

// topo.cc: an NVLink connection is its link count x the generation's per-link
// figure. The count is the shorthand's ('nvlinks: N'); a link given by its
// bandwidth into an NVSwitch carries all the GPU's links (V100 6, A100 12,
// H100/H200/B200 18); one between GPUs counts bandwidth / the nominal
// per-link rate (25 GB/s a direction for NVLink 2-4, 50 for NVLink 5).
double nvlink_bw(const hw::LinkSpec& l, int sm, bool to_switch) {
  static const std::regex re(R"(nvlink\d* x(\d+))");
  std::smatch m;
  if (std::regex_search(l.label, m, re)) return std::stoi(m[1]) * nccl_nvlink_bw(sm);
  if (to_switch) return (sm >= 90 ? 18 : sm >= 80 ? 12 : 6) * nccl_nvlink_bw(sm);
  const double nominal = sm >= 100 ? 50.0 : 25.0;
  return l.bandwidth.GBps() / nominal * nccl_nvlink_bw(sm);
}

enum class NKind { Gpu, Pci, Cpu, Nvs, Nic, Net };
enum class LType { Loc = 0, Nvl = 1, C2c = 3, Pci = 4, Sys = 9, Net = 10 };

struct NLink {
  int from, to;
  LType type;
  double bw;
};

struct Path {
  NcclPath type = NcclPath::Dis;
  double bw = 0;
  std::vector<int> links;  // directed link ids, in order
};

struct Graph {
  std::vector<NKind> kind;
  std::vector<int> host;
  std::vector<NLink> links;
  std::vector<std::vector<int>> out;  // node -> its outgoing link ids
  int add_node(NKind k, int h) {
    kind.push_back(k), host.push_back(h), out.emplace_back();
    return static_cast<int>(kind.size()) - 1;
  }
  void connect(int a, int b, LType t, double bw) {
    for (const auto& [f, g] : {std::pair{a, b}, std::pair{b, a}}) {
      out[static_cast<size_t>(f)].push_back(static_cast<int>(links.size()));
      links.push_back({f, g, t, bw});
    }
  }
};

// paths.cc ncclTopoSetPaths: a path's type is the worst of its links' (a PCIe
// link between two switches is PXB, one touching a CPU PHB; one NVLink hop
// through another GPU NVB), its bandwidth the least; the better path is the
// nearer type, then the higher bandwidth, then fewer hops. Paths pass through
// a GPU only as NVB and never through NICs.
std::vector<Path> paths_from(const Graph& g, int src) {
  std::vector<Path> p(g.kind.size());
  p[static_cast<size_t>(src)] = {NcclPath::Loc, kLocBw, {}};
  std::deque<int> queue{src};
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    const Path& pu = p[static_cast<size_t>(u)];
    const NKind ku = g.kind[static_cast<size_t>(u)];
    if (u != src && (ku == NKind::Nic || ku == NKind::Net)) continue;
    const bool via_gpu = u != src && ku == NKind::Gpu;
    if (via_gpu && !(pu.type == NcclPath::Nvl && pu.links.size() == 1 && g.kind[static_cast<size_t>(src)] == NKind::Gpu)) continue;
    for (int li : g.out[static_cast<size_t>(u)]) {
      const NLink& l = g.links[static_cast<size_t>(li)];
      if (l.type == LType::Net) continue;
      if (via_gpu && l.type != LType::Nvl) continue;
      auto t = static_cast<NcclPath>(static_cast<int>(l.type));
      const NKind kv = g.kind[static_cast<size_t>(l.to)];
      if (l.type == LType::Pci && ku == NKind::Pci && kv == NKind::Pci) t = NcclPath::Pxb;
      if (l.type == LType::Pci && (ku == NKind::Cpu || kv == NKind::Cpu)) t = NcclPath::Phb;
      if (via_gpu) t = NcclPath::Nvb;
      t = std::max(pu.type, t);
      const double bw = std::min(pu.bw, l.bw);
      Path& pv = p[static_cast<size_t>(l.to)];
      const size_t hops = pu.links.size() + 1;
      if (t < pv.type || (t == pv.type && bw > pv.bw) || (t == pv.type && bw == pv.bw && hops < pv.links.size())) {
        pv.type = t, pv.bw = bw, pv.links = pu.links;
        pv.links.push_back(li);
        queue.push_back(l.to);
      }
    }
  }
  return p;
}

NcclPath from_level(hw::PathType t) {
  switch (t) {
    case hw::PathType::Loc: return NcclPath::Loc;
    case hw::PathType::NvLink: return NcclPath::Nvl;
    case hw::PathType::Pix: return NcclPath::Pix;
    case hw::PathType::Pxb: return NcclPath::Pxb;
    case hw::PathType::Phb:
    case hw::PathType::Node: return NcclPath::Phb;
    case hw::PathType::Sys: return NcclPath::Sys;
    case hw::PathType::Net: return NcclPath::Net;
  }
  return NcclPath::Pxb;
}

// search.cc: the per-channel bandwidths the search tries, best first.
const std::vector<double>& speeds_intra(int sm) {
  static const std::vector<double> base = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  static const std::vector<double> sm90 = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  static const std::vector<double> sm100 = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  return sm >= 100 ? sm100 : sm >= 90 ? sm90 : base;
}
const std::vector<double>& speeds_inter(int sm) {
  static const std::vector<double> base = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> sm90 = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> sm100 = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                            20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  return sm >= 100 ? sm100 : sm >= 90 ? sm90 : base;
}

constexpr int kMaxSearchChannels = 32;  // init.cc: ringGraph->maxChannels = MAXCHANNELS / 2 (device.h: 64)

// One host's GPUs and the paths between them, for the ring search.
struct RingSearch {
  RingSearch(const Graph& graph, const std::vector<std::vector<Path>>& paths, bool intel_cpu) : g(graph), path(paths), intel(intel_cpu) {}
  const Graph& g;
  const std::vector<std::vector<Path>>& path;  // [i][j] over the host's GPUs
  bool intel = false;
  std::vector<double> left;  // per directed link: bandwidth not yet taken

  // search.cc followPath: a hop takes `speed` on each of its links (1.2x on
  // PCIe links of a PHB path through an Intel CPU: INTEL_P2P_OVERHEAD).
  bool take(int i, int j, double sign) {
    const Path& p = path[static_cast<size_t>(i)][static_cast<size_t>(j)];
    const double pci = (intel && p.type == NcclPath::Phb) ? speed * 6 / 5 : speed;
    if (sign > 0)
      for (int li : p.links) {
        const NLink& l = g.links[static_cast<size_t>(li)];
        if (left[static_cast<size_t>(li)] + 1e-9 < (l.type == LType::Pci ? pci : speed)) return false;
      }
    for (int li : p.links) {
      const double need = g.links[static_cast<size_t>(li)].type == LType::Pci ? pci : speed;
      left[static_cast<size_t>(li)] = std::round((left[static_cast<size_t>(li)] - sign * need) * 1000) / 1000;  // SUB_ROUND
    }
    return true;
  }

  // search.cc ncclTopoSearchRec: rings one channel after another, each from
  // GPU 0 over every GPU with each hop within `type`, depth-first (the next
  // GPU in order first, then by the bandwidth left on the way), backtracking
  // across channels; the most channels found within NCCL's budget of 2^14
  // steps (NCCL_SEARCH_TIMEOUT), stopping early at maxChannels or once the
  // channels reach totalBw.
  double speed = 0, total = 0;
  NcclPath type = NcclPath::Loc;
  int budget = 0;
  bool perfect = false;
  std::vector<std::vector<int>> cur, best;

  double path_left(int i, int j) const {
    double m = 1e30;
    for (int li : path[static_cast<size_t>(i)][static_cast<size_t>(j)].links) m = std::min(m, left[static_cast<size_t>(li)]);
    return m;
  }
  void found() {
    if (cur.size() > best.size()) best = cur;
    if (static_cast<int>(best.size()) >= kMaxSearchChannels || static_cast<double>(best.size()) * speed >= total - 1e-9) perfect = true;
  }
  void step(std::vector<int>& order, std::vector<char>& used) {
    if (perfect || --budget <= 0) return;
    const int n = static_cast<int>(path.size());
    const int at = order.back();
    if (static_cast<int>(order.size()) == n) {
      if (path[static_cast<size_t>(at)][0].type > type || !take(at, 0, 1)) return;
      cur.push_back(order);
      found();
      if (!perfect && static_cast<int>(cur.size()) < kMaxSearchChannels) channel();
      cur.pop_back();
      take(at, 0, -1);
      return;
    }
    std::vector<int> next;
    for (int k = 1; k < n; ++k) {
      const int nx = (at + k) % n;
      if (!used[static_cast<size_t>(nx)] && path[static_cast<size_t>(at)][static_cast<size_t>(nx)].type <= type) next.push_back(nx);
    }
    if (next.size() > 1) std::stable_sort(next.begin() + 1, next.end(), [&](int x, int y) { return path_left(at, x) > path_left(at, y); });
    for (int nx : next) {
      if (perfect || budget <= 0) return;
      if (!take(at, nx, 1)) continue;
      used[static_cast<size_t>(nx)] = 1, order.push_back(nx);
      step(order, used);
      used[static_cast<size_t>(nx)] = 0, order.pop_back();
      take(at, nx, -1);
    }
  }
  void channel() {
    std::vector<int> order{0};
    std::vector<char> used(path.size(), 0);
    used[0] = 1;
    step(order, used);
  }

  // The most rings found at `speed` with hops within `t`.
  std::vector<std::vector<int>> pack(double s, NcclPath t, double total_bw) {
    left.clear();
    for (const NLink& l : g.links) left.push_back(l.bw);
    speed = s, type = t, total = total_bw, budget = 1 << 14, perfect = false;
    cur.clear(), best.clear();
    channel();
    return best;
  }
};

// search.cc ncclTopoCompute for the ring pattern on one host. Pass 1: from
// the highest speed within maxBw, path types from the nearest up, keep the
// best nChannels x bw, stop once it reaches totalBw, lower the speed while
// the next is above 0.49x the best found. Then ncclTopoDupChannels, then
// pass 2: higher speeds with at least as many channels.
NcclRings search_rings(const Graph& g, const std::vector<std::vector<Path>>& path, int sm, bool intel, double max_bw, double total_bw) {
  NcclRings best;
  best.max_bw_GBps = max_bw, best.total_bw_GBps = total_bw;
  const int n = static_cast<int>(path.size());
  if (n < 2) {
    best.channels = 1, best.bw_intra_GBps = kLocBw, best.rings = {{0}};
    return best;
  }
  NcclPath min_type = NcclPath::Dis, max_type = NcclPath::Loc;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) min_type = std::min(min_type, path[i][j].type), max_type = std::max(max_type, path[i][j].type);
  RingSearch rs{g, path, intel};
  const std::vector<double>& speeds = speeds_intra(sm);
  size_t si = 0;
  while ((speeds[si] > max_bw || speeds[si] > total_bw) && si + 1 < speeds.size()) ++si;
  auto score = [](const NcclRings& r) { return r.channels * r.bw_intra_GBps; };
  for (;; ++si) {
    const NcclPath top = best.channels > 0 ? best.type_intra : max_type;
    for (auto t = min_type; t <= top; t = static_cast<NcclPath>(static_cast<int>(t) + 1)) {
      auto rings = rs.pack(speeds[si], t, total_bw);
      if (!rings.empty() && static_cast<double>(rings.size()) * speeds[si] > score(best) + 1e-9) {
        best.channels = static_cast<int>(rings.size()), best.bw_intra_GBps = speeds[si], best.type_intra = t, best.rings = std::move(rings);
        break;
      }
      if (!rings.empty()) break;
    }
    if (best.channels > 0 && score(best) >= total_bw - 1e-9) break;
    if (si + 1 >= speeds.size() || (best.channels > 0 && speeds[si + 1] / best.bw_intra_GBps <= .49)) break;
  }
  if (best.channels == 0) {  // search.cc: "falling back to simple order"
    best.channels = 1, best.bw_intra_GBps = 0.1, best.type_intra = NcclPath::Sys;
    std::vector<int> order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    best.rings = {order};
    return best;
  }
  // ncclTopoDupChannels: twice the channels at half the bandwidth, unless
  // below 25 GB/s, or past Ampere below 50 GB/s with more than 4 channels.
  if (best.bw_intra_GBps >= 25.0 && !(sm > 80 && best.bw_intra_GBps < 50.0 && best.channels > 4)) {
    const int dup = std::min(best.channels * 2, kMaxSearchChannels);
    best.bw_intra_GBps /= (dup + best.channels - 1) / best.channels;
    for (int c = best.channels; c < dup; ++c) best.rings.push_back(best.rings[static_cast<size_t>(c - best.channels)]);
    best.channels = dup;
  }
  // Pass 2: each higher speed with at least as many channels.
  size_t at = 0;
  while (speeds[at] > best.bw_intra_GBps && at + 1 < speeds.size()) ++at;
  for (size_t k = at; k-- > 0;) {
    auto rings = rs.pack(speeds[k], best.type_intra, total_bw);
    if (static_cast<int>(rings.size()) >= best.channels && static_cast<double>(rings.size()) * speeds[k] > score(best) + 1e-9)
      best.channels = static_cast<int>(rings.size()), best.bw_intra_GBps = speeds[k], best.rings = std::move(rings);
  }
  return best;
}

}  // namespace

NcclView nccl_view(const hw::Topology& topo, const NcclTopoOptions& opt) {
  const hw::TopologySpec& spec = topo.spec();
  NcclView v;
  v.gpus = topo.gpus();
  v.hosts = topo.host_count();
  // The slowest GPU's compute capability decides NCCL's figures (ccMin).
  int sm = 1000;
  for (int gi : v.gpus) {
    const auto s = nccl_sm_of(topo.node(gi).gpu.model);
    if (!s) v.sm_assumed = true;
    sm = std::min(sm, s.value_or(90));
  }
  v.sm = v.gpus.empty() ? 90 : sm;
  // A GPU joined to its CPU by NVLink-C2C sits on a Grace: NCCL reads an ARM CPU there.
  for (const hw::LinkSpec& l : spec.links) v.cpu_grace = v.cpu_grace || l.kind == hw::LinkKind::NvLinkC2C;
  v.cpu = opt.cpu.value_or(v.cpu_grace ? NcclCpu::Arm : default_cpu(v.sm));

  // NCCL's nodes: a host bridge is the CPU it hangs off (by an internal link).
  Graph g;
  std::vector<int> of(spec.nodes.size(), -1);
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const hw::NodeKind k = spec.nodes[i].kind;
    if (k == hw::NodeKind::HostBridge) continue;
    const NKind nk = k == hw::NodeKind::Gpu          ? NKind::Gpu
                     : k == hw::NodeKind::PcieSwitch ? NKind::Pci
                     : k == hw::NodeKind::Cpu        ? NKind::Cpu
                     : k == hw::NodeKind::NvSwitch   ? NKind::Nvs
                     : k == hw::NodeKind::Nic        ? NKind::Nic
                                                     : NKind::Net;
    of[i] = g.add_node(nk, topo.host_of(static_cast<int>(i)));
    v.nvswitches += k == hw::NodeKind::NvSwitch;
  }
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    if (spec.nodes[i].kind != hw::NodeKind::HostBridge) continue;
    for (const hw::LinkSpec& l : spec.links) {
      if (l.kind != hw::LinkKind::Internal) continue;
      const std::string& other = l.a == spec.nodes[i].name ? l.b : l.b == spec.nodes[i].name ? l.a : std::string();
      const int o = other.empty() ? -1 : topo.find(other);
      if (o >= 0 && spec.nodes[static_cast<size_t>(o)].kind == hw::NodeKind::Cpu) of[i] = of[static_cast<size_t>(o)];
    }
    if (of[i] < 0) of[i] = g.add_node(NKind::Cpu, topo.host_of(static_cast<int>(i)));
  }
  for (const hw::LinkSpec& l : spec.links) {
    const int a = of[static_cast<size_t>(topo.find(l.a))], b = of[static_cast<size_t>(topo.find(l.b))];
    if (a == b) continue;
    switch (l.kind) {
      case hw::LinkKind::Pcie: g.connect(a, b, LType::Pci, pcie_bw(l)); break;
      case hw::LinkKind::NvLink:
        g.connect(a, b, LType::Nvl, nvlink_bw(l, v.sm, g.kind[static_cast<size_t>(a)] == NKind::Nvs || g.kind[static_cast<size_t>(b)] == NKind::Nvs));
        break;
      case hw::LinkKind::InterSocket: g.connect(a, b, LType::Sys, inter_cpu_bw(v.cpu)); break;
      case hw::LinkKind::Internal: g.connect(a, b, LType::Loc, kLocBw); break;
      case hw::LinkKind::NvLinkC2C: g.connect(a, b, LType::C2c, l.bandwidth.GBps()); break;
      case hw::LinkKind::InfiniBand:
      case hw::LinkKind::Ethernet: g.connect(a, b, LType::Net, l.bandwidth.GBps()); break;
    }
  }

  // Paths from every GPU and CPU; then the P2P check (paths.cc
  // ncclTopoCheckP2p): P2P within p2p_level (NCCL_P2P_LEVEL, default PXB)
  // when both GPUs can and the pair is not disabled; else the traffic goes
  // through the receiver's nearest CPU (addInterStep): SHM.
  // Pairs on two hosts are NET. Paths never cross a NET link, so they are
  // searched host by host, one host's held at a time (a 1,024-GPU cluster's
  // would be hundreds of MB); the first host's GPU pairs are kept for its rings.
  const size_t n = v.gpus.size();
  std::vector<size_t> local;
  std::vector<int> local_index(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (topo.host_of(v.gpus[i]) == topo.host_of(v.gpus[0])) local_index[i] = static_cast<int>(local.size()), local.push_back(i);
  std::vector<std::vector<Path>> lp(local.size(), std::vector<Path>(local.size()));
  std::map<int, std::vector<size_t>> by_host;  // graph host -> its GPUs (indices into v.gpus)
  for (size_t i = 0; i < n; ++i) by_host[g.host[static_cast<size_t>(of[static_cast<size_t>(v.gpus[i])])]].push_back(i);
  std::vector<std::vector<Path>> from(g.kind.size());
  auto local_cpu = [&](int gpu_node) {
    int best = -1;
    for (size_t c = 0; c < g.kind.size(); ++c)
      if (g.kind[c] == NKind::Cpu && !from[c].empty() && from[c][static_cast<size_t>(gpu_node)].type != NcclPath::Dis &&
          (best < 0 ||
           from[c][static_cast<size_t>(gpu_node)].links.size() < from[static_cast<size_t>(best)][static_cast<size_t>(gpu_node)].links.size()))
        best = static_cast<int>(c);
    return best;
  };
  const NcclPath level = from_level(spec.p2p_level);
  auto disabled = [&](int a, int b) {
    for (const auto& [x, y] : spec.p2p_disabled_pairs) {
      const int ix = topo.find(x), iy = topo.find(y);
      if ((ix == a && iy == b) || (ix == b && iy == a)) return true;
    }
    return false;
  };
  v.pair.assign(n, std::vector<NcclPair>(n, NcclPair{NcclPath::Net, 0, NcclTransport::Net}));
  for (const auto& [host, members] : by_host) {
    for (size_t u = 0; u < g.kind.size(); ++u)
      if (g.host[u] == host && (g.kind[u] == NKind::Gpu || g.kind[u] == NKind::Cpu)) from[u] = paths_from(g, static_cast<int>(u));
    for (const size_t i : members)
      for (const size_t j : members) {
        const int ni = of[static_cast<size_t>(v.gpus[i])], nj = of[static_cast<size_t>(v.gpus[j])];
        NcclPair& pr = v.pair[i][j];
        Path p = from[static_cast<size_t>(ni)][static_cast<size_t>(nj)];
        const bool p2p = i == j || (!opt.p2p_disable && p.type <= level && topo.node(v.gpus[i]).gpu.p2p && topo.node(v.gpus[j]).gpu.p2p &&
                                    !disabled(v.gpus[i], v.gpus[j]));
        if (!p2p) {
          const int c = local_cpu(nj);
          const Path& up = from[static_cast<size_t>(ni)][static_cast<size_t>(c)];
          const Path& down = from[static_cast<size_t>(c)][static_cast<size_t>(nj)];
          p.type = std::max(up.type, down.type), p.bw = std::min(up.bw, down.bw);
          p.links = up.links;
          p.links.insert(p.links.end(), down.links.begin(), down.links.end());
        }
        pr.type = p.type, pr.bw_GBps = p.bw;
        pr.transport = !p2p ? NcclTransport::Shm : p.type <= NcclPath::Nvb ? NcclTransport::P2pNvLink : NcclTransport::P2pPcie;
        if (local_index[i] >= 0 && local_index[j] >= 0) lp[static_cast<size_t>(local_index[i])][static_cast<size_t>(local_index[j])] = std::move(p);
      }
    for (size_t u = 0; u < g.kind.size(); ++u)
      if (g.host[u] == host) std::vector<Path>().swap(from[u]);
  }

  // The first host's GPUs: maxBw (best path) and totalBw (a GPU's NVLink sum, or its PCIe link).
  double max_bw = 0, total_bw = 0;
  for (size_t a = 0; a < local.size(); ++a) {
    for (size_t b = 0; b < local.size(); ++b)
      if (a != b) max_bw = std::max(max_bw, lp[a][b].bw);
    double nvl = 0, pci = 0;
    for (int li : g.out[static_cast<size_t>(of[static_cast<size_t>(v.gpus[local[a]])])]) {
      const NLink& l = g.links[static_cast<size_t>(li)];
      if (l.type == LType::Nvl) nvl += l.bw;
      if (l.type == LType::Pci) pci = l.bw;
    }
    total_bw = std::max(total_bw, std::max(nvl, pci));
    if (pci > 0) v.gpu_pcie_GBps = v.gpu_pcie_GBps > 0 ? std::min(v.gpu_pcie_GBps, pci) : pci;
  }
  if (!local.empty()) v.ring = search_rings(g, lp, v.sm, is_intel(v.cpu), max_bw, total_bw);
  v.host_ring = v.ring;

  // Across hosts: a ring channel enters and leaves each host through a NIC
  // (bwInter: the highest inter-node speed within a NIC's bandwidth, one
  // channel per NIC and direction, never more than the host's own rings).
  for (size_t u = 0; u < g.kind.size(); ++u)
    if (g.kind[u] == NKind::Nic && g.host[u] == g.host[static_cast<size_t>(of[static_cast<size_t>(v.gpus.empty() ? 0 : v.gpus[0])])]) {
      ++v.nics_per_host;
      for (int li : g.out[u])
        if (g.links[static_cast<size_t>(li)].type == LType::Net) v.nic_bw_GBps = std::max(v.nic_bw_GBps, g.links[static_cast<size_t>(li)].bw);
    }
  if (v.hosts > 1 && v.nics_per_host > 0 && v.nic_bw_GBps > 0) {
    const auto& sp = speeds_inter(v.sm);
    size_t si = 0;
    while (sp[si] > std::min(v.nic_bw_GBps, max_bw) && si + 1 < sp.size()) ++si;
    NcclRings r = v.ring;
    r.channels = std::min(v.nics_per_host * static_cast<int>(std::floor(v.nic_bw_GBps / sp[si] + 1e-9)), kMaxSearchChannels);
    r.bw_intra_GBps = sp[si];
    if (r.bw_intra_GBps >= 25.0 && !(v.sm > 80 && r.bw_intra_GBps < 50.0 && r.channels > 4))
      r.channels = std::min(2 * r.channels, kMaxSearchChannels), r.bw_intra_GBps /= 2;
    v.ring.channels = r.channels, v.ring.bw_intra_GBps = r.bw_intra_GBps;
  }

  // connect.cc: channels doubled at connection (MAXCHANNELS 64); past Ampere
  // across hosts with bwIntra > 45 and under 16 channels, doubled again; then
  // NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS.
  auto connect = [&](const NcclRings& r, bool across) {
    int ch = std::min(64, r.channels * 2);
    if (v.sm >= 90 && across && r.bw_intra_GBps > 45.0 && ch < 16) ch *= 2;
    if (opt.max_channels > 0) ch = std::min(ch, opt.max_channels);
    if (opt.min_channels > 0) ch = std::max(ch, std::min(opt.min_channels, 64));
    return ch;
  };
  v.coll_channels = connect(v.ring, v.hosts > 1);
  v.host_coll_channels = connect(v.host_ring, false);

  // NVLS (NcclNvls): a GPU's NVLink bandwidth to the host's NVSwitch(es),
  // the least over the first host's GPUs; 0 where one has none.
  double nvs_bw = local.empty() ? 0 : 1e30;
  for (size_t a : local) {
    double bw = 0;
    for (int li : g.out[static_cast<size_t>(of[static_cast<size_t>(v.gpus[a])])]) {
      const NLink& l = g.links[static_cast<size_t>(li)];
      if (l.type == LType::Nvl && g.kind[static_cast<size_t>(l.to)] == NKind::Nvs) bw += l.bw;
    }
    nvs_bw = std::min(nvs_bw, bw);
  }
  if (v.sm >= 90 && nvs_bw > 0 && local.size() >= 2) {
    const int ngpus = static_cast<int>(local.size());
    auto graph = [&](bool across) {
      NcclNvls r;
      r.supported = true;
      r.cuda_channels = v.sm >= 100 ? (across ? 32 : 24) : 16;
      r.channels = std::min(32, across ? std::min(ngpus, v.nics_per_host) : ngpus);
      if (r.channels < 1) return r;
      const double net_path = v.gpu_pcie_GBps > 0 ? std::min(v.nic_bw_GBps, v.gpu_pcie_GBps) : v.nic_bw_GBps;
      const std::vector<double>& sp = across ? speeds_inter(v.sm) : speeds_intra(v.sm);
      const double total = total_bw * ngpus / (ngpus - 1.0);
      size_t si = 0;
      while ((sp[si] > (across ? std::min(max_bw, net_path) : max_bw) || sp[si] * (across ? 1 : r.channels) > total) && si + 1 < sp.size()) ++si;
      while (si + 1 < sp.size() && ((r.channels + 1) * sp[si] > nvs_bw + 1e-6 || (across && sp[si] > net_path))) ++si;
      r.bw_intra_GBps = r.bw_inter_GBps = sp[si];
      while (si > 0 && r.bw_inter_GBps < 2 * r.bw_intra_GBps && !(across && sp[si - 1] > net_path)) r.bw_inter_GBps = sp[--si];
      return r;
    };
    v.nvls_host = graph(false);
    v.nvls = v.hosts > 1 ? graph(true) : v.nvls_host;
  }
  return v;
}

}  // namespace osim::exec
