// Slot reuse for the engine's, solver's and flow model's pools: indices of
// freed entries are kept in a free list and handed out again before the pool
// grows, so ids stay small and storage is not reallocated per event.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace osim {

/// A growable array whose entries never move: storage comes in blocks that
/// double in size (2^BaseBits entries, then twice that, ...), one allocation
/// each (not one per entry as a std::deque of large records gives), so
/// references stay valid as it grows, a small run allocates little and a
/// large one few blocks. Entries are constructed as they are added, so a
/// block's untouched tail costs no memory.
template <class T, unsigned BaseBits = 6>
class BlockVector {
 public:
  static constexpr size_t kBase = size_t{1} << BaseBits;
  BlockVector() = default;
  BlockVector(const BlockVector&) = delete;
  BlockVector& operator=(const BlockVector&) = delete;
  ~BlockVector() {
    for (size_t i = 0; i < size_; ++i) (*this)[i].~T();
    for (size_t k = 0; k < blocks_.size(); ++k) ::operator delete (blocks_[k], bytes(k), std::align_val_t{alignof(T)});
  }
  T& operator[](size_t i) { return at(i); }
  const T& operator[](size_t i) const { return const_cast<BlockVector*>(this)->at(i); }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T& emplace_back() {
    const auto [k, off] = locate(size_);
    if (k == blocks_.size()) {
      void* b = ::operator new (bytes(k), std::align_val_t{alignof(T)});
      blocks_.push_back(static_cast<T*>(b));
    }
    T* slot = blocks_[k] + off;
    ::new (static_cast<void*>(slot)) T();
    ++size_;
    return *slot;
  }

 private:
  // Entry i lives in block k = floor(log2(i / base + 1)), at i + base - (base << k).
  static std::pair<size_t, size_t> locate(size_t i) {
    const size_t j = i + kBase;
    const size_t k = static_cast<size_t>(std::bit_width(j)) - 1 - BaseBits;
    return {k, j - (kBase << k)};
  }
  T& at(size_t i) {
    const auto [k, off] = locate(i);
    return blocks_[k][off];
  }
  static size_t bytes(size_t k) { return (kBase << k) * sizeof(T); }

  std::vector<T*> blocks_;
  size_t size_ = 0;
};

/// Room for n entries: grows (at least doubling, so repeated calls stay
/// amortised) only when the capacity is short.
template <class T>
void reserve_room(std::vector<T>& v, size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
}

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
