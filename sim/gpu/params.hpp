// The execution model's parameters, one struct per effect family
// (params/<family>.hpp). Defaults are leads from public figures and
// MODEL.md's measurements; a calibration file (params_io.hpp) replaces them
// with a measured machine's.
#pragma once

#include <string>

#include "gpu/params/attention.hpp"
#include "gpu/params/conv.hpp"
#include "gpu/params/copies.hpp"
#include "gpu/params/gemm.hpp"
#include "gpu/params/handoff.hpp"
#include "gpu/params/interference.hpp"
#include "gpu/params/memory.hpp"
#include "gpu/params/nccl.hpp"
#include "gpu/params/nvlink.hpp"
#include "gpu/params/overheads.hpp"
#include "gpu/params/power.hpp"
#include "gpu/params/vram.hpp"

namespace osim {

struct ModelParams {
  OverheadParams overheads;
  HandoffParams handoff;
  CopyParams copies;
  GemmParams gemm;
  ConvParams conv;
  AttentionParams attention;
  MemoryParams memory;
  NcclParams nccl;
  PowerParams power;
  NvlinkParams nvlink;
  InterferenceParams interference;
  VramParams vram;
};

/// Where a calibration came from, as its `provenance:` says (empty fields:
/// not recorded, e.g. a file written before calibrations recorded it).
struct CalibrationOrigin {
  std::string gpu;  // e.g. "NVIDIA H100 80GB HBM3"
  int gpus = 0;
};

}  // namespace osim
