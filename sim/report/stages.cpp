// The request's stages in the reports: per stage its window, where its time
// went and its peak VRAM (metrics.json "stages", the summary's stage table,
// the trace's request track), and the request's end-to-end latency, what
// users report as seconds per video (docs/formats/metrics.md "Stages").
#include <algorithm>

#include <fmt/format.h>

#include "report/metrics.hpp"

namespace osim {

std::vector<StageMetrics> stage_metrics(const StageTally& tally, const RunRecord& r) {
  std::vector<StageMetrics> out;
  const std::vector<StagePeak> none;
  const auto& peaks = r.ranks.empty() ? none : r.ranks[0].stage_peaks;
  for (size_t i = 0; i < tally.stages().size(); ++i) {
    const StageSpan& st = tally.stages()[i];
    StageMetrics sm;
    sm.name = st.name;
    sm.start = st.start;
    sm.end = st.end.value_or(r.ranks.empty() ? st.start : r.ranks[0].end);
    sm.compute = Time::from_ps(union_length(st.kernels));
    sm.copy_in = Time::from_ps(union_length(st.copies_in));
    sm.copy_out = Time::from_ps(union_length(st.copies_out));
    // Its collectives' time with none of its kernels running (a halo's
    // receive is posted early: the wait for the peer under the kernels is not exposed).
    std::vector<std::pair<int64_t, int64_t>> busy = st.kernels;
    busy.insert(busy.end(), st.exchange.begin(), st.exchange.end());
    sm.exchange = Time::from_ps(union_length(std::move(busy))) - sm.compute;
    std::vector<std::pair<int64_t, int64_t>> all = st.kernels;
    for (const auto* v : {&st.copies_in, &st.copies_out, &st.exchange}) all.insert(all.end(), v->begin(), v->end());
    sm.other = std::max(Time::zero(), sm.end - sm.start - Time::from_ps(union_length(std::move(all))));
    if (i < peaks.size() && peaks[i].name == st.name) {
      sm.peak_vram = peaks[i].vram;
      sm.peak_parts = peaks[i].parts;
    }
    out.push_back(std::move(sm));
  }
  return out;
}

Time request_steps_time(const Metrics& m) { return m.steps.empty() ? Time::zero() : m.steps.back().end - m.steps.front().start; }

Time request_stages_time(const Metrics& m) {
  Time t;
  for (const StageMetrics& st : m.stages) t += st.end - st.start;
  return t;
}

void stages_json(nlohmann::ordered_json& j, const Metrics& m) {
  if (m.stages.empty()) return;
  j["request"] = {{"latency_s", m.makespan.s()}, {"stages_s", request_stages_time(m).s()}, {"steps_s", request_steps_time(m).s()}};
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageMetrics& st : m.stages)
    stages.push_back({{"name", st.name},
                      {"start_s", st.start.s()},
                      {"end_s", st.end.s()},
                      {"time_s", (st.end - st.start).s()},
                      {"compute_s", st.compute.s()},
                      {"copy_in_s", st.copy_in.s()},
                      {"copy_out_s", st.copy_out.s()},
                      {"exchange_s", st.exchange.s()},
                      {"other_s", st.other.s()},
                      {"peak_vram_bytes", st.peak_vram ? nlohmann::ordered_json(*st.peak_vram) : nlohmann::ordered_json()}});
  j["stages"] = stages;
}

std::string format_stages(const Metrics& m) {
  if (m.stages.empty()) return "";
  std::string out = fmt::format("  request {} end to end: stages {}, DiT steps {}\n", format_time(m.makespan), format_time(request_stages_time(m)),
                                format_time(request_steps_time(m)));
  // peak VRAM as wide as the others: "not recorded" is 12 characters.
  out += fmt::format("  {:<16} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "stage", "start", "time", "compute", "copy in", "copy out",
                     "exchange", "other", "peak VRAM");
  for (const StageMetrics& st : m.stages)
    out += fmt::format("  {:<16} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", st.name, format_time(st.start),
                       format_time(st.end - st.start), format_time(st.compute), format_time(st.copy_in), format_time(st.copy_out),
                       format_time(st.exchange), format_time(st.other),
                       st.peak_vram ? format_bytes(static_cast<double>(*st.peak_vram)) : "not recorded");
  return out;
}

std::vector<RequestSlice> request_slices(const Schedule& s, const RunRecord& r) {
  if (r.ops.empty()) return {};
  const int cs = std::max(0, s.find_stream("compute"));
  StageTally tally;
  std::optional<Time> steps_start, steps_end;
  for (const OpRecord& rec : r.ops[0]) {
    const Op& op = *rec.op;
    if (op.kind != OpKind::Marker || op.stream != cs || !rec.ran) continue;
    tally.add(op, rec.start, rec.end);
    if (!steps_start && op.label.rfind("step ", 0) == 0) steps_start = rec.start;
    if (op.label == kStepsEndMarker) steps_end = rec.start;
  }
  std::vector<RequestSlice> out;
  if (tally.empty()) return out;
  for (const StageSpan& st : tally.stages()) out.push_back({st.name, st.start, st.end.value_or(r.ranks[0].end)});
  if (steps_start) out.push_back({"DiT steps", *steps_start, steps_end.value_or(r.ranks[0].end)});
  std::stable_sort(out.begin(), out.end(), [](const RequestSlice& a, const RequestSlice& b) { return a.start < b.start; });
  return out;
}

}  // namespace osim
