// Which traces make one job, and which of their ranges are its steps.
#include "kineto/job.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace osim::kineto {

using namespace trace;

void choose_steps(std::vector<RankTrace>& traces, const std::vector<StepPattern>& patterns, bool given, ImportSummary& sum) {
  const auto& found = traces.front().step_candidates;
  const StepPattern* pick = nullptr;
  std::vector<std::string> others;
  for (const StepPattern& p : patterns) {
    auto it = found.find(p.label);
    if (it == found.end() || it->second.empty()) continue;
    if (!pick)
      pick = &p;
    else
      others.push_back(fmt::format("{} '{}' ranges (--steps '{}')", it->second.size(), p.label, p.regex));
  }
  if (!pick) {
    sum.notes.push_back(given ? fmt::format("no range's name matches --steps '{}': the run is one step", patterns.front().regex)
                              : "no step ranges (ProfilerStep#N, `step N`): the run is one step; mark steps with prof.step() or "
                                "torch.profiler.record_function(\"step N\")");
    return;
  }
  if (!given) {
    sum.steps_from = fmt::format("'{}' ranges, found without --steps", pick->label);
    if (!others.empty()) sum.notes.push_back(fmt::format("other step ranges found: {}; choose with --steps REGEX", fmt::join(others, ", ")));
  }
  for (RankTrace& t : traces) {
    if (auto it = t.step_candidates.find(pick->label); it != t.step_candidates.end()) t.steps = it->second;
    std::sort(t.steps.begin(), t.steps.end());
  }
}

namespace {

// A duration as a person reads it: days, hours, minutes or seconds.
std::string span_text(int64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  return s >= 86400  ? fmt::format("{:.1f} days", s / 86400)
         : s >= 3600 ? fmt::format("{:.1f} hours", s / 3600)
         : s >= 60   ? fmt::format("{:.1f} minutes", s / 60)
                     : fmt::format("{:.3f} s", s);
}

}  // namespace

void check_one_job(std::vector<RankTrace>& traces) {
  const RankTrace* sized = nullptr;
  for (const RankTrace& t : traces) {
    if (t.world <= 0) continue;
    if (sized && t.world != sized->world)
      fail(t.file, fmt::format("distributedInfo.world_size {} where {} says {}: give the traces of one job", t.world, sized->file, sized->world));
    if (!sized) sized = &t;
  }
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const RankTrace& t : traces) base = std::min(base, t.base_ns);
  for (RankTrace& t : traces) {
    const int64_t d = t.base_ns - base;
    if (d == 0) continue;
    for (Activity& a : t.gpu) a.start += d, a.end += d;
    for (Call& c : t.calls) c.ts += d, c.end += d;
    for (RankTrace::Step& st : t.steps) st.start += d, st.end += d;
  }
  // The ranks of one job are profiled over the same steps: they start within seconds.
  constexpr int64_t kApartNs = 600'000'000'000;
  const RankTrace* first = &traces.front();
  for (const RankTrace& t : traces)
    if (t.calls.front().ts < first->calls.front().ts) first = &t;
  for (const RankTrace& t : traces)
    if (const int64_t apart = t.calls.front().ts - first->calls.front().ts; apart > kApartNs)
      fail(t.file,
           fmt::format("it starts {} after {} (its first CUDA call, {}, against {}): the ranks of one job are profiled over the same "
                       "steps, within seconds; give the traces of one run",
                       span_text(apart), first->file, event_at(t.calls.front().index, "CUDA call", t.calls.front().name, us_of(t.calls.front().ts)),
                       event_at(first->calls.front().index, "CUDA call", first->calls.front().name, us_of(first->calls.front().ts))));
}

}  // namespace osim::kineto
