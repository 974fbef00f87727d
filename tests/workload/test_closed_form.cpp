// Closed-form all-to-alls (ExecOptions::closed_form_collectives): an NCCL
// all-to-all alone on its links is simulated once by itself and replayed;
// when a copy, another collective or a kernel touches it part-way, it hands
// its flows back. Each case here runs a schedule both ways and asserts the
// two runs agree op by op, to the picosecond, and in every report figure.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "core/isolated.hpp"
#include "gpu/closed_form.hpp"
#include "gpu/executor.hpp"
#include "gpu/sim_fixture.hpp"
#include "hw/fabric.hpp"
#include "report/metrics.hpp"
#include "schedule/schedule.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

ExecResult run(const Schedule& s, const hw::Topology& t, const ModelParams& p, bool closed, bool reserve = true) {
  ExecOptions o;
  o.closed_form_collectives = closed;
  o.closed_form_reserve = reserve;
  return execute(s, t, p, o);
}

// Runs both ways and checks the runs agree; returns the closed-form run's
// (closed forms, handed back).
std::pair<int64_t, int64_t> check_same(const Schedule& s, const hw::Topology& t, const ModelParams& p = {}, bool reserve = true,
                                       int64_t* reserved = nullptr) {
  const ExecResult a = run(s, t, p, false), b = run(s, t, p, true, reserve);
  if (reserved) *reserved = b.reserved;
  if (!reserve) CHECK(b.reserved == 0);
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
  // Every link's byte count to the bit, every metric and the summary.
  CHECK(a.resource_bytes == b.resource_bytes);
  const Metrics ma = compute_metrics(s, t, a), mb = compute_metrics(s, t, b);
  CHECK(metrics_json(ma, t, a).dump() == metrics_json(mb, t, b).dump());
  CHECK(format_summary(ma, t, a, "") == format_summary(mb, t, b, ""));
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

// 128 ranks over 16 nodes: a prefetch-like copy into every GPU, then the
// same all-to-all twice (the second replays, beside the copy, with the
// PCIe link from the NIC reserved), then after `delay` of host work `then`.
Schedule reserved_schedule(const std::string& copy, const std::string& delay, const std::string& then) {
  return parse_schedule_string(fmt::format(R"(name: reserved
ranks: 128
streams: [compute, copy, side]
programs:
  - rank: all
    ops:
      - {{op: memcpy, kind: h2d, bytes: {}, stream: copy}}
      - {{op: host_work, duration: 20 us}}
      - {{op: collective, kind: all_to_all, group: world, bytes: 64 MB, stream: compute, name: first}}
      - {{op: stream_sync, stream: compute}}
      - {{op: collective, kind: all_to_all, group: world, bytes: 64 MB, stream: compute, name: again}}
      - {{op: host_work, duration: {}}}
{}
      - {{op: device_sync}}
)",
                                           copy, delay, then),
                               "reserved.yaml");
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
  CHECK(r.rates == std::vector<int>{1, 2});  // flow 1: 10 GB/s, then 6
  CHECK(r.rate[0] == doctest::Approx(4e9));
  CHECK(r.rate[1] == doctest::Approx(6e9));
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

TEST_CASE("reservable links: flows of one rate each leave a residual per stage, a flow whose rate changes leaves none") {
  exec::ClosedForm cf;
  cf.flows.capacity = {10e9, 4e9};
  cf.cons = {0, 1};
  FlowSpec f;
  f.route = {{0, 1.0}};
  f.rate_cap = 1e9;
  for (const double bytes : {1e9, 2e9, 1e9}) {  // link 0: three flows at their 1 GB/s caps, two end at 1 s
    f.bytes = bytes;
    cf.flows.flows.push_back(f);
  }
  f.route = {{1, 1.0}};
  f.rate_cap = MaxMinSystem::kUnbounded;
  for (const double bytes : {1e9, 4e9}) {  // link 1: two flows at 2 GB/s, then the second alone at 4
    f.bytes = bytes;
    cf.flows.flows.push_back(f);
  }
  exec::find_reservable(cf, run_isolated(cf.flows));
  REQUIRE(cf.reservable.size() == 2);
  CHECK(cf.reservable[1] == -1);
  REQUIRE(cf.reservable[0] >= 0);
  const exec::ClosedForm::Reservable& r = cf.reservables[static_cast<size_t>(cf.reservable[0])];
  REQUIRE(r.stages.size() == 2);
  CHECK(r.stages[0].from == Time::zero());
  CHECK(r.stages[0].n == 3);
  CHECK(r.stages[0].residual == 7e9);
  CHECK(r.stages[0].level == 1e9);
  CHECK(r.stages[1].from == Time::from_s(1));
  CHECK(r.stages[1].n == 1);
  CHECK(r.stages[1].residual == 9e9);
  CHECK(r.to == Time::from_s(2));
  CHECK(r.unit == 1.0);
}

// A PCIe link from the NIC: 120 flows of an all-to-all (weight 1/sqrt(127))
// each bound below their share there by a link of their own, ending at
// several instants; a copy (weight 1) beside them takes what they leave. At
// every stage the copy alone on the residual (the replay, the link
// reserved) runs at the rate the solve of every flow gives it, to the bit,
// wherever it stands among the variables.
TEST_CASE("reservable links: the flow beside them runs on the residual as beside every flow, to the bit") {
  const double w = 1 / std::sqrt(127.0), cap = 54.82e9;
  const int n = 120;
  auto own = [](int i) { return i % 3 == 0 ? 0.30e9 : i % 3 == 1 ? 0.33e9 : 0.35e9; };
  exec::ClosedForm cf;
  cf.flows.capacity.push_back(cap);
  for (int i = 0; i < n; ++i) {
    cf.flows.capacity.push_back(own(i));
    FlowSpec f;
    f.route = {{0, 1.0}, {i + 1, 1.0}};
    f.weight = w;
    f.bytes = 1e6 * (1 + i % 4);
    cf.flows.flows.push_back(f);
  }
  for (int k = 0; k <= n; ++k) cf.cons.push_back(k);
  const IsolatedRun run = run_isolated(cf.flows);
  exec::find_reservable(cf, run);
  REQUIRE(cf.reservable[0] >= 0);
  const exec::ClosedForm::Reservable& r = cf.reservables[static_cast<size_t>(cf.reservable[0])];
  CHECK(r.stages.size() >= 8);
  for (const auto& st : r.stages) {
    CAPTURE(st.from.ps());
    MaxMinSystem alone;
    const VariableId copy_alone = alone.add_variable(1.0);
    alone.expand(alone.add_constraint(st.residual), copy_alone);
    alone.solve();
    for (const int copy_at : {0, n / 2, n}) {
      CAPTURE(copy_at);
      MaxMinSystem every;
      for (const double c : cf.flows.capacity) every.add_constraint(c);
      VariableId copy = -1;
      for (int i = 0; i <= n; ++i) {
        if (i == copy_at) {
          copy = every.add_variable(1.0);
          every.expand(0, copy);
        }
        if (i == n || run.records[static_cast<size_t>(i)].end <= st.from) continue;  // ended before this stage
        const VariableId v = every.add_variable(w);
        every.expand(0, v);
        every.expand(i + 1, v);
      }
      every.solve();
      CHECK(every.bottleneck(copy) == 0);
      CHECK(every.rate(copy) == alone.rate(copy_alone));
    }
  }
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
    int64_t reserved = 0;
    const auto [closed, handed] = check_same(s, t, wl.params, true, &reserved);
    // Without copies every all-to-all after the first of its kind replays.
    if (policy == "none") CHECK(closed > 0);
    // Beside them none reserves its links: 8 flows of weight 1/sqrt(15)
    // reach each GPU from the other node, so the copy (weight 1) would
    // fill the PCIe link below their level and slow them.
    CHECK(reserved == 0);
    MESSAGE(fmt::format("Ulysses 16 over 2 nodes, offload {}: {} closed forms, {} handed back", policy, closed, handed));
  }
}

// Ulysses 128 over 16 nodes: 120 flows reach each GPU from other nodes,
// bound by its NIC below their share of the PCIe link, so the prefetch copy
// there takes what they leave. With links reserved (ExecOptions::
// closed_form_reserve) those all-to-alls replay too, and the run agrees
// with the flow-by-flow one op by op to the picosecond.
TEST_CASE("closed-form all-to-alls: Ulysses 128 beside prefetch copies replays with links reserved, the same") {
  const hw::Topology t(hw::parse_topology_file(kSrc + "/configs/topologies/h100-128node-ib.yaml"));
  const std::vector<std::string> set = {"parallelism.ulysses=128", "parallelism.ring=1", "model.heads=128", "model.head_dim=40", "model.blocks=3", "steps=1"};
  DitWorkload wl = parse_workload_file(kSrc + "/configs/workloads/wan22-720p-cluster-sp128.yaml", set);
  const Schedule s = generate_schedule(wl);
  int64_t reserved = 0;
  const auto [closed, handed] = check_same(s, t, wl.params, true, &reserved);
  const auto [closed_alone, handed_alone] = check_same(s, t, wl.params, false);
  CHECK(reserved > 0);
  CHECK(closed > closed_alone);
  MESSAGE(fmt::format("Ulysses 128 over 16 nodes, layerwise offload: {} closed forms, {} of them with links reserved ({} without), {} handed back",
                      closed, reserved, closed_alone, handed));
}

// While the all-to-all replays with the link reserved, something touches
// it: a second copy over the reserved link, a kernel that slows its flows.
// It hands its flows back and the link its capacity, and the run goes on as
// the flow-by-flow one does, to the picosecond.
TEST_CASE("closed-form all-to-alls: a replay with a link reserved hands back part-way, the same") {
  const hw::Topology t(hw::parse_topology_file(kSrc + "/configs/topologies/h100-128node-ib.yaml"));
  int64_t handed = 0;
  const std::pair<std::string, std::string> cases[] = {
      {"1 GB", ""},
      {"1 GB", "      - {op: memcpy, kind: d2h, bytes: 64 MB, stream: side}"},
      {"1 GB", "      - {op: kernel, stream: side, duration: 1 ms}"},
      {"12 MB", ""},
      {"12 MB", "      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: copy}"},
  };
  for (const auto& one : cases)
    for (const std::string d : {"1 us", "100 us", "400 us", "1 ms", "3 ms"}) {
      const std::string& copy = one.first;  // named, not bound: CAPTURE's lambda takes them
      const std::string& then = one.second;
      CAPTURE(copy);
      CAPTURE(then);
      CAPTURE(d);
      int64_t reserved = 0;
      const auto [closed, h] = check_same(reserved_schedule(copy, d, then), t, {}, true, &reserved);
      CHECK(closed == 1);
      CHECK(reserved == 1);
      handed += h;
    }
  CHECK(handed >= 12);  // each case with something after, but at 3 ms (after the all-to-all ends)
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
