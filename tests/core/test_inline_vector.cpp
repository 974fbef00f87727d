// core/inline_vector.hpp: the per-flow and per-variable lists.
#include <doctest/doctest.h>

#include <cstdint>
#include <utility>

#include "core/inline_vector.hpp"
#include "core/units.hpp"

using namespace osim;

namespace {
struct Use16 {  // the solver's Elem: 16 bytes
  double coeff;
  int32_t c;
  uint32_t pos;
  bool operator==(const Use16&) const = default;
};
}  // namespace

TEST_CASE("InlineVector: one word beside its values in place") {
  // A flow's bottleneck list and a solver variable's uses, a million of each a run.
  CHECK(sizeof(InlineVector<std::pair<int32_t, Time>, 1>) == 24);
  CHECK(sizeof(InlineVector<Use16, 6>) == 104);
}

TEST_CASE("InlineVector: values in place, then on the heap, kept in order through copies and moves") {
  InlineVector<Use16, 2> v;
  CHECK(v.empty());
  CHECK(v.capacity() == 2);
  for (uint32_t i = 0; i < 5; ++i) v.push_back(Use16{0.5 * i, static_cast<int32_t>(10 + i), i});
  REQUIRE(v.size() == 5);
  CHECK(v.capacity() == 8);  // 2, 4, 8
  for (uint32_t i = 0; i < 5; ++i) CHECK(v[i] == Use16{0.5 * i, static_cast<int32_t>(10 + i), i});

  InlineVector<Use16, 2> copy = v;  // its own buffer
  copy[0].c = 99;
  CHECK(v[0].c == 10);
  CHECK(copy.size() == 5);
  CHECK(!(copy == v));
  copy[0].c = 10;
  CHECK(copy == v);

  const Use16* buffer = v.data();
  InlineVector<Use16, 2> moved = std::move(v);  // takes the heap buffer
  CHECK(moved.data() == buffer);
  CHECK(moved == copy);

  moved.clear();  // keeps the buffer: a reused slot allocates once
  CHECK(moved.empty());
  CHECK(moved.capacity() == 8);
  moved.emplace_back(1.0, 7, 3u);
  CHECK(moved.data() == buffer);
  CHECK(moved.back() == Use16{1.0, 7, 3});

  InlineVector<Use16, 2> small;
  small.push_back(Use16{2.0, 1, 0});
  moved = small;  // copied into the heap buffer it keeps
  REQUIRE(moved.size() == 1);
  CHECK(moved[0] == Use16{2.0, 1, 0});
  InlineVector<Use16, 2> in_place = std::move(small);  // in place: copied
  CHECK(in_place.capacity() == 2);
  CHECK(in_place[0] == Use16{2.0, 1, 0});
  moved = std::move(in_place);  // frees the heap buffer, back in place
  CHECK(moved.capacity() == 2);
  CHECK(moved[0] == Use16{2.0, 1, 0});
}
