// Copy engines (CopyParams): each GPU has an engine per direction (fewer
// where the topology says so), FIFO; a copy becomes a flow on its route,
// capped at the engine's rate for the host link it crosses (PCIe, or a Grace
// Hopper's NVLink-C2C; pageable: the staging rate), sharing the
// engine with the other direction (copy_bidir_*), a host bridge with other
// GPUs' copies (host_*_aggregate, both ways: host_bidir_aggregate) and, when
// pageable, the host's staging with other GPUs' (pageable_*_aggregate).
#pragma once

#include <array>
#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"

namespace osim::exec {

class Copies final : public CopyEngines {
 public:
  Copies(ExecContext& x, Routes& routes, OpCompletion& ops, SmShare& sm, LinkClaims& claims);
  /// Copy `id` of rank r is dispatched; it starts `handoff` after its engine takes it.
  void queue_copy(int r, int id, Time handoff);
  [[nodiscard]] bool busy(int r, int engine) const override { return ranks_[static_cast<size_t>(r)].ce[engine].busy >= 0; }
  /// Rank r's busy engines, one bit each (H2D, D2H, other).
  [[nodiscard]] uint8_t busy_mask(int r) const {
    const CopyEngine* ce = ranks_[static_cast<size_t>(r)].ce;
    return static_cast<uint8_t>((ce[kH2D].busy >= 0 ? 1 : 0) | (ce[kD2H].busy >= 0 ? 2 : 0) | (ce[kOther].busy >= 0 ? 4 : 0));
  }

 private:
  struct CopyEngine {
    std::deque<std::pair<int, Time>> queue;  // (op id, hand-off latency before its set-up)
    int busy = -1;
  };
  struct Rank {
    CopyEngine ce[3];
  };
  // A limit that follows how many GPUs copy under it at once: a host
  // bridge's per direction (host_h2d_aggregate, host_d2h_aggregate) or both
  // ways (host_bidir_aggregate), the host's on pageable copies
  // (pageable_*_aggregate).
  struct CountedLimit {
    ConstraintId constraint;
    double nominal;  // with fewer than two GPUs (the topology's, or one that never binds)
    const std::vector<Bandwidth>* table;
    std::vector<int> copies_of_rank;        // its copies running now, per rank
    int gpus = 0;                           // ranks with one or more
    bool both_ways = false;                 // a limit on both directions together: binds only while both have copies
    bool per_gpu_beyond = false;            // pageable: beyond the table, each GPU keeps the last entry's share at most
    std::array<int, 2> by_direction{0, 0};  // its copies running now, H2D and D2H
  };
  int engine_for(int r, CopyKind k) const;
  void start_copy(int r, int e);
  void copy_done(int r, int id, int e, const FlowRecord& rec);
  void set_bidir_limit(int r, size_t d);
  // Rank r's engine ceiling for host copies of direction d2h, by the link kind its host route crosses.
  double engine_cap(int r, bool d2h);
  int limit_of(const std::vector<int>& of, ConstraintId c) const { return static_cast<size_t>(c) < of.size() ? of[static_cast<size_t>(c)] : -1; }
  // Calls f(l) for each counted limit a host copy of rank r runs under (no
  // allocation: it runs as every host copy starts and ends).
  template <class F>
  void for_each_counted_limit(int r, const Op& op, F&& f) const;
  int add_counted_limit(double nominal, const std::vector<Bandwidth>* table, int res);
  void copying_under(int l, int r, int delta, bool d2h);

  ExecContext& x_;
  Routes& routes_;
  OpCompletion& ops_;
  SmShare& sm_;
  LinkClaims& claims_;
  std::vector<Rank> ranks_;
  std::multiset<Time> running_starts_;  // when each copy running now started (its flow's start)
  std::vector<CountedLimit> limits_;
  std::vector<int> dma_limit_of_;                 // per constraint (a bridge's from- or to-host): its per-direction limit in limits_, or -1
  std::vector<int> bidir_limit_of_;               // per constraint (either of a bridge's): its both-ways limit in limits_, or -1
  std::array<int, 2> pageable_limit_ = {-1, -1};  // H2D, D2H: the host's pageable limit in limits_, or -1
  // Per rank, per direction (H2D, D2H): the engine's limit that its pinned
  // and pageable copies share, lowered to copy_bidir_factor_for while the
  // other direction runs a pinned copy (bidir_active_); empty = no such
  // effect (factors 1, or no calibrated engine rate).
  std::vector<std::array<ConstraintId, 2>> bidir_;
  std::vector<std::array<int, 2>> bidir_active_;
};

}  // namespace osim::exec
