#include "engine.hpp"
#include "core/slots.hpp"

#include <cassert>

namespace osim {

EventId Engine::at(Time t, Callback cb) {
  assert(t >= now_ && "cannot schedule an event in the past");
  const uint32_t slot = take_slot(free_slots_, slots_);
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.armed = true;
  heap_.push(Entry{t.ps(), next_seq_++, slot, s.generation});
  ++live_;
  return EventId{slot, s.generation};
}

bool Engine::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].armed &&
         slots_[id.slot].generation == id.generation;
}

void Engine::cancel(EventId id) {
  if (!pending(id)) return;
  Slot& s = slots_[id.slot];
  s.cb = nullptr;
  s.armed = false;
  ++s.generation;  // the heap entry is now stale
  free_slots_.push_back(id.slot);
  --live_;
}

bool Engine::pop_live(Entry& out) {
  while (!heap_.empty()) {
    out = heap_.top();
    const Slot& s = slots_[out.slot];
    if (s.armed && s.generation == out.generation) return true;
    heap_.pop();  // stale (cancelled)
  }
  return false;
}

bool Engine::try_advance(Time t) {
  assert(t >= now_);
  Entry e{};
  if (pop_live(e) && e.time_ps <= t.ps()) return false;
  now_ = t;
  return true;
}

bool Engine::step() {
  Entry e{};
  if (!pop_live(e)) return false;
  heap_.pop();
  Slot& s = slots_[e.slot];
  Callback cb = std::move(s.cb);
  s.cb = nullptr;
  s.armed = false;
  ++s.generation;
  free_slots_.push_back(e.slot);
  --live_;
  now_ = Time::from_ps(e.time_ps);
  ++processed_;
  cb();
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
