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

TEST_CASE("cancellation is lazy and frees the slot when its entry surfaces") {
  Engine e;
  int fired = 0;
  EventId a = e.at(Time::from_ns(10), [&] { fired += 1; });
  EventId b = e.at(Time::from_ns(10), [&] { fired += 10; });
  CHECK(e.pending(a));
  e.cancel(a);
  CHECK_FALSE(e.pending(a));
  e.cancel(a);  // twice: no-op
  CHECK(e.live_events() == 1);
  EventId c = e.at(Time::from_ns(30), [&] { fired += 100; });
  CHECK(c.slot != a.slot);  // a's slot is still held by its heap entry
  e.run_until(Time::from_ns(20));
  CHECK(fired == 10);
  CHECK(e.now() == Time::from_ns(20));
  CHECK_FALSE(e.pending(b));
  // Now freed: the next event takes one of the two slots, and the old ids stay stale.
  EventId d = e.at(Time::from_ns(40), [&] { fired += 1000; });
  CHECK((d.slot == a.slot || d.slot == b.slot));
  CHECK_FALSE(e.pending(a));
  CHECK(e.pending(d));
  e.run();
  CHECK(fired == 1110);
  CHECK(e.live_events() == 0);
}

namespace {
struct Log {
  std::string text;
  Engine* engine = nullptr;
  void a(uint64_t x) { text += "a" + std::to_string(x); }
  void b(uint64_t x) { text += "b" + std::to_string(x); }
  // Notes whether the clock could jump 1 ns ahead from inside the event.
  void probe(uint64_t x) { text += "p" + std::to_string(x) + (engine->try_advance(engine->now() + Time::from_ns(1)) ? "+" : "-"); }
};
}  // namespace

TEST_CASE("events at one instant with one callback share a heap entry and run in the order scheduled") {
  Engine e;
  Log log;
  log.engine = &e;
  const auto a = &Engine::call<&Log::a, Log>;
  const auto b = &Engine::call<&Log::b, Log>;
  e.at(Time::from_ns(10), a, &log, 1);
  const EventId a2 = e.at(Time::from_ns(10), a, &log, 2);
  e.at(Time::from_ns(10), a, &log, 3);
  e.at(Time::from_ns(5), b, &log, 0);  // another time: the chain at 10 ns goes on
  e.at(Time::from_ns(10), a, &log, 4);
  e.at(Time::from_ns(10), b, &log, 5);  // another callback: a new entry after the chain
  e.at(Time::from_ns(10), a, &log, 6);  // and a new chain after it
  e.cancel(a2);
  e.run();
  CHECK(log.text == "b0a1a3a4b5a6");
  CHECK(e.events_processed() == 6);
  CHECK(e.live_events() == 0);
}

TEST_CASE("inside a chain the clock cannot move past its events still to run, nor can a cancelled chain stop it") {
  Engine e;
  Log log;
  log.engine = &e;
  const auto probe = &Engine::call<&Log::probe, Log>;
  e.at(Time::from_ns(10), probe, &log, 1);
  e.at(Time::from_ns(10), probe, &log, 2);
  const EventId gone = e.at(Time::from_ns(10), probe, &log, 3);
  e.cancel(gone);  // the last one cancelled: the second may move on
  const EventId later = e.at(Time::from_ns(50), probe, &log, 4);
  e.cancel(later);  // a chain cancelled whole holds nothing up
  e.run();
  CHECK(log.text == "p1-p2+");
  CHECK(e.now() == Time::from_ns(11));
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
  CHECK(e.try_advance(Time::from_us(5)));  // nothing due by 5 us
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
