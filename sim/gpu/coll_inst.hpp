// One NCCL call in flight: a collective's instance, shared by its group's
// ranks, as Collectives runs it and ClosedForms replays it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine.hpp"
#include "schedule/schedule.hpp"

namespace osim::exec {

struct ClosedForm;

struct CollInst {
  const Op* op = nullptr;  // the first arrival's op (all must match)
  int group = -1;
  int seq = 0;
  std::vector<int> members;
  std::vector<int> gops;
  int arrived = 0;
  int finished = 0;  // members done
  bool launched = false;
  Time started;           // when its flows began to start: each has its first byte at or after it
  int64_t start_no = -1;  // its place among the instances started (Collectives' running_starts_)
  bool nvlink = false;    // moves >= nvlink_wake_min_bytes over NVLink, where an NVLink effect is calibrated
  double wire = 0;
  int channels = 0;
  std::vector<int> outstanding;
  std::vector<char> member_done;
  int step = 0, steps = 0, step_left = 0;
  std::vector<std::vector<int>> partner;  // pairwise: [round][member] -> member or -1
  std::vector<int> round;
  std::vector<char> in_round;
  std::vector<int> round_left;
  bool in_switch = false;  // NVLink SHARP: a flow a member over its GPU's switch port, step_left of them running
  // A measured table's rate and latency for this collective, per transport
  // inside a host (0: peer-to-peer, 1: through host memory); rate 0 = none fits.
  struct Tabled {
    bool looked = false;
    double rate = 0;  // bytes/s of one flow
    bool nvls = false;  // NCCL's model chose NVLS: the switch reduces (Collectives::start_in_switch)
    Time latency;
  };
  Tabled tabled[2];
  // Replayed in closed form while set.
  const ClosedForm* closed = nullptr;
  Time t0;                // when its flows started
  size_t next_group = 0;  // the first of closed->groups not replayed yet
  EventId closed_ev;      // that group's event
};

/// An NCCL all-to-all's flows among U members, (from, to), in the order its launch starts them.
template <class F>
void for_each_a2a_flow(int U, F&& f) {
  for (int i = 0; i < U; ++i)
    for (int k = 1; k < U; ++k) f(i, (i + k) % U);
}

}  // namespace osim::exec
