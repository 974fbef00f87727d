// A growing array whose front can be dropped: what the executor keeps per op
// of a program generated as it runs (only the ops still in flight). Items
// live in fixed chunks of 4,096 that never move, so a reference stays valid
// until its chunk is dropped; an item is known by its place since the start.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace osim {

template <class T>
class Window {
 public:
  static constexpr int kShift = 12;
  static constexpr int64_t kChunk = int64_t{1} << kShift;

  T& operator[](int64_t i) {
    assert(i >= begin() && i < end_);
    return chunks_[static_cast<size_t>((i >> kShift) - first_chunk_)][static_cast<size_t>(i & (kChunk - 1))];
  }
  const T& operator[](int64_t i) const {
    assert(i >= begin() && i < end_);
    return chunks_[static_cast<size_t>((i >> kShift) - first_chunk_)][static_cast<size_t>(i & (kChunk - 1))];
  }
  /// The first place held (its chunk's start) and one past the last.
  [[nodiscard]] int64_t begin() const { return first_chunk_ << kShift; }
  [[nodiscard]] int64_t end() const { return end_; }
  [[nodiscard]] bool empty() const { return end_ == 0; }

  void push_back(T v) {
    if ((end_ & (kChunk - 1)) == 0) chunks_.push_back(std::make_unique<T[]>(static_cast<size_t>(kChunk)));
    chunks_.back()[static_cast<size_t>(end_ & (kChunk - 1))] = std::move(v);
    ++end_;
  }
  /// Grows to n items, the new ones value-initialised (zero for numbers).
  void grow_to(int64_t n) {
    while (end_ < n) {
      if ((end_ & (kChunk - 1)) == 0) chunks_.push_back(std::make_unique<T[]>(static_cast<size_t>(kChunk)));
      end_ = std::min(n, (end_ | (kChunk - 1)) + 1);
    }
  }
  /// Frees the chunks that lie wholly before place i.
  void drop_before(int64_t i) {
    const int64_t keep_from = std::min(i, end_) >> kShift;
    if (keep_from <= first_chunk_) return;
    chunks_.erase(chunks_.begin(), chunks_.begin() + (keep_from - first_chunk_));
    first_chunk_ = keep_from;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  int64_t first_chunk_ = 0, end_ = 0;
};

}  // namespace osim
