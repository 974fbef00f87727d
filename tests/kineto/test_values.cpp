// Values checked at the import's boundary: durations, timestamps and their
// unit, copy sizes, begin/end events, ranks, world sizes, clocks and
// collectives across ranks; each refused naming the file and the event, or
// counted where leaving it out is right.
#include <doctest/doctest.h>

#include <string>

#include "kineto/import.hpp"
#include "kineto/trace_builder.hpp"

using namespace osim;
using namespace osim::test;

namespace {

// A copy, a record, a wait, a kernel and a sync (times in µs); `shift` moves every event.
TraceBuilder small(double shift = 0) {
  TraceBuilder b;
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, shift + 16, 100, b.call("cudaMemcpyAsync", shift + 10, 5), {{"bytes", 1000000}});
  b.call("cudaEventRecord", shift + 20, 1);
  b.sync("Stream Wait Event", b.call("cudaStreamWaitEvent", shift + 25, 1), 7, 3);
  b.gpu("kernel", "gemm_kernel", 7, shift + 117, 50, b.call("cudaLaunchKernel", shift + 30, 4));
  b.call("cudaEventQuery", shift + 45, 1);
  b.sync("Stream Sync", b.call("cudaStreamSynchronize", shift + 50, 140), 7);
  return b;
}
json& first(TraceBuilder& b, const std::string& cat) {
  for (json& e : b.events)
    if (e["cat"] == cat) return e;
  throw std::logic_error("no " + cat);
}
// Rank `rank` of `world` with one all-reduce (or `coll`) of `elems` bf16 elements after the small trace.
TraceBuilder ranked(int rank, int world, const std::string& coll = "all_reduce", int elems = 1000, double shift = 0) {
  TraceBuilder b = small(shift);
  b.doc["distributedInfo"] = {{"rank", rank}, {"world_size", world}};
  b.gpu("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", 7, shift + 200, 20, b.call("cuLaunchKernelEx", shift + 195, 3),
        {{"Collective name", coll}, {"In msg nelems", elems}, {"Out msg nelems", elems}, {"dtype", "BFloat16"}, {"Process Group Ranks", "[0, 1]"}});
  return b;
}
const Op* first_op(const kineto::ImportedTrace& t, OpKind kind) {
  for (const Op& op : *t.schedule.programs[0].ops)
    if (op.kind == kind) return &op;
  return nullptr;
}

}  // namespace

TEST_CASE("durations: negative, past an hour or not finite are refused with the file and the event") {
  TraceBuilder b = small();
  first(b, "kernel")["dur"] = -500;
  const std::string neg = b.write("neg.json");
  const std::string e = error_of({neg});
  CHECK(e.find(neg + ": error: traceEvents[6] (kernel 'gemm_kernel' at ts 117 us): dur -500 us is negative") == 0);
  CHECK(e.find("re-export the trace or remove the event") != std::string::npos);
  first(b, "kernel")["dur"] = 1e300;
  CHECK(error_of({b.write("huge.json")}).find("dur 1e+300 us is over an hour") != std::string::npos);
  first(b, "kernel")["dur"] = 50;
  first(b, "cuda_runtime")["ts"] = 1e300;
  CHECK(error_of({b.write("ts.json")}).find("traceEvents[0] (cuda_runtime 'cudaMemcpyAsync' at ts 1e+300 us): ts 1e+300 us is past any clock") !=
        std::string::npos);
}

TEST_CASE("nanosecond timestamps: refused, by their size or by calls that never block taking milliseconds") {
  TraceBuilder rel = small(), epoch = small();
  for (TraceBuilder* b : {&rel, &epoch})
    for (json& e : b->events) {
      e["ts"] = e["ts"].get<double>() * 1000 + (b == &epoch ? 1.79e18 : 0);
      e["dur"] = e["dur"].get<double>() * 1000;
    }
  const std::string r = error_of({rel.write("ns.json")});
  CHECK(r.find("event records, queries and stream waits take 1000 us at the median") != std::string::npos);
  CHECK(r.find("if this trace's are nanoseconds, divide them by 1000") != std::string::npos);
  CHECK(error_of({epoch.write("ns-epoch.json")}).find("past any clock") != std::string::npos);
  // Two hours between two calls.
  TraceBuilder gap = small();
  gap.call("cudaEventQuery", 7.2e9, 1);
  CHECK(error_of({gap.write("gap.json")}).find("it spans 2.0 hours, from traceEvents[0] (CUDA call 'cudaMemcpyAsync' at ts 10 us)") !=
        std::string::npos);
}

TEST_CASE("copy sizes: negative, past 2^47 or not a number are refused, a copy without one keeps its measured time") {
  for (const json& bad : {json(-1), json(1e30), json("lots"), json(2.5)}) {
    TraceBuilder b = small();
    first(b, "gpu_memcpy")["args"]["bytes"] = bad;
    const std::string e = error_of({b.write("bytes.json")});
    CHECK(e.find("traceEvents[1] (gpu_memcpy 'Memcpy HtoD (Pinned -> Device)' at ts 16 us): args.bytes " + bad.dump() + " is not a size") !=
          std::string::npos);
  }
  TraceBuilder b = small();
  first(b, "gpu_memcpy")["args"].erase("bytes");
  const kineto::ImportedTrace t = kineto::import_traces({b.write("nobytes.json")});
  CHECK(first_op(t, OpKind::Memcpy) == nullptr);
  CHECK(t.summary.not_imported.at("copies without args.bytes: kernels at their measured time") == 1);
  CHECK(t.summary.ops.at("kernel (measured)") == 2);
}

TEST_CASE("begin/end events: paired into complete ones, a begin without its end is counted") {
  TraceBuilder b = small();
  json& k = first(b, "kernel");
  k["ph"] = "B";
  k.erase("dur");
  b.events.push_back({{"ph", "E"}, {"pid", k["pid"]}, {"tid", k["tid"]}, {"ts", 167.0}});
  const kineto::ImportedTrace t = kineto::import_traces({b.write("be.json")});
  const Op* kernel = first_op(t, OpKind::Kernel);
  REQUIRE(kernel);
  CHECK(*kernel->duration == Time::from_us(50));
  CHECK(t.summary.notes.at(0) == "1 begin/end (ph B/E) pairs read as complete events");
  b.events.erase(b.events.size() - 1);
  const kineto::ImportedTrace lone = kineto::import_traces({b.write("b.json")});
  CHECK(first_op(lone, OpKind::Kernel) == nullptr);
  CHECK(lone.summary.not_imported.at("begin (ph B) events without their end (ph E): left out") == 1);
  first(b, "kernel")["ph"] = "i";
  const kineto::ImportedTrace inst = kineto::import_traces({b.write("i.json")});
  CHECK(inst.summary.not_imported.at("kernel events with ph 'i' (neither complete nor begin/end): left out") == 1);
}

TEST_CASE("ranks and world sizes: out of range or disagreeing traces are refused") {
  TraceBuilder neg = ranked(0, 2);
  neg.doc["distributedInfo"]["rank"] = -1;
  CHECK(error_of({neg.write("rank-neg.json")}).find("distributedInfo.rank is -1: ranks count from 0; correct it, or remove distributedInfo") !=
        std::string::npos);
  CHECK(error_of({ranked(2, 2).write("rank-big.json")}).find("distributedInfo.rank 2 is not below its world_size 2") != std::string::npos);
  TraceBuilder zero = ranked(0, 2);
  zero.doc["distributedInfo"]["world_size"] = 0;
  CHECK(error_of({zero.write("world0.json")}).find("distributedInfo.world_size is 0: a job has 1 rank or more") != std::string::npos);
  const std::string r0 = ranked(0, 2).write("w-r0.json"), r1 = ranked(1, 4).write("w-r1.json");
  CHECK(error_of({r0, r1}).find(r1 + ": error: distributedInfo.world_size 4 where " + r0 + " says 2: give the traces of one job") == 0);
}

TEST_CASE("clocks: ranks recorded apart are refused, traces on other clock bases are aligned") {
  const std::string r0 = ranked(0, 2).write("c-r0.json");
  const std::string days = ranked(1, 2, "all_reduce", 1000, 2 * 86400e6).write("c-days.json");
  CHECK(error_of({r0, days}).find(days + ": error: it starts 2.0 days after " + r0) == 0);
  // Rank 1's base is 1 s later and its ts 1 s smaller: the same instants.
  TraceBuilder b1 = ranked(1, 2, "all_reduce", 1000, -1e6);
  b1.doc["baseTimeNanoseconds"] = 1'000'000'000;
  TraceBuilder b0 = ranked(0, 2);
  b0.doc["baseTimeNanoseconds"] = 0;
  const kineto::ImportedTrace t = kineto::import_traces({b0.write("base0.json"), b1.write("base1.json")});
  REQUIRE(t.measured.ops.size() == 2);
  CHECK(t.measured.ops[0].back().end == t.measured.ops[1].back().end);
  CHECK(t.measured.makespan == Time::from_us(210));  // from the first call (10 us) to the collective's end (220 us)
}

TEST_CASE("collectives across ranks: the same in the same order, else refused at the first that differs") {
  const std::string r0 = ranked(0, 2).write("m-r0.json");
  const std::string kind = ranked(1, 2, "all_gather").write("m-kind.json");
  CHECK(error_of({r0, kind}).find(kind + ": error: collective 0 of group [0, 1] is all_gather of 2000 bytes (traceEvents[11] (kernel") == 0);
  CHECK(error_of({r0, kind}).find("where rank 0's is all_reduce of 2000 bytes") != std::string::npos);
  const std::string size = ranked(1, 2, "all_reduce", 500).write("m-size.json");
  CHECK(error_of({r0, size}).find("is all_reduce of 1000 bytes") != std::string::npos);
  // All-to-all splits may differ between ranks.
  const kineto::ImportedTrace t =
      kineto::import_traces({ranked(0, 2, "all_to_allv").write("a2a-r0.json"), ranked(1, 2, "all_to_allv", 500).write("a2a-r1.json")});
  CHECK(t.summary.ops.at("collective all_to_all") == 2);
}

TEST_CASE("collective parameters: counts and group ranks checked, each dtype at its element size, an unknown one counted") {
  auto nccl = [](TraceBuilder& b) -> json& {
    for (json& e : b.events)
      if (e["name"].get<std::string>().rfind("nccl", 0) == 0) return e["args"];
    throw std::logic_error("no nccl kernel");
  };
  for (const json& bad : {json(-5), json(2.5), json(1e30), json("many")}) {
    TraceBuilder b = ranked(0, 2);
    nccl(b)["In msg nelems"] = bad;
    CHECK(error_of({b.write("nelems.json"), ranked(1, 2).write("nelems-r1.json")})
              .find("args.In msg nelems " + bad.dump() + " is not an element count") != std::string::npos);
  }
  for (const auto& [ranks, says] : {std::pair<std::string, std::string>{"[0, 99999999999]", "names rank 99999999999, past any job's"},
                                    {"[0, 2]", "names rank 2, outside the job's 2 ranks"},
                                    {"[-1, 0]", "holds a negative rank"}}) {
    TraceBuilder b = ranked(0, 2);
    nccl(b)["Process Group Ranks"] = ranks;
    CHECK(error_of({b.write("group.json"), ranked(1, 2).write("group-r1.json")}).find(says) != std::string::npos);
  }
  // Int is 4 bytes (1000 elements: 4000), Long 8; an unknown type keeps its measured time, counted.
  auto bytes_of = [](const std::string& dtype) -> std::string {
    TraceBuilder r0 = ranked(0, 2), r1 = ranked(1, 2);
    for (TraceBuilder* b : {&r0, &r1})
      for (json& e : b->events)
        if (e["name"].get<std::string>().rfind("nccl", 0) == 0) e["args"]["dtype"] = dtype;
    const kineto::ImportedTrace t = kineto::import_traces({r0.write("dt-r0.json"), r1.write("dt-r1.json")});
    const Op* c = first_op(t, OpKind::Collective);
    if (!c) return t.summary.not_imported.begin()->first;
    return std::to_string(c->bytes);
  };
  CHECK(bytes_of("BFloat16") == "2000");
  CHECK(bytes_of("Int") == "4000");
  CHECK(bytes_of("Long") == "8000");
  CHECK(bytes_of("Quaternion") ==
        "NCCL all_reduce of dtype 'Quaternion' (an element type the importer does not know): a kernel at its measured time");
}

TEST_CASE("clock bases and launches: a base past any clock, and GPU work before its launch, are refused") {
  TraceBuilder b1 = ranked(1, 2);
  b1.doc["baseTimeNanoseconds"] = int64_t{9'223'372'036'854'775'807};
  CHECK(error_of({ranked(0, 2).write("bb-r0.json"), b1.write("bb-r1.json")}).find("baseTimeNanoseconds 9223372036854775807 is past any clock") !=
        std::string::npos);
  // The kernel launched at 30 us starts at -5000 us: 5.03 ms before its call.
  TraceBuilder b = small();
  first(b, "kernel")["ts"] = -5000.0;
  CHECK(error_of({b.write("early.json")})
            .find("traceEvents[6] (kernel 'gemm_kernel' at ts -5000 us) starts 5030.000 us before traceEvents[5] (CUDA call 'cudaLaunchKernel' at ts "
                  "30 us), the call that launched it") != std::string::npos);
  // Within the clocks' skew (a millisecond) it is the measured start: 35 us before its call.
  first(b, "kernel")["ts"] = -5.0;
  CHECK(error_of({b.write("skew.json")}).empty());
}

TEST_CASE("a collective of a group of one rank, its trace imported alone, keeps its measured time") {
  // It was a collective on no group (the schedule's groups[-1]): a crash.
  TraceBuilder b = ranked(0, 2);
  for (json& e : b.events)
    if (e["name"].get<std::string>().rfind("nccl", 0) == 0) e["args"]["Process Group Ranks"] = "[0]";
  const kineto::ImportedTrace t = kineto::import_traces({b.write("one-group.json")});
  CHECK(first_op(t, OpKind::Collective) == nullptr);
  CHECK(t.summary.ops.at("kernel (NCCL, measured)") == 1);
}
