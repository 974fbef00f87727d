#include "schedule/stage_spans.hpp"

#include <algorithm>
#include <string_view>

namespace osim {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `label` is `name` or begins with `name` and a space.
bool names(std::string_view label, std::string_view name) {
  return starts_with(label, name) && (label.size() == name.size() || label[name.size()] == ' ');
}

}  // namespace

StageSpan* StageTally::owner(const std::string& label) {
  std::string_view l = label;
  if (starts_with(l, "h2d ") || starts_with(l, "d2h ")) l.remove_prefix(4);
  for (StageSpan& st : stages_)
    if (!st.end && (names(label, st.name) || names(l, st.name))) return &st;
  return nullptr;
}

void StageTally::add(const Op& op, Time start, Time end) {
  if (op.kind == OpKind::Marker) {
    if (starts_with(op.label, kStageMarker))
      stages_.push_back(StageSpan{op.label.substr(std::string_view(kStageMarker).size()), start, std::nullopt, {}, {}, {}, {}});
    else if (starts_with(op.label, kStageEndMarker)) {
      const std::string name = op.label.substr(std::string_view(kStageEndMarker).size());
      for (auto it = stages_.rbegin(); it != stages_.rend(); ++it)
        if (it->name == name && !it->end) {
          it->end = start;
          break;
        }
    }
    return;
  }
  if (stages_.empty() || op.label.empty() || end <= start) return;
  StageSpan* st = owner(op.label);
  if (!st) return;
  const std::pair<int64_t, int64_t> span{start.ps(), end.ps()};
  switch (op.kind) {
    case OpKind::Kernel: st->kernels.push_back(span); break;
    case OpKind::Memcpy: (op.copy == CopyKind::D2H ? st->copies_out : st->copies_in).push_back(span); break;
    case OpKind::Collective: st->exchange.push_back(span); break;
    default: break;
  }
}

int64_t union_length(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [a, b] : spans) {
    if (open && a <= hi) {
      hi = std::max(hi, b);
      continue;
    }
    if (open) total += hi - lo;
    lo = a, hi = b, open = true;
  }
  if (open) total += hi - lo;
  return total;
}

}  // namespace osim
