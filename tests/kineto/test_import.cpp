// Importing torch.profiler (Kineto) traces: ops, streams, event pairing,
// shapes, collectives, steps, the measured timeline, errors; and the
// reference programs' traces re-simulated.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"
#include "gpu/params_io.hpp"
#include "hw/fabric.hpp"
#include "io/text_file.hpp"
#include "kineto/import.hpp"
#include "kineto/trace.hpp"
#include "kineto/trace_builder.hpp"
#include "report/metrics.hpp"
#include "schedule/whatif.hpp"

using namespace osim;
using namespace osim::test;
namespace fs = std::filesystem;

namespace {

kineto::ImportOptions steps_matching(const std::string& re) {
  kineto::ImportOptions o;
  o.steps = re;
  return o;
}

// Every call at its kind's cost: the ops as the trace orders them, without
// the host work of each call's own time (its own test case below).
kineto::ImportOptions at_cost(kineto::ImportOptions io = {}) {
  io.call_times = false;
  return io;
}

const Op& op_at(const kineto::ImportedTrace& t, int rank, size_t i) { return (*t.schedule.programs[static_cast<size_t>(rank)].ops)[i]; }

}  // namespace

TEST_CASE("a one-GPU trace: copy, record, binding wait, GEMM and memory kernels, sync, steps") {
  TraceBuilder b;
  b.range("step 0", 8, 185);
  const int64_t cp = b.call("cudaMemcpyAsync", 10, 5);
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 16, 100, cp, {{"bytes", 1000000}});
  b.call("cudaEventRecordWithFlags", 20, 1);
  const int64_t w = b.call("cudaStreamWaitEvent", 25, 1);
  b.sync("Stream Wait Event", w, 7, 55);
  const int64_t k1 = b.call("cudaLaunchKernel", 30, 4, 9);
  b.gpu("kernel", "nvjet_sm90_tst_gemm", 7, 117, 50, k1, {{"External id", 9}});
  b.cpu_op("aten::mm", 9, {{64, 128}, {128, 256}}, {"c10::BFloat16", "c10::BFloat16"});
  const int64_t k2 = b.call("cudaLaunchKernel", 40, 3, 10);
  b.gpu("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int)", 7, 170, 10, k2,
        {{"External id", 10}});
  b.cpu_op("aten::add", 10, {{64, 256}, {64, 256}, json::array()}, {"c10::BFloat16", "c10::BFloat16", "Scalar"});
  b.call("cudaEventQuery", 45, 1);
  const int64_t s = b.call("cudaStreamSynchronize", 50, 140);
  b.sync("Stream Sync", s, 7);
  b.events.push_back({{"ph", "X"}, {"cat", "mystery"}, {"name", "x"}, {"ts", 1.0}, {"dur", 1.0}});
  const kineto::ImportedTrace t = kineto::import_traces({b.write("one.json")}, at_cost(steps_matching("^step \\d+$")));
  const Schedule& sc = t.schedule;
  REQUIRE(sc.ranks() == 1);
  CHECK(sc.name == "osim-kineto-one");
  CHECK(sc.streams[static_cast<size_t>(sc.find_stream("compute"))].name == "compute");
  CHECK(sc.find_stream("stream20") >= 0);
  // marker, memcpy, host_work, record, host_work, wait, host_work, kernel, host_work, kernel, host_work, stream_sync, host_work, marker
  const std::vector<OpKind> kinds = {OpKind::Marker,          OpKind::Memcpy,     OpKind::HostWork, OpKind::EventRecord, OpKind::HostWork,
                                     OpKind::StreamWaitEvent, OpKind::HostWork,   OpKind::Kernel,   OpKind::HostWork,    OpKind::Kernel,
                                     OpKind::HostWork,        OpKind::StreamSync, OpKind::HostWork, OpKind::Marker};
  REQUIRE(sc.programs[0].ops->size() == kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) CHECK(op_at(t, 0, i).kind == kinds[i]);
  CHECK(op_at(t, 0, 0).label == "step 0 (step 0)");
  CHECK(op_at(t, 0, 13).label == kStepsEndMarker);
  const Op& copy = op_at(t, 0, 1);
  CHECK(copy.copy == CopyKind::H2D);
  CHECK(copy.host_mem == HostMem::Pinned);
  CHECK(copy.bytes == 1000000);
  CHECK(copy.stream == sc.find_stream("stream20"));
  // The record is on the stream the thread last put work on; the wait binds it.
  CHECK(op_at(t, 0, 3).stream == sc.find_stream("stream20"));
  CHECK(op_at(t, 0, 5).event == op_at(t, 0, 3).event);
  CHECK(op_at(t, 0, 5).stream == sc.find_stream("compute"));
  // Host time between calls (the query's included): 20-15, 25-21, 30-26, 40-34, 50-43 µs.
  CHECK(*op_at(t, 0, 2).duration == Time::from_us(5));
  CHECK(*op_at(t, 0, 10).duration == Time::from_us(7));
  const Op& gemm = op_at(t, 0, 7);
  REQUIRE(gemm.gemm);
  CHECK(gemm.gemm->m == 64);
  CHECK(gemm.gemm->n == 256);
  CHECK(gemm.gemm->k == 128);
  CHECK(*gemm.duration == Time::from_us(50));
  const Op& add = op_at(t, 0, 9);
  CHECK(add.label == "at::native::vectorized_elementwise_kernel");
  CHECK(add.hbm_bytes == doctest::Approx(3 * 64 * 256 * 2));  // two inputs and an output
  CHECK(*add.duration == Time::from_us(10));
  // The measured timeline, from the first call.
  const RunRecord& m = t.measured;
  CHECK(m.ops[0][7].start == Time::from_us(107));
  CHECK(m.ops[0][7].end == Time::from_us(157));
  CHECK(m.ops[0][11].returned == Time::from_us(180));
  CHECK(m.ops[0][13].start == Time::from_us(183));  // the end of the step: the range's end
  CHECK(t.summary.host_only.at("cudaEventQuery") == 1);
  CHECK(t.summary.not_imported.begin()->first.find("mystery events") == 0);
  CHECK(t.summary.waits_timed == 1);
  CHECK(t.summary.steps == 1);
  // The schedule is one overlapsim runs; its steps are the trace's.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const Metrics mm = compute_metrics(sc, topo, m);
  REQUIRE(mm.steps.size() == 1);
  CHECK((mm.steps[0].end - mm.steps[0].start) == Time::from_us(183));
  ExecOptions o;
  o.keep_records = true;
  CHECK_NOTHROW(execute(sc, topo, ModelParams{}, o));
}

TEST_CASE("waits the timeline does not decide bind a prefetch queue in order") {
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    const int64_t c = b.call("cudaMemcpyAsync", 10 + 6 * i, 2);
    b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 12 + 9 * i, 8, c, {{"bytes", 4096}});
    b.call("cudaEventRecordWithFlags", 13 + 6 * i, 1);
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t w = b.call("cudaStreamWaitEvent", 40 + 5 * i, 1);
    b.sync("Stream Wait Event", w, 7, 60 + i);
    const int64_t k = b.call("cudaLaunchKernel", 41 + 5 * i, 1);
    b.gpu("kernel", "k", 7, 50 + 10 * i, 10, k);  // starts as soon as it could: the wait did not bind
  }
  const kineto::ImportedTrace t = kineto::import_traces({b.write("queue.json")});
  // copy, record, host, copy, record, host, wait, kernel, host, wait, kernel
  std::vector<int> records, waits;
  for (const Op& op : *t.schedule.programs[0].ops) {
    if (op.kind == OpKind::EventRecord) records.push_back(op.event);
    if (op.kind == OpKind::StreamWaitEvent) waits.push_back(op.event);
  }
  REQUIRE(records.size() == 2);
  REQUIRE(waits.size() == 2);
  CHECK(waits[0] == records[0]);
  CHECK(waits[1] == records[1]);
  CHECK(t.summary.waits_untimed == 2);
}

TEST_CASE("NCCL kernels of every rank's trace become collectives, of one rank's trace measured kernels") {
  auto rank_trace = [](int rank, int world) {
    TraceBuilder b;
    b.doc["distributedInfo"] = {{"rank", rank}, {"world_size", world}};
    const int64_t c = b.call("cuLaunchKernelEx", 10, 5);
    b.gpu("kernel", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 7, 20, 30, c,
          {{"Collective name", "all_to_allv"},
           {"In msg nelems", 1000},
           {"Out msg nelems", 1000},
           {"dtype", "BFloat16"},
           {"Process Group Ranks", "[0, 1]"}});
    return b;
  };
  // Given out of order: ranks come from distributedInfo.
  const std::string r1 = rank_trace(1, 2).write("r1.json"), r0 = rank_trace(0, 2).write("r0.json");
  const kineto::ImportedTrace t = kineto::import_traces({r1, r0}, at_cost());
  REQUIRE(t.schedule.ranks() == 2);
  const Op& a2a = op_at(t, 0, 0);
  CHECK(a2a.kind == OpKind::Collective);
  CHECK(a2a.coll == CollKind::AllToAll);
  CHECK(a2a.bytes == 2000);
  CHECK(t.schedule.groups[static_cast<size_t>(a2a.group)].name == "world");
  const kineto::ImportedTrace one = kineto::import_traces({r0}, at_cost());
  CHECK(op_at(one, 0, 0).kind == OpKind::Kernel);
  CHECK(*op_at(one, 0, 0).duration == Time::from_us(30));
  REQUIRE(one.summary.notes.size() == 3);
  CHECK(one.summary.notes[0].find("no step ranges (ProfilerStep#N, `step N`): the run is one step") == 0);
  // What happens to each collective: here the one all-to-all's group has rank 1, not given.
  CHECK(one.summary.notes[1] ==
        "the job had 2 ranks and 1 trace(s) were given: a collective whose group's ranks were all given is simulated (none); one whose "
        "group has a rank not given keeps its measured time (1 call(s) of group(s) [0, 1])");
  CHECK(one.summary.notes[2] == "none of the 1 kernels carries a shape (profile with record_shapes=True): --remodel-kernels has nothing to re-model");
  CHECK(error_of({r0, r0}).find("rank 0 again (also " + r0 + "): give each rank's trace once") != std::string::npos);
}

TEST_CASE("NCCL kernels without parameters: grouped point-to-point calls are told apart from a trace without shapes") {
  TraceBuilder b;
  b.gpu("kernel", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 19, 20, 30, b.call("cuLaunchKernelEx", 10, 5));
  b.gpu("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 19, 60, 30, b.call("cuLaunchKernelEx", 50, 5));
  const kineto::ImportedTrace t = kineto::import_traces({b.write("p2p.json")}, at_cost());
  CHECK(op_at(t, 0, 0).kind == OpKind::Kernel);
  CHECK(*op_at(t, 0, 0).duration == Time::from_us(30));
  const auto& left = t.summary.not_imported;
  CHECK(left.count("NCCL point-to-point kernel without parameters (batch_isend_irecv's carry none): a kernel at its measured time") == 1);
  CHECK(left.count("NCCL kernel without its collective's parameters (profile with record_shapes=True): a kernel at its measured time") == 1);
}

TEST_CASE("malformed traces: the file, the line and what to do") {
  const std::string bad = write_text("bad.json", "{\n \"traceEvents\": [\n  {\"ph\": oops}\n ]\n}\n");
  CHECK(error_of({bad}).find(bad + ":3:") == 0);
  CHECK(error_of({bad}).find("export the trace with prof.export_chrome_trace") != std::string::npos);
  CHECK(error_of({write_text("nolist.json", "{\"events\": []}")}).find("no traceEvents list") != std::string::npos);
  CHECK(error_of({write_text("nocalls.json", "{\"traceEvents\": []}")}).find("no CUDA runtime calls") != std::string::npos);
  CHECK(error_of({write_text("nocorr.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {}}]})")})
            .find("has no args.correlation") != std::string::npos);
  CHECK(error_of({write_text("nots.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "args": {"correlation": 1}}]})")})
            .find("(kernel 'k') has no ts") != std::string::npos);
  CHECK(error_of({(fs::temp_directory_path() / "osim-kineto-missing.json").string()}).find("no such file") != std::string::npos);
  CHECK_THROWS_AS(kineto::import_traces({}, steps_matching("(")), InputError);
}

TEST_CASE("what-ifs: kernels re-modelled from their shape, copies from other host memory") {
  TraceBuilder b;
  const int64_t cp = b.call("cudaMemcpyAsync", 10, 5);
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 16, 100, cp, {{"bytes", 1000000}});
  const int64_t k = b.call("cudaLaunchKernel", 30, 4, 9);
  b.gpu("kernel", "gemm", 7, 40, 50, k, {{"External id", 9}});
  b.cpu_op("aten::mm", 9, {{64, 128}, {128, 256}}, {"c10::BFloat16", "c10::BFloat16"});
  const kineto::ImportedTrace t = kineto::import_traces({b.write("whatif.json")});
  const Schedule w = apply_what_if(t.schedule, WhatIf{.remodel_kernels = true, .host_memory = HostMem::Pageable});
  for (const Op& op : *w.programs[0].ops) {
    if (op.kind == OpKind::Kernel) CHECK(!op.duration);
    if (op.kind == OpKind::Memcpy) CHECK(op.host_mem == HostMem::Pageable);
  }
  // The imported schedule is untouched.
  for (const Op& op : *t.schedule.programs[0].ops)
    if (op.kind == OpKind::Kernel) CHECK(op.duration);
}

TEST_CASE("the reference programs' traces: the measured step is the profiled run's, the simulated one within 2 % (pinned)") {
  const std::string root = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h100-sxm/";
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const ModelParams params = load_calibration(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/calibrations/h100-sxm.yaml");
  for (const char* name : {"dit-4096-layerwise-pf2-pinned", "dit-16384-none"}) {
    CAPTURE(name);
    const kineto::ImportedTrace t = kineto::import_traces({root + "traces/" + name + ".trace.json.gz"}, steps_matching("^step \\d+$"));
    std::ifstream in(root + "traces/" + name + ".json");
    const double profiled = json::parse(in).at("profiled_s").get<double>();
    const Metrics measured = compute_metrics(t.schedule, topo, t.measured);
    REQUIRE(measured.steps.size() == 1);
    // The trace's step (the range around the timed region) is the run's CUDA-event makespan, to 0.5 %.
    CHECK((measured.steps[0].end - measured.steps[0].start).s() == doctest::Approx(profiled).epsilon(0.005));
    ExecOptions o;
    o.keep_records = true;
    const ExecResult sim = execute(t.schedule, topo, params, o);
    const Metrics simulated = compute_metrics(t.schedule, topo, sim);
    REQUIRE(simulated.steps.size() == 1);
    CHECK((simulated.steps[0].end - simulated.steps[0].start).s() == doctest::Approx(profiled).epsilon(0.02));
  }
}

TEST_CASE("an SDPA op's shape, backend and is_causal from the profiler's inputs") {
  const json dims = {{1, 32, 4096, 128}, {1, 32, 4096, 128}, {1, 32, 4096, 128}};
  const json types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"};
  json args = {
      {"Input Dims", dims}, {"Input type", types}, {"Concrete Inputs", {"", "", "", "", "", "", "4096", "4096", "False", "0.", "True", "False", ""}}};
  using kineto::trace::attention_of;
  using kineto::trace::CpuOp;
  auto a = attention_of(CpuOp{"aten::_cudnn_attention_forward", &args});
  REQUIRE(a);
  CHECK(a->first.backend == AttnBackend::Cudnn);
  CHECK(a->first.seq_q == 4096);
  CHECK(a->first.causal);
  args["Concrete Inputs"][10] = "False";
  CHECK_FALSE(attention_of(CpuOp{"aten::_cudnn_attention_forward", &args})->first.causal);
  // The flash op (is_causal its fifth argument); no Concrete Inputs: not causal.
  json flash = {{"Input Dims", dims}, {"Input type", types}, {"Concrete Inputs", {"", "", "", "0.", "True", "False", ""}}};
  CHECK(attention_of(CpuOp{"aten::_scaled_dot_product_flash_attention", &flash})->first.causal);
  flash.erase("Concrete Inputs");
  CHECK_FALSE(attention_of(CpuOp{"aten::_scaled_dot_product_flash_attention", &flash})->first.causal);
}

TEST_CASE("a norm op's kind and the row it normalises from the profiler's inputs") {
  using kineto::trace::CpuOp;
  using kineto::trace::norm_of;
  const json types = {"c10::BFloat16", "", "", ""};
  // Flux's per-head q/k norm: [tokens, heads, head_dim] over its last 128.
  json rms = {{"Input Dims", {{4608, 24, 128}, json::array(), json::array(), json::array()}},
              {"Input type", types},
              {"Concrete Inputs", {"", "[128]", "", ""}}};
  auto n = norm_of(CpuOp{"aten::_fused_rms_norm", &rms});
  REQUIRE(n);
  CHECK(n->first == Access::RmsNorm);
  CHECK(n->second == 128);
  // A normalized_shape of two dimensions: their product; none recorded: the input's last dimension.
  json layer = {
      {"Input Dims", {{512, 3072}, json::array()}}, {"Input type", {"c10::BFloat16", ""}}, {"Concrete Inputs", {"", "[24, 128]", "", "", "1e-05"}}};
  CHECK(norm_of(CpuOp{"aten::native_layer_norm", &layer})->second == 3072);
  CHECK(norm_of(CpuOp{"aten::native_layer_norm", &layer})->first == Access::LayerNorm);
  layer.erase("Concrete Inputs");
  CHECK(norm_of(CpuOp{"aten::native_layer_norm", &layer})->second == 3072);
  CHECK_FALSE(norm_of(CpuOp{"aten::add", &layer}));
}

TEST_CASE("how a memory-bound op walks memory, from its inputs' shapes and strides") {
  using kineto::trace::CpuOp;
  using kineto::trace::memory_access_of;
  auto access = [](const char* name, json dims, json strides) {
    const json args = {{"Input Dims", dims}, {"Input Strides", strides}};
    return memory_access_of(CpuOp{name, &args});
  };
  CHECK(access("aten::add", {{4608, 3072}, {4608, 3072}, json::array()}, {{3072, 1}, {3072, 1}, json::array()}) == Access::Elementwise);
  // adaLN's scale: one row over every token.
  CHECK(access("aten::mul", {{4608, 3072}, {1, 3072}}, {{3072, 1}, {9216, 1}}) == Access::Broadcast);
  // GELU on the MLP's part of a fused projection: rows 21,504 apart.
  CHECK(access("aten::gelu", {{4608, 12288}, json::array()}, {{21504, 1}, json::array()}) == Access::Strided);
  CHECK(access("aten::roll", {{4608, 24, 128}, json::array(), json::array()}, {{3072, 128, 1}, json::array(), json::array()}) == Access::Roll);
  // Without strides recorded: only what the shapes say.
  const json args = {{"Input Dims", {{4608, 12288}, json::array()}}};
  CHECK(memory_access_of(CpuOp{"aten::gelu", &args}) == Access::Elementwise);
}

TEST_CASE("waits without cuda_sync events: the waiting stream from the next work, the record by stream and order") {
  // compute records, the copy stream waits and copies twice (a record after each), compute waits for
  // each copy (late, as it ends: the timeline decides), compute records and the copy stream waits
  // again, with no copy after it (a wait that changes nothing).
  auto build = [](bool syncs) {
    TraceBuilder b;
    b.call("cudaEventRecord", 5, 1);
    const int64_t w0 = b.call("cudaStreamWaitEvent", 6, 1);
    b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 12, 48, b.call("cudaMemcpyAsync", 10, 2), {{"bytes", 4096}});
    b.call("cudaEventRecord", 13, 1);
    b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 60, 40, b.call("cudaMemcpyAsync", 16, 2), {{"bytes", 4096}});
    b.call("cudaEventRecord", 19, 1);
    const int64_t w1 = b.call("cudaStreamWaitEvent", 40, 1);
    b.gpu("kernel", "k1", 7, 60, 10, b.call("cudaLaunchKernel", 41, 1));
    const int64_t w2 = b.call("cudaStreamWaitEvent", 45, 1);
    b.gpu("kernel", "k2", 7, 100, 10, b.call("cudaLaunchKernel", 46, 1));
    b.call("cudaEventRecord", 80, 1);
    const int64_t w3 = b.call("cudaStreamWaitEvent", 81, 1);
    b.gpu("kernel", "k3", 7, 110, 10, b.call("cudaLaunchKernel", 85, 1));
    if (syncs) {
      b.sync("Stream Wait Event", w0, 20, 1);
      b.sync("Stream Wait Event", w1, 7, 2);
      b.sync("Stream Wait Event", w2, 7, 3);
      b.sync("Stream Wait Event", w3, 20, 4);
    }
    return b;
  };
  auto waits = [](const kineto::ImportedTrace& t) {
    std::vector<std::pair<int, int>> out;  // (stream, event)
    for (const Op& op : *t.schedule.programs[0].ops)
      if (op.kind == OpKind::StreamWaitEvent) out.emplace_back(op.stream, op.event);
    return out;
  };
  const kineto::ImportedTrace inferred = kineto::import_traces({build(false).write("nosync.json")});
  const kineto::ImportedTrace recorded = kineto::import_traces({build(true).write("sync.json")});
  const Schedule& s = inferred.schedule;
  const int compute = s.find_stream("compute"), copy = s.find_stream("stream20");
  std::vector<int> records;
  for (const Op& op : *s.programs[0].ops)
    if (op.kind == OpKind::EventRecord) records.push_back(op.event);
  REQUIRE(records.size() == 4);
  CHECK(waits(recorded) == std::vector<std::pair<int, int>>{{copy, records[0]}, {compute, records[1]}, {compute, records[2]}, {copy, records[3]}});
  // The last wait's next work is compute's: compute waits there, on a copy that had ended (no effect).
  CHECK(waits(inferred) == std::vector<std::pair<int, int>>{{copy, records[0]}, {compute, records[1]}, {compute, records[2]}, {compute, records[1]}});
  CHECK(inferred.summary.inferred_timed == 2);
  CHECK(inferred.summary.inferred_untimed == 2);
  CHECK(recorded.summary.inferred_timed + recorded.summary.inferred_untimed == 0);
  CHECK(inferred.summary.text().find("confidence: 2 of 4 confirmed by the timeline") != std::string::npos);
  // wait_stream inside the copy stream's `with`: the record goes to the stream the thread used before.
  TraceBuilder w;
  w.gpu("kernel", "k", 7, 10, 10, w.call("cudaLaunchKernel", 5, 1));
  w.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 12, 8, w.call("cudaMemcpyAsync", 6, 1), {{"bytes", 4096}});
  w.call("cudaEventRecord", 8, 1);
  w.call("cudaStreamWaitEvent", 9, 1);
  w.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 21, 8, w.call("cudaMemcpyAsync", 10, 1), {{"bytes", 4096}});
  const kineto::ImportedTrace ws = kineto::import_traces({w.write("nosync-waitstream.json")});
  const Op* rec = nullptr;
  for (const Op& op : *ws.schedule.programs[0].ops)
    if (op.kind == OpKind::EventRecord) rec = &op;
  REQUIRE(rec);
  CHECK(rec->stream == ws.schedule.find_stream("compute"));
  CHECK(waits(ws) == std::vector<std::pair<int, int>>{{ws.schedule.find_stream("stream20"), rec->event}});
  // A wait after a record on the stream its next work goes to, with no other stream used: left out.
  TraceBuilder b;
  b.gpu("kernel", "k", 7, 10, 10, b.call("cudaLaunchKernel", 5, 1));
  b.call("cudaEventRecord", 8, 1);
  b.call("cudaStreamWaitEvent", 9, 1);
  b.gpu("kernel", "k", 7, 20, 10, b.call("cudaLaunchKernel", 10, 1));
  const kineto::ImportedTrace lone = kineto::import_traces({b.write("nosync-lone.json")});
  CHECK(lone.summary.not_imported.at("stream waits without a cuda_sync event whose waiting stream the calls do not show: left out") == 1);
}

// Every stream wait of an import in program order: its waiting stream ("compute" or "side") and its record's ordinal.
std::vector<std::pair<std::string, int>> wait_pairings(const kineto::ImportedTrace& t) {
  std::vector<std::pair<std::string, int>> out;
  const int compute = t.schedule.find_stream("compute");
  std::map<int, int> ordinal;  // event -> its record's ordinal
  for (const Op& op : *t.schedule.programs[0].ops) {
    if (op.kind == OpKind::EventRecord) ordinal.emplace(op.event, static_cast<int>(ordinal.size()));
    if (op.kind == OpKind::StreamWaitEvent) out.emplace_back(op.stream == compute ? "compute" : "side", ordinal.at(op.event));
  }
  return out;
}

TEST_CASE("a reference program profiled with the defaults: its waits inferred as the same program's sync events recorded them") {
  // traces-default/ and traces/: the same program, profiled in two sessions, without and with
  // enable_cuda_sync_events. The calls are the same, and so are the pairings: the last
  // copy.wait_stream(compute), with no prefetch after it, included (its record and wait, then
  // compute's wait: the copy stream's; taken for compute's, it bound the pageable trace's next copy
  // and every later compute wait one copy late).
  const std::string ref = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h100-sxm/";
  for (const char* name : {"dit-4096-layerwise-pf2-pinned", "dit-16384-layerwise-pf2-pageable"}) {
    CAPTURE(name);
    const kineto::ImportedTrace recorded = kineto::import_traces({ref + "traces/" + name + ".trace.json.gz"});
    const kineto::ImportedTrace inferred = kineto::import_traces({ref + "traces-default/" + name + ".trace.json.gz"});
    CHECK(inferred.summary.inferred_timed + inferred.summary.inferred_untimed == 24);
    CHECK(inferred.summary.waits_recorded == 0);
    CHECK(recorded.summary.waits_recorded == 24);
    const auto pairings = wait_pairings(recorded);
    REQUIRE(pairings.size() == 24);
    CHECK(std::count(pairings.begin(), pairings.end(), std::pair<std::string, int>{"side", 38}) == 1);  // the last wait_stream
    CHECK(wait_pairings(inferred) == pairings);
  }
}

TEST_CASE("stream synchronizes without cuda_sync events: the stream the timeline shows, else a device synchronize") {
  // A kernel on compute (10-20 us) beside a copy on stream 20 (12-100 us). The first synchronize
  // returns at 22 us with the copy still running: it waited for compute alone. The second returns
  // as the copy ends (nothing left running): a device synchronize reproduces it. The third comes
  // after a kernel on stream 20 (110-120) while compute idles: stream 20's.
  TraceBuilder b;
  b.gpu("kernel", "k", 7, 10, 10, b.call("cudaLaunchKernel", 5, 1));
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 12, 88, b.call("cudaMemcpyAsync", 8, 1), {{"bytes", 4096}});
  b.call("cudaStreamSynchronize", 15, 7);
  b.call("cudaStreamSynchronize", 30, 71);
  b.gpu("kernel", "k2", 20, 110, 10, b.call("cudaLaunchKernel", 105, 1));
  b.gpu("kernel", "k3", 7, 125, 100, b.call("cudaLaunchKernel", 106, 1));
  b.call("cudaStreamSynchronize", 107, 14);
  const kineto::ImportedTrace t = kineto::import_traces({b.write("nosync-streamsync.json")});
  std::vector<std::pair<OpKind, int>> syncs;  // (kind, stream)
  for (const Op& op : *t.schedule.programs[0].ops)
    if (op.kind == OpKind::StreamSync || op.kind == OpKind::DeviceSync) syncs.emplace_back(op.kind, op.kind == OpKind::StreamSync ? op.stream : -1);
  const int compute = t.schedule.find_stream("compute"), side = t.schedule.find_stream("stream20");
  CHECK(syncs == std::vector<std::pair<OpKind, int>>{{OpKind::StreamSync, compute}, {OpKind::DeviceSync, -1}, {OpKind::StreamSync, side}});
  CHECK(std::count(
            t.summary.notes.begin(), t.summary.notes.end(),
            "stream synchronizes without their cuda_sync event: 1 became device synchronizes (no stream was busy as the call returned), 2 stream "
            "synchronizes of the stream whose work had ended by then (another was still busy)") == 1);
}

TEST_CASE("a reference program's trace without its cuda_sync events: the same waits inferred, the same replay") {
  const std::string root = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h100-sxm/traces/";
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const ModelParams params = load_calibration(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/calibrations/h100-sxm.yaml");
  for (const char* name : {"dit-4096-layerwise-pf2-pinned", "dit-16384-layerwise-pf2-pageable"}) {
    CAPTURE(name);
    const std::string with = root + name + ".trace.json.gz";
    json doc = json::parse(read_maybe_gzip(with));
    json kept = json::array();
    for (const json& e : doc["traceEvents"])
      if (e.value("cat", "") != "cuda_sync") kept.push_back(e);
    doc["traceEvents"] = std::move(kept);
    const std::string without = write_text(std::string(name) + "-nosync.json", doc.dump());
    const kineto::ImportedTrace a = kineto::import_traces({with}, steps_matching("^step \\d+$"));
    const kineto::ImportedTrace b = kineto::import_traces({without}, steps_matching("^step \\d+$"));
    CHECK(b.summary.inferred_timed + b.summary.inferred_untimed == 24);
    CHECK(b.summary.ops.at("stream_wait_event") == a.summary.ops.at("stream_wait_event"));
    CHECK(wait_pairings(b) == wait_pairings(a));
    ExecOptions o;
    o.keep_records = true;
    auto step_of = [&](const kineto::ImportedTrace& t) {
      const Metrics m = compute_metrics(t.schedule, topo, execute(t.schedule, topo, params, o));
      REQUIRE(m.steps.size() == 1);
      return (m.steps[0].end - m.steps[0].start).s();
    };
    // Left out (before), the pinned step replayed 44.0 ms against 76.6 ms, the pageable one 545.0 against 648.9 ms.
    CHECK(step_of(b) == doctest::Approx(step_of(a)).epsilon(0.001));
  }
}

TEST_CASE("one rank's trace replayed as every rank of its job (--symmetric-ranks), against every rank's traces") {
  const std::string dir = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h200x4-nvlink/traces/dit-sp4-16384-nccl-layerwise-pf2-pinned";
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams params = load_calibration(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/calibrations/h200x4-nvlink.yaml");
  std::vector<std::string> all;
  for (int r = 0; r < 4; ++r) all.push_back(dir + ".rank" + std::to_string(r) + ".trace.json.gz");
  const kineto::ImportedTrace every = kineto::import_traces(all, steps_matching("^step \\d+$"));
  kineto::ImportOptions o = steps_matching("^step \\d+$");
  const kineto::ImportedTrace alone = kineto::import_traces({all[2]}, o);  // as before: one rank, collectives measured
  o.symmetric_ranks = true;
  const kineto::ImportedTrace sym = kineto::import_traces({all[2]}, o);
  CHECK(alone.summary.ranks == 1);
  CHECK(alone.summary.ops.count("collective all_to_all") == 0);
  REQUIRE(sym.summary.ranks == 4);
  REQUIRE(sym.schedule.programs.size() == 4);
  for (const auto& p : sym.schedule.programs) CHECK(p.ops->size() == sym.schedule.programs[0].ops->size());
  CHECK(sym.summary.ops.at("collective all_to_all") == every.summary.ops.at("collective all_to_all"));
  CHECK(std::count_if(sym.summary.notes.begin(), sym.summary.notes.end(),
                      [](const std::string& n) { return n.find("rank 2's trace replayed as each of the job's 4 ranks") == 0; }) == 1);
  ExecOptions eo;
  eo.keep_records = true;
  auto step_of = [&](const kineto::ImportedTrace& t) {
    const Metrics m = compute_metrics(t.schedule, topo, execute(t.schedule, topo, params, eo));
    REQUIRE(m.steps.size() == 1);
    return (m.steps[0].end - m.steps[0].start).s();
  };
  // Its ranks are alike: rank 2 four times replays within 2 % of the four ranks' own traces.
  CHECK(step_of(sym) == doctest::Approx(step_of(every)).epsilon(0.02));
  // Refused: several traces, or one of a single-rank job.
  CHECK_THROWS_AS(kineto::import_traces({all[0], all[1]}, o), InputError);
  TraceBuilder b;
  b.gpu("kernel", "k", 7, 10, 10, b.call("cudaLaunchKernel", 5, 1));
  CHECK_THROWS_AS(kineto::import_traces({b.write("sym-single.json")}, o), InputError);
}

TEST_CASE("steps without --steps: ProfilerStep#N, else `step N` ranges, the others listed") {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) b.gpu("kernel", "k", 7, 20 + 100 * i, 10, b.call("cudaLaunchKernel", 10 + 100 * i, 1));
  b.range("step 0", 5, 95);
  b.range("step 1", 105, 95);
  const kineto::ImportedTrace named = kineto::import_traces({b.write("steps-named.json")});
  CHECK(named.summary.steps == 2);
  CHECK(named.summary.text().find("steps: 2 ('step N' ranges, found without --steps)") != std::string::npos);
  REQUIRE(named.summary.notes.size() == 1);  // no shapes
  CHECK(named.summary.notes[0].find("none of the 3 kernels carries a shape") == 0);
  b.range("ProfilerStep#7", 4, 200);
  const kineto::ImportedTrace both = kineto::import_traces({b.write("steps-both.json")});
  CHECK(both.summary.steps == 1);
  REQUIRE(both.summary.notes.size() == 2);
  CHECK(both.summary.notes[0] == "other step ranges found: 2 'step N' ranges (--steps '^[Ss]tep[ _#]?\\d+$'); choose with --steps REGEX");
  const kineto::ImportedTrace given = kineto::import_traces({b.write("steps-given.json")}, steps_matching("^step \\d+$"));
  CHECK(given.summary.steps == 2);
  CHECK(given.summary.text().find("steps: 2\n") != std::string::npos);
  const kineto::ImportedTrace none = kineto::import_traces({b.write("steps-none.json")}, steps_matching("^phase \\d+$"));
  CHECK(none.summary.steps == 0);
  CHECK(none.summary.notes.at(0) == "no range's name matches --steps '^phase \\d+$': the run is one step");
}

TEST_CASE("--remodel-kernels on a trace without shapes: refused, nothing to re-model") {
  TraceBuilder b;
  b.gpu("kernel", "gemm", 7, 20, 10, b.call("cudaLaunchKernel", 10, 1, 9));
  b.cpu_op("aten::mm", 9, json::array(), json::array());  // recorded without record_shapes
  const kineto::ImportedTrace t = kineto::import_traces({b.write("noshapes.json")});
  bool refused = false;
  try {
    apply_what_if(t.schedule, WhatIf{.remodel_kernels = true, .host_memory = std::nullopt});
  } catch (const InputError& e) {
    refused = std::string(e.what()).find("none of schedule 'osim-kineto-noshapes''s 1 kernels of measured time carries a shape") != std::string::npos;
  }
  CHECK(refused);
  CHECK_NOTHROW(apply_what_if(t.schedule, WhatIf{.host_memory = HostMem::Pageable}));
}

TEST_CASE("a kernel records how long 1 and 2 copy engines were busy beside it") {
  // The kernel runs 100-200 µs. H2D copies 50-150 and 140-160 (one engine),
  // a D2H copy 120-130, and a peer copy (no engine: a kernel of its time) 100-200.
  TraceBuilder b;
  const int64_t c1 = b.call("cudaMemcpyAsync", 10, 2);
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 50, 100, c1, {{"bytes", 1000000}});
  const int64_t k = b.call("cudaLaunchKernel", 20, 2);
  b.gpu("kernel", "some_kernel", 7, 100, 100, k);
  const int64_t c2 = b.call("cudaMemcpyAsync", 30, 2);
  b.gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 21, 120, 10, c2, {{"bytes", 100000}});
  const int64_t c3 = b.call("cudaMemcpyAsync", 40, 2);
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 22, 140, 20, c3, {{"bytes", 200000}});
  const int64_t c4 = b.call("cudaMemcpyAsync", 50, 2);
  b.gpu("gpu_memcpy", "Memcpy PtoP (Device -> Device)", 23, 100, 100, c4, {{"bytes", 200000}});
  const kineto::ImportedTrace t = kineto::import_traces({b.write("beside-copies.json")});
  const Op* kernel = nullptr;
  const Op* peer = nullptr;
  for (const Op& op : *t.schedule.programs[0].ops)
    if (op.kind == OpKind::Kernel) (op.label == "some_kernel" ? kernel : peer) = &op;
  REQUIRE(kernel);
  REQUIRE(peer);
  // 1 engine: 100-120, 130-160 (the two H2D copies on one engine); 2: 120-130.
  CHECK(kernel->beside_copies_ns == std::array<uint32_t, 3>{50'000, 10'000, 0});
  CHECK(peer->beside_copies_ns == std::array<uint32_t, 3>{50'000, 10'000, 0});
  // Written and read back the same.
  const Schedule again = parse_schedule_string(to_yaml(t.schedule), "again.yaml");
  for (size_t i = 0; i < again.programs[0].ops->size(); ++i)
    CHECK((*again.programs[0].ops)[i].beside_copies_ns == (*t.schedule.programs[0].ops)[i].beside_copies_ns);
}

TEST_CASE("one rank of a larger job imports as rank 0, with its GPU from deviceProperties") {
  TraceBuilder b;
  b.doc["distributedInfo"] = {{"rank", 2}, {"world_size", 4}};
  b.doc["deviceProperties"] = json::array({{{"id", 0}, {"name", "GPU A"}, {"numSms", 100}, {"totalGlobalMem", 1000}},
                                           {{"id", 1}, {"name", "GPU B"}, {"numSms", 132}, {"totalGlobalMem", 85017493504}}});
  const int64_t k = b.call("cudaLaunchKernel", 10, 2);
  b.gpu("kernel", "some_kernel", 7, 20, 10, k, {{"device", 1}});
  const kineto::ImportedTrace t = kineto::import_traces({b.write("rank2of4.json")});
  CHECK(t.schedule.ranks() == 1);
  REQUIRE(t.gpus.size() == 1);
  CHECK(t.gpus[0].name == "GPU B");  // the entry of the device its activities ran on
  CHECK(t.gpus[0].sms == 132);
  CHECK(t.gpus[0].memory == 85017493504);
  bool said = false;
  for (const auto& n : t.summary.notes) said = said || n.find("the job's rank(s) [2] are the schedule's rank(s) 0 to 0") != std::string::npos;
  CHECK(said);
}

// Calls of three kinds, a microsecond or more apart: four launches of 9, 36, 10 and 12 us, their
// kernels queued back to back (the GPU never idle): median 11 us; three event records of 2, 3 and
// 5 us: exactly the fewest taken, median 3 us; two async pinned copy calls of 1 and 1.5 ms that
// returned before their copies ended (they did not wait): their mean, 1.25 ms, would replace a copy
// call's 10 us in every copy of the replay; too few, left out.
namespace {
void three_kinds_of_call(TraceBuilder& b) {
  const double launch_ts[] = {0, 10, 47, 58}, launch_us[] = {9, 36, 10, 12};
  for (size_t i = 0; i < 4; ++i) b.gpu("kernel", "k", 7, 20 + 500.0 * static_cast<double>(i), 500, b.call("cudaLaunchKernel", launch_ts[i], launch_us[i]));
  b.call("cudaEventRecord", 75, 2);
  b.call("cudaEventRecord", 80, 3);
  b.call("cudaEventRecord", 85, 5);
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 105, 4895, b.call("cudaMemcpyAsync", 100, 1000), {{"bytes", 1000000}});
  b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 5000, 4000, b.call("cudaMemcpyAsync", 1110, 1500), {{"bytes", 1000000}});
}
}  // namespace

TEST_CASE("each kind of call's measured cost: the median of 3 calls or more, a kind of fewer keeps the calibration's") {
  TraceBuilder b;
  three_kinds_of_call(b);
  const kineto::ImportedTrace t = kineto::import_traces({b.write("calls.json")});
  const auto& h = t.schedule.runtime.host_calls;
  REQUIRE(h.kernel_launch);
  CHECK(*h.kernel_launch == Time::from_us(11));
  REQUIRE(h.event_call);
  CHECK(*h.event_call == Time::from_us(3));
  CHECK_FALSE(h.memcpy_call);  // a run keeps its calibration's (or the model's) copy call
  CHECK_FALSE(h.sync_call);
  CHECK_FALSE(h.collective_call);
  CHECK(t.summary.host_calls == "kernel_launch 11.0 us (4), event_call 3.0 us (3)");
  CHECK(t.summary.host_calls_too_few == "memcpy_call 1250.0 us (2)");
  CHECK(t.summary.text().find("host calls of too few calls to stand for their kind (under 3; a run keeps the calibration's cost): "
                              "memcpy_call 1250.0 us (2)\n") != std::string::npos);
  // The schedule written keeps the two taken, as exact picoseconds.
  CHECK(to_yaml(t.schedule).find("host_calls: {kernel_launch: 11000000 ps, event_call: 3000000 ps}") != std::string::npos);
}

TEST_CASE("each call keeps its measured time: over its kind's cost as host work before it, under it given back after it") {
  TraceBuilder b;
  three_kinds_of_call(b);  // launches' median 11 us, records' 3 us, copy calls too few: the model's 10 us
  const std::string path = b.write("call-times.json");
  const auto host_work_us = [](const Schedule& s) {
    double us = 0;
    for (const Op& op : *s.programs[0].ops)
      if (op.kind == OpKind::HostWork) us += op.duration->us();
    return us;
  };
  kineto::ImportOptions with_model;  // the copy call's cost a run charges: 10 us (the model's)
  with_model.model_costs.memcpy_call = Time::from_us(10);
  with_model.call_times = true;  // --calls-as-measured
  const kineto::ImportedTrace t = kineto::import_traces({path}, with_model);
  // Over: the 36 and 12 us launches (25 + 1), the 5 us record (2), the copy calls (990 + 1490).
  CHECK(t.summary.over_cost_calls == 5);
  CHECK(t.summary.over_cost_ns == 2'508'000);
  // Under: the 9 and 10 us launches (2 + 1) and the 2 us record (1), each from the host's time after it.
  CHECK(t.summary.under_cost_ns == 4'000);
  CHECK(t.summary.late_returns == 0);
  CHECK(t.summary.text().find("kept as host work: 5 calls before them, 2508.0 us; 0 waits' returns after them, 0.0 us; calls under their "
                              "cost: 4.0 us taken from the host's time after them\n") != std::string::npos);
  // Without them (the default, overlapsim reference): the same costs taken, every call at its kind's cost.
  kineto::ImportOptions io;
  const kineto::ImportedTrace at_cost = kineto::import_traces({path}, io);
  CHECK(at_cost.summary.over_cost_calls == 0);
  CHECK(at_cost.summary.under_cost_ns == 0);
  CHECK(at_cost.summary.host_calls == t.summary.host_calls);
  CHECK(host_work_us(t.schedule) - host_work_us(at_cost.schedule) == doctest::Approx(2508 - 4));
  // A kind whose cost a run takes from neither the trace nor the caller keeps no difference: the copy calls'.
  kineto::ImportOptions no_model;
  no_model.call_times = true;
  const kineto::ImportedTrace unknown = kineto::import_traces({path}, no_model);
  CHECK(unknown.summary.over_cost_calls == 3);
  CHECK(unknown.summary.over_cost_ns == 28'000);
}

TEST_CASE("a wait's return: how long after the GPU work a blocking call waited for ended it returned, their median of 3 or more") {
  // Each wait on work that ends after its call began: a stream synchronize
  // back 8 us after its kernel, a blocking copy 6 us after itself, a device
  // synchronize 10 us after the last kernel. A device synchronize of an idle
  // GPU and an async pinned copy that returned after its copy (neither
  // waited) are no wait's return.
  auto trace = [](bool third) {
    TraceBuilder b;
    b.gpu("kernel", "k1", 7, 20, 100, b.call("cudaLaunchKernel", 0, 5));
    const int64_t s = b.call("cudaStreamSynchronize", 10, 118);  // back at 128
    b.sync("Stream Sync", s, 7);
    b.gpu("kernel", "k2", 7, 140, 100, b.call("cudaLaunchKernel", 130, 5));
    b.gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 7, 240, 4, b.call("cudaMemcpy", 140, 110), {{"bytes", 4096}});  // back at 250
    b.call("cudaDeviceSynchronize", 260, 3);
    b.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 7, 270, 2, b.call("cudaMemcpyAsync", 265, 10), {{"bytes", 4096}});
    if (third) {
      b.gpu("kernel", "k3", 7, 290, 100, b.call("cudaLaunchKernel", 280, 5));
      b.call("cudaDeviceSynchronize", 290, 110);  // back at 400
    }
    return b;
  };
  const kineto::ImportedTrace t = kineto::import_traces({trace(true).write("wait-returns.json")});
  const auto& h = t.schedule.runtime.host_calls;
  REQUIRE(h.wait_return);
  CHECK(*h.wait_return == Time::from_us(8));  // of 6, 8 and 10 us
  CHECK(t.summary.host_calls.find("wait_return 8.0 us (3)") != std::string::npos);
  CHECK(t.summary.wait_returns == "memcpy 6.0 us (1), stream_sync 8.0 us (1), device_sync 10.0 us (1)");
  CHECK(t.summary.text().find("waits' returns (the host back after the GPU work it waited for ended; wait_return: their median, of every kind): "
                              "memcpy 6.0 us (1), stream_sync 8.0 us (1), device_sync 10.0 us (1)\n") != std::string::npos);
  CHECK(to_yaml(t.schedule).find("wait_return: 8000000 ps}") != std::string::npos);
  // Two waits are too few: the calibration's wait_return is kept, and the summary says so.
  const kineto::ImportedTrace two = kineto::import_traces({trace(false).write("wait-returns-two.json")});
  CHECK_FALSE(two.schedule.runtime.host_calls.wait_return);
  CHECK(two.summary.host_calls_too_few.find("wait_return 7.0 us (2)") != std::string::npos);
  CHECK(two.summary.wait_returns == "memcpy 6.0 us (1), stream_sync 8.0 us (1)");
}
