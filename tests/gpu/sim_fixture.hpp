// The executor's tests' node and helpers: round numbers (10 GB/s PCIe per
// GPU, 100 GB/s NVLink between the two GPUs, zero latencies, 100 bf16
// TFLOP/s) and, unless a test sets them, zero host overheads.
#pragma once

#include <string>

#include <fmt/format.h>

#include "gpu/executor.hpp"
#include "hw/fabric.hpp"

namespace osim::test {

inline const char* kTopo = R"(name: testnode
nodes:
  - {name: cpu0, kind: cpu, memory: 64 GiB}
  - {name: "gpu{i}", kind: gpu, memory: 1 GiB, hbm_bandwidth: 1000 GB/s, sms: 100, copy_engines: 3, peak_tflops: {bf16: 100}, repeat: 2}
links:
  - {a: "gpu{i}", b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 0 us, repeat: 2}
  - {a: gpu0, b: gpu1, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
)";

// k1 (100 us) on stream a, an event after it, k2 (50 us) on stream b after it.
inline const char* kJoin = R"(name: join
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k1, stream: a, duration: 100 us}
      - {op: event_record, event: e, stream: a}
      - {op: stream_wait_event, stream: b, event: e}
      - {op: kernel, name: k2, stream: b, duration: 50 us}
)";

inline ModelParams quiet() {
  ModelParams p;
  auto& o = p.overheads;
  o.kernel_launch = o.memcpy_call = o.event_call = o.sync_call = o.collective_call = o.alloc_call = o.free_call = Time::zero();
  p.nccl.nccl_latency = p.nccl.nccl_step_latency = Time::zero();
  return p;
}

struct Sim {
  hw::Topology topo;
  Schedule sched;
  ExecResult res;
  Sim(const std::string& schedule, const ModelParams& p = quiet(), const char* topo_yaml = kTopo)
      : topo(hw::parse_topology_string(topo_yaml, "topo.yaml")), sched(parse_schedule_string(schedule, "s.yaml")) {
    res = execute(sched, topo, p);
  }
  const OpRecord& op(int rank, int index) const { return res.ops[rank][index]; }
  double start_ms(int r, int i) const { return op(r, i).start.ms(); }
  double end_ms(int r, int i) const { return op(r, i).end.ms(); }
};

inline std::string error_of(const std::string& schedule, const ModelParams& p = quiet()) {
  try {
    Sim s(schedule, p);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Four GPUs under one host bridge with the given limit (e.g.
// "throughput_from_host: 100 GB/s"), 40 GB/s links each.
inline std::string bridge_topo(const std::string& limit) {
  return fmt::format(R"(name: bridge
nodes:
  - {{name: cpu0, kind: cpu, memory: 64 GiB}}
  - {{name: rc0, kind: host_bridge, {}}}
  - {{name: "gpu{{i}}", kind: gpu, memory: 8 GiB, copy_engines: 3, peak_tflops: {{bf16: 100}}, repeat: 4}}
links:
  - {{a: cpu0, b: rc0, kind: internal, bandwidth: 1000 GB/s, latency: 0 us}}
  - {{a: "gpu{{i}}", b: rc0, kind: pcie, bandwidth: 40 GB/s, latency: 0 us, repeat: 4}}
)",
                     limit);
}

// Every rank copies 600 MB of the given kind at once.
inline std::string bridge_copies(int ranks, const char* kind) {
  return fmt::format(R"(name: copies
ranks: {}
streams: [copy]
programs:
  - rank: all
    ops:
      - {{op: memcpy, kind: {}, bytes: 600 MB, stream: copy}}
)",
                     ranks, kind);
}

// How many ops two runs of one schedule time differently (issue, return,
// start, end, what bound a copy and how long, the waits' events); the first
// few named through `say`.
template <class Say>
int differing_records(const ExecResult& a, const ExecResult& b, Say&& say) {
  int differ = 0;
  for (size_t r = 0; r < a.ops.size() && r < b.ops.size(); ++r)
    for (size_t i = 0; i < a.ops[r].size() && i < b.ops[r].size(); ++i) {
      const OpRecord &x = a.ops[r][i], &y = b.ops[r][i];
      if (x.issue != y.issue || x.returned != y.returned || x.start != y.start || x.end != y.end || x.bottleneck != y.bottleneck ||
          x.bottleneck_time != y.bottleneck_time || x.waits_on != y.waits_on || x.ran != y.ran)
        if (++differ <= 3)
          say(fmt::format("rank {} op {}: start {} / {} ps, end {} / {} ps", r, i, x.start.ps(), y.start.ps(), x.end.ps(), y.end.ps()));
    }
  return differ;
}

// A random program every rank runs (collectives must match across ranks),
// drawn from `seed`: NCCL all-to-alls on three communicators over the same
// four GPUs (world, `other`, `reversed`), copies both ways, kernels on two
// streams, host work and syncs; with `more`, pairwise all-to-alls and GEMMs
// too. Each call draws the next one from `state`.
inline Schedule random_schedule(uint64_t& state, bool more) {
  auto next = [&](uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % n;
  };
  std::string ops;
  const int n = 12 + static_cast<int>(next(12));
  for (int i = 0; i < n; ++i) {
    const char* sizes[] = {"16 MB", "64 MB", "64 MB", "256 MB"};
    switch (next(more ? 9 : 7)) {
      case 0:
      case 1: ops += fmt::format("      - {{op: collective, kind: all_to_all, group: world, bytes: {}, stream: compute}}\n", sizes[next(4)]); break;
      case 2:
        ops += fmt::format("      - {{op: collective, kind: all_to_all, group: {}, bytes: {}, stream: side}}\n", next(2) ? "other" : "reversed",
                           sizes[next(4)]);
        break;
      case 3: ops += fmt::format("      - {{op: memcpy, kind: {}, bytes: {}, stream: copy}}\n", next(2) ? "h2d" : "d2h", sizes[next(4)]); break;
      case 4: ops += fmt::format("      - {{op: kernel, stream: side, duration: {} us}}\n", 100 + next(3000)); break;
      case 5: ops += fmt::format("      - {{op: host_work, duration: {} us}}\n", next(8000)); break;
      case 6: ops += fmt::format("      - {{op: stream_sync, stream: {}}}\n", next(2) ? "compute" : "side"); break;
      case 7:
        ops +=
            fmt::format("      - {{op: collective, kind: all_to_all, algorithm: pairwise, group: world, bytes: {}, stream: side}}\n", sizes[next(4)]);
        break;
      default: ops += fmt::format("      - {{op: kernel, stream: compute, gemm: {{m: 8192, n: 8192, k: {}}}}}\n", 1024 * (1 + next(8))); break;
    }
  }
  return parse_schedule_string(fmt::format(R"(name: random
ranks: 4
streams: [compute, copy, side]
groups: [{{name: other, ranks: [0, 1, 2, 3]}}, {{name: reversed, ranks: [3, 2, 1, 0]}}]
programs:
  - rank: all
    ops:
{}      - {{op: device_sync}}
)",
                                           ops),
                               "random.yaml");
}

// Draws `trials` random schedules from `seed` (random_schedule, `more`) and
// calls check(schedule, topology, trial) on each under the ACES 4xH100 PCIe
// node and the DGX H100: the two shipped topologies whose all-to-alls go
// over PCIe and over NVSwitch.
template <class Check>
void on_random_schedules(uint64_t seed, int trials, bool more, Check&& check) {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  const hw::Topology aces(hw::parse_topology_file(src + "/configs/topologies/aces-4xh100-pcie.yaml"));
  const hw::Topology dgx(hw::parse_topology_file(src + "/configs/topologies/dgx-h100.yaml"));
  uint64_t state = seed;
  for (int trial = 0; trial < trials; ++trial) {
    const Schedule s = random_schedule(state, more);
    for (const hw::Topology* t : {&aces, &dgx}) check(s, *t, trial);
  }
}

}  // namespace osim::test
