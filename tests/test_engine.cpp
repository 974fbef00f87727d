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
