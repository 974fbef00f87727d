// A vector of plain values with room for N in place: what a flow or a solver
// variable keeps per entry, a run holding a million of each. Where
// boost::container::small_vector spends three words beside its N values
// (pointer, size, capacity), this spends one: the heap pointer shares the
// place of the values (used once the N are exceeded), and the size and
// capacity are 32-bit. clear() keeps a heap buffer, so a reused slot
// allocates once.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace osim {

template <class T, uint32_t N>
class InlineVector {
  static_assert(std::is_trivially_copy_constructible_v<T> && std::is_trivially_destructible_v<T>, "plain values only: never destroyed");
  static_assert(N >= 1);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() = default;
  InlineVector(const InlineVector& o) { assign(o); }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) {
      size_ = 0;
      assign(o);
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      if (spilled()) std::free(heap_);
      cap_ = N;
      take(o);
    }
    return *this;
  }
  ~InlineVector() {
    if (spilled()) std::free(heap_);
  }

  [[nodiscard]] uint32_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] uint32_t capacity() const { return cap_; }
  T* data() { return spilled() ? heap_ : std::launder(reinterpret_cast<T*>(in_)); }
  const T* data() const { return spilled() ? heap_ : std::launder(reinterpret_cast<const T*>(in_)); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](uint32_t i) {
    assert(i < size_);
    return data()[i];
  }
  const T& operator[](uint32_t i) const {
    assert(i < size_);
    return data()[i];
  }
  T& back() { return (*this)[size_ - 1]; }
  void clear() { size_ = 0; }
  void push_back(const T& v) {
    if (size_ == cap_) grow();
    ::new (static_cast<void*>(data() + size_)) T(v);
    ++size_;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T{static_cast<A&&>(a)...});
    return back();
  }
  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    if (a.size_ != b.size_) return false;
    for (uint32_t i = 0; i < a.size_; ++i)
      if (!(a.data()[i] == b.data()[i])) return false;
    return true;
  }

 private:
  [[nodiscard]] bool spilled() const { return cap_ > N; }
  void grow() {
    const uint32_t cap = cap_ * 2;
    assert(cap > cap_ && "InlineVector: more than 2^31 entries");
    T* to = static_cast<T*>(std::malloc(sizeof(T) * cap));
    if (to == nullptr) throw std::bad_alloc();
    std::uninitialized_copy_n(data(), size_, to);
    if (spilled()) std::free(heap_);
    heap_ = to;
    cap_ = cap;
  }
  void take(InlineVector& o) {  // *this empty and in place
    if (o.spilled()) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.cap_ = N;
      o.size_ = 0;
      return;
    }
    assign(o);
  }
  void assign(const InlineVector& o) {  // *this empty
    while (cap_ < o.size_) grow();
    std::uninitialized_copy_n(o.data(), o.size_, data());
    size_ = o.size_;
  }

  union {
    alignas(T) unsigned char in_[sizeof(T) * N];  // the values in place, while cap_ == N
    T* heap_;                                     // else where they are
  };
  uint32_t size_ = 0;
  uint32_t cap_ = N;
};

}  // namespace osim
