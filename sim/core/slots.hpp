// Slot reuse for the engine's, solver's and flow model's pools: indices of
// freed entries are kept in a free list and handed out again before the pool
// grows, so ids stay small and storage is not reallocated per event.
#pragma once

#include <vector>

namespace osim {

/// A free index of `pool` (the most recently freed), or a new default-constructed
/// entry appended to it. The caller resets the entry's contents.
template <class Id, class Pool>
Id take_slot(std::vector<Id>& free_list, Pool& pool) {
  if (!free_list.empty()) {
    const Id id = free_list.back();
    free_list.pop_back();
    return id;
  }
  pool.emplace_back();
  return static_cast<Id>(pool.size() - 1);
}

}  // namespace osim
