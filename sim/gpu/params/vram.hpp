// VRAM a job holds beyond its own tensors: the runtime's memory outside the
// framework's allocator, the GEMM library's workspace, the caching
// allocator's reserve over what it hands out, and NCCL's buffers
// (docs/formats/metrics.md "Peak VRAM"; testcase validate/src/testcases/vram.py).
// The defaults are the measured references' (validate/reference/*/vram.json;
// NCCL's: h200x2-nvlink/ and h200x4-nvlink/vram-nccl.json, within 2 MiB of each other).
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
  // NCCL's device memory on a rank: once for the process with its first
  // communicator, then per communicator once it has connected its peers:
  // with peers reached peer to peer (NVLink, PCIe P2P, the network), a part
  // per communicator, one per such peer its all-to-alls connect (a send and
  // a receive connection; a ring exchange's next and previous rank make
  // one), and one for its collectives' ring and tree channels; with
  // every peer through host memory (NCCL_P2P_DISABLE, no P2P path), one
  // figure (collectives' buffers alike).
  Bytes nccl_process = 436207616;       // 416 MiB
  Bytes nccl_communicator = 207618048;  // 198 MiB
  Bytes nccl_peer = 402653184;          // 384 MiB
  Bytes nccl_collective = 300941312;    // 287 MiB
  Bytes nccl_via_host = 31457280;       // 30 MiB
};

}  // namespace osim
