// Which traces make one job, and which of their ranges are its steps:
// the checks and choices import_traces makes before building a schedule.
#pragma once

#include <vector>

#include "kineto/import.hpp"
#include "kineto/trace.hpp"

namespace osim::kineto {

/// The step ranges: those of the first pattern the first trace has ranges
/// for (the patterns in order of preference), on every trace; the summary
/// says which, and lists the other patterns that matched.
void choose_steps(std::vector<trace::RankTrace>& traces, const std::vector<trace::StepPattern>& patterns, bool given, ImportSummary& sum);

/// The traces are of one job: one world size, recorded together (InputError
/// naming the file otherwise). Their clocks are put on one base
/// (baseTimeNanoseconds) first.
void check_one_job(std::vector<trace::RankTrace>& traces);

}  // namespace osim::kineto
