// A run's link samples as a trace of some time windows needs them, kept as
// the run makes them: those in a window, and of those between windows only
// each resource's last before the next window (its value when the window
// opens). The trace writer (report/trace.cpp) makes the same choice of the
// full list, so a trace written from the kept samples is byte-identical to
// one written from all of them; memory holds the windows' samples, not the
// run's.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "schedule/run_record.hpp"

namespace osim {

class WindowedSamples {
 public:
  /// `windows`: [from, to) in ps, sorted and disjoint; empty: every sample kept.
  explicit WindowedSamples(std::vector<std::pair<int64_t, int64_t>> windows = {}) : windows_(std::move(windows)) {}

  /// Resource `resource` carries `bytes_per_s` from `t` on. Samples come in
  /// time order; one of the same resource at the same instant as the last
  /// replaces it.
  void add(Time t, int resource, double bytes_per_s) {
    if (has_last_ && last_.time == t && last_.resource == resource) {
      last_.bytes_per_s = bytes_per_s;
      return;
    }
    if (has_last_) place(last_);
    last_ = {t, resource, bytes_per_s};
    has_last_ = true;
  }
  /// The kept samples, in time order (the windows' and those carried into them).
  std::vector<LinkSample> take();

 private:
  void place(const LinkSample& s);
  void carry_into(int64_t t);  // past a window's start: the samples held for it join the kept ones
  bool in_window(int64_t t) const;

  std::vector<std::pair<int64_t, int64_t>> windows_;
  size_t next_window_ = 0;          // the first window no sample has reached
  std::map<int, LinkSample> held_;  // per resource: its last sample outside the windows since the last one reached
  std::vector<LinkSample> kept_;
  LinkSample last_{};  // the latest sample, open to replacement at its instant
  bool has_last_ = false;
};

}  // namespace osim
