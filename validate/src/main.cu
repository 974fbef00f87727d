// overlapsim-validate: the CUDA/NCCL backend. `bench` runs microbenchmarks
// and writes JSON (docs/calibrate-your-node.md). Exit codes: 0 ok, 2 bad usage or no
// GPU, 3 a CUDA/NCCL/cuBLAS error, 4 the watchdog fired.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "check.hpp"
#include "core/errors.hpp"
#include "run.hpp"

extern char** environ;

namespace {

std::string run_capture(const char* cmd) {
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

}  // namespace

namespace ovv {
nlohmann::ordered_json environment_json() {
  nlohmann::ordered_json env;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  env["hostname"] = host;
  // When it was measured (UTC): a calibration's provenance says it.
  const std::time_t now = std::time(nullptr);
  char date[32] = {0};
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env["date"] = date;
  int drv = 0, rt = 0, nccl = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  ncclGetVersion(&nccl);
  env["cuda_driver_version"] = drv;
  env["cuda_runtime_version"] = rt;
  env["nccl_version"] = nccl;
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess) {
    for (int d = 0; d < n; ++d) {
      cudaDeviceProp p{};
      CUDA_CHECK(cudaGetDeviceProperties(&p, d));
      env["gpus"].push_back({{"index", d},
                             {"name", p.name},
                             {"sms", p.multiProcessorCount},
                             {"memory_bytes", p.totalGlobalMem},
                             {"async_engine_count", p.asyncEngineCount},
                             {"pci_bus_id", p.pciBusID},
                             {"l2_bytes", p.l2CacheSize}});
    }
  }
  nlohmann::ordered_json vars;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("NCCL_", 0) == 0 || kv.rfind("CUDA_", 0) == 0) vars[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  env["env"] = vars;
  env["nvidia_smi_topo"] = run_capture("nvidia-smi topo -m 2>&1");
  // The GPUs' NVLink-C2C links to their CPU (a Grace Hopper's); a driver without the subcommand prints its usage, read as none.
  env["nvidia_smi_c2c"] = run_capture("nvidia-smi c2c -s 2>&1");
  env["nvidia_smi"] =
      run_capture("nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm,power.limit --format=csv 2>&1");
  return env;
}
}  // namespace ovv

int main(int argc, char** argv) {
  // The machines are shared: never use NVLink multicast (NVLS), whatever the caller set.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  CLI::App app{"overlapsim-validate: run microbenchmarks (and, later, schedules) on real GPUs with CUDA and NCCL"};
  app.require_subcommand(1);
  ovv::Options opt;
  std::string out;
  auto* bench = app.add_subcommand("bench", "Microbenchmarks: copies, P2P, NCCL collectives, GEMMs, interference, API overheads");
  bench->add_option("--out,-o", out, "write the JSON here (default: standard output)");
  bench->add_flag("--quick", opt.quick, "fewer sizes and smaller buffers (a few minutes)");
  bench->add_option("--filter", opt.filter, "only testcases whose key matches this regular expression");
  bench->add_option("--gpus", opt.max_gpus, "use at most this many GPUs");
  bench->add_option("--samples", opt.samples, "samples per measurement (median)")->check(CLI::Range(1, 1000));
  bench->add_option("--watchdog", opt.watchdog_s, "abort when a testcase makes no progress for this many seconds")->check(CLI::Range(5, 3600));
  bench->add_flag("--verbose,-v", opt.verbose, "print progress to standard error");
  bool list = false;
  bench->add_flag("--list", list, "print the testcases in the order they run, and exit (no GPU needed)");
  bench->add_option("--channels", opt.channels, "NCCL channel counts to sweep (0 = NCCL's choice)")->delimiter(',');
  bench->add_option("--ranks", opt.ranks, "rank counts for collectives (default: 2 and all GPUs)")->delimiter(',');
  bench->add_option("--size-step", opt.size_step, "collective sizes grow by this factor from 1 KiB")->check(CLI::Range(2, 16));
  bench->add_flag("--all-collectives", opt.all_collectives_at_all_channels, "sweep every collective at every channel count");
  bench->add_option("--interference-channels", opt.interference_channels, "channel counts for the GEMM/all-to-all pairs")->delimiter(',');
  bench->add_option("--copy-collective-sizes", opt.copy_collective_mib, "per-rank collective sizes in MiB for copy_collective (default 8,64,512)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  std::vector<std::string> shape_schedules;
  double shapes_slowdown = 2.1;
  bench
      ->add_option("--gemm-shapes-from", shape_schedules,
                   "also time every GEMM `run` realises for these schedules (attention as chunked GEMMs), so calibrate has their rates")
      ->check(CLI::ExistingFile);
  bench->add_option("--attention-slowdown", shapes_slowdown, "as `run --attention-slowdown`, for --gemm-shapes-from (default 2.1)")
      ->check(CLI::Range(0.1, 100.0));
  ovv::RunOptions ro;
  auto* run = app.add_subcommand("run",
                                 "Execute a schedule (overlapsim's input) on the GPUs; write its per-op records (overlapsim report makes metrics, a "
                                 "trace and a summary of them)");
  run->add_option("schedule", ro.schedule, "schedule YAML/JSON (overlapsim run --schedule-out writes one from a workload)")->required();
  run->add_option("--out,-o", ro.out_dir, "folder for records.json and schedule.yaml")->required();
  run->add_option("--topology,-t", ro.topology, "topology YAML naming the GPUs (default: the schedule's 'topology:')");
  run->add_option("--warmup", ro.warmup, "untimed runs first")->check(CLI::Range(0, 100));
  run->add_option("--repeat", ro.repeat, "timed runs; the median makespan's is reported")->check(CLI::Range(1, 100));
  run->add_option("--watchdog", ro.watchdog_s, "abort when no op is issued for this many seconds")->check(CLI::Range(5, 3600));
  run->add_option("--attention-slowdown", ro.attention_slowdown,
                  "attention the runner has no kernel for (flash2, efficient, math; every backend without cudnn-frontend) runs as a GEMM of its "
                  "FLOPs times this (default 2.1: a cuBLAS GEMM's rate over SDPA's at 16k tokens on Hopper)")
      ->check(CLI::Range(0.1, 100.0));
  run->add_option("--devices", ro.devices, "CUDA device of each rank (default 0,1,...)")->delimiter(',');
  run->add_flag("--force", ro.force, "overwrite existing outputs");
  run->add_flag("--verbose,-v", ro.verbose, "print each run's makespan");
  CLI11_PARSE(app, argc, argv);
  if (*run) {
    try {
      return ovv::run_schedule(ro);
    } catch (const osim::InputError& e) {
      std::cerr << e.what() << "\n";
      return 2;
    } catch (const ovv::GpuError& e) {
      std::cerr << "overlapsim-validate: " << e.what() << "\n";
      return 3;
    }
  }
  try {
    if (!shape_schedules.empty()) opt.gemm_shapes = ovv::realised_gemm_shapes(shape_schedules, shapes_slowdown);
  } catch (const osim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (list) {
    for (const std::string& name : ovv::testcase_order()) std::cout << name << "\n";
    return 0;
  }
  try {
    if (ovv::Runner::gpu_count() <= 0) {
      std::cerr << "overlapsim-validate: no CUDA GPU found (or no driver): run this on a machine with NVIDIA GPUs; "
                   "the simulator itself (overlapsim) needs none\n";
      return 2;
    }
    nlohmann::ordered_json doc;
    doc["schema"] = "overlapsim.bench/v1";
    doc["options"] = {{"quick", opt.quick},
                      {"samples", opt.samples},
                      {"warmup", opt.warmup},
                      {"filter", opt.filter},
                      {"channels", opt.channels},
                      {"ranks", opt.ranks},
                      {"size_step", opt.size_step},
                      {"all_collectives", opt.all_collectives_at_all_channels},
                      {"interference_channels", opt.interference_channels},
                      {"copy_collective_mib", opt.copy_collective_mib},
                      {"gemm_shapes_from", shape_schedules},
                      {"attention_slowdown", shapes_slowdown}};
    doc["environment"] = ovv::environment_json();
    if (!out.empty()) opt.partial_out = out + ".partial";
    ovv::Runner runner(opt);
    doc["results"] = runner.run();
    const std::string text = doc.dump(1) + "\n";
    if (out.empty()) {
      std::cout << text;
    } else {
      std::ofstream f(out);
      f << text;
      if (!f) {
        std::cerr << "overlapsim-validate: cannot write " << out << "\n";
        return 2;
      }
    }
  } catch (const ovv::GpuError& e) {
    std::cerr << "overlapsim-validate: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
