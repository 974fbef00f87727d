// The run's use of the topology: its resources installed in the solver,
// routes as flows take them (memoised), what bound each transfer, and every
// change of every resource's use (link samples, for traces; those of the
// traced windows).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"
#include "schedule/link_samples.hpp"

namespace osim::exec {

class FabricUse final : public Routes {
 public:
  explicit FabricUse(ExecContext& x);

  // Routes
  const std::vector<ConstraintId>& constraints() const override { return cons_; }
  void add_constraint_alias(ConstraintId c, int res) override;
  int resource_of(ConstraintId c) const override { return res_of_cons_[static_cast<size_t>(c)]; }
  const FlowRoute& pair_route(int a, int b, bool dma) override;
  const FlowRoute& host_route(int r, bool h2d) override;
  const FlowRoute& switch_port(int r, bool up) override;
  void account(Transfer kind, const FlowRecord& rec) override;
  void settled_before(Transfer kind, Time t) override { bound_[kind == Transfer::Copy ? 0 : 1].settled = t; }
  BottleneckStat& stat_of(Transfer kind, ConstraintId c) override { return stat_of(stats(kind), c); }
  void bound_span(Transfer kind, ConstraintId c, Time first_byte, Time end) override;
  void observe(FlowId f, const FlowRoute& route, bool traced) override;

  /// The topology's route between two ranks' GPUs (copies' options when `dma`).
  const hw::Route& route_between(int r, int peer, bool dma);
  /// What bound the copies' and the collectives' transfers, per resource (the last: their own caps).
  std::vector<BottleneckStat> copy_bottlenecks, collective_bottlenecks;
  /// Per resource (the last: the transfers' own caps), how long at least one copy (or collective
  /// transfer) was bound there: a union over time of each transfer's [first byte, end] at its main
  /// bottleneck, at most the makespan.
  std::vector<Time> binding(Transfer kind);
  std::vector<LinkSample> take_samples() { return samples_.take(); }
  /// Bytes moved per topology resource.
  std::vector<double> resource_bytes() const;

 private:
  std::vector<BottleneckStat>& stats(Transfer kind) { return kind == Transfer::Copy ? copy_bottlenecks : collective_bottlenecks; }
  BottleneckStat& stat_of(std::vector<BottleneckStat>& stats, ConstraintId c) const;
  void set_flow_route(FlowRoute& fr, const hw::Route& route) const;
  ExecContext& x_;
  std::vector<ConstraintId> cons_;
  std::vector<int> res_of_cons_;
  hw::RouteOptions opts_;  // collectives (NCCL_P2P_DISABLE as the schedule says)
  hw::RouteOptions dma_;   // copies
  // Routes between ranks, memoised (a DiT run asks for the same few pairs
  // hundreds of thousands of times): a dense table for small jobs; for large
  // ones the first kRouteMemoPairs pairs asked (ring neighbours, group
  // members), then the topology's own bounded caches (a 1,024-GPU all-to-all's
  // million pairs).
  static constexpr int kRouteMemoRanks = 64;
  static constexpr size_t kRouteMemoPairs = size_t{1} << 16;
  std::vector<FlowRoute> coll_routes_, dma_routes_, host_routes_, switch_routes_;
  std::unordered_map<uint64_t, FlowRoute> coll_routes_sparse_, dma_routes_sparse_;
  // Past kRouteMemoRanks, the last pair asked (a flow's spec and its start ask for one pair in
  // turn): its key (2 * (a * ranks + b) + dma, -1: none) and route, in a sparse memo or, once
  // the memos are full, the one computed on demand into scratch_route_.
  int64_t last_key_ = -1;
  const FlowRoute* last_route_ = nullptr;
  FlowRoute scratch_route_;
  // Per kind of transfer and resource: [first byte, end] in ps, merged as they grow, each one's size
  // after its last merge, and the length in ps of the spans dropped (all before `settled`).
  struct BoundSpans {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> spans;
    std::vector<size_t> merged;
    std::vector<int64_t> dropped;
    Time settled;  // no transfer of the kind still to be accounted has its first byte before it
  };
  BoundSpans bound_[2];  // Transfer::Copy, Transfer::Collective
  std::vector<double> usage_;
  WindowedSamples samples_;    // those ExecOptions::sample_windows keep
  std::vector<char> sampled_;  // per resource: a traced rank's transfer crossed it (its samples kept from then on)
  std::map<FlowId, std::vector<hw::ResourceUse>> flow_uses_;
};

}  // namespace osim::exec
