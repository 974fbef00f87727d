// `nvidia-smi topo -m` in and out: its matrix parsed, a topology file built
// from it (the PCIe tree its PIX/PXB/PHB/NODE/SYS relations imply, NVLink
// from NV#, sockets from NUMA affinity; what the matrix does not say marked
// ASSUMED in the file), and any topology's matrix printed the way
// nvidia-smi prints it, to compare with a node's own. `nvidia-smi c2c -s`
// says which GPUs reach their CPU over NVLink-C2C (a Grace Hopper's): their
// host link is then nvlink_c2c at the rate it lists.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/fabric.hpp"
#include "hw/gpu_datasheets.hpp"

namespace osim::hw {

/// `nvidia-smi topo -m` as read: devices (GPU0.., NIC0..) and their relations.
struct SmiMatrix {
  std::vector<std::string> devices;           // column order: "GPU0", ..., "NIC0", ...
  std::vector<std::vector<std::string>> rel;  // "X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"
  std::vector<int> numa;                      // per device; -1 = not given
  std::vector<std::string> cpu_affinity;      // per device; "" = not given
  std::vector<std::string> nic_names;         // per NIC (the legend's mlx5_0, ...); "" = not given
  std::vector<std::string> gpu_names;         // per GPU index, from `nvidia-smi -L` lines kept with the matrix; "" = not given
  int spaced_lines = 0;                       // matrix lines without tabs, split at their spaces (copied from a terminal)
  [[nodiscard]] bool is_gpu(size_t d) const { return devices[d].rfind("GPU", 0) == 0; }
};

/// Parses the output (escape codes and the legend may stay in; `nvidia-smi -L`
/// lines name the GPUs); InputError naming `file`, the line and the cell on
/// anything it cannot read or any value out of range.
SmiMatrix parse_nvidia_smi_topo(const std::string& text, const std::string& file);

struct SmiImportOptions {
  std::string name = "my-node";
  std::string pcie = "gen5 x16";       // every PCIe link's generation and width (the matrix does not say)
  bool pcie_measured = false;          // pcie is what nvidia-smi reported for the GPUs, not a guess
  std::vector<std::string> gpu_names;  // per GPU, as `nvidia-smi --query-gpu=name` says ("" = unknown)
  std::optional<std::vector<GpuDatasheet>> gpu_datasheets;  // their figures by name; none: configs/gpus.yaml as built in
  std::string source;                  // the file imported, for the header comment
  // The host side's measured aggregate with every GPU of the node copying at
  // once (a bench's multi_h2d_pinned / multi_d2h_pinned), GB/s; 0 = not
  // measured. Set as the host bridge's throughput where the node has one.
  double host_from_GBps = 0, host_to_GBps = 0;
  // Per GPU index: its NVLink-C2C links to its CPU summed, GB/s a direction
  // (parse_nvidia_smi_c2c); 0 or absent: none, its host link is PCIe.
  std::vector<double> c2c_GBps;
  // Per GPU index: `nvidia-smi -q` says "GPU C2C Mode : Enabled"
  // (parse_nvidia_smi_q_c2c). Where c2c_GBps lists no rate, such a GPU's
  // host link is nvlink_c2c at NVLink-C2C's 450 GB/s a direction, ASSUMED.
  std::vector<bool> c2c_enabled;
};

/// `nvidia-smi c2c -s` as read: per GPU index (its "GPU i: NAME" line), the
/// sum of its active links' "C2C Link k: X GB/s", the rate a direction (NCCL
/// takes NVML's C2C link count x per-link bandwidth the same way). A driver
/// or node without C2C prints no link lines ("No Devices support C2C.", a
/// usage text): all zeros, never an error. InputError naming `file` and the
/// line for a link line before any GPU line or a rate out of range.
std::vector<double> parse_nvidia_smi_c2c(const std::string& text, const std::string& file);

/// `nvidia-smi -q` as read: per GPU, in the order it lists them (nvidia-smi's
/// indices), whether its "GPU C2C Mode" is "Enabled" (a GH200's, driver 550
/// on; "N/A" elsewhere; drivers before it print no such line). Never throws:
/// what it does not recognise is no C2C.
std::vector<bool> parse_nvidia_smi_q_c2c(const std::string& text);

/// A topology file (YAML text) whose path matrix is the one given.
std::string topology_yaml_from_smi(const SmiMatrix& m, const SmiImportOptions& o);

/// The devices' relations in `topo` (gpu{i}, nic{i}) against the matrix:
/// one line per pair that differs ("GPU0-NIC1: PXB in the file, PIX here").
std::vector<std::string> compare_with_smi(const Topology& topo, const SmiMatrix& m);

/// The GPU names of `nvidia-smi --query-gpu=name,... --format=csv` output (validate/session.sh's machine/gpus.csv).
std::vector<std::string> gpu_names_from_csv(const std::string& text, const std::string& file);

/// A topology's GPUs and NICs as `nvidia-smi topo -m` prints them (NV# from the NVLink bandwidth at 25 GB/s a link).
std::string format_smi_matrix(const Topology& topo);

}  // namespace osim::hw
