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

}  // namespace osim::test
