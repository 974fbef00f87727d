// The calibration pipeline's tables (calib/pipeline.cpp) against the bench's
// testcase table (schedule/bench_keys.hpp) and the calibration file's fields:
// every replayed key is a testcase replayed by one row; every step reads
// testcases and fields that exist, after the steps that set them; each
// cross-family value is produced by one step before any step consumes it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "calib/bench_doc.hpp"
#include "calib/pipeline.hpp"
#include "gpu/params_io.hpp"
#include "hw/topology.hpp"
#include "schedule/bench_keys.hpp"

using namespace osim;

namespace {
std::set<std::string> bench_families() {
  std::set<std::string> out;
  for (const bench::Testcase& t : bench::kTestcases) out.emplace(t.family);
  return out;
}
}  // namespace

TEST_CASE("every replayed key is a bench testcase, replayed by exactly one row") {
  std::map<std::string, int> rows;
  for (const ReplayStep& r : replay_steps()) {
    CAPTURE(r.key);
    CHECK(bench::known(r.key));
    CHECK(static_cast<bool>(r.replay));
    ++rows[std::string(r.key)];
  }
  for (const auto& row : rows) {  // (clang 14 cannot capture a structured binding)
    CAPTURE(row.first);
    CHECK(row.second == 1);
  }
  // The testcases nothing replays, fitted or reported only: the overheads'
  // host times, the kernels after a hand-off, the memory kernel after what,
  // pageable copies beside compute and from several processes on a box's GPUs, PyTorch's all-to-alls, its host's pace
  // after a wait, the sustained-load series, the VRAM readings, one GPU's copies beside host-memory kernels and the
  // profiler's cost.
  std::set<std::string> unreplayed;
  for (const bench::Testcase& t : bench::kTestcases)
    if (!replay_for(t.key)) unreplayed.emplace(t.key);
  CHECK(unreplayed == std::set<std::string>{"overhead_kernel_launch",
                                            "overhead_event_record",
                                            "overhead_stream_sync_idle",
                                            "overhead_memcpy_async_pinned_return",
                                            "overhead_stream_wait_event",
                                            "overhead_framework_op",
                                            "overhead_framework_collective",
                                            "launch_queue",
                                            "h2d_pageable_beside_compute",
                                            "framework_all_to_all",
                                            "kernel_reps",
                                            "memory_after",
                                            "gemm_sustained",
                                            "gemm_sustained_long",
                                            "gemm_sustained_copy",
                                            "vram_context",
                                            "vram_gemm_workspace",
                                            "vram_allocator_reserve",
                                            "vram_nccl",
                                            "framework_elementwise",
                                            "framework_channels_first",
                                            "host_after_wait",
                                            "processes_h2d_pageable",
                                            "processes_d2h_pageable",
                                            "processes_host_to_pinned",
                                            "host_op_loop",
                                            "overhead_framework_fp8_gemm",
                                            "copy_beside_host_memory_kernel",
                                            "overhead_profiler"});
}

TEST_CASE("the fit steps are the bench's families', named once, reading its testcases") {
  std::set<std::string> families, names;
  for (const FitStep& s : fit_steps()) {
    CAPTURE(s.name);
    CHECK(static_cast<bool>(s.run));
    families.emplace(s.family);
    CHECK(names.emplace(std::string(s.family) + "." + std::string(s.name)).second);
    for (const std::string_view k : s.keys) {
      CAPTURE(k);
      CHECK(bench::known(k));
    }
  }
  CHECK(families == bench_families());
  const std::vector<std::string> listed = calib_families();
  CHECK(std::set<std::string>(listed.begin(), listed.end()) == families);
  // A testcase the bench's table marks reported only is read by no step; of
  // those it marks fitted (the calibration file's "fitted from" notes), these
  // are read by no step either: replayed only, or not used at all.
  std::set<std::string> fitted_unread;
  for (const bench::Testcase& t : bench::kTestcases) {
    CAPTURE(t.key);
    bool read = false;
    for (const FitStep& s : fit_steps()) read = read || std::find(s.keys.begin(), s.keys.end(), t.key) != s.keys.end();
    if (!t.fitted) CHECK(!read);
    if (t.fitted && !read) fitted_unread.emplace(t.key);
  }
  CHECK(fitted_unread == std::set<std::string>{"overhead_stream_wait_event", "h2d_two_streams", "multi_h2d_pipelined", "p2p_copy", "copy_after_idle",
                                               "memory_after", "gemm_sustained_shapes", "gemm_after_idle"});
}

TEST_CASE("a step reads fields after the steps that write them") {
  std::set<std::string> fields;
  for (const ModelFieldDoc& d : model_field_docs()) fields.insert(d.family + "." + d.name);
  std::set<std::string> written_by_any;
  for (const FitStep& s : fit_steps())
    for (const std::string_view w : s.writes) written_by_any.emplace(w);
  std::set<std::string> written;
  for (const FitStep& s : fit_steps()) {
    CAPTURE(s.family);
    CAPTURE(s.name);
    for (const std::string_view r : s.reads) {
      CAPTURE(r);
      if (r == kReadsModel) continue;
      CHECK(fields.count(std::string(r)));
      // A field no step writes holds the model's default throughout.
      if (written_by_any.count(std::string(r))) CHECK(written.count(std::string(r)));
    }
    for (const std::string_view w : s.writes) {
      CAPTURE(w);
      CHECK(fields.count(std::string(w)));
      written.emplace(w);
    }
  }
}

TEST_CASE("each cross-family output is produced by one step, before the steps that consume it") {
  std::map<FitOutput, size_t> producer;
  const std::vector<FitStep>& steps = fit_steps();
  for (size_t i = 0; i < steps.size(); ++i)
    for (const FitOutput o : steps[i].produces) {
      CAPTURE(fit_output_name(o));
      CHECK(producer.emplace(o, i).second);
    }
  std::set<FitOutput> consumed;
  for (size_t i = 0; i < steps.size(); ++i)
    for (const FitOutput o : steps[i].consumes) {
      CAPTURE(steps[i].name);
      CAPTURE(fit_output_name(o));
      REQUIRE(producer.count(o));
      CHECK(producer.at(o) < i);
      CHECK(steps[producer.at(o)].family != steps[i].family);  // within a family, a value is the family's own business
      consumed.insert(o);
    }
  CHECK(producer.size() == kFitOutputs);
  CHECK(consumed.size() == kFitOutputs);
}

TEST_CASE("a step that produces or consumes an output its row does not list is refused") {
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  const BenchDocs docs;
  const json def = json::object();
  Calibration cal;
  FitContext ctx(docs, docs, def, topo, cal);
  const FitStep producer{.family = "power", .name = "test_producer", .produces = {FitOutput::sustained_scale}, .run = [](FitContext& c) {
                           c.produce(FitOutput::sustained_scale, 1.25);
                         }};
  const FitStep consumer{.family = "gemm", .name = "test_consumer", .consumes = {FitOutput::sustained_scale}, .run = [](FitContext& c) {
                           c.p.gemm.gemm_efficiency = c.consume(FitOutput::sustained_scale).value_or(0);
                         }};
  const FitStep unlisted{.family = "gemm", .name = "test_unlisted", .run = [](FitContext& c) {
                           c.p.gemm.gemm_efficiency = c.consume(FitOutput::sustained_scale).value_or(0);
                         }};
  const FitStep stray{.family = "copies", .name = "test_stray", .consumes = {FitOutput::sustained_scale}, .run = [](FitContext& c) {
                        c.produce(FitOutput::sustained_scale, 2);
                      }};
  ctx.run(producer);
  ctx.run(consumer);
  CHECK(cal.params.gemm.gemm_efficiency == 1.25);
  CHECK_THROWS_AS(ctx.run(unlisted), std::logic_error);
  CHECK_THROWS_AS(ctx.run(stray), std::logic_error);
}

TEST_CASE("older bench rows are upgraded to the current format in one place") {
  const json doc = json::parse(R"({"schema": "overlapsim.bench/v1", "results": [
    {"key": "h2d_pinned", "bytes": 4096, "gpus": [0], "time_us": 3.0},
    {"key": "d2h_pinned", "bytes": 8388608, "gpus": [0], "time_us": 170.0},
    {"key": "h2d_pinned", "bytes": 1073741824, "gpus": [0], "time_us": 20000.0},
    {"key": "h2d_pinned", "bytes": 4096, "gpus": [0], "time_us": 3.0, "reps": 7},
    {"key": "bidir_pinned", "bytes": 4096, "gpus": [0], "h2d_time_us": 3.0, "d2h_time_us": 3.0},
    {"key": "bidir_pinned", "bytes": 4096, "gpus": [0], "h2d_time_us": 3.0, "d2h_time_us": 3.0, "reps": 20},
    {"key": "attention_sdpa", "backend": "flash", "heads": 24},
    {"key": "attention_sdpa", "heads": 24}]})");
  const json up = upgrade_bench_doc(doc);
  const json& r = up.at("results");
  // A pinned copy's reps: the bench's rule then (20 below 1 MiB, 5 below 64 MiB, 1 above); a row's own stays.
  CHECK(r[0].at("reps") == 20);
  CHECK(r[1].at("reps") == 5);
  CHECK(r[2].at("reps") == 1);
  CHECK(r[3].at("reps") == 7);
  // Both ways at once without reps: one copy each way behind two gates.
  CHECK(r[4].at("reps") == 1);
  CHECK(one_copy_per_gate(r[4]));
  CHECK(!one_copy_per_gate(r[5]));
  CHECK(r[5].at("reps") == 20);
  // "flash" was FlashAttention-2; a row naming no backend stays so (PyTorch's default).
  CHECK(r[6].at("backend") == "flash2");
  CHECK(!r[7].contains("backend"));
  // Already current: unchanged.
  CHECK(upgrade_bench_doc(up) == up);
}
