// The ports the executor's components call each other through (internal to
// sim/gpu; docs/execution-model.md, "Components"). A component is handed, in
// its constructor, the ports it calls and no others; each port is named by
// what it offers. Calls go down the stack Host -> Streams -> Collectives ->
// Copies -> ClosedForms -> Compute, with Memory and FabricUse below the
// components that use them. What goes up (an op started or ended, a thread
// may resume, a clock changed, a closed form's flows come back) goes through
// a port declared here, which the coordinator (executor.cpp) implements by
// forwarding to the component above. No component calls one above it any
// other way: the calls form no cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "core/flows.hpp"
#include "core/units.hpp"
#include "hw/fabric.hpp"
#include "schedule/run_record.hpp"
#include "schedule/schedule.hpp"

namespace osim::exec {

struct CollInst;
using RouteUses = decltype(FlowSpec::route);  // the constraints a flow crosses

// A route as the flows use it: solver constraints, latency, kind.
struct FlowRoute {
  RouteUses uses;
  Time latency;
  hw::RouteKind kind = hw::RouteKind::Local;
  uint32_t link_kinds = 0;  // hw::Route's: one bit per LinkKind crossed
  bool known = false;
  [[nodiscard]] bool crosses(hw::LinkKind k) const { return (link_kinds >> static_cast<int>(k)) & 1U; }
};

inline bool through_host(hw::RouteKind k) { return k == hw::RouteKind::ViaHost || k == hw::RouteKind::NetworkViaHost; }

/// The transfers a bottleneck statistic counts (ExecResult's copy_ and collective_bottlenecks).
enum class Transfer : uint8_t { Copy, Collective };

/// Offered by FabricUse to Copies, Collectives, ClosedForms and Memory: the
/// topology's resources as solver constraints, the routes flows take, and
/// what bound each transfer.
class Routes {
 public:
  /// The solver constraint of each topology resource.
  [[nodiscard]] virtual const std::vector<ConstraintId>& constraints() const = 0;
  /// A constraint added beside the topology's (a copy limit), counted in
  /// reports as resource `res` (-1: the transfer's own cap).
  virtual void add_constraint_alias(ConstraintId c, int res) = 0;
  /// The topology resource constraint c stands for, or -1.
  [[nodiscard]] virtual int resource_of(ConstraintId c) const = 0;
  /// Rank a to rank b: collectives' routes (`dma` false: NCCL_P2P_DISABLE
  /// as the schedule says) or copies' (`dma` true).
  virtual const FlowRoute& pair_route(int a, int b, bool dma) = 0;
  /// Host <-> GPU routes of a rank's copies.
  virtual const FlowRoute& host_route(int r, bool h2d) = 0;
  /// Rank r's GPU's NVLink port on its NVSwitch, up to the switch (`up`)
  /// or down from it (hw::Topology::switch_port): what NVLink SHARP
  /// traffic crosses.
  virtual const FlowRoute& switch_port(int r, bool up) = 0;
  /// A finished flow's bottlenecks, added to its kind's per-resource stats.
  virtual void account(Transfer kind, const FlowRecord& rec) = 0;
  /// No transfer of the kind accounted from now on has its first byte before `t` (every copy, or
  /// collective, still running started at `t` or later): its spans before it are final.
  virtual void settled_before(Transfer kind, Time t) = 0;
  /// A constraint's entry in its kind's per-resource stats (the last: the transfer's own cap).
  virtual BottleneckStat& stat_of(Transfer kind, ConstraintId c) = 0;
  /// [first_byte, end]: constraint c bound at least one of a kind's transfers (the binding share;
  /// account() adds a flow's own at its main bottleneck, closed forms their replayed flows').
  virtual void bound_span(Transfer kind, ConstraintId c, Time first_byte, Time end) = 0;
  /// With ExecOptions::link_samples: the resources flow `f` crosses on `route`;
  /// `traced`: a transfer of a traced rank (ExecContext::traced), whose links' samples are kept from now on.
  virtual void observe(FlowId f, const FlowRoute& route, bool traced) = 0;

 protected:
  ~Routes() = default;
};

/// Offered by Compute to Streams: a kernel starts on its GPU's SMs (it ends
/// through OpCompletion).
class Kernels {
 public:
  virtual void start_kernel(int r, int id) = 0;

 protected:
  ~Kernels() = default;
};

enum EngineIdx { kH2D = 0, kD2H = 1, kOther = 2 };

/// Offered by Copies to Collectives: whether a rank's copy engine is busy.
class CopyEngines {
 public:
  [[nodiscard]] virtual bool busy(int r, int engine) const = 0;

 protected:
  ~CopyEngines() = default;
};

/// Offered by Streams to the engines that run its ops (Compute, Copies,
/// Collectives): an op they run starts, or ends.
class OpCompletion {
 public:
  /// Op `id` of rank r starts now (a copy when its engine takes it, a
  /// collective when its rank reaches it).
  virtual void op_started(int r, int id, const Op& op) = 0;
  /// Op `id` of rank r finished: its stream moves on.
  virtual void op_done(int r, int id) = 0;

 protected:
  ~OpCompletion() = default;
};

/// Offered by Host to Streams: rank r's streams moved on; its thread
/// resumes if what it blocked on is done.
class HostWake {
 public:
  virtual void wake(int r) = 0;

 protected:
  ~HostWake() = default;
};

/// Offered by Compute to Copies, Collectives and ClosedForms: the SMs'
/// share and clock, which set how fast a collective's SM code runs, and the
/// changes that re-time the kernels. A mirror's reads are its
/// representative's; its changes are no-ops.
class SmShare {
 public:
  /// Re-times rank r's kernels (and its collectives' caps) after anything
  /// that changes their speed: a kernel, collective or copy starting or ending.
  virtual void update(int r) = 0;
  /// A collective of `channels` holds (negative: releases) its SMs on rank r.
  virtual void add_channels(int r, int channels) = 0;
  /// Rank r's busy copy engines are now `mask` (one bit each: H2D, D2H, other).
  virtual void copy_engines(int r, uint8_t mask) = 0;
  /// How much slower a collective's flows from rank r run: beside compute
  /// kernels (SM contention) and with r's clock down.
  [[nodiscard]] virtual double comm_slowdown(int r, int channels, bool via_host) const = 0;
  /// How much slower a collective's flows into rank r run: beside its compute kernels.
  [[nodiscard]] virtual double comm_receiver_slowdown(int r) const = 0;
  /// How much slower a collective's SM code (its latency) runs at rank r's clock.
  [[nodiscard]] virtual double clock_slowdown(int r, bool via_host) const = 0;
  /// Compute-bound speed under the sustained-load model (1 rested).
  [[nodiscard]] virtual double clock(int r) const = 0;

 protected:
  ~SmShare() = default;
};

/// Offered by Compute to Collectives: NVLink's awake state (NvlinkParams),
/// which slows the SMs while a collective over NVLink runs and for a while after.
class NvlinkWake {
 public:
  /// A collective of rank r over NVLink starts / ends.
  virtual void nvlink_started(int r) = 0;
  virtual void nvlink_ended(int r) = 0;
  /// How long rank r has had no NVLink collective of its own.
  [[nodiscard]] virtual Time nvlink_quiet(int r, Time now) const = 0;

 protected:
  ~NvlinkWake() = default;
};

/// Offered by Collectives to Compute: rank r's SM share or clock changed;
/// its collectives' flow caps follow.
class ClockWatch {
 public:
  virtual void clock_changed(int r) = 0;

 protected:
  ~ClockWatch() = default;
};

/// Offered by ClosedForms to Copies and Collectives: before a flow starts
/// over a route, or a constraint's capacity changes, the closed forms
/// replaying over it hand their flows back to the flow model.
class LinkClaims {
 public:
  virtual void hand_back_route(const RouteUses& route) = 0;
  virtual void hand_back_constraint(ConstraintId c) = 0;

 protected:
  ~LinkClaims() = default;
};

/// Offered by Collectives to ClosedForms: the collective a closed form
/// replays, its flows, and its members' ends.
class CollFlows {
 public:
  /// Instance ci (its storage does not move while it runs).
  virtual CollInst& inst(int ci) = 0;
  /// Whether its group's transport goes through host memory.
  virtual bool via_host(const CollInst& c) = 0;
  /// A flow from member `from` to member `to`: its route, latency, cap
  /// (`base_out`: the cap before the compute slowdown), weight.
  virtual FlowSpec flow_spec(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency, double& base_out) = 0;
  /// Starts a flow of it (resumes it from `st` when given).
  virtual void start_flow(int ci, int from, int to, FlowSpec f, double base, const FlowState* st) = 0;
  /// Member m is done: its op ends.
  virtual void member_done(int ci, int m) = 0;
  /// Rank r's flows of instance ci (member m) are replayed / no longer.
  virtual void add_closed(int r, int ci, int m) = 0;
  virtual void remove_closed(int r, int ci) = 0;

 protected:
  ~CollFlows() = default;
};

}  // namespace osim::exec
