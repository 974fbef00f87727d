// Slot reuse for the engine's, solver's and flow model's pools: indices of
// freed entries are kept in a free list and handed out again before the pool
// grows, so ids stay small and storage is not reallocated per event.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace osim {

/// A growable array whose entries never move: storage comes in blocks of
/// 2^BlockBits entries (one allocation per block, not per entry as a
/// std::deque of large records gives), so references stay valid as it grows.
template <class T, unsigned BlockBits = 10>
class BlockVector {
 public:
  static constexpr size_t kBlock = size_t{1} << BlockBits;
  T& operator[](size_t i) { return blocks_[i >> BlockBits][i & (kBlock - 1)]; }
  const T& operator[](size_t i) const { return blocks_[i >> BlockBits][i & (kBlock - 1)]; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T& emplace_back() {
    if ((size_ >> BlockBits) == blocks_.size()) blocks_.push_back(std::make_unique<T[]>(kBlock));
    return (*this)[size_++];
  }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

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
