// VRAM a job holds beyond its own tensors: the runtime's memory outside the
// framework's allocator, the GEMM library's workspace, and the caching
// allocator's reserve over what it hands out (docs/formats/metrics.md
// "Peak VRAM"; testcase validate/src/testcases/vram.py).
#pragma once

#include "core/units.hpp"

namespace osim {

struct VramParams {
  // The CUDA context, loaded kernel modules and library handles: device
  // memory a process holds outside PyTorch's caching allocator (692.8 MiB
  // with PyTorch 2.11 and CUDA 13 on an H100 and on an H200 alike).
  Bytes cuda_context = 726466560;
  // cuBLAS's workspace per stream that runs GEMMs (PyTorch's default on Hopper: 32 MiB).
  Bytes gemm_workspace = 32LL << 20;
  // What the caching allocator reserves beyond the activations it hands out
  // (freed blocks of other sizes it keeps), as a fraction of the activations
  // (0.2642 measured on both).
  double allocator_reserve = 0.2642;
};

}  // namespace osim
