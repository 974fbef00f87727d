// An imported trace's measured copy rates (settings.copy_rates: each kind's
// bytes over its copies' GPU time where the trace was recorded) put over a
// calibration's copy-engine and pageable bandwidths, the part `run` and
// `compare --simulate` share (docs/import-trace.md, "Ask what-ifs").
//
// A pageable copy is staged by the CPU, so its rate is the recorded box's
// host's, and moves from box to box by more than a calibration fitted on
// another box holds; a pinned copy's rate is the copy engine's, stable from
// box to box and what the contention model is calibrated with. Taking the
// pageable rates is therefore `run`'s default on the schedule's own topology
// and `compare --simulate --pageable-rate-from-trace`'s; taking every rate is
// `run --copy-rates-as-traced`.
#pragma once

#include <string>

#include "gpu/executor.hpp"
#include "schedule/schedule.hpp"

namespace osim {

/// The measured fields of `c` from RuntimeSettings::CopyRates::kFields[first]
/// on (h2d_pinned, d2h_pinned, h2d_pageable, d2h_pageable) in place of the
/// calibration's copy-engine and pageable bandwidths; "key rate (was rate)"
/// for each taken. `keep_d2h`: a D2H bandwidth the schedule did not measure
/// keeps the rate it ran at instead of following a new H2D one (an unset D2H
/// field runs at H2D's).
std::string take_measured_rates(CopyParams& p, const RuntimeSettings::CopyRates& c, size_t first, bool keep_d2h);

/// What take_pageable_rates did.
struct PageableRatesTaken {
  enum class State {
    none,            // no measured pageable rate, or no pageable copy to run: nothing to say
    taken,           // `rates` says which ("key rate (was rate)", comma-separated)
    other_topology,  // the run's topology is another box than the recorded one: not taken
  } state = State::none;
  std::string rates;
};

/// A schedule's measured pageable rates in place of the calibration's pageable
/// bandwidth, each direction measured (an unmeasured D2H keeps the rate it
/// had); pinned copies keep the calibration's. Not where `other_topology`
/// (the run's topology is another file than the one the schedule names), nor
/// where no pageable copy is left to run (`--host-memory pinned`).
PageableRatesTaken take_pageable_rates(ModelParams& params, const Schedule& sched, bool other_topology);

/// Whether `given` (a -t path; empty: none) is another topology file than the
/// one the schedule at `schedule_path` names: false where it names none, or
/// one that does not exist (then `given` is the only topology it has).
bool other_topology_than_named(const std::string& given, const std::string& schedule_path, const Schedule& sched);

}  // namespace osim
