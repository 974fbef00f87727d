// Calibration fields of the VRAM a job holds beyond its own tensors.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> vram_fields() {
  return {
    {.name = "cuda_context", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, cuda_context), .precision = 0, .hi = 1e12,
     .example = "692.8 MiB", .written = OSIM_NOTDEF(vram, cuda_context),
     .doc = "device memory a process holds outside the framework's allocator (CUDA context, modules, library handles)"},
    {.name = "gemm_workspace", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, gemm_workspace), .precision = 0, .hi = 1e12,
     .example = "32 MiB", .written = OSIM_NOTDEF(vram, gemm_workspace), .doc = "cuBLAS's workspace per stream that runs GEMMs"},
    {.name = "allocator_reserve", .family = "vram", .kind = Kind::Number, .ref = OSIM_REF(vram, allocator_reserve), .hi = 10, .example = "0.2642",
     .written = OSIM_NOTDEF(vram, allocator_reserve),
     .doc = "the caching allocator's reserve beyond the activations it hands out, as a fraction of them"},
    {.name = "nccl_process", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, nccl_process), .precision = 0, .hi = 1e12,
     .example = "416 MiB", .written = OSIM_NOTDEF(vram, nccl_process), .doc = "NCCL's device memory once per process, with its first communicator"},
    {.name = "nccl_communicator", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, nccl_communicator), .precision = 0, .hi = 1e12,
     .example = "198 MiB", .written = OSIM_NOTDEF(vram, nccl_communicator),
     .doc = "NCCL's device memory per communicator on a rank that reaches a peer peer to peer (NVLink, PCIe P2P, network)"},
    {.name = "nccl_peer", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, nccl_peer), .precision = 0, .hi = 1e12, .example = "384 MiB",
     .written = OSIM_NOTDEF(vram, nccl_peer),
     .doc = "NCCL's device memory per peer reached peer to peer (a send and a receive connection; a ring exchange's two neighbours make one), on top of nccl_communicator"},
    {.name = "nccl_collective", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, nccl_collective), .precision = 0, .hi = 1e12,
     .example = "287 MiB", .written = OSIM_NOTDEF(vram, nccl_collective),
     .doc = "NCCL's device memory for a communicator's collectives (all-reduce, all-gather, reduce-scatter: its ring and tree channels) with a peer reached peer to peer, on top of nccl_communicator, whatever the group's size"},
    {.name = "nccl_via_host", .family = "vram", .kind = Kind::Bytes, .ref = OSIM_REF(vram, nccl_via_host), .precision = 0, .hi = 1e12,
     .example = "30 MiB", .written = OSIM_NOTDEF(vram, nccl_via_host),
     .doc = "NCCL's device memory per communicator whose peers are all reached through host memory (NCCL_P2P_DISABLE, no P2P path)"},
  };
}

}  // namespace params
}  // namespace osim
