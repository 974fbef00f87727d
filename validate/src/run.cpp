// overlapsim-validate run (see run.hpp). How each op is realised:
//   kernel gemm       cublasGemmEx, bf16/fp16 in, fp32 accumulate, on random data
//   kernel attention  backend default or cudnn: cuDNN's fused flash SDPA
//                     (attention_cudnn.hpp; no mask or causal, scale 1/sqrt(d)), where
//                     built with cudnn-frontend. Other backends, or a build
//                     without it: cublasGemmEx with m = batch*seq_q,
//                     n = heads*head_dim and k chosen so the FLOPs are the
//                     attention's times --attention-slowdown, split into
//                     k-chunks of <= 8192 (multiples of 64)
//   kernel flops      the same, as a 4096 x 4096 GEMM
//   kernel hbm_bytes  a copy kernel reading and writing half the bytes each
//   kernel duration   a kernel on every SM spinning on %globaltimer
//   memcpy            cudaMemcpyAsync (P2P: cudaMemcpyPeerAsync) from per-rank
//                     pinned or pageable host buffers, one per direction
//                     (host_span: each copy the next slice of that many
//                     bytes); async: false adds
//                     cudaStreamSynchronize, as torch's blocking .to() does
//   collective        NCCL (all_to_all: ncclAlltoAll; pairwise: one grouped
//                     ncclSend/ncclRecv launch per round, the circle method);
//                     fp8 payloads travel as bytes, with their scales
//   events, syncs     the CUDA calls of the same names
//   alloc/free        bookkeeping against an arena of the schedule's peak
//                     (a caching allocator does not call cudaMalloc either)
// Every GPU op is bracketed by CUDA events on its stream; every host call by
// steady_clock. Each rank's GPU clock is tied to the host clock by one event
// synchronised before the run (error: half the sync's round trip, ~5 us).
#include "run.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include "attention_cudnn.hpp"
#include "check.hpp"
#include "core/errors.hpp"
#include "kernels.hpp"
#include "schedule/realise.hpp"
#include "schedule/records.hpp"
#include "schedule/schedule.hpp"

namespace ovv {

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

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using osim::Op;
using osim::OpKind;

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

struct SdpaPlan {
  bool on = false;
  ovv::SdpaShape shape;
};

struct GemmPlan {
  int64_t m = 0, n = 0, k = 0;  // k of one chunk
  int chunks = 0;
  cudaDataType_t type = CUDA_R_16BF;
};

// How one op is realised; worked out once before the runs.
struct Plan {
  GemmPlan gemm;
  SdpaPlan sdpa;
  bool busy = false, hbm = false;
  int64_t busy_ns = 0;
  size_t bytes = 0;  // copy / collective / hbm bytes
  size_t span = 0;   // h2d/d2h: the host memory the op's copies walk through (Op::host_span; its bytes where unset)
  ncclComm_t comm = nullptr;
  int peer = -1;              // send/recv: the peer's rank in `comm`; p2p: the peer rank
  std::vector<int> partners;  // pairwise all_to_all: the partner per round (-1: sits out)
  int members = 0;
};

struct DevMem {
  void* p = nullptr;
  size_t bytes = 0;
  void alloc(size_t b) {
    bytes = b;
    if (b) CUDA_CHECK(cudaMalloc(&p, b));
  }
};

struct Rank {
  int rank = 0, dev = 0;
  std::vector<cudaStream_t> streams;
  cudaStream_t timing{};
  std::vector<cudaEvent_t> events;            // the schedule's events
  std::vector<cudaEvent_t> ev_start, ev_end;  // per op (nullptr where unused)
  std::vector<cudaEvent_t> internal;          // stream_wait_stream
  cudaEvent_t ref{};
  double ref_host_ns = 0;
  cublasHandle_t blas{};
  std::unique_ptr<ovv::CudnnSdpa> sdpa;  // where an attention op runs as cuDNN's SDPA
  DevMem sdpa_q, sdpa_kv, sdpa_o, sdpa_ws;
  std::vector<Plan> plans;
  DevMem copy_buf, p2p_in, gemm_a, gemm_b, gemm_c, mem_a, mem_b, coll_send, coll_recv, arena;
  void* pinned = nullptr;
  size_t pinned_bytes = 0;
  std::vector<char> pageable;
  int sms = 0;
  size_t vram_capacity = 0;
  std::vector<int64_t> issue, returned;                // host ns, per op
  std::map<std::pair<size_t, int>, size_t> span_next;  // (host_span, 2 x pinned + d2h) -> where its next copy starts
  std::array<size_t, 2> d2h_at{0, 0};                  // where the D2H copies' host buffer starts (pinned, pageable): past the H2D ones
};

struct Times {
  std::vector<std::vector<osim::OpRecord>> ops;
  double makespan_ns = 0;
};

cudaDataType_t blas_type(osim::DType d, const osim::SourceLocation& where) {
  switch (d) {
    case osim::DType::BF16: return CUDA_R_16BF;
    case osim::DType::FP16: return CUDA_R_16F;
    default:
      throw osim::InputError(where, fmt::format("{} GEMMs are not realised by overlapsim-validate run yet: use bf16 or fp16", osim::to_string(d)));
  }
}

class Runner {
 public:
  Runner(const RunOptions& o, osim::Schedule s) : position(s.ranks()), o_(o), s_(std::move(s)) {}

  int run() {
    setup();
    std::vector<Times> timed;
    const int total = o_.warmup + o_.repeat;
    for (int rep = 0; rep < total; ++rep) {
      Times t = run_once();
      if (o_.verbose)
        std::cerr << fmt::format("run {} of {}: makespan {:.3f} ms{}\n", rep + 1, total, t.makespan_ns * 1e-6, rep < o_.warmup ? " (warm-up)" : "");
      if (rep >= o_.warmup) timed.push_back(std::move(t));
    }
    std::vector<size_t> order(timed.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return timed[a].makespan_ns < timed[b].makespan_ns; });
    const Times& med = timed[order[order.size() / 2]];
    std::vector<double> makespans;
    for (const auto& t : timed) makespans.push_back(t.makespan_ns * 1e-9);
    write_outputs(med, makespans);
    teardown();
    return 0;
  }

  // Progress for the watchdog: ops issued so far over all ranks and runs.
  std::atomic<int64_t> progress{0};
  std::vector<std::atomic<int>> position;  // per rank: the op being issued

 private:
  const Op& op(int r, int i) const { return (*s_.programs[r].ops)[i]; }
  int nops(int r) const { return static_cast<int>(s_.programs[r].ops->size()); }

  void setup() {
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
                "the schedule needs {} ranks but this machine has {} GPUs (device {} does not exist): run it on a larger machine or pass --devices",
                R, ndev, d));
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

  // One communicator per (group, channel count) the schedule uses; send/recv use all ranks.
  void make_comms() {
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

  // The largest buffer each kind of op needs on a rank, found by planning its
  // ops; allocated once, before the run.
  struct Scratch {
    size_t pinned_max[2] = {0, 0}, pageable_max[2] = {0, 0};  // per direction (H2D, D2H)
    size_t copy_max = 0, d2d_max = 0, gemm_a = 0, gemm_b = 0, gemm_c = 0, mem_max = 0, coll_max = 0;
    int64_t vram_peak = 0;
    size_t sdpa_q = 0, sdpa_kv = 0;  // cuDNN SDPA: Q and O, K and V
  };

  void allocate_scratch(Rank& R, const Scratch& sc) {
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

  void setup_rank(Rank& R) {
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

  // P2P destinations live on the receiving rank; allocated after every rank's plan is known.
  void setup_p2p() {
    for (auto& [peer, bytes] : p2p_need_) {
      Rank& R = ranks_[peer];
      if (R.p2p_in.bytes >= bytes) continue;
      CUDA_CHECK(cudaSetDevice(R.dev));
      R.p2p_in.alloc(bytes);
    }
  }

  void gemm(Rank& R, cudaStream_t st, const GemmPlan& g) {
    CUBLAS_CHECK(cublasSetStream(R.blas, st));
    const float alpha = 1.0f, zero = 0.0f, one = 1.0f;
    for (int c = 0; c < g.chunks; ++c) {
      // Row-major C[m,n] = A[m,k] B[k,n] as column-major C^T = B^T A^T.
      CUBLAS_CHECK(cublasGemmEx(R.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha,
                                R.gemm_b.p, g.type, static_cast<int>(g.n), R.gemm_a.p, g.type, static_cast<int>(g.k), c ? &one : &zero, R.gemm_c.p,
                                g.type, static_cast<int>(g.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  }

  void collective(Rank& R, cudaStream_t st, const Op& o, const Plan& p) {
    char* sp = static_cast<char*>(R.coll_send.p);
    char* rp = static_cast<char*>(R.coll_recv.p);
    const int U = p.members;
    switch (o.coll) {
      case osim::CollKind::AllToAll:
        if (o.algo == osim::CollAlgo::Pairwise) {
          const size_t chunk = p.bytes / U;
          for (int partner : p.partners) {
            if (partner < 0) continue;
            NCCL_CHECK(ncclGroupStart());
            NCCL_CHECK(ncclSend(sp + partner * chunk, chunk, ncclChar, partner, p.comm, st));
            NCCL_CHECK(ncclRecv(rp + partner * chunk, chunk, ncclChar, partner, p.comm, st));
            NCCL_CHECK(ncclGroupEnd());
          }
        } else {
          NCCL_CHECK(ncclAlltoAll(sp, rp, p.bytes / U, ncclChar, p.comm, st));
        }
        break;
      case osim::CollKind::AllGather: NCCL_CHECK(ncclAllGather(sp, rp, p.bytes / U / 2, ncclBfloat16, p.comm, st)); break;
      case osim::CollKind::ReduceScatter: NCCL_CHECK(ncclReduceScatter(sp, rp, p.bytes / U / 2, ncclBfloat16, ncclSum, p.comm, st)); break;
      case osim::CollKind::AllReduce: NCCL_CHECK(ncclAllReduce(sp, rp, p.bytes / 2, ncclBfloat16, ncclSum, p.comm, st)); break;
      case osim::CollKind::Send: NCCL_CHECK(ncclSend(sp, p.bytes, ncclChar, p.peer, p.comm, st)); break;
      case osim::CollKind::Recv: NCCL_CHECK(ncclRecv(rp, p.bytes, ncclChar, p.peer, p.comm, st)); break;
    }
  }

  void issue_op(Rank& R, int i) {
    const Op& o = op(R.rank, i);
    const Plan& p = R.plans[i];
    cudaStream_t st = o.stream >= 0 ? R.streams[o.stream] : nullptr;
    switch (o.kind) {
      case OpKind::Kernel:
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        if (p.sdpa.on)
          R.sdpa->run(p.sdpa.shape, st, R.sdpa_q.p, R.sdpa_kv.p, static_cast<char*>(R.sdpa_kv.p) + R.sdpa_kv.bytes / 2, R.sdpa_o.p, R.sdpa_ws.p);
        else if (p.gemm.chunks > 0)
          gemm(R, st, p.gemm);
        else if (p.busy)
          launch_busy(st, R.sms, p.busy_ns);
        else if (p.hbm)
          launch_hbm_copy(st, R.mem_b.p, R.mem_a.p, p.bytes, R.sms);
        CUDA_CHECK(cudaEventRecord(R.ev_end[i], st));
        break;
      case OpKind::Memcpy: {
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        // The next slice of the host span: the rank's copies of one span and
        // direction walk it together (offset 0 every time where the span is
        // the bytes); each direction has its own host buffer.
        size_t offset = 0;
        if (p.span > p.bytes) {
          size_t& next = R.span_next[{p.span, (o.host_mem == osim::HostMem::Pinned ? 2 : 0) + (o.copy == osim::CopyKind::D2H ? 1 : 0)}];
          if (next + p.bytes > p.span) next = 0;
          offset = next;
          next += p.bytes;
        }
        const bool pinned = o.host_mem == osim::HostMem::Pinned;
        if (o.copy == osim::CopyKind::D2H) offset += R.d2h_at[pinned ? 0 : 1];
        char* host = static_cast<char*>(pinned ? R.pinned : static_cast<void*>(R.pageable.data())) + offset;
        switch (o.copy) {
          case osim::CopyKind::H2D: CUDA_CHECK(cudaMemcpyAsync(R.copy_buf.p, host, p.bytes, cudaMemcpyHostToDevice, st)); break;
          case osim::CopyKind::D2H: CUDA_CHECK(cudaMemcpyAsync(host, R.copy_buf.p, p.bytes, cudaMemcpyDeviceToHost, st)); break;
          case osim::CopyKind::D2D:
            CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(R.copy_buf.p) + p.bytes, R.copy_buf.p, p.bytes, cudaMemcpyDeviceToDevice, st));
            break;
          case osim::CopyKind::P2P: {
            Rank& P = ranks_[p.peer];
            CUDA_CHECK(cudaMemcpyPeerAsync(P.p2p_in.p, P.dev, R.copy_buf.p, R.dev, p.bytes, st));
            break;
          }
        }
        CUDA_CHECK(cudaEventRecord(R.ev_end[i], st));
        if (!o.async) CUDA_CHECK(cudaStreamSynchronize(st));
        break;
      }
      case OpKind::EventRecord:
        CUDA_CHECK(cudaEventRecord(R.events[o.event], st));
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        break;
      case OpKind::StreamWaitEvent:
        CUDA_CHECK(cudaStreamWaitEvent(st, R.events[o.event], 0));
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        break;
      case OpKind::StreamWaitStream:
        CUDA_CHECK(cudaEventRecord(R.internal[i], R.streams[o.stream2]));
        CUDA_CHECK(cudaStreamWaitEvent(st, R.internal[i], 0));
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        break;
      case OpKind::StreamSync: CUDA_CHECK(cudaStreamSynchronize(st)); break;
      case OpKind::EventSync: CUDA_CHECK(cudaEventSynchronize(R.events[o.event])); break;
      case OpKind::DeviceSync: CUDA_CHECK(cudaDeviceSynchronize()); break;
      case OpKind::Collective:
        CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        collective(R, st, o, p);
        CUDA_CHECK(cudaEventRecord(R.ev_end[i], st));
        break;
      case OpKind::HostWork: {
        const int64_t until = now_ns() + (o.duration ? o.duration->ps() / 1000 : 0);
        while (now_ns() < until) {
        }
        break;
      }
      case OpKind::Marker:
        if (R.ev_start[i]) CUDA_CHECK(cudaEventRecord(R.ev_start[i], st));
        break;
      case OpKind::Alloc:
      case OpKind::Free: break;  // the arena holds the peak; see the file comment
    }
  }

  Times run_once() {
    const int RN = s_.ranks();
    int64_t t0 = 0;
    auto on_release = [&t0]() noexcept { t0 = now_ns(); };
    std::barrier sync(RN, on_release);
    std::vector<std::thread> threads;
    std::mutex err_m;
    std::string error;
    for (int r = 0; r < RN; ++r)
      threads.emplace_back([&, r] {
        Rank& R = ranks_[r];
        try {
          CUDA_CHECK(cudaSetDevice(R.dev));
          // Tie this GPU's clock to the host clock.
          const int64_t h0 = now_ns();
          CUDA_CHECK(cudaEventRecord(R.ref, R.timing));
          CUDA_CHECK(cudaEventSynchronize(R.ref));
          const int64_t h1 = now_ns();
          R.ref_host_ns = 0.5 * static_cast<double>(h0 + h1);
          sync.arrive_and_wait();
          const int n = nops(r);
          for (int i = 0; i < n; ++i) {
            position[r].store(i);
            ++progress;
            R.issue[i] = now_ns();
            issue_op(R, i);
            R.returned[i] = now_ns();
          }
          position[r].store(n);
          CUDA_CHECK(cudaDeviceSynchronize());
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lk(err_m);
          if (error.empty()) error = fmt::format("rank {} ({}): {}", r, s_.location(r, std::max(0, position[r].load())).str(), e.what());
          fatal(error);
        }
      });
    for (auto& t : threads) t.join();
    // Times relative to the release of the barrier.
    Times out;
    out.ops.resize(RN);
    for (int r = 0; r < RN; ++r) {
      Rank& R = ranks_[r];
      CUDA_CHECK(cudaSetDevice(R.dev));
      auto gpu_ns = [&](cudaEvent_t e) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, R.ref, e));
        return R.ref_host_ns + static_cast<double>(ms) * 1e6 - static_cast<double>(t0);
      };
      const int n = nops(r);
      out.ops[r].resize(n);
      for (int i = 0; i < n; ++i) {
        osim::OpRecord& rec = out.ops[r][i];
        rec.op = &op(r, i);
        rec.ran = true;
        rec.issue = osim::Time::from_ns(static_cast<double>(R.issue[i] - t0));
        rec.returned = osim::Time::from_ns(static_cast<double>(R.returned[i] - t0));
        rec.start = rec.issue;
        rec.end = rec.returned;
        if (R.ev_start[i]) rec.start = rec.end = osim::Time::from_ns(gpu_ns(R.ev_start[i]));
        if (R.ev_end[i]) rec.end = osim::Time::from_ns(gpu_ns(R.ev_end[i]));
        out.makespan_ns = std::max({out.makespan_ns, static_cast<double>(rec.end.ps()) * 1e-3, static_cast<double>(rec.returned.ps()) * 1e-3});
      }
    }
    return out;
  }

  // records.json (every op's times, the run's meta) and the schedule it ran
  // (its topology made relative to the folder): what `overlapsim report`
  // makes metrics, a trace and a summary of, and `overlapsim compare` reads.
  void write_outputs(const Times& t, const std::vector<double>& makespans) {
    const std::string topo_path = o_.topology.empty() ? (fs::path(s_.file).parent_path() / s_.topology).string() : o_.topology;
    osim::RunRecord res;
    res.ops = t.ops;
    res.makespan = osim::Time::from_ns(t.makespan_ns);
    // The schedule's GPU names where it gives them; else `overlapsim report`
    // names each rank's GPU from the topology, as the simulator maps them.
    for (int r = 0; r < s_.ranks(); ++r) {
      osim::RankSummary sum;
      if (!s_.gpus.empty()) sum.gpu = s_.gpus[r];
      res.ranks.push_back(sum);
    }
    nlohmann::ordered_json meta;
    meta["tool"] = "overlapsim-validate run";
    meta["warmup"] = o_.warmup;
    meta["repeat"] = o_.repeat;
    meta["makespans_s"] = makespans;
    meta["attention_slowdown"] = o_.attention_slowdown;
    // Attention of backend default or cudnn ran as cuDNN's SDPA (the rest as GEMMs).
    meta["attention_sdpa"] = ovv::cudnn_sdpa_built();
    meta["device_max_connections"] = s_.runtime.device_max_connections;
    meta["nccl_p2p_disable"] = s_.runtime.nccl_p2p_disable;
    meta["environment"] = environment_;
    const fs::path dir(o_.out_dir);
    fs::create_directories(dir);
    // Written beside and renamed over: an interrupted run never leaves a truncated file.
    auto write = [&](const char* name, const std::string& text) {
      const fs::path tmp = dir / (std::string(".") + name + ".tmp");
      {
        std::ofstream f(tmp);
        f << text;
        if (!f.flush()) throw osim::InputError(osim::SourceLocation{(dir / name).string(), 0, 0}, "cannot write this file");
      }
      fs::rename(tmp, dir / name);
    };
    // The topology by its file's name (the shipped files are named as their topologies).
    const std::string topo_name = fs::path(topo_path).stem().string();
    write("records.json", osim::records_text(osim::records_json(s_, res, topo_name, "measured", meta)));
    osim::Schedule copy = s_;
    copy.topology = fs::relative(fs::absolute(topo_path), fs::absolute(dir)).string();
    write("schedule.yaml", osim::to_yaml(copy));
    std::string runs;
    for (double ms : makespans) runs += fmt::format("{}{:.4f} s", runs.empty() ? "" : ", ", ms);
    std::cout << fmt::format("measured schedule {}: {} ranks on {}: makespan {:.4f} s (the median of {} runs: {})\n", s_.name, s_.ranks(), topo_name,
                             t.makespan_ns * 1e-9, makespans.size(), runs)
              << fmt::format("wrote {}/records.json, schedule.yaml (overlapsim report {} makes the metrics, trace and summary)\n", o_.out_dir,
                             o_.out_dir);
  }

  void teardown() {
    for (auto c : all_comms_) ncclCommDestroy(c);
    for (auto& R : ranks_) {
      cudaSetDevice(R.dev);
      for (DevMem* m : {&R.copy_buf, &R.p2p_in, &R.gemm_a, &R.gemm_b, &R.gemm_c, &R.mem_a, &R.mem_b, &R.coll_send, &R.coll_recv, &R.arena})
        if (m->p) cudaFree(m->p);
      if (R.pinned) cudaFreeHost(R.pinned);
      cublasDestroy(R.blas);
    }
  }

 public:
  nlohmann::ordered_json environment_;
  static void fatal(const std::string& msg) {
    std::cerr << "overlapsim-validate run: " << msg << "\n";
    std::cerr.flush();
    std::_Exit(3);  // other ranks may sit in NCCL waiting for this one: no clean way back
  }

 private:
  RunOptions o_;
  osim::Schedule s_;
  std::vector<Rank> ranks_;
  std::map<std::tuple<int, int, int>, ncclComm_t> comms_;  // (group, channels, rank)
  std::map<std::pair<int, int>, std::vector<int>> members_;
  std::vector<ncclComm_t> all_comms_;
  std::map<int, size_t> p2p_need_;
};

}  // namespace

nlohmann::ordered_json environment_json();  // main.cu

int run_schedule(const RunOptions& o) {
  osim::Schedule s = osim::parse_schedule_file(o.schedule);
  // Outputs are checked before any GPU work, so nothing is overwritten silently.
  for (const char* f : {"records.json", "schedule.yaml"})
    if (!o.force && fs::exists(fs::path(o.out_dir) / f))
      throw osim::InputError(osim::SourceLocation{(fs::path(o.out_dir) / f).string(), 0, 0},
                             "exists already: pass --force to overwrite it, or choose another --out");
  if (o.topology.empty() && s.topology.empty())
    throw osim::InputError(osim::SourceLocation{o.schedule, 0, 0},
                           "no topology (the metrics name its GPUs and links): pass --topology FILE or add 'topology:'");
  // The schedule's runtime settings, before CUDA or NCCL read them.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(s.runtime.device_max_connections).c_str(), 1);
  if (s.runtime.nccl_p2p_disable)
    setenv("NCCL_P2P_DISABLE", "1", 1);
  else if (const char* v = std::getenv("NCCL_P2P_DISABLE"); v && std::string(v) != "0") {
    std::cerr << "overlapsim-validate run: NCCL_P2P_DISABLE is set in the environment but the schedule does not ask for it: unsetting it "
                 "(set 'settings: {nccl_p2p_disable: true}' in the schedule instead)\n";
    unsetenv("NCCL_P2P_DISABLE");
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::cerr << "overlapsim-validate: no CUDA GPU found (or no driver): run this on a machine with NVIDIA GPUs; "
                 "`overlapsim run` simulates the same schedule without one\n";
    return 2;
  }
  const int nranks = s.ranks();
  Runner runner(o, std::move(s));
  runner.environment_ = environment_json();
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    int64_t last = -1;
    auto last_change = Clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t p = runner.progress.load();
      if (p != last) {
        last = p;
        last_change = Clock::now();
      } else if (Clock::now() - last_change > std::chrono::seconds(o.watchdog_s)) {
        std::string where;
        for (int r = 0; r < nranks; ++r) where += fmt::format(" r{}@{}", r, runner.position[r].load());
        std::cerr << fmt::format(
            "overlapsim-validate run: watchdog: no op issued for {} s (rank@op:{}); a collective or a wait may be hung. "
            "Raise --watchdog if the schedule has ops this long\n",
            o.watchdog_s, where);
        std::_Exit(4);
      }
    }
  });
  int rc = 0;
  try {
    rc = runner.run();
  } catch (...) {
    done = true;
    watchdog.join();
    throw;
  }
  done = true;
  watchdog.join();
  return rc;
}

std::vector<osim::RealisedGemm> realised_gemm_shapes(const std::vector<std::string>& schedules, double attention_slowdown) {
  std::vector<osim::RealisedGemm> out;
  for (const auto& file : schedules) {
    const osim::Schedule s = osim::parse_schedule_file(file);
    for (const auto& prog : s.programs)
      for (const Op& o : *prog.ops)
        if (const auto rg = osim::realised_gemm(o, attention_slowdown)) {
          const osim::RealisedGemm g{rg->m, rg->n, rg->k, rg->chunks};
          if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
        }
  }
  return out;
}

}  // namespace ovv
