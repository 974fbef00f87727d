#include "engine.hpp"
#include "core/slots.hpp"

#include <cassert>

namespace osim {

EventId Engine::at(Time t, Fn fn, void* ctx, uint64_t arg) {
  assert(t >= now_ && "cannot schedule an event in the past");
  const uint32_t slot = take_slot(free_slots_, slots_);
  Slot& s = slots_[slot];
  s.fn = fn;
  s.ctx = ctx;
  s.arg = arg;
  s.armed = true;
  s.next = kNoSlot;
  Latest& l = latest_[latest_slot(t.ps())];
  if (l.time_ps == t.ps() && l.tail != kNoSlot && slots_[l.tail].fn == fn && slots_[l.tail].ctx == ctx) {
    // Right behind the last event at t, with its callback: it joins the chain.
    slots_[l.tail].next = slot;
    s.head = l.head;
    ++slots_[l.head].chain_live;
    l.tail = slot;
  } else {
    s.head = slot;
    s.chain_live = 1;
    heap_.push(Entry{t.ps(), next_seq_, slot});
    l.time_ps = t.ps();
    l.head = l.tail = slot;
  }
  ++next_seq_;
  ++live_;
  return EventId{slot, s.generation};
}

EventId Engine::at(Time t, Callback cb) {
  const uint32_t f = take_slot(free_functions_, functions_);
  functions_[f] = std::move(cb);
  return at(t, &Engine::run_function, this, f);
}

void Engine::run_function(void* self, uint64_t index) {
  Engine& e = *static_cast<Engine*>(self);
  Callback cb = std::move(e.functions_[index]);
  e.functions_[index] = nullptr;
  e.free_functions_.push_back(static_cast<uint32_t>(index));
  cb();
}

// No longer pending; its slot stays in its chain until the chain surfaces.
void Engine::disarm(uint32_t slot) {
  Slot& s = slots_[slot];
  s.armed = false;
  ++s.generation;  // its EventId is now stale
  --slots_[s.head].chain_live;
  --live_;
}

void Engine::free_chain(uint32_t head) {
  for (uint32_t i = head; i != kNoSlot; i = slots_[i].next) free_slots_.push_back(i);
}

bool Engine::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].armed && slots_[id.slot].generation == id.generation;
}

void Engine::cancel(EventId id) {
  if (!pending(id)) return;
  const Slot& s = slots_[id.slot];
  if (s.fn == &Engine::run_function) {
    functions_[s.arg] = nullptr;
    free_functions_.push_back(static_cast<uint32_t>(s.arg));
  }
  disarm(id.slot);
}

// The earliest chain with an armed event; chains cancelled whole are dropped.
bool Engine::pop_live(Entry& out) {
  while (!heap_.empty()) {
    out = heap_.top();
    if (slots_[out.slot].chain_live > 0) return true;
    heap_.pop();
    Latest& l = latest_[latest_slot(out.time_ps)];
    if (l.head == out.slot) l.head = l.tail = kNoSlot;
    free_chain(out.slot);
  }
  return false;
}

bool Engine::try_advance(Time t) {
  assert(t >= now_);
  // Events of the running chain still to run are due now.
  if (running_ != kNoSlot && slots_[running_].chain_live > 0) return false;
  Entry e{};
  if (pop_live(e) && e.time_ps <= t.ps()) return false;
  now_ = t;
  return true;
}

bool Engine::step() {
  Entry e{};
  if (!pop_live(e)) return false;
  heap_.pop();
  Latest& l = latest_[latest_slot(e.time_ps)];
  if (l.head == e.slot) l.head = l.tail = kNoSlot;  // nothing joins a chain that runs
  now_ = Time::from_ps(e.time_ps);
  const uint32_t outer = running_;
  running_ = e.slot;
  for (uint32_t i = e.slot; i != kNoSlot;) {
    const Slot& s = slots_[i];
    const uint32_t next = s.next;
    if (s.armed) {
      const Fn fn = s.fn;
      void* const ctx = s.ctx;
      const uint64_t arg = s.arg;
      disarm(i);
      ++processed_;
      fn(ctx, arg);
    }
    // The head holds the chain's count until the chain is done.
    if (i != e.slot) free_slots_.push_back(i);
    i = next;
  }
  running_ = outer;
  free_slots_.push_back(e.slot);
  return true;
}

void Engine::run() {
  while (step()) {
  }
}

void Engine::run_until(Time t) {
  Entry e{};
  while (pop_live(e) && e.time_ps <= t.ps()) step();
  if (t > now_) now_ = t;
}

}  // namespace osim
