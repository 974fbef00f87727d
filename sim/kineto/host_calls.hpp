// What a trace measured of its host's CUDA calls, as the costs its replay
// takes (settings.host_calls): the median of each kind of call's own time,
// and of how long after the GPU work a blocking call waited for ended the
// call returned (wait_return: the thread's wake-up). Only a kind measured by
// kMinCostCalls calls or more is written; the summary lists the others.
// Internal to the importer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kineto/import.hpp"
#include "schedule/schedule.hpp"

namespace osim::kineto {

// The fewest calls of a kind whose median becomes the replay's cost of that
// kind. A median of three or more is one of the calls with one at least on
// each side: a call that waited unseen (a pageable copy's staging, a
// synchronize whose GPU work the trace does not show) or did first-use work
// cannot be it alone. Of one or two calls it is that call (or the mean of
// both): ResNet-50's two pageable copy calls of 1 ms would replace a 10 us
// call cost. Kinds with fewer keep the calibration's cost.
constexpr size_t kMinCostCalls = 3;

class HostCallSamples {
 public:
  // A kind of call, as settings.host_calls keys them (HostCalls::kFields' order).
  enum Cost { Launch, Copy, Event, Sync, Collective, WaitReturn };
  // The blocking calls whose returns make wait_return, each named in the summary.
  enum Wait { CopyWait, StreamSyncWait, EventSyncWait, DeviceSyncWait };

  /// A call's own host time (ns).
  void cost(Cost k, int64_t ns) { costs_[k].push_back(ns); }
  /// A call that waited for GPU work ending at `work_end` and returned at
  /// `returned` (ns): its return, where it waited (the work ended after the
  /// call began) and returned after it.
  void wait(Wait k, int64_t called, int64_t work_end, int64_t returned);
  /// The medians of the kinds measured by kMinCostCalls calls or more into
  /// `to`; the summary's lines of those and of the others.
  void write(RuntimeSettings::HostCalls& to, ImportSummary& sum) const;
  /// What the replay charges a call of each kind (ns; wait_return: a
  /// blocking call's return after its work) where it runs without a
  /// calibration: the median write() takes, else `model`'s (the model's own
  /// cost), else -1 (not known: its calls keep no difference).
  std::array<int64_t, 6> replay_costs_ns(const RuntimeSettings::HostCalls& model) const;

 private:
  // Every cost's samples, the waits' returns of every kind as WaitReturn's.
  std::array<std::vector<int64_t>, 6> all() const;

  std::array<std::vector<int64_t>, 6> costs_;
  std::array<std::vector<int64_t>, 4> waits_;
};

}  // namespace osim::kineto
