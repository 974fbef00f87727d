// The run's use of the topology: its resources installed in the solver,
// routes as flows take them (memoised), what bound each transfer, and every
// change of every resource's use (link samples, for traces).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "gpu/exec_context.hpp"

namespace osim::exec {

// A route as the flows use it: solver constraints, latency, kind.
struct FlowRoute {
  boost::container::small_vector<FlowUse, 6> uses;
  Time latency;
  hw::RouteKind kind = hw::RouteKind::Local;
  bool known = false;
};

inline bool through_host(hw::RouteKind k) { return k == hw::RouteKind::ViaHost || k == hw::RouteKind::NetworkViaHost; }

class FabricUse {
 public:
  explicit FabricUse(ExecContext& x);

  /// The solver constraint of each topology resource.
  const std::vector<ConstraintId>& constraints() const { return cons_; }
  /// A constraint added beside the topology's (a copy limit), counted in
  /// reports as resource `res` (-1: the transfer's own cap).
  void add_constraint_alias(ConstraintId c, int res);
  /// The topology resource constraint c stands for, or -1.
  int resource_of(ConstraintId c) const { return res_of_cons_[static_cast<size_t>(c)]; }

  /// Rank a to rank b: collectives' routes (`dma` false: NCCL_P2P_DISABLE
  /// as the schedule says) or copies' (`dma` true).
  const FlowRoute& pair_route(int a, int b, bool dma);
  /// Host <-> GPU routes of a rank's copies.
  const FlowRoute& host_route(int r, bool h2d);
  /// The topology's route between two ranks' GPUs (copies' options when `dma`).
  const hw::Route& route_between(int r, int peer, bool dma);

  /// A finished flow's bottlenecks, added to `stats`.
  void account(std::vector<BottleneckStat>& stats, const FlowRecord& rec) const;
  /// A constraint's entry in per-resource stats (the last: the transfer's own cap).
  BottleneckStat& stat_of(std::vector<BottleneckStat>& stats, ConstraintId c) const;
  std::vector<BottleneckStat> copy_bottlenecks, collective_bottlenecks;

  /// With ExecOptions::link_samples: the resources flow `f` crosses on `route`.
  void observe(FlowId f, const FlowRoute& route);
  std::vector<LinkSample> take_samples() { return std::move(samples_); }
  /// Bytes moved per topology resource.
  std::vector<double> resource_bytes() const;

 private:
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
  std::vector<FlowRoute> coll_routes_, dma_routes_, host_routes_;
  std::unordered_map<uint64_t, FlowRoute> coll_routes_sparse_, dma_routes_sparse_;
  FlowRoute scratch_route_;  // the last pair's route asked on demand (a flow's spec and its start ask twice)
  int64_t scratch_key_ = -1;  // its pair's key (2 * (a * ranks + b) + dma), -1: none
  std::vector<double> usage_;
  std::vector<LinkSample> samples_;
  std::map<FlowId, std::vector<hw::ResourceUse>> flow_uses_;
};

}  // namespace osim::exec
