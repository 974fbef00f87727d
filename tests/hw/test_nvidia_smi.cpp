// `nvidia-smi topo -m` imported as a topology: the committed machines' texts,
// hand-written layouts (PCIe switches, two sockets, NICs), round trips of the
// shipped topologies, and malformed input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "hw/nvidia_smi.hpp"
#include "io/text_file.hpp"

#include <unistd.h>

using namespace osim;
using namespace osim::hw;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Imports `text`; the topology it writes must reproduce the matrix.
std::string import_checked(const std::string& text, const std::string& name, const SmiImportOptions& o = {}) {
  const SmiMatrix m = parse_nvidia_smi_topo(text, name);
  const std::string yaml = topology_yaml_from_smi(m, o);
  const Topology t(parse_topology_string(yaml, name));
  const std::vector<std::string> diff = compare_with_smi(t, m);
  for (const auto& d : diff) CAPTURE(d);
  CHECK(diff.empty());
  return yaml;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::string error_of(const std::string& text) {
  try {
    parse_nvidia_smi_topo(text, "t.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the reference machines' nvidia-smi texts import to their shipped topologies' matrices") {
  for (const char* machine : {"h100-sxm", "h200", "h200x2-nvlink", "h200x4-nvlink"}) {
    CAPTURE(machine);
    const std::string dir = kSrc + "/validate/reference/" + machine + "/machine/";
    SmiImportOptions o;
    o.gpu_names = gpu_names_from_csv(read(dir + "gpus.csv"), dir + "gpus.csv");
    const std::string yaml = import_checked(read(dir + "nvidia-smi-topo.txt"), machine, o);
    CHECK(yaml.find(std::string(machine).find("h100") == 0 ? "model: H100-SXM5" : "model: H200") != std::string::npos);
  }
  // Four GPUs on NVSwitch: the shipped topology's matrix is the text's; the import puts an NVSwitch where it has one.
  const SmiMatrix m = parse_nvidia_smi_topo(read(kSrc + "/validate/reference/h200x4-nvlink/machine/nvidia-smi-topo.txt"), "x4");
  REQUIRE(m.devices.size() == 4);
  CHECK(m.rel[0][3] == "NV18");
  CHECK(m.numa[2] == 0);
  const Topology shipped(parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  CHECK(compare_with_smi(shipped, m).empty());
  const std::string yaml = topology_yaml_from_smi(m, {});
  CHECK(count(yaml, "kind: nvswitch") == 1);
  CHECK(count(yaml, "nvlinks: 18") == 4);
  CHECK(count(yaml, "kind: host_bridge") == 1);
}

TEST_CASE("hand-written layouts: a DGX H100 (NICs, NODE, escapes, legend) and PCIe switches two deep on two sockets") {
  const std::string dgx = import_checked(read(kSrc + "/tests/data/nvidia-smi/dgx-h100.txt"), "dgx");
  CHECK(count(dgx, "kind: cpu") == 2);
  CHECK(count(dgx, "kind: inter_socket") == 1);
  // Each GPU with its NIC under a switch (PIX), each such pair on its own host bridge (NODE between
  // them); the two storage NICs (NODE to all) on host bridges of their own.
  CHECK(count(dgx, "kind: pcie_switch") == 8);
  CHECK(count(dgx, "kind: host_bridge") == 10);
  CHECK(dgx.find("{name: nic9, kind: nic}  # mlx5_9") != std::string::npos);
  const std::string sw = import_checked(read(kSrc + "/tests/data/nvidia-smi/pcie-switches-2socket.txt"), "sw");
  // Per socket: an upper switch, two leaf switches of two GPUs (PXB between leaves), and the NIC's leaf.
  CHECK(count(sw, "kind: pcie_switch") == 8);
  CHECK(count(sw, "kind: host_bridge") == 2);
  CHECK(sw.find("ASSUMED: memory, HBM bandwidth") != std::string::npos);
}

TEST_CASE("shipped single-host topologies survive nvidia-smi's matrix and back") {
  for (const char* name : {"dgx-h100", "rtx4090x8-pcie", "aces-4xh100-pcie", "h200x4-nvlink"}) {
    CAPTURE(name);
    const Topology shipped(parse_topology_file(kSrc + "/configs/topologies/" + name + ".yaml"));
    const std::string text = format_smi_matrix(shipped);
    const SmiMatrix m = parse_nvidia_smi_topo(text, name);
    CHECK(compare_with_smi(shipped, m).empty());
    import_checked(text, name);
  }
}

TEST_CASE("malformed nvidia-smi output: the line and what is wrong") {
  CHECK(error_of("hello\n").find("no header line starting with GPU0") != std::string::npos);
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \nGPU2\tPIX\tPIX\n").find("t.txt:4:") == 0);
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tWHAT\nGPU1\tWHAT\t X \n").find("'WHAT' is no relation") != std::string::npos);
  // A pair whose two rows disagree: at the later row, naming the earlier one's line and cell.
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tSYS\t X \n")
            .find("t.txt:3: error: GPU1-GPU0 (cell 1 of the row) is SYS, but GPU0-GPU1 (line 2, cell 2) is PIX") == 0);
  CHECK(error_of("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tNV4\nGPU1\tNV4\t X \tNV4\n\nGPU2\tNV4\tNV2\t X \n")
            .find("t.txt:5: error: GPU2-GPU1 (cell 2 of the row) is NV2, but GPU1-GPU2 (line 3, cell 3) is NV4") == 0);
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tPIX\n").find("GPU1 is in the header but has no row") != std::string::npos);
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n").find("'X' belongs on the diagonal only") != std::string::npos);
}

TEST_CASE("nvidia-smi's matrix copied from a terminal, its tabs turned to spaces, reads as the tabbed one") {
  const std::string tabs =
      "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV18\tPIX\t0-31\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\t32-63\t1\t\tN/A\nNIC0\tPIX\tSYS\t X \n";
  const std::string spaces =
      "        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
      "GPU0     X      NV18    PIX     0-31    0               N/A\nGPU1    NV18     X      SYS     32-63   1               N/A\n"
      "NIC0    PIX     SYS      X\n";
  const SmiMatrix a = parse_nvidia_smi_topo(tabs, "t.txt"), b = parse_nvidia_smi_topo(spaces, "s.txt");
  CHECK(b.devices == a.devices);
  CHECK(b.rel == a.rel);
  CHECK(b.numa == std::vector<int>{0, 1, -1});
  CHECK(b.cpu_affinity == a.cpu_affinity);
  CHECK(a.spaced_lines == 0);
  CHECK(b.spaced_lines == 4);
  // A cell too many shows as such, the message saying how this line's cells are separated.
  const std::string extra = "        GPU0    GPU1\nGPU0     X      NV18    NV18\nGPU1    NV18     X\n";
  CHECK(error_of(extra).find("t.txt:2: error: GPU0 has 3 cells; the header has 2 (2 devices): a cell too many") == 0);
  CHECK(error_of(extra).find("(cells are separated by spaces in this line)") != std::string::npos);
}

TEST_CASE("nvidia-smi cells checked: counts, NUMA nodes, CPU lists, a cell too many or missing") {
  const std::string head = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  auto matrix = [&](const std::string& nv, const std::string& tail0, const std::string& tail1) {
    return head + "GPU0\t X \t" + nv + "\t" + tail0 + "\nGPU1\t" + nv + "\t X \t" + tail1 + "\n";
  };
  // What nvidia-smi prints: NUMA nodes read, the tab padding before GPU NUMA ID ignored.
  const SmiMatrix m = parse_nvidia_smi_topo(matrix("NV18", "0-31\t0\t\tN/A", "32-63\t1\t\tN/A"), "t.txt");
  CHECK(m.numa == std::vector<int>{0, 1});
  CHECK(m.cpu_affinity[1] == "32-63");
  CHECK(parse_nvidia_smi_topo(matrix("NV4", "N/A\tN/A\t\tN/A", "N/A\tN/A\t\tN/A"), "t.txt").numa == std::vector<int>{-1, -1});
  // NVLink counts: 1 to 36, never an exception of std::stoi.
  for (const char* nv : {"NV0", "NV37", "NV100000", "NV12345678901234567890"}) {
    CAPTURE(nv);
    CHECK(error_of(matrix(nv, "0-31\t0", "0-31\t0"))
              .find("t.txt:2: error: GPU0-GPU1 (cell 2 of the row): '" + std::string(nv) + "' is no plausible count of NVLinks") == 0);
  }
  CHECK(error_of(matrix("NV36", "0-31\t0", "0-31\t0")).empty());
  // A NUMA node that is no number (or too large), a CPU list that is none.
  for (const char* numa : {"abc", "-1", "1024", "12345678901234567890"}) {
    CAPTURE(numa);
    CHECK(error_of(matrix("NV4", "0-31\t0", std::string("0-31\t") + numa))
              .find("t.txt:3: error: GPU1 NUMA Affinity (cell 4 of the row): '" + std::string(numa) + "' is no NUMA node") == 0);
  }
  CHECK(error_of(matrix("NV4", "0-31\t0\t\tx", "0-31\t0")).find("GPU0 GPU NUMA ID (cell 5 of the row): 'x' is no NUMA node") != std::string::npos);
  CHECK(error_of(matrix("NV4", "zero\t0", "0-31\t0")).find("GPU0 CPU Affinity (cell 3 of the row): 'zero' is no list of CPUs") != std::string::npos);
  // A cell too many moves every cell after it: refused, not read as another NUMA node.
  CHECK(error_of(matrix("NV4", "0-31\t0\t1\tN/A", "0-31\t0")).find("t.txt:2: error: GPU0 has 6 cells; the header has 5") == 0);
  // A cell missing: the next column's cell where a relation belongs.
  CHECK(error_of(head + "GPU0\t X \tNV4\t0-31\t0\nGPU1\t X \t0-31\t0\n").find("a cell missing or one too many before it?") != std::string::npos);
  // A header cell that names no device.
  CHECK(error_of("\tGPU0\tGPUx\nGPU0\t X \tNV4\n").find("t.txt:1: error: header cell 'GPUx' is no device") == 0);
}

TEST_CASE("a measured host side goes on the node's one host bridge, never split over several") {
  SmiImportOptions o;
  o.host_from_GBps = 164.04;
  o.host_to_GBps = 126.31;
  const std::string one = import_checked(read(kSrc + "/validate/reference/h200x4-nvlink/machine/nvidia-smi-topo.txt"), "x4", o);
  CHECK(one.find("  - {name: rc0, kind: host_bridge, throughput_from_host: 164.0 GB/s, throughput_to_host: 126.3 GB/s}  # measured:") !=
        std::string::npos);
  const Topology t(parse_topology_string(one, "x4"));
  CHECK(t.resources()[static_cast<size_t>(t.from_host_resource(t.find("rc0")))].capacity == doctest::Approx(164.0e9));
  // Two sockets, a bridge each: which bridge carried what is unknown; nothing is set.
  const std::string dgx = import_checked(read(kSrc + "/tests/data/nvidia-smi/dgx-h100.txt"), "dgx", o);
  CHECK(dgx.find("throughput_from_host") == std::string::npos);
  CHECK(dgx.find('\x01') == std::string::npos);
}

TEST_CASE("`nvidia-smi -L` lines in the capture name the GPUs: their datasheet figures, not placeholders") {
  const std::string matrix = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-31\t0\nGPU1\tNV18\t X \t0-31\t0\n";
  const SmiMatrix m = parse_nvidia_smi_topo("GPU 0: NVIDIA H200 (UUID: GPU-0a1b)\nGPU 1: NVIDIA H200 (UUID: GPU-2c3d)\n" + matrix, "t.txt");
  CHECK(m.gpu_names == std::vector<std::string>{"NVIDIA H200", "NVIDIA H200"});
  SmiImportOptions o;
  o.gpu_names = m.gpu_names;
  const std::string yaml = import_checked("GPU 0: NVIDIA H200\n" + matrix, "t", o);
  CHECK(count(yaml, "model: H200, memory: 141 GB, hbm_bandwidth: 4.8 TB/s") == 2);
  CHECK(count(yaml, "ASSUMED: memory, HBM bandwidth") == 0);
  CHECK(parse_nvidia_smi_topo(matrix, "t.txt").gpu_names.empty());
  CHECK(error_of("GPU 99999: NVIDIA H200\n" + matrix).find("t.txt:1: error: '99999' is no GPU index") == 0);
}

TEST_CASE("imported link lines carry a name and a role: a key by role edits every line of it, by name one line") {
  const std::string dgx = import_checked(read(kSrc + "/tests/data/nvidia-smi/dgx-h100.txt"), "dgx");
  CHECK(count(dgx, "role: gpu_pcie}") == 0);  // the role, then the link's ends and figures
  CHECK(count(dgx, ", role: gpu_pcie, a: gpu") == 8);
  CHECK(count(dgx, ", role: nic_pcie, a: nic") == 10);
  CHECK(count(dgx, ", role: switch_uplink, a: pcisw") == 8);
  CHECK(count(dgx, ", role: gpu_nvlink, a: gpu") == 8);
  CHECK(count(dgx, "{name: inter_socket-cpu0-cpu1, role: inter_socket, a: cpu0, b: cpu1, kind: inter_socket") == 1);
  CHECK(dgx.find("{name: gpu_pcie-gpu3, role: gpu_pcie, a: gpu3, b: pcisw") != std::string::npos);
  // Two GPUs joined directly (no NVSwitch).
  const std::string pair = import_checked("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-31\t0\nGPU1\tNV18\t X \t0-31\t0\n", "pair");
  CHECK(pair.find("{name: gpu_gpu_nvlink-gpu0-gpu1, role: gpu_gpu_nvlink, a: gpu0, b: gpu1, nvlinks: 18") != std::string::npos);

  // As the shipped topologies' `gpu_pcie` line: the role edits all eight, a name one of them.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / ("osim-smi-roles-" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(f) << dgx; }
  const TopologySpec t = parse_topology_file(f.string(), std::vector<std::string>{"links.gpu_pcie.pcie=gen4 x8", "links.gpu_pcie-gpu3.pcie=gen3 x16"});
  int edited = 0;
  for (const LinkSpec& l : t.links) {
    CAPTURE(l.name);
    if (l.name.rfind("gpu_pcie-", 0) == 0) {
      CHECK(l.label == (l.name == "gpu_pcie-gpu3" ? "gen3 x16" : "gen4 x8"));
      ++edited;
    } else if (l.kind == LinkKind::Pcie) {
      CHECK(l.label == "gen5 x16");  // switch uplinks and NICs keep theirs
    }
  }
  CHECK(edited == 8);
  CHECK_THROWS_WITH_AS(parse_topology_file(f.string(), {"links.gpu_pci.pcie=gen4 x8"}),
                       doctest::Contains("no item of that name or role in the list in the topology"), InputError);
  CHECK_THROWS_WITH_AS(parse_topology_file(f.string(), {"links.gpu_pci.pcie=gen4 x8"}),
                       doctest::Contains("(roles: inter_socket, switch_uplink, gpu_pcie, nic_pcie, gpu_nvlink)"), InputError);
  std::filesystem::remove(f);
}

TEST_CASE("the GPU datasheet table: the shipped file built in, rows checked by line, another table by --gpu-datasheets") {
  const std::vector<GpuDatasheet> shipped = parse_gpu_datasheets(read(kSrc + "/configs/gpus.yaml"), "configs/gpus.yaml");
  const std::vector<GpuDatasheet> builtin = builtin_gpu_datasheets();
  REQUIRE(builtin.size() == shipped.size());
  for (size_t i = 0; i < shipped.size(); ++i) {
    CHECK(builtin[i].match == shipped[i].match);
    CHECK(builtin[i].fields == shipped[i].fields);
  }
  // The first row that matches: an H100 PCIe card is not taken for the SXM module.
  REQUIRE(find_gpu_datasheet(shipped, "NVIDIA H100 PCIe") != nullptr);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA H100 PCIe")->fields.find("model: H100-PCIe, memory: 80 GiB, hbm_bandwidth: 2.0 TB/s, sms: 114") == 0);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA H100 80GB HBM3")->fields.find("model: H100-SXM5,") == 0);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA B200") == nullptr);
  CHECK(find_gpu_datasheet(shipped, "") == nullptr);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA GeForce RTX 4090")->fields.ends_with("peak_tflops: {bf16: 165, fp16: 165, fp8: 330}, p2p: false"));

  // Bad rows: the file, the row's line, what is wrong.
  auto error_in = [](const std::string& rows) {
    try {
      parse_gpu_datasheets("gpus:\n" + rows, "g.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string ok =
      "  - {match: H200, model: H200, memory: 141 GB, hbm_bandwidth: 4.8 TB/s, sms: 132, copy_engines: 3, peak_tflops: {bf16: 989}}\n";
  CHECK(error_in(ok).empty());
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 GiB, hbm_bandwidth: 2 TB/s, sms: 0, copy_engines: 3, peak_tflops: {bf16: 1}}\n")
            .find("g.yaml:3:") == 0);
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 GiB, hbm_bandwidth: 2 TB/s, sms: 0, copy_engines: 3, peak_tflops: {bf16: 1}}\n")
            .find("must be at least 1") != std::string::npos);
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 GiB, hbm: 2 TB/s, sms: 8, copy_engines: 3, peak_tflops: {bf16: 1}}\n")
            .find("unknown key 'hbm'") != std::string::npos);
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 GiB, sms: 8, copy_engines: 3, peak_tflops: {bf16: 1}}\n").find("g.yaml:3:") == 0);
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 GiB, sms: 8, copy_engines: 3, peak_tflops: {bf16: 1}}\n")
            .find("error: the row of 'X' needs 'hbm_bandwidth'") != std::string::npos);
  CHECK(error_in(ok + "  - {model: X, memory: 80 GiB}\n").find("g.yaml:3:") == 0);
  CHECK(error_in(ok + "  - {match: X, model: X, memory: 80 XB, hbm_bandwidth: 2 TB/s, sms: 8, copy_engines: 3, peak_tflops: {bf16: 1}}\n")
            .find("g.yaml:3:") == 0);

  // Another table: its rows name the GPUs the shipped one does not know.
  const std::string matrix = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-31\t0\nGPU1\tNV18\t X \t0-31\t0\n";
  SmiImportOptions o;
  o.gpu_names = {"NVIDIA B200", "NVIDIA B200"};
  CHECK(count(import_checked(matrix, "t", o), "ASSUMED: memory, HBM bandwidth") == 2);
  o.gpu_datasheets = parse_gpu_datasheets(
      "gpus:\n  - {match: B200, model: B200, memory: 180 GB, hbm_bandwidth: 8 TB/s, sms: 148, copy_engines: 4, peak_tflops: {bf16: 2250}}\n",
      "mine.yaml");
  const std::string yaml = import_checked(matrix, "t", o);
  CHECK(
      count(yaml,
            "kind: gpu, model: B200, memory: 180 GB, hbm_bandwidth: 8 TB/s, sms: 148, copy_engines: 4, peak_tflops: {bf16: 2250}}  # NVIDIA B200") ==
      2);
}

TEST_CASE("`nvidia-smi c2c -s` read: each GPU's active links summed, no C2C read as none, damage named by line") {
  const std::vector<double> gh = parse_nvidia_smi_c2c(read(kSrc + "/tests/data/nvidia-smi/gh200x2-synthetic-c2c.txt"), "c2c.txt");
  REQUIRE(gh.size() == 2);
  CHECK(gh[0] == doctest::Approx(10 * 44.712));
  CHECK(gh[1] == doctest::Approx(10 * 44.712));
  // A link not up has no rate and adds nothing; a GPU without links stays 0.
  CHECK(parse_nvidia_smi_c2c("GPU 0: X (UUID: GPU-1)\n  C2C Link 0: 44.5 GB/s\n  C2C Link 1: <inactive>\nGPU 1: X\n", "t.txt") ==
        std::vector<double>{44.5, 0.0});
  // A node or driver without C2C: its message or the usage text, never an error.
  CHECK(parse_nvidia_smi_c2c("No Devices support C2C.\n", "t.txt").empty());
  CHECK(parse_nvidia_smi_c2c("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", "t.txt").empty());
  auto error = [](const std::string& text) {
    try {
      parse_nvidia_smi_c2c(text, "t.txt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("  C2C Link 0: 44.7 GB/s\n").find("t.txt:1: error: a C2C link before any 'GPU i: NAME' line") == 0);
  CHECK(error("GPU 0: X\n  C2C Link 0: 0 GB/s\n").find("t.txt:2: error: '0 GB/s' is no C2C link rate") == 0);
  CHECK(error("GPU 0: X\n  C2C Link 0: 4470 GB/s\n").find("t.txt:2:") == 0);
}

TEST_CASE("a GPU with C2C links reaches its CPU over nvlink_c2c at their rate, and PCIe captures import as before") {
  const std::string text = read(kSrc + "/tests/data/nvidia-smi/gh200x2-synthetic-topo.txt");
  SmiImportOptions o;
  o.c2c_GBps = parse_nvidia_smi_c2c(read(kSrc + "/tests/data/nvidia-smi/gh200x2-synthetic-c2c.txt"), "c2c.txt");
  const std::string yaml = import_checked(text, "gh", o);  // the matrix reproduced: NV18, NODE and SYS as the capture has them
  CHECK(yaml.find("  - {name: gpu_c2c-gpu0, role: gpu_c2c, a: gpu0, b: cpu0, kind: nvlink_c2c, bandwidth: 447.12 GB/s, latency: 0.5 us}") !=
        std::string::npos);
  CHECK(yaml.find("  - {name: gpu_c2c-gpu1, role: gpu_c2c, a: gpu1, b: cpu1, kind: nvlink_c2c, bandwidth: 447.12 GB/s, latency: 0.5 us}") !=
        std::string::npos);
  const Topology t(parse_topology_string(yaml, "gh"));
  for (const char* g : {"gpu0", "gpu1"}) {
    CAPTURE(g);
    const Route& h2d = t.route(t.nearest_cpu(t.find(g)), t.find(g));
    CHECK(h2d.crosses(LinkKind::NvLinkC2C));  // what calibrate reads to fit the C2C engine caps
    CHECK(!h2d.crosses(LinkKind::Pcie));
    CHECK(h2d.nodes.size() == 2);  // one hop: the GPU's own Grace
  }
  // Its link's capacity is the listed sum, a direction.
  SmiImportOptions single;
  single.c2c_GBps = {447.12};
  single.host_from_GBps = 100;  // a bridge the copies never cross: not set on it
  const Topology one(parse_topology_string(import_checked("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-71\t0\n", "one", single), "one"));
  CHECK(one.route(one.find("gpu0"), one.find("cpu0")).crosses(LinkKind::NvLinkC2C));
  CHECK(one.spec().links.back().bandwidth.GBps() == doctest::Approx(447.12));
  CHECK(one.from_host_resource(one.find("rc0")) < 0);

  // Without C2C links (none listed, or a capture of a node without them) the same matrix has PCIe host links.
  const std::string pcie = import_checked(text, "gh");
  CHECK(pcie.find("nvlink_c2c") == std::string::npos);
  const Topology tp(parse_topology_string(pcie, "gh"));
  CHECK(tp.route(tp.find("cpu0"), tp.find("gpu0")).crosses(LinkKind::Pcie));
  // The committed PCIe captures import byte for byte as before with a C2C capture that lists none.
  SmiImportOptions none;
  none.c2c_GBps = parse_nvidia_smi_c2c("No Devices support C2C.\n", "t.txt");
  for (const char* f : {"dgx-h100.txt", "pcie-switches-2socket.txt"}) {
    CAPTURE(f);
    const std::string smi = read(kSrc + "/tests/data/nvidia-smi/" + f);
    CHECK(import_checked(smi, f, none) == import_checked(smi, f));
  }
}

TEST_CASE("`nvidia-smi -q`'s GPU C2C Mode: Enabled gives an nvlink_c2c host link at 450 GB/s ASSUMED where c2c -s lists no rate") {
  const std::vector<bool> q = parse_nvidia_smi_q_c2c(read(kSrc + "/tests/data/nvidia-smi/gh200x2-synthetic-q.txt"));
  CHECK(q == std::vector<bool>{true, true});
  // A PCIe GPU prints N/A; drivers before 550 print no such line; neither is C2C.
  CHECK(parse_nvidia_smi_q_c2c("GPU 00000000:19:00.0\n    GPU C2C Mode                          : N/A\nGPU 00000000:3B:00.0\n") ==
        std::vector<bool>{false, false});
  CHECK(parse_nvidia_smi_q_c2c("GPU C2C Mode : Enabled\n").empty());  // outside any GPU's section
  // The committed H200 boxes' own captures say Disabled: their imports are as before.
  const std::string x4 = kSrc + "/validate/reference/h200x4-nvlink/machine/";
  SmiImportOptions pcie;
  pcie.c2c_enabled = parse_nvidia_smi_q_c2c(read_maybe_gzip(x4 + "nvidia-smi-q.txt.gz"));
  CHECK(pcie.c2c_enabled == std::vector<bool>(4, false));
  CHECK(import_checked(read(x4 + "nvidia-smi-topo.txt"), "x4", pcie) == import_checked(read(x4 + "nvidia-smi-topo.txt"), "x4"));
  const std::string text = read(kSrc + "/tests/data/nvidia-smi/gh200x2-synthetic-topo.txt");
  SmiImportOptions o;
  o.c2c_enabled = q;
  const std::string yaml = import_checked(text, "gh", o);
  CHECK(count(yaml, "kind: nvlink_c2c, bandwidth: 450 GB/s, latency: 0.5 us}  # ASSUMED: NVLink-C2C's rate a direction") == 2);
  const Topology t(parse_topology_string(yaml, "gh"));
  CHECK(t.route(t.find("cpu1"), t.find("gpu1")).crosses(LinkKind::NvLinkC2C));
  // The links' measured sum wins where `nvidia-smi c2c -s` lists one.
  o.c2c_GBps = {447.12};
  const std::string both = import_checked(text, "gh", o);
  CHECK(count(both, "kind: nvlink_c2c, bandwidth: 447.12 GB/s, latency: 0.5 us}  # measured") == 1);
  CHECK(count(both, "kind: nvlink_c2c, bandwidth: 450 GB/s") == 1);
}

TEST_CASE("a GPU whose host path is NVLink-C2C reports a PCIe width that no NIC or switch takes, and over PCIe every link takes it") {
  // A GH200-style node: the GPU and a NIC under one switch (PIX); the GPU's PCIe link as nvidia-smi
  // reports a GH200's (x1), its host link NVLink-C2C.
  const std::string matrix = "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t0-71\t0\nNIC0\tPIX\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n";
  SmiImportOptions o;
  o.pcie = "gen5 x1";
  o.pcie_measured = true;
  o.gpu_names = {"NVIDIA GH200 480GB"};
  // A line's role is its name's part before the first '-' (gpu_pcie-gpu0).
  auto role = [](const LinkSpec& l) { return l.name.substr(0, l.name.find('-')); };
  auto labels = [&](const std::string& yaml) {
    std::map<std::string, std::string> out;  // role -> the PCIe label of its lines (all alike)
    for (const LinkSpec& l : parse_topology_string(yaml, "gh").links)
      if (l.kind == LinkKind::Pcie) {
        CHECK((!out.count(role(l)) || out[role(l)] == l.label));
        out[role(l)] = l.label;
      }
    return out;
  };
  for (const bool by_rate : {true, false}) {
    CAPTURE(by_rate);
    SmiImportOptions c2c = o;
    if (by_rate)
      c2c.c2c_GBps = {447.12};  // nvidia-smi c2c -s
    else
      c2c.c2c_enabled = {true};  // nvidia-smi -q: GPU C2C Mode Enabled
    const std::string yaml = import_checked(matrix, "gh", c2c);
    const std::map<std::string, std::string> l = labels(yaml);
    CHECK(l.at("gpu_pcie") == "gen5 x1");   // what nvidia-smi said of the GPU's own link
    CHECK(l.at("nic_pcie") == "gen5 x16");  // a Grace's, not the GPU's
    CHECK(l.at("switch_uplink") == "gen5 x16");
    CHECK(yaml.find("# The GPUs' PCIe links are gen5 x1 as nvidia-smi reported them; the NICs' and switches' are gen5 x16\n# (ASSUMED") !=
          std::string::npos);
    // The NIC's way to its CPU is x16 Gen5 all along (~63 GB/s a direction), not one lane (~4).
    const Topology t(parse_topology_string(yaml, "gh"));
    for (const LinkSpec& s : t.spec().links)
      if (role(s) == "nic_pcie" || role(s) == "switch_uplink") CHECK(s.bandwidth.GBps() > 50);
    // The GH200's datasheet row, not the H200's whose name is part of its own.
    CHECK(yaml.find("kind: gpu, model: GH200, memory: 96 GiB, hbm_bandwidth: 4.0 TB/s, sms: 132") != std::string::npos);
  }
  // Over PCIe (no C2C listed) every link takes the GPUs' reported width, as before.
  const std::map<std::string, std::string> pcie = labels(import_checked(matrix, "gh", o));
  CHECK(pcie.at("nic_pcie") == "gen5 x1");
  CHECK(pcie.at("switch_uplink") == "gen5 x1");
  // A C2C node whose GPUs report x16 imports as it did: one width, one header line.
  SmiImportOptions x16 = o;
  x16.pcie = "gen5 x16";
  x16.c2c_GBps = {447.12};
  const std::string same = import_checked(matrix, "gh", x16);
  CHECK(same.find("# Every PCIe link is gen5 x16 (the GPUs' link as nvidia-smi reported it); NV#") != std::string::npos);
  // Given by hand (--pcie), it is every link's.
  SmiImportOptions given = o;
  given.pcie_measured = false;
  given.c2c_GBps = {447.12};
  CHECK(labels(import_checked(matrix, "gh", given)).at("nic_pcie") == "gen5 x1");
}

TEST_CASE("GH200s by their nvidia-smi names: the datasheet rows ahead of the H200's") {
  const std::vector<GpuDatasheet> shipped = parse_gpu_datasheets(read(kSrc + "/configs/gpus.yaml"), "configs/gpus.yaml");
  REQUIRE(find_gpu_datasheet(shipped, "NVIDIA GH200 480GB") != nullptr);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA GH200 480GB")->fields.find("model: GH200, memory: 96 GiB, hbm_bandwidth: 4.0 TB/s, sms: 132") == 0);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA GH200 120GB")->fields.find("model: GH200,") == 0);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA GH200 144G HBM3e")->fields.find("model: GH200-144G, memory: 144 GiB, hbm_bandwidth: 4.9 TB/s") == 0);
  CHECK(find_gpu_datasheet(shipped, "NVIDIA GH200 480GB")->fields.ends_with("peak_tflops: {bf16: 990, fp16: 990, fp8: 1979}"));
  CHECK(find_gpu_datasheet(shipped, "NVIDIA H200")->fields.find("model: H200,") == 0);
}
