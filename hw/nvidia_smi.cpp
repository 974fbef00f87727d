#include "hw/nvidia_smi.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace osim::hw {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == '\t') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(trim(cur));
  return out;
}
// A line copied from a terminal, where nvidia-smi's tabs became runs of
// spaces: no value holds a space, so cells are the words, but for the
// header's names of two or three words (CPU Affinity, NUMA Affinity, GPU NUMA ID).
std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto next = [&](size_t k) { return i + k < words.size() ? words[i + k] : std::string(); };
    if ((words[i] == "CPU" || words[i] == "NUMA") && next(1) == "Affinity") {
      out.push_back(words[i] + " Affinity");
      ++i;
    } else if (words[i] == "GPU" && next(1) == "NUMA" && next(2) == "ID") {
      out.push_back("GPU NUMA ID");
      i += 2;
    } else {
      out.push_back(words[i]);
    }
  }
  return out;
}
// The cells of a line: split at its tabs, or at its spaces where it has no tab.
std::vector<std::string> split_cells(const std::string& line) {
  return line.find('\t') != std::string::npos ? split_tabs(line) : split_words(line);
}

// PCIe relations, nearest first; 0 = not a PCIe relation (X, NV#).
int pcie_rank(const std::string& r) {
  if (r == "PIX") return 1;
  if (r == "PXB") return 2;
  if (r == "PHB") return 3;
  if (r == "NODE") return 4;
  if (r == "SYS" || r == "SOC") return 5;
  return 0;
}
// Placeholders in a host bridge's line for its measured throughput (set once
// the number of bridges is known).
constexpr const char* kHostFields = "\x01fields\x01";
constexpr const char* kHostComment = "\x01comment\x01";
// The PCIe links of a Grace CPU (NVIDIA's GH200 datasheet: up to 4 PCIe x16 Gen5).
constexpr const char* kGracePcie = "gen5 x16";
// NV#: the number of bonded NVLinks between two GPUs. A GPU has at most 18
// today (H100, B200); past kMaxNvLinks a count is a typo or a damaged capture.
constexpr int kMaxNvLinks = 36;
bool is_nv(const std::string& r) { return r.size() > 2 && r.rfind("NV", 0) == 0; }
// The count of a relation already checked by parse_nvidia_smi_topo; 0 = no NVLink.
int nvlinks(const std::string& r) { return is_nv(r) ? std::stoi(r.substr(2)) : 0; }

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
// A number from 0 to max in decimal digits; -1 when it is not one (never throws).
int small_count(const std::string& s, int max) {
  if (!all_digits(s) || s.size() > 6) return -1;
  const int v = std::stoi(s);
  return v <= max ? v : -1;
}
// GPUs a node may list (`nvidia-smi -L`).
constexpr int kMaxListedGpus = 255;
// NUMA node numbers as nvidia-smi prints them: a node id or N/A.
constexpr int kMaxNumaNode = 1023;
// CPU Affinity: a list of CPU ranges ("0-55,112-167") or N/A.
bool is_cpu_list(const std::string& s) {
  static const std::regex list(R"(^N/A$|^\d+(-\d+)?(,\d+(-\d+)?)*$)");
  return std::regex_match(s, list);
}

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

}  // namespace

SmiMatrix parse_nvidia_smi_topo(const std::string& raw, const std::string& file) {
  const std::string text = std::regex_replace(raw, std::regex("\x1b\\[[0-9;]*m"), "");
  std::istringstream in(text);
  std::string line;
  int lineno = 0, header_line = 0;
  SmiMatrix m;
  size_t ncols = 0;
  std::vector<std::string> extra;  // the header's columns after the devices
  auto fail = [&](int at, const std::string& what) { throw InputError(SourceLocation{file, at, 0}, what); };
  bool in_legend = false;
  std::map<std::string, std::string> nic_legend;
  std::set<std::string> seen;
  std::vector<int> row_line;  // each device's row, by the header's order
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = trim(line);
    if (t.empty()) continue;
    // `nvidia-smi -L` lines kept with the matrix: "GPU 0: NVIDIA H200 (UUID: GPU-...)".
    if (const size_t colon = t.find(": "); t.rfind("GPU ", 0) == 0 && colon != std::string::npos && all_digits(t.substr(4, colon - 4))) {
      const int index = small_count(t.substr(4, colon - 4), kMaxListedGpus);
      if (index < 0) fail(lineno, fmt::format("'{}' is no GPU index nvidia-smi -L prints (0 to {})", t.substr(4, colon - 4), kMaxListedGpus));
      std::string name = t.substr(colon + 2);
      if (const size_t uuid = name.find(" (UUID:"); uuid != std::string::npos) name.resize(uuid);
      if (m.gpu_names.size() <= static_cast<size_t>(index)) m.gpu_names.resize(static_cast<size_t>(index) + 1);
      m.gpu_names[static_cast<size_t>(index)] = trim(name);
      continue;
    }
    if (!header_line) {
      const std::vector<std::string> cells = split_cells(t);
      if (cells.empty() || cells[0] != "GPU0") continue;
      header_line = lineno;
      m.spaced_lines += t.find('\t') == std::string::npos;
      for (const std::string& c : cells) {
        if (c.empty()) continue;
        if (c.rfind("CPU", 0) == 0 || c.rfind("NUMA", 0) == 0 || c.rfind("GPU NUMA", 0) == 0)
          extra.push_back(c);
        else if (extra.empty() && c.find_first_of("0123456789") == std::string::npos)  // GPU0, NIC1; older versions: mlx5_0
          fail(lineno, fmt::format("header cell '{}' is no device (GPU0, NIC0, ...) nor a column nvidia-smi prints (CPU Affinity, "
                                   "NUMA Affinity, GPU NUMA ID)",
                                   c));
        else if (extra.empty())
          m.devices.push_back(c);
      }
      ncols = m.devices.size();
      m.rel.assign(ncols, std::vector<std::string>(ncols));
      m.numa.assign(ncols, -1);
      m.cpu_affinity.assign(ncols, "");
      row_line.assign(ncols, 0);
      continue;
    }
    if (t.rfind("Legend", 0) == 0 || t.rfind("NIC Legend", 0) == 0) {
      in_legend = true;
      continue;
    }
    if (in_legend) {
      static const std::regex nic(R"(^(NIC\d+)\s*:\s*(\S+)$)");
      std::smatch mm;
      if (std::regex_match(t, mm, nic)) nic_legend[mm[1].str()] = mm[2].str();
      continue;
    }
    const std::vector<std::string> cells = split_cells(t);
    m.spaced_lines += t.find('\t') == std::string::npos;
    const auto it = std::find(m.devices.begin(), m.devices.end(), cells[0]);
    if (it == m.devices.end()) fail(lineno, fmt::format("row '{}' is no device of the header's (line {})", cells[0], header_line));
    const size_t d = static_cast<size_t>(it - m.devices.begin());
    if (!seen.insert(cells[0]).second) fail(lineno, fmt::format("{} has a second row", cells[0]));
    row_line[d] = lineno;
    // Cells: the relations to each device, then the header's columns after the devices (NIC
    // rows may leave those out). Empty cells are tab padding, not values.
    std::vector<std::string> vals;
    for (size_t i = 1; i < cells.size(); ++i)
      if (!cells[i].empty()) vals.push_back(cells[i]);
    const size_t most = ncols + extra.size();
    auto columns = [&] {
      std::string cols = fmt::format("{} devices", ncols);
      for (const std::string& e : extra) cols += ", " + e;
      return cols;
    };
    if (vals.size() > most)
      fail(lineno, fmt::format("{} has {} cells; the header has {} ({}): a cell too many, which moves every cell after it. "
                               "Copy the row again from `nvidia-smi topo -m` (cells are separated by {})",
                               cells[0], vals.size(), most, columns(), t.find('\t') != std::string::npos ? "tabs" : "spaces in this line"));
    if (vals.size() < ncols) fail(lineno, fmt::format("{} has {} relations; the header has {} devices", cells[0], vals.size(), ncols));
    // A row short of cells shows as a cell of the next column where a relation belongs.
    const std::string shifted =
        vals.size() != most && vals.size() != ncols
            ? fmt::format(" (the row has {} cells, the header {}: a cell missing or one too many before it?)", vals.size(), columns())
            : "";
    for (size_t j = 0; j < ncols; ++j) {
      const std::string& r = vals[j];
      const std::string where = fmt::format("{}-{} (cell {} of the row)", cells[0], m.devices[j], j + 1);
      if (is_nv(r) && all_digits(r.substr(2)) && small_count(r.substr(2), kMaxNvLinks) < 1)
        fail(lineno, fmt::format("{}: '{}' is no plausible count of NVLinks (NV1 to NV{}; an H100 or B200 has NV18 at most)", where, r, kMaxNvLinks));
      const bool ok = r == "X" || pcie_rank(r) > 0 || (is_nv(r) && all_digits(r.substr(2)));
      if (!ok) fail(lineno, fmt::format("{}: '{}' is no relation nvidia-smi prints (X, NV#, PIX, PXB, PHB, NODE, SYS){}", where, r, shifted));
      if ((r == "X") != (j == d)) fail(lineno, fmt::format("{}: 'X' belongs on the diagonal only{}", where, shifted));
      m.rel[d][j] = r;
    }
    // The columns after the devices, as the header names them.
    for (size_t k = 0; ncols + k < vals.size(); ++k) {
      const std::string& v = vals[ncols + k];
      const std::string where = fmt::format("{} {} (cell {} of the row)", cells[0], extra[k], ncols + k + 1);
      if (extra[k].rfind("CPU", 0) == 0) {
        if (!is_cpu_list(v)) fail(lineno, fmt::format("{}: '{}' is no list of CPUs (as 0-55,112-167, or N/A){}", where, v, shifted));
        m.cpu_affinity[d] = v;
      } else if (v != "N/A") {  // NUMA Affinity, GPU NUMA ID: a node number
        const int node = small_count(v, kMaxNumaNode);
        if (node < 0) fail(lineno, fmt::format("{}: '{}' is no NUMA node (a number from 0 to {}, or N/A){}", where, v, kMaxNumaNode, shifted));
        if (extra[k].rfind("NUMA", 0) == 0) m.numa[d] = node;
      }
    }
  }
  if (!header_line)
    fail(0, "no header line starting with GPU0: not the output of `nvidia-smi topo -m`; save that output as it prints it "
            "(nvidia-smi topo -m > topo.txt) and give that file");
  for (size_t d = 0; d < ncols; ++d)
    if (!seen.count(m.devices[d])) fail(header_line, fmt::format("{} is in the header but has no row", m.devices[d]));
  // A pair told apart by its two rows: reported at the later row, naming the other's line.
  for (size_t a = 0; a < ncols; ++a)
    for (size_t b = 0; b < ncols; ++b)
      if (row_line[a] > row_line[b] && m.rel[a][b] != m.rel[b][a] && !(m.rel[a][b] == "SOC" || m.rel[b][a] == "SOC"))
        fail(row_line[a], fmt::format("{}-{} (cell {} of the row) is {}, but {}-{} (line {}, cell {}) is {}: nvidia-smi prints each pair "
                                      "alike both ways. Copy both rows again from `nvidia-smi topo -m`",
                                      m.devices[a], m.devices[b], b + 1, m.rel[a][b], m.devices[b], m.devices[a], row_line[b], a + 1, m.rel[b][a]));
  for (size_t d = 0; d < ncols; ++d)
    if (!m.is_gpu(d)) m.nic_names.push_back(nic_legend.count(m.devices[d]) ? nic_legend[m.devices[d]] : "");
  return m;
}

std::vector<double> parse_nvidia_smi_c2c(const std::string& raw, const std::string& file) {
  // The output (dmlc/xgboost's tests quote a GH200's: ten links of 44.712 GB/s):
  //   GPU 0: NVIDIA GH200 480GB (UUID: GPU-...)
  //       C2C Link 0: 44.712 GB/s
  static const std::regex gpu(R"(^GPU (\d+): )"), link(R"(^C2C Link (\d+): ([0-9]+(\.[0-9]+)?) GB/s$)");
  // One link's rate: GH200's are ~45 GB/s; past this a number is damaged.
  constexpr double kMaxLinkGBps = 1000;
  std::istringstream in(raw);
  std::string line;
  std::vector<double> out;
  int lineno = 0, current = -1;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = trim(line);
    std::smatch mm;
    if (std::regex_search(t, mm, gpu)) {
      current = small_count(mm[1].str(), kMaxListedGpus);
      if (current < 0)
        throw InputError(SourceLocation{file, lineno, 0},
                         fmt::format("'{}' is no GPU index nvidia-smi prints (0 to {})", mm[1].str(), kMaxListedGpus));
      if (out.size() <= static_cast<size_t>(current)) out.resize(static_cast<size_t>(current) + 1, 0.0);
    } else if (std::regex_match(t, mm, link)) {
      if (current < 0)
        throw InputError(SourceLocation{file, lineno, 0}, "a C2C link before any 'GPU i: NAME' line: not the output of `nvidia-smi c2c -s`");
      const double gbps = std::stod(mm[2].str());
      if (!(gbps > 0 && gbps <= kMaxLinkGBps))
        throw InputError(SourceLocation{file, lineno, 0},
                         fmt::format("'{} GB/s' is no C2C link rate (above 0, at most {:.0f} GB/s)", mm[2].str(), kMaxLinkGBps));
      out[static_cast<size_t>(current)] += gbps;
    }
  }
  return out;
}

std::vector<bool> parse_nvidia_smi_q_c2c(const std::string& raw) {
  // A GPU's section opens with its bus id ("GPU 00000000:DD:00.0"); the
  // line inside it (a GH200 on driver 550.127.05):
  //     GPU C2C Mode                          : Enabled
  static const std::regex gpu(R"(^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$)"), mode(R"(^GPU C2C Mode\s*:\s*(\S+)$)");
  std::istringstream in(raw);
  std::string line;
  std::vector<bool> out;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    std::smatch mm;
    if (std::regex_match(t, gpu))
      out.push_back(false);
    else if (!out.empty() && std::regex_match(t, mm, mode))
      out.back() = mm[1].str() == "Enabled";
  }
  return out;
}

std::string topology_yaml_from_smi(const SmiMatrix& m, const SmiImportOptions& o) {
  const size_t n = m.devices.size();
  // Sockets: NUMA affinity; else devices of one CPU affinity; else one.
  std::vector<int> socket(n, 0);
  {
    std::map<std::string, int> ids;
    for (size_t d = 0; d < n; ++d) {
      const std::string key = m.numa[d] >= 0                                            ? fmt::format("numa{}", m.numa[d])
                              : m.cpu_affinity[d].empty() || m.cpu_affinity[d] == "N/A" ? ""
                                                                                        : m.cpu_affinity[d];
      if (key.empty()) continue;
      socket[d] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
    }
    // A device without affinity (a NIC) shares the socket of one it is not SYS from.
    for (size_t d = 0; d < n; ++d) {
      if (m.numa[d] >= 0 || (!m.cpu_affinity[d].empty() && m.cpu_affinity[d] != "N/A")) continue;
      for (size_t b = 0; b < n; ++b)
        if (b != d && pcie_rank(m.rel[d][b]) >= 1 && pcie_rank(m.rel[d][b]) <= 4 && (m.numa[b] >= 0 || !m.cpu_affinity[b].empty())) {
          socket[d] = socket[b];
          break;
        }
    }
  }
  const int sockets = n ? *std::max_element(socket.begin(), socket.end()) + 1 : 1;
  // Host bridges: devices joined by PIX/PXB/PHB; PXB groups under a switch; PIX groups under one.
  UnionFind rc(n), pxb(n), pix(n);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      const int r = pcie_rank(m.rel[a][b]);
      if (r >= 1 && r <= 3) rc.join(a, b);
      if (r >= 1 && r <= 2) pxb.join(a, b);
      if (r == 1) pix.join(a, b);
    }
  auto name_of = [&](size_t d) {
    const std::string& s = m.devices[d];
    return (m.is_gpu(d) ? "gpu" : "nic") + s.substr(s.find_first_of("0123456789"));
  };
  std::string nodes, links;
  std::vector<std::string> assumed;
  // A link line's name and role: ROLE-ENDS, one per line, and the role the
  // shipped topologies name their one line of it by, so a key such as
  // topology.links.gpu_pcie.pcie edits every GPU's link (or gpu_pcie-gpu3 one).
  auto named = [](const char* role, const std::string& ends) { return fmt::format("name: {}-{}, role: {}", role, ends, role); };
  nodes += "nodes:\n";
  for (int s = 0; s < sockets; ++s)
    nodes += fmt::format("  - {{name: cpu{}, kind: cpu, memory_bandwidth: 250 GB/s}}  # ASSUMED: the socket's DRAM bandwidth\n", s);
  links += "links:\n";
  for (int s = 0; s + 1 < sockets; ++s)
    links += fmt::format("  - {{{}, a: cpu{}, b: cpu{}, kind: inter_socket, bandwidth: 64 GB/s, latency: 0.5 us}}  # ASSUMED: UPI/xGMI rate\n",
                         named("inter_socket", fmt::format("cpu{}-cpu{}", s, s + 1)), s, s + 1);
  // A GPU whose host path is NVLink-C2C (a Grace Hopper's) reports a PCIe link
  // that is no part of the node's PCIe fabric (a GH200's GPU reports x1): the
  // width nvidia-smi gave goes on the GPUs' own lines only, and the NICs' links
  // and the switches' uplinks are a Grace's, gen5 x16 (the GH200 datasheet: up
  // to 4 PCIe x16 Gen5 links), ASSUMED. Over PCIe every link takes the GPUs'.
  bool c2c_host = false;
  for (size_t g = 0; g < std::max(o.c2c_GBps.size(), o.c2c_enabled.size()); ++g)
    c2c_host = c2c_host || (g < o.c2c_GBps.size() && o.c2c_GBps[g] > 0) || (g < o.c2c_enabled.size() && o.c2c_enabled[g]);
  const bool own_width = o.pcie_measured && c2c_host && o.pcie != kGracePcie;
  const std::string gpu_pcie = fmt::format("pcie: {}, latency: 1 us", o.pcie);
  const std::string pcie = own_width ? fmt::format("pcie: {}, latency: 1 us", kGracePcie) : gpu_pcie;
  // Devices with no PCIe relation to any other of their socket (all NV#, or
  // alone) share one host bridge there; the others get their group's.
  std::map<size_t, std::string> bridge_of;  // rc root -> host bridge name
  std::map<int, std::string> shared_bridge;
  int bridges = 0, switches = 0;
  auto bridge = [&](size_t d) {
    bool related = false;
    for (size_t b = 0; b < n; ++b) related = related || (b != d && pcie_rank(m.rel[d][b]) >= 1 && pcie_rank(m.rel[d][b]) <= 4);
    auto new_bridge = [&] {
      const std::string name = fmt::format("rc{}", bridges++);
      nodes += fmt::format("  - {{name: {}, kind: host_bridge{}}}{}\n", name, kHostFields, kHostComment);
      links += fmt::format("  - {{a: {}, b: cpu{}, kind: internal}}\n", name, socket[d]);
      return name;
    };
    if (!related) {
      auto it = shared_bridge.find(socket[d]);
      return it != shared_bridge.end() ? it->second : shared_bridge[socket[d]] = new_bridge();
    }
    auto it = bridge_of.find(rc.find(d));
    return it != bridge_of.end() ? it->second : bridge_of[rc.find(d)] = new_bridge();
  };
  std::map<size_t, std::string> upper_of, leaf_of;   // pxb root / pix root -> switch
  std::map<size_t, std::set<size_t>> pix_groups_in;  // pxb root -> pix roots
  std::map<size_t, int> pxb_size;
  for (size_t d = 0; d < n; ++d) {
    pix_groups_in[pxb.find(d)].insert(pix.find(d));
    ++pxb_size[pxb.find(d)];
  }
  std::vector<std::string> parent(n);
  for (size_t d = 0; d < n; ++d) {
    const std::string rcname = bridge(d);
    const size_t g = pxb.find(d);
    if (pxb_size[g] < 2) {
      parent[d] = rcname;
      continue;
    }
    auto upper = upper_of.find(g);
    if (upper == upper_of.end()) {
      const std::string sw = fmt::format("pcisw{}", switches++);
      nodes += fmt::format("  - {{name: {}, kind: pcie_switch}}\n", sw);
      links += fmt::format("  - {{{}, a: {}, b: {}, {}}}\n", named("switch_uplink", sw), sw, rcname, pcie);
      upper = upper_of.emplace(g, sw).first;
    }
    if (pix_groups_in[g].size() == 1) {  // every pair under it PIX: one switch
      parent[d] = upper->second;
      continue;
    }
    auto leaf = leaf_of.find(pix.find(d));
    if (leaf == leaf_of.end()) {
      const std::string sw = fmt::format("pcisw{}", switches++);
      nodes += fmt::format("  - {{name: {}, kind: pcie_switch}}\n", sw);
      links += fmt::format("  - {{{}, a: {}, b: {}, {}}}\n", named("switch_uplink", sw), sw, upper->second, pcie);
      leaf = leaf_of.emplace(pix.find(d), sw).first;
    }
    parent[d] = leaf->second;
  }
  // GPUs and NICs.
  const std::vector<GpuDatasheet> datasheets = o.gpu_datasheets ? *o.gpu_datasheets : builtin_gpu_datasheets();
  size_t gpu_index = 0, nic_index = 0;
  for (size_t d = 0; d < n; ++d) {
    if (m.is_gpu(d)) {
      const std::string gname = gpu_index < o.gpu_names.size() ? o.gpu_names[gpu_index] : "";
      ++gpu_index;
      if (const GpuDatasheet* f = find_gpu_datasheet(datasheets, gname)) {
        nodes += fmt::format("  - {{name: {}, kind: gpu, {}}}  # {}\n", name_of(d), f->fields, gname);
      } else {
        nodes += fmt::format(
            "  - {{name: {}, kind: gpu, model: {}, memory: 80 GiB, hbm_bandwidth: 2 TB/s, sms: 132, copy_engines: 3}}  "
            "# ASSUMED: memory, HBM bandwidth, SMs (and peak_tflops) of this GPU\n",
            name_of(d), gname.empty() ? "GPU" : std::regex_replace(gname, std::regex("[^A-Za-z0-9_.-]+"), "-"));
      }
    } else {
      const std::string& legend = m.nic_names[nic_index++];
      nodes += fmt::format("  - {{name: {}, kind: nic}}{}\n", name_of(d), legend.empty() ? "" : "  # " + legend);
    }
    links += fmt::format("  - {{{}, a: {}, b: {}, {}}}\n", named(m.is_gpu(d) ? "gpu_pcie" : "nic_pcie", name_of(d)), name_of(d), parent[d],
                         m.is_gpu(d) ? gpu_pcie : pcie);
  }
  // NVLink-C2C: a GPU that `nvidia-smi c2c -s` lists with active links keeps
  // the PCIe place the matrix gives it (its relations to NICs and GPUs) and
  // reaches its CPU's memory over C2C, one hop where PCIe takes two.
  int c2c_gpus = 0;
  for (size_t d = 0, g = 0; d < n; ++d) {
    if (!m.is_gpu(d)) continue;
    const double gbps = g < o.c2c_GBps.size() ? o.c2c_GBps[g] : 0.0;
    const bool enabled = g < o.c2c_enabled.size() && o.c2c_enabled[g];
    ++g;
    if (gbps <= 0 && !enabled) continue;
    ++c2c_gpus;
    const std::string line = fmt::format("  - {{{}, a: {}, b: cpu{}, kind: nvlink_c2c", named("gpu_c2c", name_of(d)), name_of(d), socket[d]);
    if (gbps > 0)
      links += fmt::format("{}, bandwidth: {:.2f} GB/s, latency: 0.5 us}}  # measured: nvidia-smi c2c -s\n", line, gbps);
    else  // NVLink-C2C's rate (900 GB/s both ways together); `nvidia-smi c2c -s` lists the links'
      links += fmt::format(
          "{}, bandwidth: 450 GB/s, latency: 0.5 us}}  # ASSUMED: NVLink-C2C's rate a direction (nvidia-smi -q: GPU C2C Mode Enabled)\n", line);
  }
  // NVLink: a group of three or more GPUs joined pairwise by the same NV# is an NVSwitch; else direct links.
  UnionFind nv(n);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      if (nvlinks(m.rel[a][b])) nv.join(a, b);
  std::map<size_t, std::vector<size_t>> nv_groups;
  for (size_t d = 0; d < n; ++d)
    if (m.is_gpu(d)) nv_groups[nv.find(d)].push_back(d);
  int nvswitches = 0;
  for (const auto& [root, g] : nv_groups) {
    if (g.size() < 2) continue;
    bool full = g.size() >= 3;
    const int k = nvlinks(m.rel[g[0]][g[1]]);
    for (size_t i = 0; full && i < g.size(); ++i)
      for (size_t j = 0; full && j < g.size(); ++j) full = i == j || nvlinks(m.rel[g[i]][g[j]]) == k;
    if (full) {
      const std::string sw = fmt::format("nvswitch{}", nvswitches++);
      nodes += fmt::format("  - {{name: {}, kind: nvswitch}}\n", sw);
      for (size_t d : g)
        links += fmt::format("  - {{{}, a: {}, b: {}, nvlinks: {}, latency: 0.5 us}}\n", named("gpu_nvlink", name_of(d)), name_of(d), sw, k);
      continue;
    }
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = i + 1; j < g.size(); ++j)
        if (const int kk = nvlinks(m.rel[g[i]][g[j]]))
          links += fmt::format("  - {{{}, a: {}, b: {}, nvlinks: {}, latency: 0.5 us}}\n",
                               named("gpu_gpu_nvlink", name_of(g[i]) + "-" + name_of(g[j])), name_of(g[i]), name_of(g[j]), kk);
  }
  // Every GPU copying at once measures the host side only where one bridge
  // carries them all; with several, each bridge's share is unknown.
  std::string fields, comment;
  // Over C2C the GPUs' copies never cross the bridge.
  if (bridges == 1 && c2c_gpus == 0 && (o.host_from_GBps > 0 || o.host_to_GBps > 0)) {
    if (o.host_from_GBps > 0) fields += fmt::format(", throughput_from_host: {:.1f} GB/s", o.host_from_GBps);
    if (o.host_to_GBps > 0) fields += fmt::format(", throughput_to_host: {:.1f} GB/s", o.host_to_GBps);
    comment = "  # measured: every GPU copying pinned memory at once (the bench's multi_h2d_pinned, multi_d2h_pinned)";
  }
  for (size_t at; (at = nodes.find(kHostFields)) != std::string::npos;) nodes.replace(at, std::strlen(kHostFields), fields);
  for (size_t at; (at = nodes.find(kHostComment)) != std::string::npos;) nodes.replace(at, std::strlen(kHostComment), comment);
  std::string pcie_note =
      "Every PCIe link is " + o.pcie +
      (o.pcie_measured ? " (the GPUs' link as nvidia-smi reported it)" : " (ASSUMED: read the real ones with `lspci -vv`, LnkSta)");
  if (own_width)
    pcie_note = fmt::format(
        "The GPUs' PCIe links are {} as nvidia-smi reported them; the NICs' and switches' are {}\n"
        "# (ASSUMED: a Grace's, as the GH200 datasheet has them: a GPU whose host path is NVLink-C2C reports\n"
        "# a PCIe link none of theirs; `lspci -vv`, LnkSta, has the real ones)",
        o.pcie, kGracePcie);
  std::string head = fmt::format(
      "# Imported by `overlapsim topo --import-nvidia-smi` from {}.\n"
      "# The PCIe tree is what the matrix's relations imply (PIX: one switch; PXB: switches below one;\n"
      "# PHB: one host bridge; NODE: host bridges of one socket; SYS: sockets, by NUMA affinity).\n"
      "# {}; NV# is # NVLinks of\n"
      "# 25 GB/s a direction (NVLink 2-4; Blackwell's NVLink 5 is 50: set `bandwidth:`); a group of three or more\n"
      "# GPUs joined pairwise by the same NV# is an NVSwitch. Lines marked ASSUMED hold placeholders to set.\n"
      "{}"
      "# Each link line has a name and a role (gpu_pcie, nic_pcie, switch_uplink, gpu_nvlink, gpu_gpu_nvlink,\n"
      "# inter_socket{}): a sweep key topology.links.gpu_pcie.pcie edits every line of the role,\n"
      "# topology.links.gpu_pcie-gpu3.pcie one line (docs/formats/topology.md).\n"
      "# Calibrate the copy and host-bridge rates on the node: docs/calibrate-your-node.md.\n",
      o.source.empty() ? "`nvidia-smi topo -m`" : o.source, pcie_note,
      c2c_gpus ? fmt::format("# {} GPU(s) reach their CPU over NVLink-C2C (`nvidia-smi c2c -s` lists their links, the rate their sum\n"
                             "# a direction; or `nvidia-smi -q` says GPU C2C Mode Enabled): a gpu_c2c link each, their host path;\n"
                             "# PCIe keeps their relations to NICs and GPUs.\n",
                             c2c_gpus)
               : "",
      c2c_gpus ? ", gpu_c2c" : "");
  return head +
         fmt::format("name: {}\ndescription: imported from nvidia-smi topo -m ({} GPUs, {} NICs, {} sockets)\n", o.name, gpu_index, nic_index,
                     sockets) +
         nodes + links;
}

std::vector<std::string> compare_with_smi(const Topology& topo, const SmiMatrix& m) {
  std::vector<std::string> out;
  auto node = [&](size_t d) {
    const std::string& s = m.devices[d];
    return topo.find((m.is_gpu(d) ? "gpu" : "nic") + s.substr(s.find_first_of("0123456789")));
  };
  for (size_t a = 0; a < m.devices.size(); ++a)
    for (size_t b = a + 1; b < m.devices.size(); ++b) {
      const int na = node(a), nb = node(b);
      if (na < 0 || nb < 0) {
        out.push_back(fmt::format("{}-{}: not both in the topology", m.devices[a], m.devices[b]));
        continue;
      }
      const std::string want = nvlinks(m.rel[a][b]) ? "NVL" : m.rel[a][b] == "SOC" ? "SYS" : m.rel[a][b];
      const std::string got = to_string(topo.path_type(na, nb));
      if (got != want)
        out.push_back(fmt::format("{}-{}: {} in nvidia-smi's matrix, {} in the topology", m.devices[a], m.devices[b], m.rel[a][b], got));
    }
  return out;
}

std::vector<std::string> gpu_names_from_csv(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> names;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1) {
      if (trim(line).rfind("name", 0) != 0)
        throw InputError(SourceLocation{file, 1, 0},
                         "expected `nvidia-smi --query-gpu=name,... --format=csv` output (a header starting with 'name')");
      continue;
    }
    if (!trim(line).empty()) names.push_back(trim(line.substr(0, line.find(','))));
  }
  return names;
}

std::string format_smi_matrix(const Topology& topo) {
  std::vector<int> devs;
  std::vector<std::string> names;
  for (NodeKind k : {NodeKind::Gpu, NodeKind::Nic}) {
    int i = 0;
    for (int d : topo.nodes_of_kind(k)) {
      devs.push_back(d);
      names.push_back(fmt::format("{}{}", k == NodeKind::Gpu ? "GPU" : "NIC", i++));
    }
  }
  // NV#: the NVLink bandwidth between two GPUs (a direct link, else the first GPU's link into a switch) at 25 GB/s a link.
  auto nv = [&](int a, int b) {
    double bw = 0;
    for (const LinkSpec& l : topo.spec().links) {
      if (l.kind != LinkKind::NvLink) continue;
      const std::string& an = topo.node(a).name;
      const std::string& bn = topo.node(b).name;
      if ((l.a == an && l.b == bn) || (l.a == bn && l.b == an))
        bw = l.bandwidth.bytes_per_s;
      else if (bw == 0 && (l.a == an || l.b == an))
        bw = l.bandwidth.bytes_per_s;
    }
    return fmt::format("NV{}", static_cast<int>(bw / 25e9 + 0.5));
  };
  std::string out;
  for (const std::string& nm : names) out += "\t" + nm;
  out += "\tCPU Affinity\tNUMA Affinity\n";
  for (size_t a = 0; a < devs.size(); ++a) {
    out += names[a];
    for (size_t b = 0; b < devs.size(); ++b) {
      const PathType p = topo.path_type(devs[a], devs[b]);
      out += "\t" + (a == b ? std::string(" X ") : p == PathType::NvLink ? nv(devs[a], devs[b]) : to_string(p));
    }
    int numa = 0;
    const std::vector<int> cpus = topo.nodes_of_kind(NodeKind::Cpu);
    const int near = topo.nearest_cpu(devs[a]);
    for (size_t c = 0; c < cpus.size(); ++c)
      if (cpus[c] == near) numa = static_cast<int>(c);
    out += fmt::format("\tN/A\t{}\n", numa);
  }
  return out;
}

}  // namespace osim::hw
