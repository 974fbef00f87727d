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
#include "run.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "kernels.hpp"
#include "run_runner.hpp"
#include "schedule/realise.hpp"

namespace ovv::run_detail {

namespace fs = std::filesystem;

int ScheduleRunner::run() {
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

void ScheduleRunner::gemm(Rank& R, cudaStream_t st, const GemmPlan& g) {
  CUBLAS_CHECK(cublasSetStream(R.blas, st));
  const float alpha = 1.0f, zero = 0.0f, one = 1.0f;
  for (int c = 0; c < g.chunks; ++c) {
    // Row-major C[m,n] = A[m,k] B[k,n] as column-major C^T = B^T A^T.
    CUBLAS_CHECK(cublasGemmEx(R.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha,
                              R.gemm_b.p, g.type, static_cast<int>(g.n), R.gemm_a.p, g.type, static_cast<int>(g.k), c ? &one : &zero, R.gemm_c.p,
                              g.type, static_cast<int>(g.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

void ScheduleRunner::collective(Rank& R, cudaStream_t st, const Op& o, const Plan& p) {
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

void ScheduleRunner::issue_op(Rank& R, int i) {
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

Times ScheduleRunner::run_once() {
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

void ScheduleRunner::write_outputs(const Times& t, const std::vector<double>& makespans) {
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

void ScheduleRunner::fatal(const std::string& msg) {
  std::cerr << "overlapsim-validate run: " << msg << "\n";
  std::cerr.flush();
  std::_Exit(3);  // other ranks may sit in NCCL waiting for this one: no clean way back
}

}  // namespace ovv::run_detail

namespace ovv {

namespace fs = std::filesystem;
using run_detail::Clock;
using run_detail::ScheduleRunner;

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
  ScheduleRunner runner(o, std::move(s));
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
      for (const osim::Op& o : *prog.ops)
        if (const auto rg = osim::realised_gemm(o, attention_slowdown)) {
          const osim::RealisedGemm g{rg->m, rg->n, rg->k, rg->chunks};
          if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
        }
  }
  return out;
}

}  // namespace ovv