#include <doctest/doctest.h>

#include <vector>

#include "core/flows.hpp"

using namespace osim;

namespace {
struct Rig {
  Engine engine;
  MaxMinSystem sys;
  FlowModel flows{engine, sys};
  std::vector<FlowRecord> done;
  FlowSpec spec(std::vector<FlowUse> route, double bytes, Time latency = Time::zero()) {
    FlowSpec f;
    f.route.assign(route.begin(), route.end());
    f.bytes = bytes;
    f.latency = latency;
    f.on_done = {[](void* self, uint64_t, const FlowRecord& rec) { static_cast<Rig*>(self)->done.push_back(rec); }, this, 0};
    return f;
  }
};
}  // namespace

TEST_CASE("one flow takes latency + bytes / bandwidth") {
  Rig r;
  auto link = r.sys.add_constraint(10e9);  // 10 GB/s
  r.flows.start(r.spec({{link}}, 1e9, Time::from_us(5)));
  r.engine.run();
  REQUIRE(r.done.size() == 1);
  CHECK(r.done[0].first_byte == Time::from_us(5));
  CHECK(r.done[0].end == Time::from_us(5) + Time::from_ms(100));
  CHECK(r.done[0].main_bottleneck() == link);
}

TEST_CASE("two equal flows on one link get half each") {
  Rig r;
  auto link = r.sys.add_constraint(10e9);
  r.flows.start(r.spec({{link}}, 1e9));
  r.flows.start(r.spec({{link}}, 1e9));
  r.engine.run();
  REQUIRE(r.done.size() == 2);
  CHECK(r.done[0].end == Time::from_ms(200));
  CHECK(r.done[1].end == Time::from_ms(200));
}

TEST_CASE("a finishing flow hands its share to the one still running") {
  // 10 GB/s; A = 1 GB, B = 3 GB, both at t=0. Shared until A ends at 0.2 s
  // (1 GB each moved), then B alone moves its last 2 GB in 0.2 s: 0.4 s.
  Rig r;
  auto link = r.sys.add_constraint(10e9);
  r.flows.start(r.spec({{link}}, 1e9));
  r.flows.start(r.spec({{link}}, 3e9));
  r.engine.run();
  REQUIRE(r.done.size() == 2);
  CHECK(r.done[0].end == Time::from_ms(200));
  CHECK(r.done[1].end.ps() == doctest::Approx(Time::from_ms(400).ps()).epsilon(1e-9));
  CHECK(r.flows.constraint_bytes()[link] == doctest::Approx(4e9));
}

TEST_CASE("a switch uplink shared by two GPUs") {
  // Two H2D copies share the uplink (20) but have their own downlinks (15):
  // each gets 10, bottlenecked by the uplink.
  Rig r;
  auto uplink = r.sys.add_constraint(20e9), d0 = r.sys.add_constraint(15e9), d1 = r.sys.add_constraint(15e9);
  r.flows.start(r.spec({{uplink}, {d0}}, 1e9));
  r.flows.start(r.spec({{uplink}, {d1}}, 1e9));
  r.engine.run();
  for (const auto& f : r.done) {
    CHECK(f.end == Time::from_ms(100));
    CHECK(f.main_bottleneck() == uplink);
  }
}

TEST_CASE("a late flow slows an early one from its first byte on") {
  // 10 GB/s; A = 2 GB at 0; B = 0.5 GB starting at 50 ms with 50 ms latency.
  // A alone until 100 ms (1 GB), shared 5+5 until B ends at 200 ms (A moved
  // 0.5 GB more), A alone for its last 0.5 GB: ends at 250 ms.
  Rig r;
  auto link = r.sys.add_constraint(10e9);
  r.flows.start(r.spec({{link}}, 2e9));
  r.engine.at(Time::from_ms(50), [&] { r.flows.start(r.spec({{link}}, 0.5e9, Time::from_ms(50))); });
  r.engine.run();
  REQUIRE(r.done.size() == 2);
  CHECK(r.done[0].end == Time::from_ms(200));                                           // B
  CHECK(r.done[1].end.ps() == doctest::Approx(Time::from_ms(250).ps()).epsilon(1e-9));  // A
}

TEST_CASE("a rate cap binds below the link") {
  Rig r;
  auto link = r.sys.add_constraint(50e9);
  auto f = r.spec({{link}}, 1e9);
  f.rate_cap = 20e9;  // e.g. a copy engine
  r.flows.start(std::move(f));
  r.engine.run();
  CHECK(r.done[0].end == Time::from_ms(50));
  CHECK(r.done[0].main_bottleneck() == MaxMinSystem::kOwnBound);
}

TEST_CASE("a zero-byte flow completes after its latency, through the engine") {
  Rig r;
  auto link = r.sys.add_constraint(1e9);
  r.flows.start(r.spec({{link}}, 0, Time::from_us(3)));
  CHECK(r.done.empty());  // never inside start()
  r.engine.run();
  REQUIRE(r.done.size() == 1);
  CHECK(r.done[0].end == Time::from_us(3));
}

TEST_CASE("flows sharing a start or end instant complete in start order, and a reschedule leaves the shared batch") {
  // Four 1 GB flows on their own 10 GB/s links start together (one activation
  // event) and would end together at 0.1 s (one completion event). Flow 2's
  // cap then drops to 5 GB/s at 0.05 s: it leaves the batch and ends at
  // 0.05 + 0.5 GB / 5 GB/s = 0.15 s; the others still end at 0.1 s, in start order.
  Rig r;
  std::vector<ConstraintId> links;
  std::vector<FlowId> ids;
  for (int i = 0; i < 4; ++i) {
    links.push_back(r.sys.add_constraint(10e9));
    FlowSpec f = r.spec({{links.back()}}, 1e9, Time::from_us(1));
    f.on_done = {[](void* ctx, uint64_t k, const FlowRecord& rec) {
                   Rig& rig = *static_cast<Rig*>(ctx);
                   rig.done.push_back(rec);
                   rig.done.back().bytes = static_cast<double>(k);  // which flow, in completion order
                 },
                 &r, static_cast<uint64_t>(i)};
    ids.push_back(r.flows.start(std::move(f)));
  }
  r.engine.at(Time::from_us(1) + Time::from_ms(50), [&] { r.flows.set_rate_cap(ids[2], 5e9); });
  r.engine.run();
  REQUIRE(r.done.size() == 4);
  CHECK(r.done[0].bytes == 0);
  CHECK(r.done[1].bytes == 1);
  CHECK(r.done[2].bytes == 3);
  CHECK(r.done[3].bytes == 2);
  for (int i = 0; i < 3; ++i) CHECK(r.done[i].end == Time::from_us(1) + Time::from_ms(100));
  CHECK(r.done[3].end.ps() == doctest::Approx((Time::from_us(1) + Time::from_ms(150)).ps()).epsilon(1e-9));
  // Every flow cancelled out of a batch: the batch's event goes too (the clock stops at the last real event).
  CHECK(r.engine.now() == r.done[3].end);
  CHECK(r.engine.live_events() == 0);
}

TEST_CASE("room reserved for flows about to start changes none of their times") {
  // 3,000 flows (more than a doubling step) over three links shared in a
  // ring, with staggered sizes so they end in many waves; with and without
  // reserve() the records are the same to the picosecond, in the same order.
  auto run = [](bool reserve) {
    Rig r;
    const ConstraintId a = r.sys.add_constraint(10e9), b = r.sys.add_constraint(7e9), c = r.sys.add_constraint(5e9);
    const ConstraintId links[] = {a, b, c};
    constexpr int kFlows = 3000;
    if (reserve) r.flows.reserve(kFlows);
    for (int i = 0; i < kFlows; ++i) r.flows.start(r.spec({{links[i % 3]}, {links[(i + 1) % 3], 0.5}}, 1e6 * (1 + i % 7), Time::from_us(i % 2)));
    r.engine.run();
    std::vector<std::pair<FlowId, int64_t>> ends;
    for (const FlowRecord& rec : r.done) ends.emplace_back(rec.id, rec.end.ps());
    return ends;
  };
  const auto plain = run(false), reserved = run(true);
  REQUIRE(plain.size() == 3000);
  CHECK(plain == reserved);
}

TEST_CASE("flows of several owners on one model each call their own owner, with their own key") {
  // Two owners of different callbacks and a third sharing the first's
  // callback but not its context, interleaved, and a flow with no callback:
  // 1 GB flows on their own 10 GB/s links, flow i starting at i µs, so
  // they end in start order, each 100 ms after its start.
  struct Owner {
    std::vector<std::pair<uint64_t, int64_t>> got;  // (key, end in ps)
  } a, b, c;
  const FlowDone::Fn log = [](void* self, uint64_t k, const FlowRecord& rec) { static_cast<Owner*>(self)->got.emplace_back(k, rec.end.ps()); };
  const FlowDone::Fn log_twice = [](void* self, uint64_t k, const FlowRecord& rec) {
    static_cast<Owner*>(self)->got.emplace_back(2 * k, rec.end.ps());
  };
  Rig r;
  const FlowDone dones[] = {{log, &a, 10}, {log_twice, &b, 20}, {log, &c, 30}, {}, {log_twice, &b, 21}, {log, &a, 11}, {log, &c, 31}};
  for (size_t i = 0; i < std::size(dones); ++i) {
    FlowSpec f = r.spec({{r.sys.add_constraint(10e9)}}, 1e9, Time::from_us(static_cast<double>(i)));
    f.on_done = dones[i];
    r.flows.start(std::move(f));
  }
  r.engine.run();
  const auto end = [](int i) { return (Time::from_us(i) + Time::from_ms(100)).ps(); };
  CHECK(a.got == std::vector<std::pair<uint64_t, int64_t>>{{10, end(0)}, {11, end(5)}});
  CHECK(b.got == std::vector<std::pair<uint64_t, int64_t>>{{40, end(1)}, {42, end(4)}});
  CHECK(c.got == std::vector<std::pair<uint64_t, int64_t>>{{30, end(2)}, {31, end(6)}});
  CHECK(r.done.empty());
}

TEST_CASE("a flow bound by its cap, then by a link, keeps both times in its record") {
  // 10 GB/s link, a 1 GB flow capped at 8 GB/s: 50 ms at the cap moves
  // 0.4 GB; a second 10 GB flow joins: 5 GB/s each, the link binds; the
  // rest, 0.6 GB, takes 120 ms.
  Rig r;
  const ConstraintId link = r.sys.add_constraint(10e9);
  FlowSpec f = r.spec({{link}}, 1e9);
  f.rate_cap = 8e9;
  r.flows.start(std::move(f));
  r.engine.at(Time::from_ms(50), [&] { r.flows.start(r.spec({{link}}, 10e9)); });
  r.engine.run();
  REQUIRE(r.done.size() == 2);
  const FlowRecord& rec = r.done[0];
  REQUIRE(rec.bottleneck_time.size() == 2);
  CHECK(rec.bottleneck_time[0].first == MaxMinSystem::kOwnBound);
  CHECK(rec.bottleneck_time[0].second == Time::from_ms(50));
  CHECK(rec.bottleneck_time[1].first == link);
  CHECK(rec.bottleneck_time[1].second.ps() == doctest::Approx(Time::from_ms(120).ps()).epsilon(1e-9));
  CHECK(rec.main_bottleneck() == link);
}
