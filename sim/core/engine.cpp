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
  latest_[latest_slot(t.ps())] = Latest{t.ps(), next_seq_};
  heap_.push(Entry{t.ps(), next_seq_++, slot, s.generation});
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

void Engine::release(uint32_t slot) {
  Slot& s = slots_[slot];
  s.armed = false;
  ++s.generation;  // a heap entry for it is now stale
  free_slots_.push_back(slot);
  --live_;
}

bool Engine::pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].armed &&
         slots_[id.slot].generation == id.generation;
}

void Engine::cancel(EventId id) {
  if (!pending(id)) return;
  const Slot& s = slots_[id.slot];
  if (s.fn == &Engine::run_function) {
    functions_[s.arg] = nullptr;
    free_functions_.push_back(static_cast<uint32_t>(s.arg));
  }
  release(id.slot);
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
  const Slot& s = slots_[e.slot];
  const Fn fn = s.fn;
  void* const ctx = s.ctx;
  const uint64_t arg = s.arg;
  release(e.slot);
  now_ = Time::from_ps(e.time_ps);
  ++processed_;
  fn(ctx, arg);
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
