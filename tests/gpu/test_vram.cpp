// VRAM: what each part holds at the peak, a free on a stream (its memory
// back once the stream reaches it), the allocator waiting for it before it
// gives up, NCCL's buffers (a workload's plan: tests/workload/test_vram.cpp).
#include <doctest/doctest.h>

#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

namespace {

// 400 MiB of weights used by a 1 ms kernel on compute, freed on compute (its
// memory back when compute has run the kernel), then 400 MiB more; 200 MiB
// of activations throughout.
const char* kDeferred = R"(name: deferred
ranks: 1
streams: [compute]
programs:
  - rank: 0
    ops:
      - {op: alloc, tag: act, bytes: 200 MiB, component: activations}
      - {op: alloc, tag: w0, bytes: 400 MiB}
      - {op: kernel, name: k, stream: compute, duration: 1 ms}
      - {op: free, tag: w0, stream: compute}
      - {op: alloc, tag: w1, bytes: 400 MiB}
      - {op: kernel, name: k1, stream: compute, duration: 1 ms}
)";

}  // namespace

TEST_CASE("a free on a stream: the tensor is gone at once, its memory held until the stream reaches it") {
  const Sim s(kDeferred);
  const RankSummary& r = s.res.ranks[0];
  CHECK(r.peak_vram == 600LL << 20);        // activations + one block of weights live at a time
  CHECK(r.peak_vram_held == 1000LL << 20);  // w0's memory still held while k runs
  CHECK(r.peak_parts[static_cast<size_t>(MemPart::Weights)] == 400LL << 20);
  CHECK(r.peak_parts[static_cast<size_t>(MemPart::Activations)] == 200LL << 20);
  CHECK(s.op(0, 4).returned.ms() == doctest::Approx(0));  // room enough: w1 is allocated right away
}

TEST_CASE("an alloc that does not fit waits for memory freed on a stream, and fails only when none is pending") {
  // 1 GiB GPUs with 700 MiB weights: w1 fits only once compute has run k.
  std::string big = kDeferred;
  for (auto [from, to] : {std::pair{"w0, bytes: 400 MiB", "w0, bytes: 700 MiB"}, {"w1, bytes: 400 MiB", "w1, bytes: 700 MiB"}})
    big.replace(big.find(from), std::string(from).size(), to);
  const Sim s(big);
  CHECK(s.op(0, 4).returned.ms() == doctest::Approx(1.0));  // the host waited for k
  CHECK(s.end_ms(0, 5) == doctest::Approx(2.0));
  CHECK(s.res.ranks[0].peak_vram_held == 900LL << 20);
  // Freed on the host instead (no stream): nothing is pending, and the alloc that cannot fit is an error.
  std::string now = big;
  now.replace(now.find("{op: free, tag: w0, stream: compute}"), 36, "{op: free, tag: w0}");
  std::string both = big;
  both.replace(both.find("{op: free, tag: w0, stream: compute}"), 36, "{op: kernel, name: k0, stream: compute, duration: 1 ms}");
  CHECK(error_of(now).empty());
  CHECK(error_of(both).find("runs out of GPU memory: alloc 'w1'") != std::string::npos);
}

TEST_CASE("NCCL's buffers: a part per communicator and one per peer reached peer to peer, one figure through host memory") {
  // 4xH200 NVSwitch box: every pair peer to peer. Each rank holds the world
  // communicator's buffers (3 peers), ranks 0 and 1 also a pair's (1 peer).
  const hw::Topology box(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  auto sched = [](const std::string& settings) {
    return parse_schedule_string("name: n\nranks: 4\n" + settings +
                                     "groups: [{name: pair, ranks: [0, 1]}]\nstreams: [compute]\nprograms:\n"
                                     "  - rank: [0, 1]\n    ops:\n      - {op: alloc, tag: nccl world, group: world}\n"
                                     "      - {op: alloc, tag: nccl pair, group: pair}\n"
                                     "  - rank: [2, 3]\n    ops:\n      - {op: alloc, tag: nccl world, group: world}\n",
                                 "n.yaml");
  };
  ModelParams p = quiet();
  p.vram.nccl_process = 100LL << 20;  // once, with a rank's first communicator
  p.vram.nccl_communicator = 600LL << 20;
  p.vram.nccl_peer = 300LL << 20;
  p.vram.nccl_via_host = 400LL << 20;
  const ExecResult r = execute(sched(""), box, p);
  auto comm = [](const RankSummary& s) { return s.peak_parts[static_cast<size_t>(MemPart::Comm)]; };
  CHECK(comm(r.ranks[0]) == (100LL + 600 + 3 * 300 + 600 + 300) << 20);
  CHECK(comm(r.ranks[2]) == (100LL + 600 + 3 * 300) << 20);
  CHECK(r.ranks[2].peak_vram == (100LL + 600 + 3 * 300) << 20);
  // NCCL_P2P_DISABLE: every peer through host memory, one figure a communicator.
  const ExecResult host = execute(sched("settings: {nccl_p2p_disable: true}\n"), box, p);
  CHECK(comm(host.ranks[0]) == (100LL + 2 * 400) << 20);
  CHECK(comm(host.ranks[3]) == (100LL + 400) << 20);
  // GPUs without a P2P path (8x RTX 4090 on PCIe): through host memory too.
  const hw::Topology pcie(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/rtx4090x8-pcie.yaml"));
  CHECK(comm(execute(sched(""), pcie, p).ranks[1]) == (100LL + 2 * 400) << 20);
  // Written back out as it was read: the group, no bytes.
  CHECK(to_yaml(sched("")).find("{op: alloc, tag: nccl pair, group: pair}") != std::string::npos);
}

TEST_CASE("NCCL's buffers: an alloc names a group of its rank, or bytes, not both") {
  const std::string head =
      "name: n\nranks: 3\ngroups: [{name: others, ranks: [1, 2]}]\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n      - ";
  CHECK(error_of(head + "{op: alloc, tag: n, group: world, bytes: 1 MiB}").find("give group or bytes, not both") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, group: world, component: runtime}").find("component comm") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, bytes: 1 MiB, component: comm}").find("name its group") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, group: others}").find("NCCL buffers for group 'others', which does not contain this rank") !=
        std::string::npos);
  CHECK(error_of("name: n\nranks: 2\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n      - {op: alloc, tag: n, group: world}").empty());
}

TEST_CASE("NCCL's buffers by what the communicator runs: every member, the ring's send and receive, the collectives' channels") {
  const hw::Topology nvswitch(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  auto comm_of = [&](const std::string& runs, const std::string& group, const std::string& settings = "") {
    const Schedule s = parse_schedule_string("name: n\nranks: 4\n" + settings +
                                                 "groups: [{name: pair, ranks: [0, 1]}]\nstreams: [compute]\nprograms:\n"
                                                 "  - rank: all\n    ops:\n      - {op: alloc, tag: nccl, group: " +
                                                 group + runs + "}\n",
                                             "n.yaml");
    ModelParams p = quiet();
    p.vram.nccl_process = 0;
    p.vram.nccl_communicator = 600LL << 20;
    p.vram.nccl_peer = 300LL << 20;
    p.vram.nccl_collective = 50LL << 20;
    p.vram.nccl_via_host = 400LL << 20;
    return execute(s, nvswitch, p).ranks[0].peak_parts[static_cast<size_t>(MemPart::Comm)] >> 20;
  };
  CHECK(comm_of("", "world") == 600 + 3 * 300);  // all-to-all: every other member
  CHECK(comm_of(", runs: all_to_all", "world") == 600 + 3 * 300);
  CHECK(comm_of(", runs: ring_exchange", "world") == 600 + 300);  // send to 1, receive from 3: one peer's worth
  CHECK(comm_of(", runs: [ring_exchange]", "world") == 600 + 300);
  CHECK(comm_of(", runs: collectives", "world") == 600 + 50);  // whatever the group's size
  CHECK(comm_of(", runs: [all_to_all, collectives]", "world") == 600 + 3 * 300 + 50);
  CHECK(comm_of(", runs: [ring_exchange, collectives]", "world") == 600 + 300 + 50);
  CHECK(comm_of(", runs: ring_exchange", "pair") == 600 + 300);  // next and previous: the same rank
  CHECK(comm_of(", runs: collectives", "pair", "settings: {nccl_p2p_disable: true}\n") == 400);
  CHECK(comm_of(", runs: ring_exchange", "world", "settings: {nccl_p2p_disable: true}\n") == 400);
  // Written back out as read; all_to_all, the default, left out.
  const std::string head = "name: n\nranks: 2\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n      - ";
  CHECK(to_yaml(parse_schedule_string(head + "{op: alloc, tag: n, group: world, runs: [collectives, ring_exchange]}", "n.yaml"))
            .find("{op: alloc, tag: n, group: world, runs: [ring_exchange, collectives]}") != std::string::npos);
  CHECK(to_yaml(parse_schedule_string(head + "{op: alloc, tag: n, group: world, runs: all_to_all}", "n.yaml"))
            .find("{op: alloc, tag: n, group: world}") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, bytes: 1 MiB, runs: collectives}").find("an alloc naming a group") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, group: world, runs: colectives}").find("did you mean 'collectives'") != std::string::npos);
  CHECK(error_of(head + "{op: alloc, tag: n, group: world, runs: []}").find("name what the communicator runs") != std::string::npos);
}

TEST_CASE("PyTorch's pairwise exchange holds its send and receive tensors until the stream has run it") {
  // Two exchanges issued while k runs, a device sync, a third.
  auto sched = [](const std::string& framework, const std::string& algo) {
    const std::string a2a = "      - {op: collective, kind: all_to_all, group: world, bytes: 100 MiB, stream: compute, algorithm: " + algo + "}\n";
    return "name: p\nranks: 2\nsettings: {framework: " + framework + "}\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n" +
           "      - {op: kernel, name: k, stream: compute, duration: 1 ms}\n" + a2a + a2a + "      - {op: device_sync}\n" + a2a;
  };
  const Sim s(sched("pytorch", "pairwise"));
  CHECK(s.res.ranks[0].peak_vram_held == 400LL << 20);  // 2 x (send + receive) at once, the third after both came back
  CHECK(s.res.ranks[1].peak_vram_held == 400LL << 20);
  CHECK(s.res.ranks[0].peak_vram == 0);                                    // none of it a live tensor
  CHECK(Sim(sched("pytorch", "nccl")).res.ranks[0].peak_vram_held == 0);   // NCCL's all-to-all: nothing held past the free
  CHECK(Sim(sched("none", "pairwise")).res.ranks[0].peak_vram_held == 0);  // no framework's allocator
}
