// Slot reuse for the engine's, solver's and flow model's pools: indices of
// freed entries are kept in a free list and handed out again before the pool
// grows, so ids stay small and storage is not reallocated per event.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace osim {

/// Asks the kernel to back [p, p + bytes) with huge pages (Linux
/// transparent huge pages in "madvise" mode; elsewhere a no-op). For large
/// arrays a run fills once: 2 MiB pages fault 512x less often than 4 KiB
/// ones, and a cold run of a large workload spent a fifth of its time in
/// page faults. Call it after reserving and before touching the memory.
void advise_huge_pages(const void* p, size_t bytes);

/// Reserves room for n entries and advises huge pages for it when large.
template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

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
