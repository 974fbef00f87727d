// Building a schedule in code: streams, events and groups declared once, ops
// from their constructors, shared programs, and the parser's checks.
#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "schedule/builder.hpp"

using namespace osim;

TEST_CASE("a built schedule is what its YAML would parse to, checked") {
  ScheduleBuilder b("built", 2);
  const int compute = b.stream("compute"), copy = b.stream("copy", 1);
  CHECK(b.stream("compute") == compute);  // declared once
  const int ev = b.event("w0");
  CHECK(b.event("w0") == ev);
  const int world = b.group("world", {0, 1});
  b.add(0, ops::alloc("w0", 1 << 20));
  b.add(0, ops::copy(copy, CopyKind::H2D, 1 << 20, HostMem::Pinned, true, "h2d w0"));
  b.add(0, ops::record(copy, ev));
  b.add(0, ops::wait_event(compute, ev));
  b.add(0, ops::gemm(compute, 4096, 4096, 4096, DType::BF16, "mm"));
  b.add(0, ops::collective(compute, CollKind::AllToAll, world, 1 << 20));
  b.add(0, ops::free("w0"));
  b.share_program(1, 0);
  const Schedule s = b.build();
  CHECK(s.ranks() == 2);
  CHECK(s.programs[1].ops == s.programs[0].ops);  // shared, not copied
  CHECK(s.streams[1].priority == 1);
  const Schedule back = parse_schedule_string(to_yaml(s), "back");
  CHECK(to_yaml(back) == to_yaml(s));
  CHECK((*back.programs[0].ops)[4].gemm->k == 4096);
  // The parser's checks: an event waited on before any record is refused.
  ScheduleBuilder bad("bad", 1);
  const int st = bad.stream("s");
  const int e = bad.event("never");
  bad.add(0, ops::wait_event(st, e));
  CHECK_THROWS_AS(bad.build(), InputError);
}
