// Deterministic discrete-event engine.
//
// Events are ordered by (time, insertion sequence) in a heap, so two events at
// the same picosecond run in the order they were scheduled, on every platform
// and thread count. Events that run one after another anyway share a heap
// entry: one scheduled at the same instant, with the same callback and
// context, as the last event scheduled at that instant joins its chain
// (symmetric ranks in lockstep schedule thousands of such events at one
// picosecond). Cancellation is lazy: a cancelled event is disarmed at once,
// its slot freed when its chain surfaces. There is no global state: any
// number of engines may live in one process.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "units.hpp"

namespace osim {

struct EventId {
  uint32_t slot = UINT32_MAX;
  uint32_t generation = 0;
  [[nodiscard]] bool valid() const { return slot != UINT32_MAX; }
};

class Engine {
 public:
  using Callback = std::function<void()>;
  /// A plain callback, fn(ctx, arg): what hot paths use (no type erasure,
  /// nothing to construct, move or destroy per event).
  using Fn = void (*)(void* ctx, uint64_t arg);

  /// Schedules `cb` at absolute time `t` (must not be in the past).
  EventId at(Time t, Callback cb);
  EventId at(Time t, Fn fn, void* ctx, uint64_t arg);
  /// Schedules `cb` after `delay` from now.
  EventId after(Time delay, Callback cb) { return at(now_ + delay, std::move(cb)); }
  EventId after(Time delay, Fn fn, void* ctx, uint64_t arg) { return at(now_ + delay, fn, ctx, arg); }
  /// An Fn calling member function M of a C (with `arg` converted to its parameter type).
  template <auto M, class C>
  static void call(void* ctx, uint64_t arg) {
    invoke_member<M>(static_cast<C*>(ctx), arg, M);
  }
  /// Cancels a pending event; cancelling a fired, cancelled or invalid id is a no-op.
  void cancel(EventId id);
  [[nodiscard]] bool pending(EventId id) const;

  [[nodiscard]] Time now() const { return now_; }
  /// Moves the clock to `t` without an event when no live event is due at or
  /// before `t`: exactly what scheduling a callback at `t` and running the
  /// loop would do, minus the heap traffic. False (clock unchanged) otherwise.
  bool try_advance(Time t);
  /// The sequence number the next scheduled event will get: callers that
  /// batch work into one event check that nothing was scheduled in between.
  [[nodiscard]] uint64_t next_seq() const { return next_seq_; }
  /// Runs the next live event; false when none is left.
  bool step();
  /// Runs until no event is left.
  void run();
  /// Runs every event with time <= t, then sets now to t.
  void run_until(Time t);
  [[nodiscard]] uint64_t events_processed() const { return processed_; }
  [[nodiscard]] size_t live_events() const { return live_; }

 private:
  struct Entry {
    int64_t time_ps;
    uint64_t seq;
    uint32_t slot;  // its chain's head
    [[nodiscard]] bool before(const Entry& o) const { return time_ps != o.time_ps ? time_ps < o.time_ps : seq < o.seq; }
  };
  // A 4-ary min-heap on (time, seq): half the depth of a binary heap, and a
  // node's children share a cache line or two; the order is total, so the
  // events come out as from any other heap.
  class Heap {
   public:
    [[nodiscard]] bool empty() const { return v_.empty(); }
    [[nodiscard]] const Entry& top() const { return v_.front(); }
    void push(const Entry& e) {
      size_t i = v_.size();
      v_.push_back(e);
      while (i > 0) {
        const size_t parent = (i - 1) / 4;
        if (!e.before(v_[parent])) break;
        v_[i] = v_[parent];
        i = parent;
      }
      v_[i] = e;
    }
    void pop() {
      const Entry e = v_.back();
      v_.pop_back();
      const size_t n = v_.size();
      if (n == 0) return;
      size_t i = 0;
      for (;;) {
        const size_t first = 4 * i + 1;
        if (first >= n) break;
        size_t least = first;
        const size_t last = std::min(first + 4, n);
        for (size_t c = first + 1; c < last; ++c)
          if (v_[c].before(v_[least])) least = c;
        if (!v_[least].before(e)) break;
        v_[i] = v_[least];
        i = least;
      }
      v_[i] = e;
    }

   private:
    std::vector<Entry> v_;
  };
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  struct Slot {
    Fn fn = nullptr;
    void* ctx = nullptr;
    uint64_t arg = 0;
    uint32_t generation = 0;
    uint32_t next = kNoSlot;  // the next event of its chain
    uint32_t head = kNoSlot;  // its chain's first event, whose heap entry it shares
    uint32_t chain_live = 0;  // the head's: its chain's armed events
    bool armed = false;
  };
  // The chain of the last event scheduled at each of a few recent times
  // (direct-mapped by time; a collision forgets the older time, and nothing
  // joins a chain there after that).
  struct Latest {
    int64_t time_ps = -1;
    uint32_t head = kNoSlot, tail = kNoSlot;  // while still in the heap
  };
  static size_t latest_slot(int64_t ps) { return static_cast<size_t>((static_cast<uint64_t>(ps) * 0x9E3779B97F4A7C15ull) >> 58); }
  bool pop_live(Entry& out);
  void disarm(uint32_t slot);
  void free_chain(uint32_t head);
  static void run_function(void* self, uint64_t index);
  template <auto M, class C, class R, class A>
  static void invoke_member(C* c, uint64_t arg, R (C::*)(A)) {
    (c->*M)(static_cast<A>(arg));
  }
  template <auto M, class C, class R>
  static void invoke_member(C* c, uint64_t, R (C::*)()) {
    (c->*M)();
  }

  Heap heap_;
  std::array<Latest, 64> latest_{};
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Callback> functions_;  // std::function callbacks, by slot of their own
  std::vector<uint32_t> free_functions_;
  Time now_ = Time::zero();
  uint64_t next_seq_ = 0;
  uint32_t running_ = kNoSlot;  // the head of the chain running now
  uint64_t processed_ = 0;
  size_t live_ = 0;
};

}  // namespace osim
