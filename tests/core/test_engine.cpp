#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/engine.hpp"

using namespace osim;

TEST_CASE("events run in (time, insertion) order") {
  Engine e;
  std::string log;
  e.at(Time::from_ns(20), [&] { log += "c"; });
  e.at(Time::from_ns(10), [&] { log += "a"; });
  e.at(Time::from_ns(10), [&] { log += "b"; });  // same time: after "a"
  e.at(Time::from_ns(5), [&] {
    log += "0";
    e.after(Time::from_ns(5), [&] { log += "B"; });  // t=10, inserted last among t=10
  });
  e.run();
  CHECK(log == "0abBc");
  CHECK(e.now() == Time::from_ns(20));
  CHECK(e.events_processed() == 5);
}

TEST_CASE("cancellation is lazy and frees the slot") {
  Engine e;
  int fired = 0;
  EventId a = e.at(Time::from_ns(10), [&] { fired += 1; });
  EventId b = e.at(Time::from_ns(10), [&] { fired += 10; });
  CHECK(e.pending(a));
  e.cancel(a);
  CHECK_FALSE(e.pending(a));
  e.cancel(a);  // twice: no-op
  // The freed slot is reused; the stale heap entry must not fire the new event early.
  EventId c = e.at(Time::from_ns(30), [&] { fired += 100; });
  CHECK(c.slot == a.slot);
  e.run_until(Time::from_ns(20));
  CHECK(fired == 10);
  CHECK(e.now() == Time::from_ns(20));
  CHECK_FALSE(e.pending(b));
  e.run();
  CHECK(fired == 110);
  CHECK(e.live_events() == 0);
}

TEST_CASE("two engines in one process are independent") {
  Engine e1, e2;
  int x = 0, y = 0;
  e1.at(Time::from_us(1), [&] { x = 1; });
  e2.at(Time::from_us(2), [&] { y = 2; });
  e1.run();
  CHECK(x == 1);
  CHECK(y == 0);
  CHECK(e2.now() == Time::zero());
  e2.run();
  CHECK(y == 2);
  CHECK(e1.now() == Time::from_us(1));
}

TEST_CASE("try_advance moves the clock only when nothing is due first") {
  Engine e;
  std::vector<int> order;
  e.at(Time::from_us(10), [&] { order.push_back(1); });
  CHECK(e.try_advance(Time::from_us(5)));    // nothing due by 5 us
  CHECK(e.now() == Time::from_us(5));
  CHECK_FALSE(e.try_advance(Time::from_us(10)));  // the event at 10 us runs first
  CHECK(e.now() == Time::from_us(5));
  e.run();
  CHECK(order == std::vector<int>{1});
  CHECK(e.try_advance(Time::from_us(12)));
  CHECK(e.now() == Time::from_us(12));
}

namespace {
struct Recorder {
  std::string log;
  void note(int x) { log += std::to_string(x); }
  void tick() { log += "t"; }
};
}  // namespace

TEST_CASE("plain callbacks and std::function callbacks share one order, and both cancel") {
  Engine e;
  Recorder rec;
  auto note = &Engine::call<&Recorder::note, Recorder>;
  e.at(Time::from_ns(10), note, &rec, 1);
  e.at(Time::from_ns(10), [&] { rec.log += "f"; });
  e.at(Time::from_ns(5), &Engine::call<&Recorder::tick, Recorder>, &rec, 0);
  const EventId gone = e.at(Time::from_ns(7), note, &rec, 9);
  const EventId gone_too = e.at(Time::from_ns(7), [&] { rec.log += "X"; });
  e.at(Time::from_ns(10), note, &rec, 2);
  e.cancel(gone);
  e.cancel(gone_too);
  // A cancelled std::function frees its callback slot: the next one reuses it.
  e.at(Time::from_ns(12), [&] { rec.log += "g"; });
  e.run();
  CHECK(rec.log == "t1f2g");
  CHECK(e.live_events() == 0);
  CHECK(e.events_processed() == 5);
}

TEST_CASE("last_at: an event is the last one scheduled at its time until another is scheduled at that time") {
  Engine e;
  const uint64_t first = e.next_seq();
  e.at(Time::from_us(10), [] {});
  CHECK(e.last_at(Time::from_us(10), first));
  e.at(Time::from_us(20), [] {});  // another time: still the last at 10 us
  CHECK(e.last_at(Time::from_us(10), first));
  CHECK_FALSE(e.last_at(Time::from_us(30), first));  // nothing at 30 us
  const uint64_t second = e.next_seq();
  e.at(Time::from_us(10), [] {});
  CHECK_FALSE(e.last_at(Time::from_us(10), first));
  CHECK(e.last_at(Time::from_us(10), second));
}
