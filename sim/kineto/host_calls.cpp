#include "kineto/host_calls.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include <fmt/format.h>

namespace osim::kineto {

namespace {

// The median of a non-empty set of nanoseconds, as a Time.
Time median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return Time::from_ps((n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) * 1000);
}

}  // namespace

void HostCallSamples::wait(Wait k, int64_t called, int64_t work_end, int64_t returned) {
  if (work_end > called && returned >= work_end) waits_[k].push_back(returned - work_end);
}

std::array<std::vector<int64_t>, 6> HostCallSamples::all() const {
  auto costs = costs_;
  for (const auto& w : waits_) costs[WaitReturn].insert(costs[WaitReturn].end(), w.begin(), w.end());
  return costs;
}

std::array<int64_t, 6> HostCallSamples::replay_costs_ns(const RuntimeSettings::HostCalls& model) const {
  const auto costs = all();
  std::array<int64_t, 6> out{};
  for (size_t k = 0; k < out.size(); ++k) {
    const auto& own = model.*RuntimeSettings::HostCalls::kFields[k].second;
    out[k] = costs[k].size() >= kMinCostCalls ? median(costs[k]).ps() / 1000 : own ? own->ps() / 1000 : -1;
  }
  return out;
}

void HostCallSamples::write(RuntimeSettings::HostCalls& to, ImportSummary& sum) const {
  using H = RuntimeSettings::HostCalls;
  static_assert(std::tuple_size_v<decltype(H::kFields)> == std::tuple_size_v<decltype(costs_)>);
  const auto costs = all();
  std::string taken, too_few;
  for (size_t k = 0; k < costs.size(); ++k) {
    if (costs[k].empty()) continue;
    const auto& [key, field] = H::kFields[k];
    const size_t n = costs[k].size();
    const Time m = median(costs[k]);
    std::string& line = n >= kMinCostCalls ? taken : too_few;
    line += fmt::format("{}{} {:.1f} us ({})", line.empty() ? "" : ", ", key, m.us(), n);
    if (n >= kMinCostCalls) to.*field = m;
  }
  sum.host_calls = taken;
  sum.host_calls_too_few = too_few;
  std::string by_kind;
  static constexpr std::array<const char*, 4> kWaitNames{"memcpy", "stream_sync", "event_sync", "device_sync"};
  for (size_t k = 0; k < waits_.size(); ++k)
    if (!waits_[k].empty())
      by_kind += fmt::format("{}{} {:.1f} us ({})", by_kind.empty() ? "" : ", ", kWaitNames[k], median(waits_[k]).us(), waits_[k].size());
  sum.wait_returns = by_kind;
}

}  // namespace osim::kineto
