// Pools and storage helpers of core/slots.hpp.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/slots.hpp"

using namespace osim;

TEST_CASE("BlockVector: entries keep their address and value as it grows, and only built entries are destroyed") {
  static int alive = 0;
  struct Counted {
    std::string s;
    Counted() { ++alive; }
    ~Counted() { --alive; }
  };
  {
    BlockVector<Counted, 2> v;  // blocks of 4, 8, 16
    std::vector<Counted*> where;
    for (int i = 0; i < 21; ++i) {
      Counted& c = v.emplace_back();
      c.s = "entry " + std::to_string(i);
      where.push_back(&c);
    }
    CHECK(v.size() == 21);
    CHECK(alive == 21);  // 3 blocks hold 28 slots; 21 are built
    for (int i = 0; i < 21; ++i) {
      CHECK(&v[static_cast<size_t>(i)] == where[static_cast<size_t>(i)]);
      CHECK(v[static_cast<size_t>(i)].s == "entry " + std::to_string(i));
    }
  }
  CHECK(alive == 0);
}

TEST_CASE("reserve_room and take_slot keep a pool's contents when it moves to new storage") {
  std::vector<std::unique_ptr<int>> owned;  // move-only entries move, not copy
  for (int i = 0; i < 1000; ++i) owned.push_back(std::make_unique<int>(i));
  owned.shrink_to_fit();
  reserve_room(owned, 1001);  // at least doubles: repeated calls stay amortised
  REQUIRE(owned.capacity() == 2000);
  for (int i = 0; i < 1000; ++i) CHECK(*owned[static_cast<size_t>(i)] == i);
  reserve_room(owned, 5000);  // more than double: exactly what is asked
  CHECK(owned.capacity() == 5000);
  reserve_room(owned, 10);  // never shrinks
  CHECK(owned.capacity() == 5000);

  // A full pool doubles when a slot is taken.
  std::vector<double> pool;
  std::vector<int> free_list;
  for (int i = 0; i < (1 << 20); ++i) pool.push_back(i);
  pool.shrink_to_fit();
  const int id = take_slot(free_list, pool);
  CHECK(id == (1 << 20));
  CHECK(pool.capacity() == 2u << 20);
  CHECK(pool[12345] == 12345.0);
  free_list.push_back(7);
  CHECK(take_slot(free_list, pool) == 7);  // freed slots first
}
