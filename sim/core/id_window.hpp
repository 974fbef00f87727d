// Values keyed by an id that mostly rises and is held briefly: a collective's
// sequence number on its group or pair, a mirrored op's id. The ids held lie
// in a window from the lowest to the highest, kept as one deque of slots
// indexed by id - lowest, so a lookup is an index rather than a hash, and
// adding and removing allocate nothing per entry. An id below the lowest is
// added at the front; the slots outside the lowest and highest held are
// dropped, so the window spans only what is held (and the gaps between).
#pragma once

#include <cassert>
#include <cstdint>
#include <deque>
#include <utility>

namespace osim {

template <class T>
class IdWindow {
 public:
  /// The value held for id, or null.
  T* find(int64_t id) {
    const int64_t i = id - lowest_;
    if (i < 0 || i >= static_cast<int64_t>(slots_.size())) return nullptr;
    Slot& s = slots_[static_cast<size_t>(i)];
    return s.held ? &s.value : nullptr;
  }
  /// Holds v for id (which must not be held); returns it, valid until the
  /// window next changes.
  T& add(int64_t id, T v) {
    if (slots_.empty()) lowest_ = id;
    while (id < lowest_) {
      slots_.emplace_front();
      --lowest_;
    }
    while (id - lowest_ >= static_cast<int64_t>(slots_.size())) slots_.emplace_back();
    Slot& s = slots_[static_cast<size_t>(id - lowest_)];
    assert(!s.held && "an id held twice");
    s.value = std::move(v);
    s.held = true;
    ++held_;
    return s.value;
  }
  /// Stops holding id (which must be held).
  void erase(int64_t id) {
    Slot& s = slots_[static_cast<size_t>(id - lowest_)];
    assert(s.held);
    s.held = false;
    --held_;
    while (!slots_.empty() && !slots_.front().held) {
      slots_.pop_front();
      ++lowest_;
    }
    while (!slots_.empty() && !slots_.back().held) slots_.pop_back();
  }
  [[nodiscard]] bool empty() const { return held_ == 0; }
  [[nodiscard]] int64_t size() const { return held_; }
  /// The lowest id held (the window must not be empty).
  [[nodiscard]] int64_t lowest() const {
    assert(!empty());
    return lowest_;
  }
  /// The value of the lowest id held (the window must not be empty).
  [[nodiscard]] const T& front() const {
    assert(!empty());
    return slots_.front().value;
  }
  /// Slots kept, held or not (what the window spans).
  [[nodiscard]] int64_t span() const { return static_cast<int64_t>(slots_.size()); }

 private:
  struct Slot {
    T value{};
    bool held = false;
  };
  std::deque<Slot> slots_;
  int64_t lowest_ = 0;  // the id of slots_.front()
  int64_t held_ = 0;
};

}  // namespace osim
