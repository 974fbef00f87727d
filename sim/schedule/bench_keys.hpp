// The bench's testcases by key: what `overlapsim-validate bench` measures and
// `overlapsim calibrate` fits and replays, each owned by one effect family.
// Both sides check their keys against this table at compile time (validate's
// OVV_KEYS, calibrate's pipeline tables in calib/pipeline.cpp), so a key means
// the same on both. Plain C++17: the CUDA sources include it.
#pragma once

#include <string_view>

namespace osim::bench {

struct Testcase {
  std::string_view key, family, what;
  bool fitted = true;  // false: replayed and reported, no field fitted from it
};

inline constexpr Testcase kTestcases[] = {
    {"overhead_kernel_launch", "overheads", "host time of a kernel launch"},
    {"overhead_event_record", "overheads", "host time of cudaEventRecord"},
    {"overhead_stream_sync_idle", "overheads", "host time of synchronising an idle stream"},
    {"overhead_memcpy_async_pinned_return", "overheads", "host time of an async pinned copy's call"},
    {"overhead_stream_wait_event", "overheads", "host time of cudaStreamWaitEvent"},
    {"overhead_framework_collective", "overheads",
     "host time of a Ulysses all-to-all as PyTorch calls it: all_to_all_single, and pairwise batch_isend_irecv rounds (framework.py)"},
    {"overhead_framework_sync_return", "overheads",
     "how long PyTorch's host takes to go on after waiting for the GPU: items waited for one by one against queued (framework.py; fitted from its "
     "block loops, the bare waits replayed)"},
    {"host_after_wait", "overheads",
     "how fast PyTorch's host issues a block's calls at small shapes right after a wait for the GPU, after the host slept, warm, or with the GPU "
     "busy (framework.py after_wait; reported, not fitted)",
     false},
    {"host_op_loop", "overheads",
     "host time per call of each of those calls alone, back to back, with the GPU idle and busy (framework.py after_wait; reported, not fitted)",
     false},
    {"overhead_profiler", "overheads",
     "host time per call of PyTorch ops and stream calls bare and under torch.profiler (its defaults, record_shapes, CUDA sync events), with what "
     "the profiler records per call (framework.py profiler_cost; reported, not fitted)",
     false},
    {"overhead_framework_fp8_gemm", "overheads",
     "host time of the calls an fp8 linear makes in eager PyTorch (torch._scaled_mm, the input's scale and cast) beside F.linear's, over [64-16,384 "
     "tokens, 3072] (framework.py fp8_calls; reported, not fitted)",
     false},
    {"overhead_framework_op", "overheads", "host time of one PyTorch op that launches a kernel (validate/src/testcases/framework.py)"},
    {"overhead_framework_view", "overheads",
     "host time of one PyTorch call that launches nothing: a slice, view, transpose, split, reshape, contiguous or empty_like (framework.py "
     "host_calls)"},
    {"overhead_framework_op_sized", "overheads",
     "host time of PyTorch's linear, add and layer_norm over [64-16,384 tokens, 3072] (framework.py host_calls; replayed, not fitted)", false},
    {"overhead_framework_stream_call", "overheads",
     "host time of the PyTorch calls a layerwise prefetch makes beside its copy: a stream's context, an event made and recorded, wait_event, "
     "wait_stream, record_stream, a 64 MiB empty, a small pinned copy (framework.py host_calls; replayed, not fitted)",
     false},
    {"overhead_gpu_event_gap", "overheads", "GPU time of an event record between kernels or copies, alone and beside an H2D copy"},
    {"launch_queue", "overheads", "launches the host gets ahead of the GPU before one blocks, on 1-16 streams (framework.py)"},
    {"h2d_pinned", "copies", "pinned H2D copies per GPU, 4 KiB-1 GiB, gated bursts"},
    {"d2h_pinned", "copies", "pinned D2H copies per GPU, 4 KiB-1 GiB, gated bursts"},
    {"h2d_pageable", "copies", "pageable H2D copies, from one host buffer and from a rotating one"},
    {"d2h_pageable", "copies", "pageable D2H copies, to one host buffer and to a rotating one"},
    {"h2d_pageable_beside_compute", "copies",
     "pageable H2D copies with GEMMs on another stream (framework.py pageable_buffers; reported, not fitted)", false},
    {"bidir_pinned", "copies", "H2D and D2H at once on one GPU"},
    {"h2d_two_streams", "copies", "two H2D copies on two streams of one GPU"},
    {"copy_span", "copies", "pinned copies walking a host span, one way and both ways"},
    {"multi_h2d_pinned", "copies", "H2D copies on 1..n GPUs at once: the host bridge's aggregate"},
    {"multi_d2h_pinned", "copies", "D2H copies on 1..n GPUs at once"},
    {"multi_bidir_pinned", "copies", "H2D and D2H at once on each of 1..n GPUs: the host's limit on both directions together"},
    {"multi_h2d_pageable", "copies",
     "pageable H2D copies from one PyTorch process per GPU at once, 1..n GPUs: the host-wide staging limit (framework.py)"},
    {"multi_d2h_pageable", "copies", "pageable D2H copies from one PyTorch process per GPU at once, 1..n GPUs (framework.py)"},
    {"processes_h2d_pageable", "copies",
     "pageable H2D copies from 1..n PyTorch processes at once on however many GPUs the box has (process r on GPU r % GPUs; on a 1-GPU "
     "box they share its copy path too: reported, not fitted; framework.py pageable_processes)",
     false},
    {"processes_d2h_pageable", "copies", "pageable D2H copies from 1..n PyTorch processes at once, as processes_h2d_pageable (reported, not fitted)",
     false},
    {"processes_host_to_pinned", "copies",
     "the CPU's side of pageable copies alone: 1..n processes copying pageable host memory into pinned buffers at once, one thread each: "
     "the share each keeps, the host's pageable limit where the box has fewer GPUs than processes (framework.py)"},
    {"multi_h2d_pipelined", "copies", "H2D copies back to back on every GPU, staggered"},
    {"p2p_copy", "copies", "peer-to-peer copies between GPU pairs"},
    {"copy_reps", "handoff", "pinned copies per gated burst after a kernel, a host function or a waited-on kernel"},
    {"copy_after_idle", "handoff", "copies after a kernel done long before, on their stream or waited on"},
    {"handoff_wait", "handoff", "one copy after a kernel of 5 us-3 ms on every SM"},
    {"kernel_reps", "handoff", "kernels per gated burst after a host function, a kernel or a copy"},
    {"gemm_bf16", "gemm", "the GEMM table: bf16 shapes burst and under load"},
    {"gemm_fp8", "gemm",
     "fp8 GEMMs as PyTorch runs them (torch._scaled_mm, tensorwise and rowwise scales) beside the same shape in bf16, back to back (gemm.py; fitted "
     "from the tensorwise rows)"},
    {"conv", "conv",
     "convolutions as PyTorch runs them (cuDNN) at the VAE decoders' shapes, fp32 (TF32) and bf16, channels-first and channels-last "
     "(conv.py)"},
    {"memory_kernel", "memory", "a memory-bound copy kernel, 1 MiB-1 GiB, back to back and between GEMMs"},
    {"framework_elementwise", "memory", "eager PyTorch's elementwise and normalisation kernels over [tokens, hidden] tensors (eager.py)"},
    {"framework_channels_first", "memory", "eager PyTorch's kernels on 5-D channels-first tensors as video VAEs call them (channels_first.py)"},
    {"memory_after", "memory", "a memory-bound kernel after the same kernel, a GEMM, spinning SMs or sleep"},
    {"attention_sdpa", "attention", "PyTorch SDPA at the workloads' shapes, every available backend (validate/src/testcases/attention.py)"},
    {"attention_default", "attention", "the SDPA backend PyTorch picks by default on this GPU and version (its kernel's name)"},
    {"gemm_sustained", "power", "a GEMM at duty cycles 1-0.25 for seconds: the clock under sustained load"},
    {"gemm_sustained_long", "power", "a GEMM at full duty for seconds: the slow clock term"},
    {"gemm_sustained_copy", "power", "the sustained GEMM with H2D copies beside"},
    {"gemm_between_attention", "power", "GEMMs between cuDNN SDPA kernels for 1.5 s: the load SDPA puts on the clock"},
    {"gemm_sustained_shapes", "power",
     "the workloads' GEMM shapes alone and between cuDNN SDPA kernels for 1.5 s each: how far each slows, by GEMM shape and share of the time"},
    {"gemm_between_memory_bound", "power", "GEMMs between memory-bound copy kernels for 1.5 s: the load HBM-bound kernels put on the clock"},
    {"gemm_between_all_to_all", "power", "GEMMs between all-to-alls on two GPUs for 1.5 s, then alone: the load NCCL's kernels put on the clock"},
    {"gemm_after_idle", "power", "GEMMs after a gap of idle, copies or sleep"},
    {"nccl_all_to_all_loaded", "power", "the all-to-all right after GEMMs on every rank, against rested"},
    {"nccl_barrier_skew", "power", "the ranks' arrival skew at a barrier after GEMMs"},
    {"nccl_all_to_all", "nccl", "ncclAlltoAll by ranks, channels and size"},
    {"nccl_all_to_all_pairwise", "nccl", "the pairwise all-to-all (grouped send/recv rounds)"},
    {"nccl_all_gather", "nccl", "ncclAllGather"},
    {"nccl_reduce_scatter", "nccl", "ncclReduceScatter"},
    {"nccl_all_reduce", "nccl", "ncclAllReduce"},
    {"nccl_reps", "nccl", "the all-to-all per gated burst"},
    {"framework_all_to_all", "nccl",
     "GPU time of a Ulysses all-to-all as PyTorch calls it, all_to_all_single and pairwise rounds, the GPU otherwise idle (framework.py "
     "all_to_all_time; the pairwise rows fit the framework's pairwise table, all_to_all_single's are reported)"},
    {"nccl_all_to_all_insitu", "nvlink", "the all-to-all after 2-100 ms of GEMMs, with and without H2D copies beside"},
    {"interference", "interference", "a GEMM beside an all-to-all or a copy, and an all-to-all beside copies"},
    {"copy_collective", "interference",
     "pinned H2D or D2H copies on GPU 0 or on every GPU beside an all-to-all, all-gather, reduce-scatter or all-reduce of every rank, 8-512 MiB "
     "per rank: each side alone and together (replayed, not fitted)",
     false},
    {"copy_beside_host_memory_kernel", "interference",
     "pinned H2D or D2H copies beside an SM kernel of 1-32 CTAs that loads from or stores to pinned host memory, as NCCL's SHM transport "
     "does with P2P off (copy_beside_kernels.py --host-memory): the copy weights against a collective through host memory where none was "
     "measured beside copies"},
    {"vram_context", "vram", "device memory a PyTorch process holds outside its caching allocator (validate/src/testcases/vram.py)"},
    {"vram_gemm_workspace", "vram", "cuBLAS's workspace for a stream's first GEMM, through PyTorch's allocator"},
    {"vram_allocator_reserve", "vram", "the caching allocator's reserve over a forward's activations (three block shapes)"},
    {"vram_nccl", "vram",
     "NCCL's device memory per rank after its first all-to-all, 2 ranks and all, peer to peer and through host memory, after a second communicator, "
     "and after fresh communicators that run a ring exchange, an all-reduce, an all-gather (vram.py): peak VRAM's comm part"},
};

/// Whether `key` is a testcase of the table.
constexpr bool known(std::string_view key) {
  for (const Testcase& t : kTestcases)
    if (t.key == key) return true;
  return false;
}
/// The family owning `key` ("" when unknown).
constexpr std::string_view family_of(std::string_view key) {
  for (const Testcase& t : kTestcases)
    if (t.key == key) return t.family;
  return {};
}

}  // namespace osim::bench
