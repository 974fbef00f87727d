// Closed-form all-to-alls (ExecOptions::closed_form_collectives): an NCCL
// all-to-all alone on its links is simulated once by itself and replayed;
// when a copy, another collective or a kernel touches it part-way, it hands
// its flows back. Each case here runs a schedule both ways and asserts the
// two runs agree op by op, to the picosecond, and in every report figure.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "core/isolated.hpp"
#include "gpu/executor.hpp"
#include "gpu/sim_fixture.hpp"
#include "hw/fabric.hpp"
#include "schedule/schedule.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

ExecResult run(const Schedule& s, const hw::Topology& t, const ModelParams& p, bool closed) {
  ExecOptions o;
  o.closed_form_collectives = closed;
  return execute(s, t, p, o);
}

// Runs both ways and checks the runs agree; returns the closed-form run's
// (closed forms, handed back).
std::pair<int64_t, int64_t> check_same(const Schedule& s, const hw::Topology& t, const ModelParams& p = {}) {
  const ExecResult a = run(s, t, p, false), b = run(s, t, p, true);
  CHECK(a.closed_form == 0);
  CHECK(a.makespan == b.makespan);
  REQUIRE(a.ops.size() == b.ops.size());
  CHECK(test::differing_records(a, b, [](const std::string& m) { MESSAGE(m); }) == 0);
  REQUIRE(a.collective_bottlenecks.size() == b.collective_bottlenecks.size());
  for (size_t i = 0; i < a.collective_bottlenecks.size(); ++i) {
    CHECK(a.collective_bottlenecks[i].time == b.collective_bottlenecks[i].time);
    CHECK(a.collective_bottlenecks[i].transfers == b.collective_bottlenecks[i].transfers);
    CHECK(a.copy_bottlenecks[i].time == b.copy_bottlenecks[i].time);
  }
  // How long each resource bound a collective's transfer: replayed groups add their flows' union.
  CHECK(a.collective_binding == b.collective_binding);
  CHECK(a.copy_binding == b.copy_binding);
  for (const Time bound : b.collective_binding) CHECK(bound <= b.makespan);  // a union over time, not a sum over transfers
  REQUIRE(a.resource_bytes.size() == b.resource_bytes.size());
  for (size_t i = 0; i < a.resource_bytes.size(); ++i) CHECK(b.resource_bytes[i] == doctest::Approx(a.resource_bytes[i]).epsilon(1e-9));
  return {b.closed_form, b.handed_back};
}

// Four ranks: an all-to-all, then the same again (in closed form: the first
// of a kind runs flow by flow), then after `delay` of host work `then` (ops
// on other streams that may land while the second runs).
Schedule schedule(const std::string& delay, const std::string& then, const std::string& groups = "") {
  return parse_schedule_string(fmt::format(R"(name: closed
ranks: 4
streams: [compute, copy, side]
{}
programs:
  - rank: all
    ops:
      - {{op: collective, kind: all_to_all, group: world, bytes: 256 MB, stream: compute, name: first}}
      - {{op: stream_sync, stream: compute}}
      - {{op: collective, kind: all_to_all, group: world, bytes: 256 MB, stream: compute, name: again}}
      - {{op: host_work, duration: {}}}
{}
      - {{op: device_sync}}
)",
                                           groups, delay, then),
                               "closed.yaml");
}

}  // namespace

TEST_CASE("isolated flows: one flow alone runs at its bottleneck, state_before is its progress") {
  IsolatedFlows in;
  in.capacity = {10e9, 4e9};
  FlowSpec f;
  f.route = {{0, 1.0}, {1, 1.0}};
  f.bytes = 8e9;
  f.latency = Time::from_s(1e-3);
  in.flows.push_back(f);
  f.route = {{0, 1.0}};
  f.bytes = 6e9;
  f.latency = Time::zero();
  in.flows.push_back(f);
  const IsolatedRun r = run_isolated(in);
  // Flow 1 alone takes all 10 GB/s for 1 ms (10 MB), then shares constraint 0
  // with flow 0 (capped at 4 GB/s by constraint 1): 6 GB/s for the rest.
  // Flow 1: 6e9 - 1e7 bytes at 6 GB/s after 1 ms; flow 0 at 4 GB/s.
  const double t1 = 1e-3 + (6e9 - 1e7) / 6e9;
  CHECK(r.records[1].end.s() == doctest::Approx(t1).epsilon(1e-9));
  const double moved0 = 4e9 * (t1 - 1e-3);  // then alone: capped at 4 GB/s still
  CHECK(r.records[0].end.s() == doctest::Approx(t1 + (8e9 - moved0) / 4e9).epsilon(1e-9));
  CHECK(r.order == std::vector<int>{1, 0});
  const std::vector<FlowState> st = state_before(in, Time::from_s(0.5));
  REQUIRE(st.size() == 2);
  CHECK(st[0].active);
  CHECK(st[0].rate == doctest::Approx(4e9));
  CHECK(st[1].rate == doctest::Approx(6e9));
  // Last settled at 1 ms (the last rate change): 10 MB moved by flow 1.
  CHECK(st[1].last_update == Time::from_s(1e-3));
  CHECK(st[1].remaining == doctest::Approx(6e9 - 1e7));
  const std::vector<FlowState> early = state_before(in, Time::from_s(0.5e-3));
  CHECK_FALSE(early[0].active);  // before its first byte
  CHECK(early[1].running);
  const std::vector<FlowState> late = state_before(in, Time::from_s(10));
  CHECK_FALSE(late[0].running);
  CHECK_FALSE(late[1].running);
}

TEST_CASE("closed-form all-to-alls replay exactly what simulating every flow gives") {
  const hw::Topology aces(hw::parse_topology_file(kSrc + "/configs/topologies/aces-4xh100-pcie.yaml"));
  const hw::Topology dgx(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  // Host work delays that land before the first byte, while every flow
  // runs, and after the first flows have ended (the ACES routes differ in
  // latency and rate: the flows end at several instants).
  const std::vector<std::string> delays = {"0.5 us", "100 us", "1 ms", "2.5 ms", "4 ms", "5 ms", "6 ms", "8 ms", "20 ms"};
  SUBCASE("alone: nothing joins it") {
    CHECK(check_same(schedule("1 us", ""), aces) == std::pair<int64_t, int64_t>{1, 0});
    CHECK(check_same(schedule("1 us", ""), dgx) == std::pair<int64_t, int64_t>{1, 0});
  }
  int64_t handed = 0;
  SUBCASE("a copy starts over its links part-way") {
    for (const auto& d : delays) {
      CAPTURE(d);
      handed += check_same(schedule(d, "      - {op: memcpy, kind: h2d, bytes: 64 MB, stream: copy}"), aces).second;
    }
    CHECK(handed >= 5);
  }
  SUBCASE("a kernel on another stream slows its flows part-way") {
    for (const auto& d : delays) {
      CAPTURE(d);
      handed += check_same(schedule(d, "      - {op: kernel, stream: side, duration: 1 ms}"), aces).second;
      handed += check_same(schedule(d, "      - {op: kernel, stream: side, duration: 1 ms}"), dgx).second;
    }
    CHECK(handed >= 5);
  }
  SUBCASE("another all-to-all over shared links, and again alone") {
    int64_t closed = 0;
    for (const auto& d : delays) {
      CAPTURE(d);
      const auto [c, h] = check_same(schedule(d,
                                              "      - {op: collective, kind: all_to_all, group: pair, bytes: 64 MB, stream: side}\n"
                                              "      - {op: collective, kind: all_to_all, group: world, bytes: 256 MB, stream: compute}\n"
                                              "      - {op: collective, kind: all_to_all, group: world, bytes: 256 MB, stream: compute}",
                                              "groups: [{name: pair, ranks: [0, 1, 2, 3]}]"),
                                     aces);
      closed += c;
      handed += h;
    }
    CHECK(handed >= 3);
    CHECK(closed >= 2 * static_cast<int64_t>(delays.size()));
  }
}

TEST_CASE("closed-form all-to-alls: a full workload is the same either way") {
  for (const std::string w : {"wan22-720p-aces-layerwise.yaml", "wan22-720p-dgx-sp8-layerwise.yaml"}) {
    CAPTURE(w);
    DitWorkload wl = parse_workload_file(kSrc + "/configs/workloads/" + w, std::vector<std::string>{"steps=2", "model.blocks=6"});
    const Schedule s = generate_schedule(wl);
    const hw::Topology t(
        hw::parse_topology_file(kSrc + "/configs/topologies/" + (w.find("dgx") != std::string::npos ? "dgx-h100.yaml" : "aces-4xh100-pcie.yaml")));
    const auto [closed, handed] = check_same(s, t, wl.params);
    CHECK(closed > 0);
    MESSAGE(fmt::format("{}: {} closed forms, {} handed back", w, closed, handed));
  }
}

// Ulysses across nodes: every all-to-all's flows from other nodes reach a GPU
// over its NIC's PCIe switch, whose link to the GPU the layerwise prefetch
// copies cross too (h100-128node-ib.yaml). Beside such a copy an all-to-all
// runs flow by flow; where none is in flight it may replay.
TEST_CASE("closed-form all-to-alls: Ulysses across nodes beside prefetch copies is the same either way") {
  const hw::Topology t(hw::parse_topology_file(kSrc + "/configs/topologies/h100-128node-ib.yaml"));
  for (const std::string policy : {"layerwise", "none"}) {
    CAPTURE(policy);
    std::vector<std::string> set = {"parallelism.ulysses=16",  "parallelism.ring=1", "model.heads=16",
                                    "model.head_dim=320",      "model.blocks=3",     "steps=1",
                                    "offload.policy=" + policy};
    if (policy == "none") set.emplace_back("offload.prefetch_size=null");
    DitWorkload wl = parse_workload_file(kSrc + "/configs/workloads/wan22-720p-cluster-sp128.yaml", set);
    const Schedule s = generate_schedule(wl);
    const auto [closed, handed] = check_same(s, t, wl.params);
    // Without copies every all-to-all after the first of its kind replays.
    if (policy == "none") CHECK(closed > 0);
    MESSAGE(fmt::format("Ulysses 16 over 2 nodes, offload {}: {} closed forms, {} handed back", policy, closed, handed));
  }
}

TEST_CASE("closed-form all-to-alls: random schedules agree with flow-by-flow runs") {
  int64_t closed = 0, handed = 0;
  test::on_random_schedules(0x9E3779B97F4A7C15ull, 24, false, [&](const Schedule& s, const hw::Topology& t, int trial) {
    CAPTURE(trial);
    const auto [c, h] = check_same(s, t);
    closed += c;
    handed += h;
  });
  MESSAGE(fmt::format("random schedules: {} closed forms, {} handed back", closed, handed));
  CHECK(closed >= 20);
  CHECK(handed >= 5);
}
