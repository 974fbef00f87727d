// The request's stages as rank 0 ran them: each stage's window, from its
// "stage NAME" marker to its "end of stage NAME" marker on the compute
// stream, and where its time went, from the ops that carry its name (the
// generator labels them "NAME ...", its moves "h2d NAME" / "d2h NAME"):
// kernels, copies in and out, and collectives (a parallel decode's halo
// exchange and gathers). Ops of other work running meanwhile (a DiT's first
// prefetches) are not the stage's. docs/formats/metrics.md "Stages".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "schedule/schedule.hpp"

namespace osim {

inline constexpr const char* kStageMarker = "stage ";              // + the stage's name: it starts
inline constexpr const char* kStageEndMarker = "end of stage ";    // + the stage's name: it ends

struct StageSpan {
  std::string name;
  Time start;
  std::optional<Time> end;  // none until its end marker
  // Its ops' spans [start, end) in picoseconds, by what they did.
  std::vector<std::pair<int64_t, int64_t>> kernels, copies_in, copies_out, exchange;
};

class StageTally {
 public:
  /// One op of rank 0 ran from `start` to `end`; markers in stream order,
  /// each stage's ops after its start marker.
  void add(const Op& op, Time start, Time end);
  [[nodiscard]] bool empty() const { return stages_.empty(); }
  const std::vector<StageSpan>& stages() const { return stages_; }

 private:
  // The open stage whose name `label` carries; nullptr if none.
  StageSpan* owner(const std::string& label);
  std::vector<StageSpan> stages_;
};

/// The length of the union of spans (unordered, overlapping allowed).
int64_t union_length(std::vector<std::pair<int64_t, int64_t>> spans);

}  // namespace osim
