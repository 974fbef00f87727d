// A shipped workload generated, executed and measured, for the workload tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu/executor.hpp"
#include "report/metrics.hpp"
#include "workload/dit.hpp"

namespace osim::test {

struct Run {
  DitWorkload w;
  Schedule s;
  std::unique_ptr<hw::Topology> topo;
  ExecResult r;
  Metrics m;
};

// configs/workloads/WORKLOAD.yaml with `sets`, run; `samples`: with link samples.
inline Run run(const std::string& workload, const std::vector<std::string>& sets, bool samples = false) {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  Run x;
  x.w = parse_workload_file(src + "/configs/workloads/" + workload + ".yaml", sets);
  x.s = generate_schedule(x.w);
  x.topo = std::make_unique<hw::Topology>(hw::parse_topology_file(src + "/configs/workloads/" + x.w.topology));
  ExecOptions o;
  o.link_samples = samples;
  x.r = execute(x.s, *x.topo, x.w.params, o);
  x.m = compute_metrics(x.s, *x.topo, x.r);
  return x;
}

}  // namespace osim::test
