// Slot reuse for the engine's, solver's and flow model's pools: indices of
// freed entries are kept in a free list and handed out again before the pool
// grows, so ids stay small and storage is not reallocated per event.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <vector>

namespace osim {

/// Asks the kernel to back [p, p + bytes) with huge pages (Linux
/// transparent huge pages in "madvise" mode; elsewhere a no-op). For large
/// arrays a run fills once: 2 MiB pages fault 512x less often than 4 KiB
/// ones, and a cold run of a large workload spent a fifth of its time in
/// page faults. Call it after reserving and before touching the memory.
void advise_huge_pages(const void* p, size_t bytes);

/// Reserves room for n entries and advises huge pages for it when large
/// (before the entries move in, so the new storage faults in huge pages).
template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  if (n <= v.capacity()) return;
  if (v.empty()) {
    v.reserve(n);
    advise_huge_pages(v.data(), v.capacity() * sizeof(T));
    return;
  }
  std::vector<T> bigger;
  bigger.reserve(n);
  advise_huge_pages(bigger.data(), bigger.capacity() * sizeof(T));
  bigger.insert(bigger.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  v.swap(bigger);
}

/// A growable array whose entries never move: storage comes in blocks of
/// 2^BlockBits entries (one allocation per block, not per entry as a
/// std::deque of large records gives), so references stay valid as it grows.
/// Entries are constructed as they are added, so a block's untouched tail
/// costs no memory; large blocks are backed by huge pages.
template <class T, unsigned BlockBits = 10>
class BlockVector {
 public:
  static constexpr size_t kBlock = size_t{1} << BlockBits;
  // Large blocks start on a huge-page boundary and span whole huge pages
  // (the tail past the last entry is never touched), so all of them can be huge.
  static constexpr bool kLarge = kBlock * sizeof(T) >= (size_t{4} << 20);
  static constexpr std::align_val_t kAlign{kLarge ? std::max(alignof(T), size_t{2} << 20) : alignof(T)};
  static constexpr size_t kBytes = kLarge ? (kBlock * sizeof(T) + (size_t{2} << 20) - 1) / (size_t{2} << 20) * (size_t{2} << 20) : kBlock * sizeof(T);
  BlockVector() = default;
  BlockVector(const BlockVector&) = delete;
  BlockVector& operator=(const BlockVector&) = delete;
  ~BlockVector() {
    for (size_t i = 0; i < size_; ++i) (*this)[i].~T();
    for (T* b : blocks_) ::operator delete(b, kBytes, kAlign);
  }
  T& operator[](size_t i) { return blocks_[i >> BlockBits][i & (kBlock - 1)]; }
  const T& operator[](size_t i) const { return blocks_[i >> BlockBits][i & (kBlock - 1)]; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T& emplace_back() {
    if ((size_ >> BlockBits) == blocks_.size()) {
      void* b = ::operator new(kBytes, kAlign);
      advise_huge_pages(b, kBytes);
      blocks_.push_back(static_cast<T*>(b));
    }
    T* slot = &(*this)[size_];
    ::new (static_cast<void*>(slot)) T();
    ++size_;
    return *slot;
  }

 private:
  std::vector<T*> blocks_;
  size_t size_ = 0;
};

/// Before a push_back: a full, large vector doubles into huge-page-backed storage.
template <class T>
void grow_huge(std::vector<T>& v) {
  if (v.size() == v.capacity() && v.capacity() * sizeof(T) >= (size_t{4} << 20)) reserve_huge(v, 2 * v.capacity());
}

/// Appends a default entry to a vector pool, growing its storage (once it is
/// large) in huge-page-backed steps.
template <class T>
void grow_pool(std::vector<T>& pool) {
  grow_huge(pool);
  pool.emplace_back();
}
template <class T, unsigned B>
void grow_pool(BlockVector<T, B>& pool) {
  pool.emplace_back();
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
  grow_pool(pool);
  return static_cast<Id>(pool.size() - 1);
}

}  // namespace osim
