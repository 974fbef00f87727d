// The runner behind `overlapsim-validate run` (run.hpp): its per-rank state, and
// the class whose setup (run_setup.cpp: communicators, the plan of every op,
// buffers) is apart from its issue loop and outputs (run.cpp).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nlohmann/json.hpp>

#include "attention_cudnn.hpp"
#include "check.hpp"
#include "run.hpp"
#include "schedule/records.hpp"
#include "schedule/schedule.hpp"

namespace ovv::run_detail {

using Clock = std::chrono::steady_clock;
using osim::Op;
using osim::OpKind;

inline int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

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

class ScheduleRunner {
 public:
  ScheduleRunner(const RunOptions& o, osim::Schedule s) : position(s.ranks()), o_(o), s_(std::move(s)) {}

  int run();

  // Progress for the watchdog: ops issued so far over all ranks and runs.
  std::atomic<int64_t> progress{0};
  std::vector<std::atomic<int>> position;  // per rank: the op being issued

  nlohmann::ordered_json environment_;
  // Ends the process: other ranks may sit in NCCL waiting for this one (no clean way back).
  [[noreturn]] static void fatal(const std::string& msg);

 private:
  const Op& op(int r, int i) const { return (*s_.programs[r].ops)[i]; }
  int nops(int r) const { return static_cast<int>(s_.programs[r].ops->size()); }

  // Setup (run_setup.cpp).
  void setup();
  // One communicator per (group, channel count) the schedule uses; send/recv use all ranks.
  void make_comms();
  // The largest buffer each kind of op needs on a rank, found by planning its
  // ops; allocated once, before the run.
  struct Scratch {
    size_t pinned_max[2] = {0, 0}, pageable_max[2] = {0, 0};  // per direction (H2D, D2H)
    size_t copy_max = 0, d2d_max = 0, gemm_a = 0, gemm_b = 0, gemm_c = 0, mem_max = 0, coll_max = 0;
    int64_t vram_peak = 0;
    size_t sdpa_q = 0, sdpa_kv = 0;  // cuDNN SDPA: Q and O, K and V
  };
  void allocate_scratch(Rank& R, const Scratch& sc);
  void setup_rank(Rank& R);
  // P2P destinations live on the receiving rank; allocated after every rank's plan is known.
  void setup_p2p();
  void teardown();

  // The issue loop and outputs (run.cpp).
  void gemm(Rank& R, cudaStream_t st, const GemmPlan& g);
  void collective(Rank& R, cudaStream_t st, const Op& o, const Plan& p);
  void issue_op(Rank& R, int i);
  Times run_once();
  // records.json (every op's times, the run's meta) and the schedule it ran
  // (its topology made relative to the folder): what `overlapsim report`
  // makes metrics, a trace and a summary of, and `overlapsim compare` reads.
  void write_outputs(const Times& t, const std::vector<double>& makespans);

  RunOptions o_;
  osim::Schedule s_;
  std::vector<Rank> ranks_;
  std::map<std::tuple<int, int, int>, ncclComm_t> comms_;  // (group, channels, rank)
  std::map<std::pair<int, int>, std::vector<int>> members_;
  std::vector<ncclComm_t> all_comms_;
  std::map<int, size_t> p2p_need_;
};

}  // namespace ovv::run_detail
