// Calibration fields of the VRAM a job holds beyond its own tensors.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> vram_fields() {
  return {
    {"cuda_context", "vram", Kind::Bytes, OSIM_REF(vram, cuda_context), 0, 0, 1e12, false, "692.8 MiB", OSIM_NOTDEF(vram, cuda_context),
     "device memory a process holds outside the framework's allocator (CUDA context, modules, library handles)"},
    {"gemm_workspace", "vram", Kind::Bytes, OSIM_REF(vram, gemm_workspace), 0, 0, 1e12, false, "32 MiB", OSIM_NOTDEF(vram, gemm_workspace),
     "cuBLAS's workspace per stream that runs GEMMs"},
    {"allocator_reserve", "vram", Kind::Number, OSIM_REF(vram, allocator_reserve), 4, 0, 10, false, "0.2642", OSIM_NOTDEF(vram, allocator_reserve),
     "the caching allocator's reserve beyond the activations it hands out, as a fraction of them"},
    {"nccl_process", "vram", Kind::Bytes, OSIM_REF(vram, nccl_process), 0, 0, 1e12, false, "416 MiB", OSIM_NOTDEF(vram, nccl_process),
     "NCCL's device memory once per process, with its first communicator"},
    {"nccl_communicator", "vram", Kind::Bytes, OSIM_REF(vram, nccl_communicator), 0, 0, 1e12, false, "198 MiB", OSIM_NOTDEF(vram, nccl_communicator),
     "NCCL's device memory per communicator on a rank that reaches a peer peer to peer (NVLink, PCIe P2P, network)"},
    {"nccl_peer", "vram", Kind::Bytes, OSIM_REF(vram, nccl_peer), 0, 0, 1e12, false, "384 MiB", OSIM_NOTDEF(vram, nccl_peer),
     "NCCL's device memory per peer reached peer to peer (a send and a receive connection; a ring exchange's two neighbours make one), on top of nccl_communicator"},
    {"nccl_collective", "vram", Kind::Bytes, OSIM_REF(vram, nccl_collective), 0, 0, 1e12, false, "287 MiB", OSIM_NOTDEF(vram, nccl_collective),
     "NCCL's device memory for a communicator's collectives (all-reduce, all-gather, reduce-scatter: its ring and tree channels) with a peer reached peer to peer, on top of nccl_communicator, whatever the group's size"},
    {"nccl_via_host", "vram", Kind::Bytes, OSIM_REF(vram, nccl_via_host), 0, 0, 1e12, false, "30 MiB", OSIM_NOTDEF(vram, nccl_via_host),
     "NCCL's device memory per communicator whose peers are all reached through host memory (NCCL_P2P_DISABLE, no P2P path)"},
  };
}

}  // namespace params
}  // namespace osim
