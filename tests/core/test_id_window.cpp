// IdWindow: values by an id that mostly rises, in a deque from the lowest id
// held. What its users rely on: a value is found until erased whatever order
// ids leave in, ids below the lowest can still be added, and the window
// spans no more than from the lowest to the highest id held.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>

#include "core/id_window.hpp"

using namespace osim;

TEST_CASE("IdWindow: ids leaving out of order stay found until erased, and the window shrinks to what is held") {
  IdWindow<int> w;
  CHECK(w.empty());
  CHECK(w.find(0) == nullptr);
  for (int id = 10; id < 14; ++id) w.add(id, 100 + id);
  CHECK(w.lowest() == 10);
  CHECK(w.span() == 4);
  w.erase(12);  // a middle one first: a gap, the span unchanged
  CHECK(w.find(12) == nullptr);
  REQUIRE(w.find(13) != nullptr);
  CHECK(*w.find(13) == 113);
  CHECK(w.span() == 4);
  w.erase(10);  // the lowest: the window starts at the next held
  CHECK(w.lowest() == 11);
  CHECK(w.span() == 3);
  w.erase(13);  // the highest: the gap before it goes too
  CHECK(w.span() == 1);
  CHECK(w.size() == 1);
  w.add(7, 107);  // below the lowest
  CHECK(w.lowest() == 7);
  CHECK(w.span() == 5);
  CHECK(*w.find(7) == 107);
  CHECK(*w.find(11) == 111);
  CHECK(w.find(9) == nullptr);
  w.erase(7);
  w.erase(11);
  CHECK(w.empty());
  CHECK(w.span() == 0);
  w.add(1000, 1);  // empty again: the window starts anywhere
  CHECK(w.lowest() == 1000);
  CHECK(w.span() == 1);
  w.add(10, 2);  // an id that left earlier is held again
  CHECK(*w.find(10) == 2);
  CHECK(w.span() == 991);
}

TEST_CASE("IdWindow: random adds and erases agree with a map, the lowest id and the span with it") {
  std::mt19937 rng(82);
  IdWindow<int64_t> w;
  std::map<int64_t, int64_t> ref;
  int64_t next = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto pick = rng() % 8;
    if (pick < 4 || ref.empty()) {  // mostly a rising id, now and then one below (an op dispatched late)
      const int64_t id = pick == 0 && next > 40 ? next - 1 - static_cast<int64_t>(rng() % 40) : next++;
      if (ref.count(id)) continue;
      w.add(id, id * 3 + 1);
      ref[id] = id * 3 + 1;
    } else {
      auto it = ref.begin();
      std::advance(it, static_cast<long>(rng() % std::min<size_t>(ref.size(), pick == 7 ? ref.size() : 3)));
      w.erase(it->first);
      ref.erase(it);
    }
    REQUIRE(w.size() == static_cast<int64_t>(ref.size()));
    REQUIRE(w.empty() == ref.empty());
    if (ref.empty()) {
      REQUIRE(w.span() == 0);
      continue;
    }
    REQUIRE(w.lowest() == ref.begin()->first);
    REQUIRE(w.span() == ref.rbegin()->first - ref.begin()->first + 1);
    for (int probe = 0; probe < 4; ++probe) {
      const int64_t id = ref.begin()->first - 2 + static_cast<int64_t>(rng() % static_cast<unsigned>(w.span() + 4));
      const auto it = ref.find(id);
      const int64_t* got = w.find(id);
      REQUIRE((got != nullptr) == (it != ref.end()));
      if (got) REQUIRE(*got == it->second);
    }
  }
}
