// GPU datasheets by name (configs/gpus.yaml): the figures a topology's GPU
// node takes, for a GPU whose nvidia-smi name contains a row's `match`.
// `topo --import-nvidia-smi` fills its GPUs from them instead of placeholders.
#pragma once

#include <string>
#include <vector>

namespace osim::hw {

struct GpuDatasheet {
  std::string match;   // a substring of nvidia-smi's name ("H100 PCIe")
  std::string fields;  // the GPU node's keys after `kind: gpu`, as written ("model: H200, memory: 141 GB, ...")
};

/// The table in `text` (a YAML mapping with `gpus:`, a list of rows); every
/// row checked as a topology's GPU node is, InputError naming `file`, the
/// row's line and what is wrong.
std::vector<GpuDatasheet> parse_gpu_datasheets(const std::string& text, const std::string& file);
/// configs/gpus.yaml as built in.
std::vector<GpuDatasheet> builtin_gpu_datasheets();
/// The first row whose `match` is in `gpu_name`; null for none (or an empty name).
const GpuDatasheet* find_gpu_datasheet(const std::vector<GpuDatasheet>& table, const std::string& gpu_name);

}  // namespace osim::hw
