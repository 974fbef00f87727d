// The schedule IR: its enums' names (to_string) and its lookups by name.
#include "schedule/schedule.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "schedule/schedule_names.hpp"

namespace osim {

using namespace schedule_names;

std::string to_string(OpKind k) { return kOpNames[static_cast<size_t>(k)]; }
std::string to_string(CopyKind k) { return kCopyNames[static_cast<size_t>(k)]; }
std::string to_string(CollKind k) { return kCollNames[static_cast<size_t>(k)]; }
std::string to_string(CollAlgo a) { return kAlgoNames[static_cast<size_t>(a)]; }
std::string to_string(DType d) { return kDtypeNames[static_cast<size_t>(d)]; }
std::string to_string(AttnBackend b) { return kBackendNames[static_cast<size_t>(b)]; }
const std::vector<std::string>& attn_backend_names() { return kBackendNames; }
std::string to_string(MemPart p) { return kPartNames[static_cast<size_t>(p)]; }
std::string to_string(Access a) { return kAccessNames[static_cast<size_t>(a)]; }
const std::vector<std::string>& access_names() { return kAccessNames; }
const std::vector<std::string>& mem_part_names() { return kPartNames; }
std::optional<AttnBackend> attn_backend_of(const std::string& name) {
  const auto it = std::find(kBackendNames.begin(), kBackendNames.end(), name);
  if (it == kBackendNames.end()) return std::nullopt;
  return static_cast<AttnBackend>(it - kBackendNames.begin());
}
double dtype_bytes(DType d) {
  switch (d) {
    case DType::BF16:
    case DType::FP16: return 2;
    case DType::FP32: return 4;
    case DType::FP8: return 1;
  }
  return 2;
}

int Schedule::find_stream(const std::string& n) const {
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].name == n) return static_cast<int>(i);
  return -1;
}
int Schedule::find_group(const std::string& n) const {
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].name == n) return static_cast<int>(i);
  return -1;
}
SourceLocation Schedule::location(int rank, int index) const {
  const auto& ops = *programs[static_cast<size_t>(rank)].ops;
  if (static_cast<size_t>(index) < ops.size() && ops[static_cast<size_t>(index)].line > 0)
    return SourceLocation{file, ops[static_cast<size_t>(index)].line, ops[static_cast<size_t>(index)].column};
  return SourceLocation{fmt::format("schedule '{}' rank {} op {}", name, rank, index), 0, 0};
}

int Schedule::find_event(const std::string& n) const {
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i] == n) return static_cast<int>(i);
  return -1;
}

}  // namespace osim
