// overlapsim-validate run, its setup: one NCCL communicator per group and
// channel count, the plan of every op (how it is realised, run.cpp's file
// comment), and the buffers those plans need, allocated once before the runs.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "kernels.hpp"
#include "run_runner.hpp"
#include "schedule/realise.hpp"

namespace ovv::run_detail {

namespace {

// The pairwise all-to-all's partner of rank `me` in each round of U ranks:
// the circle method, as the simulator and the bench pair ranks (-1: a bye).
std::vector<int> circle_partners(int U, int me) {
  const int m = U % 2 ? U + 1 : U;
  std::vector<int> teams(m), partners;
  for (int t = 0; t < m; ++t) teams[t] = t;
  for (int round = 0; round < m - 1; ++round) {
    int partner = -1;
    for (int t = 0; t < m / 2; ++t) {
      const int a = teams[t], b = teams[m - 1 - t];
      if (a < U && b < U && (a == me || b == me)) partner = a == me ? b : a;
    }
    partners.push_back(partner);
    std::rotate(teams.begin() + 1, teams.end() - 1, teams.end());
  }
  return partners;
}

cudaDataType_t blas_type(osim::DType d, const osim::SourceLocation& where) {
  switch (d) {
    case osim::DType::BF16: return CUDA_R_16BF;
    case osim::DType::FP16: return CUDA_R_16F;
    default:
      throw osim::InputError(where, fmt::format("{} GEMMs are not realised by overlapsim-validate run yet: use bf16 or fp16", osim::to_string(d)));
  }
}

}  // namespace

void ScheduleRunner::setup() {
  const int R = s_.ranks();
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  std::vector<int> devs = o_.devices;
  if (devs.empty())
    for (int r = 0; r < R; ++r) devs.push_back(r);
  if (static_cast<int>(devs.size()) != R)
    throw osim::InputError(osim::SourceLocation{s_.file, 0, 0},
                           fmt::format("--devices lists {} devices but the schedule has {} ranks", devs.size(), R));
  for (int d : devs)
    if (d < 0 || d >= ndev)
      throw osim::InputError(
          osim::SourceLocation{s_.file, 0, 0},
          fmt::format(
              "the schedule needs {} ranks but this machine has {} GPUs (device {} does not exist): run it on a larger machine or pass --devices", R,
              ndev, d));
  ranks_.resize(R);
  for (int r = 0; r < R; ++r) {
    ranks_[r].rank = r;
    ranks_[r].dev = devs[r];
  }
  // Peer access for P2P copies (and so NCCL sees the same state a framework would).
  for (int a = 0; a < R; ++a)
    for (int b = 0; b < R; ++b)
      if (a != b && devs[a] != devs[b]) {
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, devs[a], devs[b]));
        if (can) {
          CUDA_CHECK(cudaSetDevice(devs[a]));
          const cudaError_t e = cudaDeviceEnablePeerAccess(devs[b], 0);
          if (e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
          cudaGetLastError();
        }
      }
  make_comms();
  for (int r = 0; r < R; ++r) setup_rank(ranks_[r]);
  setup_p2p();
  for (int r = 0; r < R; ++r) {
    CUDA_CHECK(cudaSetDevice(ranks_[r].dev));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

void ScheduleRunner::make_comms() {
  std::map<std::pair<int, int>, bool> wanted;
  for (int r = 0; r < s_.ranks(); ++r)
    for (int i = 0; i < nops(r); ++i)
      if (op(r, i).kind == OpKind::Collective) wanted[{op(r, i).group, op(r, i).channels}] = true;
  for (const auto& [key, _] : wanted) {
    const auto [g, channels] = key;
    std::vector<int> members;
    if (g >= 0)
      members = s_.groups[g].ranks;
    else
      for (int r = 0; r < s_.ranks(); ++r) members.push_back(r);
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    if (channels > 0) cfg.minCTAs = cfg.maxCTAs = channels;
    std::vector<ncclComm_t> comms(members.size());
    NCCL_CHECK(ncclGroupStart());
    for (size_t m = 0; m < members.size(); ++m) {
      CUDA_CHECK(cudaSetDevice(ranks_[members[m]].dev));
      NCCL_CHECK(ncclCommInitRankConfig(&comms[m], static_cast<int>(members.size()), id, static_cast<int>(m), &cfg));
    }
    NCCL_CHECK(ncclGroupEnd());
    for (size_t m = 0; m < members.size(); ++m) comms_[{g, channels, members[m]}] = comms[m];
    all_comms_.insert(all_comms_.end(), comms.begin(), comms.end());
    members_[{g, channels}] = members;
  }
}

void ScheduleRunner::allocate_scratch(Rank& R, const Scratch& sc) {
  const auto& [pinned_max, pageable_max, copy_max, d2d_max, gemm_a, gemm_b, gemm_c, mem_max, coll_max, vram_peak, sdpa_q, sdpa_kv] = sc;
  auto need = [&](DevMem& m, size_t b, const char* what) {
    try {
      m.alloc(b);
    } catch (const GpuError&) {
      throw osim::InputError(
          osim::SourceLocation{s_.file, 0, 0},
          fmt::format("rank {} (device {}): cannot allocate {:.2f} GiB for {} (the schedule's peak is {:.2f} GiB of allocations plus "
                      "scratch for its largest ops): make the schedule smaller or run it on a larger GPU",
                      R.rank, R.dev, static_cast<double>(b) / 1073741824.0, what, static_cast<double>(vram_peak) / 1073741824.0));
    }
  };
  need(R.arena, static_cast<size_t>(vram_peak), "the schedule's allocations");
  need(R.copy_buf, std::max(copy_max, 2 * d2d_max), "copy buffers");
  need(R.gemm_a, gemm_a, "GEMM inputs");
  need(R.gemm_b, gemm_b, "GEMM inputs");
  need(R.gemm_c, gemm_c, "GEMM outputs");
  need(R.mem_a, mem_max, "memory-kernel buffers");
  need(R.mem_b, mem_max, "memory-kernel buffers");
  need(R.coll_send, coll_max, "collective buffers");
  need(R.coll_recv, coll_max, "collective buffers");
  if (sdpa_q > 0) {
    try {
      R.sdpa = std::make_unique<ovv::CudnnSdpa>();
    } catch (const GpuError& e) {
      throw osim::InputError(
          osim::SourceLocation{s_.file, 0, 0},
          fmt::format("rank {}: attention runs as cuDNN's SDPA, but {}: put libcudnn.so.9 on LD_LIBRARY_PATH (validate/device_env.sh)", R.rank,
                      e.what()));
    }
    int64_t workspace = 0;
    for (const Plan& pl : R.plans)
      if (pl.sdpa.on) workspace = std::max(workspace, R.sdpa->prepare(pl.sdpa.shape));
    need(R.sdpa_q, sdpa_q, "attention inputs");
    need(R.sdpa_kv, 2 * sdpa_kv, "attention inputs");
    need(R.sdpa_o, sdpa_q, "attention outputs");
    need(R.sdpa_ws, static_cast<size_t>(workspace), "cuDNN's workspace");
    launch_fill_bf16(R.timing, R.sdpa_q.p, R.sdpa_q.bytes, 29u + static_cast<uint32_t>(R.rank));
    launch_fill_bf16(R.timing, R.sdpa_kv.p, R.sdpa_kv.bytes, 53u + static_cast<uint32_t>(R.rank));
  }
  if (R.copy_buf.bytes) CUDA_CHECK(cudaMemset(R.copy_buf.p, 1, R.copy_buf.bytes));
  if (R.coll_send.bytes) CUDA_CHECK(cudaMemset(R.coll_send.p, 1, R.coll_send.bytes));
  if (R.mem_a.bytes) CUDA_CHECK(cudaMemset(R.mem_a.p, 1, R.mem_a.bytes));
  launch_fill_bf16(R.timing, R.gemm_a.p, R.gemm_a.bytes, 17u + static_cast<uint32_t>(R.rank));
  launch_fill_bf16(R.timing, R.gemm_b.p, R.gemm_b.bytes, 91u + static_cast<uint32_t>(R.rank));
  if (pinned_max[0] + pinned_max[1]) {
    R.pinned_bytes = pinned_max[0] + pinned_max[1];
    CUDA_CHECK(cudaHostAlloc(&R.pinned, R.pinned_bytes, cudaHostAllocPortable));
    std::memset(R.pinned, 1, R.pinned_bytes);
  }
  R.pageable.assign(pageable_max[0] + pageable_max[1], 1);
  R.d2h_at = {pinned_max[0], pageable_max[0]};
}

void ScheduleRunner::setup_rank(Rank& R) {
  CUDA_CHECK(cudaSetDevice(R.dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, R.dev));
  R.sms = prop.multiProcessorCount;
  size_t free_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &R.vram_capacity));
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  for (const auto& sd : s_.streams) {
    cudaStream_t st;
    // Schedule priorities: larger = higher; CUDA's: more negative = higher.
    const int prio = std::clamp(-sd.priority, greatest, least);
    CUDA_CHECK(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, prio));
    R.streams.push_back(st);
  }
  CUDA_CHECK(cudaStreamCreateWithFlags(&R.timing, cudaStreamNonBlocking));
  for (size_t e = 0; e < s_.events.size(); ++e) {
    cudaEvent_t ev;
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    R.events.push_back(ev);
  }
  CUDA_CHECK(cudaEventCreate(&R.ref));
  CUBLAS_CHECK(cublasCreate(&R.blas));
  const int n = nops(R.rank);
  R.ev_start.assign(n, nullptr);
  R.ev_end.assign(n, nullptr);
  R.internal.assign(n, nullptr);
  R.plans.resize(n);
  R.issue.assign(n, 0);
  R.returned.assign(n, 0);
  Scratch sc;
  auto& [pinned_max, pageable_max, copy_max, d2d_max, gemm_a, gemm_b, gemm_c, mem_max, coll_max, vram_peak, sdpa_q, sdpa_kv] = sc;
  int64_t vram = 0;
  std::map<std::string, int64_t> allocs;
  for (int i = 0; i < n; ++i) {
    const Op& o = op(R.rank, i);
    Plan& p = R.plans[i];
    const osim::SourceLocation where = s_.location(R.rank, i);
    const bool gpu_op = o.kind == OpKind::Kernel || o.kind == OpKind::Memcpy || o.kind == OpKind::Collective;
    const bool point = o.kind == OpKind::EventRecord || o.kind == OpKind::StreamWaitEvent || o.kind == OpKind::StreamWaitStream ||
                       (o.kind == OpKind::Marker && o.stream >= 0);
    if (gpu_op || point) CUDA_CHECK(cudaEventCreate(&R.ev_start[i]));
    if (gpu_op) CUDA_CHECK(cudaEventCreate(&R.ev_end[i]));
    if (o.kind == OpKind::StreamWaitStream) CUDA_CHECK(cudaEventCreateWithFlags(&R.internal[i], cudaEventDisableTiming));
    switch (o.kind) {
      case OpKind::Kernel: {
        if (o.sm_limit != 0)
          throw osim::InputError(where,
                                 "sm_limit and sm_margin are not realised by overlapsim-validate run yet (they would need green contexts or "
                                 "cuBLAS's SM count target): remove them to measure this schedule");
        // Attention as cuDNN's SDPA where this build has it; GEMMs, other
        // attention and FLOP kernels as osim::realised_gemm says (shared with
        // `compare --simulate` and `bench --gemm-shapes-from`).
        if (ovv::cudnn_sdpa_built() && osim::attention_runs_as_sdpa(o)) {
          if (o.dtype != osim::DType::BF16 && o.dtype != osim::DType::FP16)
            throw osim::InputError(where, "cuDNN's SDPA runs bf16 or fp16 attention here: give dtype bf16 or fp16");
          const auto& a = *o.attention;
          p.sdpa = SdpaPlan{true, ovv::SdpaShape{a.batch, a.heads, a.seq_q, a.seq_kv, a.head_dim, o.dtype == osim::DType::FP16, a.causal}};
          sdpa_q = std::max(sdpa_q, p.sdpa.shape.q_bytes());
          sdpa_kv = std::max(sdpa_kv, p.sdpa.shape.kv_bytes());
        } else if (const auto rg = osim::realised_gemm(o, o_.attention_slowdown)) {
          p.gemm = GemmPlan{rg->m, rg->n, rg->k, rg->chunks, o.gemm ? blas_type(o.dtype, where) : CUDA_R_16BF};
        } else if (o.duration) {
          p.busy = true;
          p.busy_ns = o.duration->ps() / 1000;
        } else if (o.hbm_bytes > 0) {
          p.hbm = true;
          p.bytes = static_cast<size_t>(o.hbm_bytes);
          mem_max = std::max(mem_max, p.bytes / 2 + 16);
        }
        if (p.gemm.chunks > 0) {
          gemm_a = std::max(gemm_a, static_cast<size_t>(p.gemm.m * p.gemm.k * 2));
          gemm_b = std::max(gemm_b, static_cast<size_t>(p.gemm.k * p.gemm.n * 2));
          gemm_c = std::max(gemm_c, static_cast<size_t>(p.gemm.m * p.gemm.n * 2));
        }
        break;
      }
      case OpKind::Memcpy: {
        p.bytes = static_cast<size_t>(o.bytes);
        if (o.copy == osim::CopyKind::H2D || o.copy == osim::CopyKind::D2H) {
          p.span = std::max(p.bytes, static_cast<size_t>(o.host_span));
          // Each direction its own host buffer (as the bench's): D2H copies write past the H2D ones'.
          const size_t d = o.copy == osim::CopyKind::D2H ? 1 : 0;
          size_t& m = (o.host_mem == osim::HostMem::Pinned ? pinned_max : pageable_max)[d];
          m = std::max(m, p.span);
          copy_max = std::max(copy_max, p.bytes);
        } else if (o.copy == osim::CopyKind::D2D) {
          d2d_max = std::max(d2d_max, p.bytes);
        } else {
          copy_max = std::max(copy_max, p.bytes);
          p.peer = o.peer;
          p2p_need_[o.peer] = std::max(p2p_need_[o.peer], p.bytes);
        }
        break;
      }
      case OpKind::Collective: {
        const double wire = static_cast<double>(o.bytes) * (o.dtype == osim::DType::FP8 ? 1.0 + 4.0 / 128.0 : 1.0);
        p.bytes = static_cast<size_t>(wire);
        const auto& members = members_.at({o.group, o.channels});
        p.comm = comms_.at({o.group, o.channels, R.rank});
        p.members = static_cast<int>(members.size());
        if (o.coll == osim::CollKind::Send || o.coll == osim::CollKind::Recv) p.peer = o.peer;
        const int me = static_cast<int>(std::find(members.begin(), members.end(), R.rank) - members.begin());
        if (o.coll == osim::CollKind::AllToAll && o.algo == osim::CollAlgo::Pairwise) p.partners = circle_partners(p.members, me);
        coll_max = std::max(coll_max, p.bytes + 256);  // all_gather's output is `bytes` too (nccl-tests size)
        break;
      }
      case OpKind::Alloc:
        if (o.space == osim::MemSpace::Device) {
          allocs[o.label] = o.bytes;
          vram += o.bytes;
          vram_peak = std::max(vram_peak, vram);
        }
        break;
      case OpKind::Free:
        if (auto it = allocs.find(o.label); it != allocs.end()) {
          vram -= it->second;
          allocs.erase(it);
        }
        break;
      default: break;
    }
  }
  allocate_scratch(R, sc);
}

void ScheduleRunner::setup_p2p() {
  for (auto& [peer, bytes] : p2p_need_) {
    Rank& R = ranks_[peer];
    if (R.p2p_in.bytes >= bytes) continue;
    CUDA_CHECK(cudaSetDevice(R.dev));
    R.p2p_in.alloc(bytes);
  }
}

void ScheduleRunner::teardown() {
  for (auto c : all_comms_) ncclCommDestroy(c);
  for (auto& R : ranks_) {
    cudaSetDevice(R.dev);
    for (DevMem* m : {&R.copy_buf, &R.p2p_in, &R.gemm_a, &R.gemm_b, &R.gemm_c, &R.mem_a, &R.mem_b, &R.coll_send, &R.coll_recv, &R.arena})
      if (m->p) cudaFree(m->p);
    if (R.pinned) cudaFreeHost(R.pinned);
    cublasDestroy(R.blas);
  }
}

}  // namespace ovv::run_detail
