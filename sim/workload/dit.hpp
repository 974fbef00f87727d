// Video-DiT inference workloads (Wan2.1 / Wan2.2 14B and custom dims),
// expanded into a Schedule: one program per rank with the kernels,
// all-to-alls and weight copies of every denoising step. docs/formats/workload.md.
#pragma once

#include <string>
#include <vector>

#include "core/units.hpp"
#include "gpu/params.hpp"
#include "schedule/schedule.hpp"

namespace YAML {
class Node;
}

namespace osim {

enum class OffloadPolicy { None, Blocking, Layerwise, Block, Phase };
enum class CfgMode { None, Serial, Parallel };

struct DitModel {
  std::string preset;        // "wan2.1-14b", "wan2.2-14b" or "custom"
  int blocks = 40;
  int64_t hidden = 5120;
  int64_t ffn = 13824;
  int heads = 40;
  int head_dim = 128;
  int64_t text_tokens = 512;
  int experts = 1;           // Wan2.2: 2 (high-noise, low-noise)
  double boundary = 0.875;   // fraction of steps on the first expert (Wan2.2)
  DType dtype = DType::BF16;
  [[nodiscard]] double params_per_block() const;  // 8 h^2 + 2 h f
  [[nodiscard]] Bytes block_bytes() const;
};

struct DitWorkload {
  std::string name;
  std::string file;
  std::string topology;      // optional, relative to the workload file
  std::string calibration;   // optional calibration file (resolved path)
  DitModel model;
  int64_t width = 1280, height = 720, frames = 81;
  int64_t tokens = 0;        // ((F-1)/4+1) * (H/16) * (W/16), or given
  int steps = 40;
  CfgMode cfg = CfgMode::Serial;
  int ulysses = 1;
  int attention_comm = 4;    // 4 all-to-alls (q, k, v, out) or 2 (packed qkv, out)
  CollAlgo all_to_all = CollAlgo::Nccl;
  DType comm_dtype = DType::BF16;
  int channels = 0;          // 0 = NCCL default
  OffloadPolicy offload = OffloadPolicy::None;
  int prefetch_size = 2;     // layerwise; 0 = blocking copies
  HostMem host_memory = HostMem::Pinned;
  AttnBackend attention_backend = AttnBackend::Default;  // the SDPA kernel its attention runs
  RuntimeSettings runtime;
  ModelParams params;        // compute efficiencies and overheads (defaults, or the workload's 'compute:')

  [[nodiscard]] int ranks() const { return ulysses * (cfg == CfgMode::Parallel ? 2 : 1); }
  [[nodiscard]] int forwards_per_rank() const { return steps * (cfg == CfgMode::Serial ? 2 : 1); }
  /// Bytes one rank sends in one all-to-all buffer for one tensor (nccl-tests size).
  [[nodiscard]] Bytes a2a_tensor_bytes() const;
};

/// `overrides` are --set key=value pairs ("offload.prefetch_size=3").
DitWorkload parse_workload_file(const std::string& path, const std::vector<std::string>& overrides = {});
DitWorkload parse_workload_string(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides = {});
/// True when a YAML file is a workload (has 'model:') rather than a schedule.
bool is_workload_file(const std::string& path);

Schedule generate_schedule(const DitWorkload& w);

std::string to_string(OffloadPolicy p);

}  // namespace osim
