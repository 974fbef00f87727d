// Checks of a schedule's programs that need the whole program: events
// recorded before they are waited on, collectives on groups that hold the
// rank, allocations freed once.
#include <cassert>
#include <map>
#include <set>

#include <fmt/format.h>

#include "schedule/schedule.hpp"

namespace osim {

namespace {
// A rank that shares `first`'s ops: where first has a group or peer by
// role, so must it (the ops were checked with first's), its group holding
// it and its peer another rank. Generated schedules only: parsers resolve roles.
void check_roles(const Schedule& s, const Program& p, [[maybe_unused]] const Program& first) {
  assert(p.group_roles.size() == first.group_roles.size() && p.peer_roles.size() == first.peer_roles.size());
  for (size_t k = 0; k < p.group_roles.size(); ++k) {
    assert((p.group_roles[k] >= 0) == (first.group_roles[k] >= 0));
    if (p.group_roles[k] < 0) continue;
    [[maybe_unused]] const auto& g = s.groups[static_cast<size_t>(p.group_roles[k])].ranks;
    assert(std::find(g.begin(), g.end(), p.rank) != g.end());
  }
  for (size_t k = 0; k < p.peer_roles.size(); ++k) assert((p.peer_roles[k] >= 0) == (first.peer_roles[k] >= 0) && p.peer_roles[k] != p.rank);
}
}  // namespace

void check_schedule(const Schedule& s) {
  const Program* checked = nullptr;
  for (const Program& p : s.programs) {
    if (checked && p.ops == checked->ops) {  // shared with the previous rank: its ops are checked, its roles not
      check_roles(s, p, *checked);
      continue;
    }
    checked = &p;
    std::set<int> recorded;
    std::map<std::string, int> live_dev;
    for (int index = 0; index < static_cast<int>(p.ops->size()); ++index) {
      const Op& op = (*p.ops)[index];
      auto fail = [&](const std::string& msg) { throw InputError(s.location(p.rank, index), fmt::format("rank {}: {}", p.rank, msg)); };
      switch (op.kind) {
        case OpKind::EventRecord: recorded.insert(op.event); break;
        case OpKind::StreamWaitEvent:
        case OpKind::EventSync:
          if (!recorded.count(op.event))
            fail(
                fmt::format("{} on event '{}' before any event_record of it: CUDA would not wait at all. Record the event "
                            "earlier in this rank's program, or remove the wait",
                            to_string(op.kind), s.events[op.event]));
          break;
        case OpKind::Collective:
          if (op.coll == CollKind::Send || op.coll == CollKind::Recv) {
            if (p.peer_of(op) == p.rank) fail("send/recv to itself");
          } else {
            const auto& g = s.groups[static_cast<size_t>(p.group_of(op))].ranks;
            if (std::find(g.begin(), g.end(), p.rank) == g.end())
              fail(fmt::format("collective on group '{}', which does not contain this rank", s.groups[static_cast<size_t>(p.group_of(op))].name));
          }
          break;
        case OpKind::Memcpy:
          if (op.copy == CopyKind::P2P && p.peer_of(op) == p.rank) fail("p2p copy to itself: use kind d2d");
          break;
        case OpKind::Alloc:
          if (op.group != -1) {
            const auto& g = s.groups[static_cast<size_t>(p.group_of(op))].ranks;
            if (std::find(g.begin(), g.end(), p.rank) == g.end())
              fail(fmt::format("NCCL buffers for group '{}', which does not contain this rank", s.groups[static_cast<size_t>(p.group_of(op))].name));
          }
          if (live_dev.count(op.label))
            fail(fmt::format("alloc of tag '{}', which is still allocated (since {})", op.label, s.location(p.rank, live_dev[op.label]).str()));
          live_dev[op.label] = index;
          break;
        case OpKind::Free:
          if (!live_dev.count(op.label)) fail(fmt::format("free of tag '{}', which is not allocated at this point", op.label));
          live_dev.erase(op.label);
          break;
        default: break;
      }
    }
  }
}

}  // namespace osim
