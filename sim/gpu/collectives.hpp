// NCCL collectives (NcclParams): a collective starts moving data once every
// rank of its group has reached it (NCCL serialises a communicator's calls),
// as flows per algorithm: all-to-all (every pair at once, or pairwise
// rounds), ring steps, send/recv; an NVLink SHARP all-reduce as a flow a member over its
// GPU's switch port (start_in_switch). Its flows are capped by channels or a
// measured table, slowed beside compute and by the clock, and weighed
// against copies on shared links; an all-to-all that recurs alone on its
// links is replayed in closed form (closed_form.hpp).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/id_window.hpp"
#include "core/slots.hpp"
#include "gpu/coll_inst.hpp"
#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"

namespace osim::exec {

class ClosedForms;
class NcclModel;

class Collectives {
 public:
  Collectives(ExecContext& x, Routes& routes, const CopyEngines& copies, OpCompletion& ops, SmShare& sm, NvlinkWake& nvlink, ClosedForms& closed);
  ~Collectives();
  /// Rank r joins: its groups' call counters.
  void add_rank(int r);
  /// Collective `id` of rank r is dispatched: it arrives, or waits for the
  /// group's earlier call to finish.
  void arrive_or_park(int r, int id);
  /// Rank r's compute speed changed: its collective flows' caps follow.
  void clock_changed(int r) {
    const Rank& K = ranks_[static_cast<size_t>(r)];
    if (!K.closed.empty() || !K.coll_flows.empty() || !K.coll_in.empty()) recap(r);
  }
  /// What collective op `index` of rank r waits for (deadlock reports).
  std::string waiting(int r, int index, uint8_t flags) const;

  // What closed forms replay and hand back (CollFlows, through the coordinator).
  CollInst& inst(int ci) { return insts_[static_cast<size_t>(ci)]; }
  /// A collective flow from member `from` to member `to`: its route,
  /// latency, cap (`base_out`: the cap before the compute slowdown), weight.
  FlowSpec flow_spec(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency, double& base_out);
  // A collective flow's cap (`base` over its ranks' SM slowdowns) and its
  // latency stretched by the sender's clock: the flow runs on SM code.
  void slow_by_sm(FlowSpec& f, int ra, int rb, int channels, bool via, double base);
  /// Starts a collective flow (resumes it from `st` when given); `route`
  /// the one it crosses where not the pair's (an NVLS member's port).
  void start_flow(int ci, int from, int to, FlowSpec f, double base, const FlowState* st, const FlowRoute* route = nullptr);
  void member_done(int ci, int m);
  /// A group's transport, as its first pair of members routes.
  bool via_host(const CollInst& c);
  /// Where rank r's op is a pairwise all-to-all a framework issues and the
  /// calibration measured the framework's (NcclParams, TableColl::
  /// FrameworkAllToAllPairwise; its group's transport, the nearest rank
  /// count), that table: the host then issues the rounds one by one (Host)
  /// and the call takes the table's time (tabled). Else null.
  const NcclTable* framework_pairwise_table(int r, const Op& op) const;
  /// Closed forms replaying with flows from rank r.
  void add_closed(int r, int ci, int m) { ranks_[static_cast<size_t>(r)].closed.emplace_back(ci, m); }
  void remove_closed(int r, int ci);

 private:
  struct CollFlow {  // 24 bytes: a rank may hold a thousand, a run a million
    double base_cap;
    FlowId flow;
    int channels;
    int peer;  // the rank at its other end
    bool via_host;
  };
  // Sends from one rank to one peer: how many each end has reached (the
  // n-th send meets the peer's n-th recv from it), and the instances of those
  // in flight by that number.
  struct P2pLink {
    int peer = -1;
    int sends = 0, recvs = 0;
    IdWindow<int> open;
  };
  struct Rank {
    std::vector<int> group_seq, group_done;
    std::vector<std::deque<int>> parked;
    std::vector<P2pLink> to;                  // its sends' links by peer, sorted
    std::vector<CollFlow> coll_flows;         // its collectives' flows from it
    std::vector<CollFlow> coll_in;            // ... into it (kept only where InterferenceParams::comm_slowdown_receiver counts)
    std::vector<std::pair<int, int>> closed;  // (instance, member) replayed in closed form with flows from this rank
    // Per collective op from its oldest unfinished one on (by its place
    // among the program's collectives): (instance, sequence on its group).
    // Only what is in flight is held, not the whole program's.
    std::deque<std::pair<int32_t, int32_t>> coll;
    int32_t coll_first = 0;  // the place of coll.front()
    Time last_coll_end;      // when its last collective ended (straggler_share)
  };
  void recap(int r);
  std::pair<int32_t, int32_t>& coll_of(int r, int id);
  std::pair<int32_t, int32_t> coll_at(int r, int id) const;  // an unfinished one's, without adding it
  static constexpr int32_t kCollFinished = -2;
  void coll_finished(int r, int id);
  /// The link of rank `from`'s sends to `peer` (added at first use).
  P2pLink& link(int from, int peer);
  /// The instance of call `seq` on `open` (a group's, or a link's sends), made at the first member's arrival.
  int instance(IdWindow<int>& open, int group, int seq, std::span<const int> members);
  /// The channels a collective runs on when the schedule gives none.
  int default_channels() const;
  int channels_of(const Op& op) const { return op.channels > 0 ? op.channels : default_channels(); }
  /// NCCL's model over the topology (NcclParams::nccl_model), made at first use.
  const NcclModel& model() const;
  void arrive(int r, int id);
  [[noreturn]] void mismatch(const CollInst& c);
  void launch(int ci);
  void start_launched(int ci);
  void coll_flow(int ci, int from, int to, double bytes, int peers_at_once, Time protocol_latency);
  const CollInst::Tabled& tabled(CollInst& c, hw::RouteKind kind, bool via_host);
  const NcclTable* framework_pairwise_table(const Op& op, std::span<const int> members) const;
  double phase_link_time(const CollInst& c, TableColl coll, bool nvls);
  /// NVLink SHARP: member m's flow over its GPU's switch port (nvls_route).
  void start_in_switch(int ci);
  RouteUses nvls_route(const CollInst& c, int m);
  void flow_done(int ci, int from, int to, const FlowRecord& rec);
  void try_round(int ci, int m);
  void ring_step(int ci);

  ExecContext& x_;
  Routes& routes_;
  const CopyEngines& copies_;
  OpCompletion& ops_;
  SmShare& sm_;
  NvlinkWake& nvlink_;
  ClosedForms& closed_;
  std::vector<Rank> ranks_;
  mutable std::unique_ptr<NcclModel> model_;
  // Instances are created while a CollInst& is held (parked collectives):
  // storage that never moves.
  BlockVector<CollInst> insts_;
  // When each instance running now started (CollInst::started), by its
  // place among those started: the engine's time never falls, so the lowest
  // place held is the earliest start.
  IdWindow<Time> running_starts_;
  int64_t starts_ = 0;
  std::deque<std::pair<int, uint64_t>> free_insts_;  // (finished instance, the event that finished it)
  std::vector<IdWindow<int>> group_open_;            // per group: its instances in flight by call number
  std::vector<int> coll_flow_slot_;                  // flow id -> index in its rank's coll_flows, or -1
  std::vector<int> coll_in_slot_;                    // flow id -> index in its receiver's coll_in, or -1
  [[nodiscard]] bool receivers_count() const { return x_.p.interference.comm_slowdown_receiver != 1.0; }
  static void swap_remove(std::vector<CollFlow>& list, std::vector<int>& slots, FlowId id);
  /// A flow's cap now: its base over both ends' slowdowns.
  double capped(const CollFlow& f, int from, int to) const;
  std::map<std::tuple<std::vector<int>, int, double>, double> link_times_;  // see phase_link_time
  std::tuple<std::vector<int>, int, double> link_key_;                      // its scratch key
};

}  // namespace osim::exec
