#include "schedule/link_samples.hpp"

#include <algorithm>
#include <limits>

namespace osim {

std::vector<LinkSample> WindowedSamples::take() {
  if (has_last_) place(last_);
  has_last_ = false;
  if (!windows_.empty()) carry_into(std::numeric_limits<int64_t>::max());
  return std::move(kept_);
}

void WindowedSamples::place(const LinkSample& s) {
  if (windows_.empty()) {
    kept_.push_back(s);
    return;
  }
  carry_into(s.time.ps());
  if (in_window(s.time.ps()))
    kept_.push_back(s);
  else
    held_[s.resource] = s;
}

void WindowedSamples::carry_into(int64_t t) {
  const size_t before = next_window_;
  while (next_window_ < windows_.size() && windows_[next_window_].first <= t) ++next_window_;
  if (next_window_ == before) return;
  for (const auto& [res, s] : held_) kept_.push_back(s);
  held_.clear();
}

bool WindowedSamples::in_window(int64_t t) const {
  const auto it = std::upper_bound(windows_.begin(), windows_.end(), t, [](int64_t x, const auto& w) { return x < w.first; });
  return it != windows_.begin() && t < std::prev(it)->second;
}

}  // namespace osim
