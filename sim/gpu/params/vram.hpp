// VRAM a job holds beyond its own tensors: the runtime's memory outside the
// framework's allocator, the GEMM library's workspace, and the caching
// allocator's reserve over what it hands out (docs/formats/metrics.md
// "Peak VRAM"; testcase validate/src/testcases/vram.py). The defaults are
// the measured references' (validate/reference/*/vram.json).
#pragma once

#include "core/units.hpp"

namespace osim {

struct VramParams {
  // The CUDA context, loaded kernel modules and library handles: device
  // memory a process holds outside PyTorch's caching allocator.
  Bytes cuda_context = 726466560;  // 692.8 MiB
  // cuBLAS's workspace per stream that runs GEMMs (PyTorch's default on Hopper: 32 MiB).
  Bytes gemm_workspace = 32LL << 20;
  // What the caching allocator reserves beyond the activations it hands out
  // (freed blocks of other sizes it keeps), as a fraction of the activations.
  double allocator_reserve = 0.2642;
};

}  // namespace osim
