// The calibration file's model section (gpu/params_io): every field written
// and read back, values out of range and unknown or retired keys refused
// with the file, line and what to do, and the documentation's table.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include "core/errors.hpp"
#include "gpu/params_io.hpp"
#include "schedule/bench_keys.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A scratch calibration file of this process: ctest runs each case in a
// process of its own, several at once.
std::filesystem::path scratch_path() {
  return std::filesystem::temp_directory_path() / ("osim-params-io." + std::to_string(::getpid()) + ".yaml");
}

// A calibration file holding `model` (the lines under `model:`).
struct File {
  std::filesystem::path path = scratch_path();
  explicit File(const std::string& model) { std::ofstream(path) << "schema: overlapsim.calibration/v1\nmodel:\n" << model; }
  ~File() { std::filesystem::remove(path); }
  ModelParams load() const { return load_calibration(path.string()); }
};
std::string error_of(const std::string& model) {
  try {
    (void)File(model).load();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("every field set away from its default is written and read back") {
  ModelParams p;
  p.overheads.kernel_launch = Time::from_us(3.5);
  p.overheads.collective_call = Time::from_us(7);  // never fitted: written where it differs from the default
  p.overheads.event_gpu_time_copy = Time::from_us(1.25);
  p.handoff.copy_after_kernel_latency.h2d = Time::from_us(5.5);
  p.handoff.handoff_phase_min = Time::from_us(0.25);
  p.handoff.handoff_phase_max = Time::from_us(7.75);
  p.copies.copy_engine_bandwidth.h2d = Bandwidth::from_GBps(54.25);
  p.copies.copy_engine_bandwidth_c2c.h2d = Bandwidth::from_GBps(410.5);  // a GH200's own, over its public default
  p.copies.copy_bidir_table = {{65536, 0.7, 0.75}, {1073741824, 0.9, 0.95}};
  p.memory.framework_norm_rows = {{{128, 0.0985, 0.1663}, {2560, 0.4616, 0.6041}}};
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(55), Bandwidth::from_GBps(106)};
  p.gemm.gemm_shapes = {{4096, 4096, 4096, 0.81}};
  p.gemm.gemm_model = {0.88, 77, 0, 160, 0.025};
  p.attention.attention_slow_share = 0.25;
  p.nccl.nccl_channels = 16;
  p.nccl.nccl_tables.push_back({TableColl::AllReduce, 4, true, {{1048576, 40e-6}, {4194304, 90e-6}}, 8});
  p.power.sustained_slowdown = 0.15;
  p.power.sustained_time_constant = Time::from_ms(42.5);
  p.nvlink.nvlink_wake_latency = Time::from_us(100.5);
  p.nvlink.nvlink_wake_min_bytes = 2 << 20;
  p.interference.copy_weight.d2h = 1.75;
  const std::string text = model_yaml(p);
  const File file("");
  std::ofstream(file.path) << text;
  const ModelParams q = load_calibration(file.path.string());
  CHECK(model_yaml(q) == text);
  CHECK(q.overheads.collective_call == Time::from_us(7));
  CHECK(q.nccl.nccl_tables.at(0).channels == 8);
  CHECK(q.nccl.nccl_tables.at(0).via_host);
  CHECK(q.nvlink.nvlink_wake_min_bytes == 2 << 20);
  CHECK(q.power.sustained_time_constant.ms() == doctest::Approx(42.5));
  CHECK(q.memory.framework_norm_rows.at(1)[2] == doctest::Approx(0.6041));
  CHECK(q.copies.copy_engine_bandwidth_c2c.h2d.GBps() == doctest::Approx(410.5));
  CHECK(q.copies.copy_engine_bandwidth_c2c.d2h.GBps() == doctest::Approx(300));  // left at the public figure
  CHECK(text.find("copy_engine_bandwidth_c2c_d2h") == std::string::npos);
  // Defaults are not written: a file of the default parameters holds the always-written fields only.
  const std::string plain = model_yaml(ModelParams{});
  CHECK(plain.find("collective_call") == std::string::npos);
  CHECK(plain.find("copy_engine_bandwidth_c2c") == std::string::npos);
  CHECK(plain.find("kernel_launch: 4.0000 us") != std::string::npos);
}

TEST_CASE("bad calibration files name the file, line and what to do") {
  try {
    load_calibration(kSrc + "/tests/data/bad-calibration.yaml");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bad-calibration.yaml:4:") != std::string::npos);
    CHECK(std::string(e.what()).find("did you mean 'gemm_efficiency'?") != std::string::npos);
  }
  CHECK(error_of("  copy_bidir_factor: 1.5\n").find(scratch_path().filename().string() + ":3:") != std::string::npos);
  CHECK(error_of("  copy_bidir_factor: 1.5\n").find("must be in [0.05, 1]") != std::string::npos);
  CHECK(error_of("  nccl_channels: 65\n").find("must be in [1, 64]") != std::string::npos);
  CHECK(error_of("  sustained_time_constant: 0 ms\n").find("must be in (0,") != std::string::npos);
  CHECK(error_of("  pageable_latency_d2h: -5 us\n").find("negative") != std::string::npos);
  CHECK(error_of("  copy_bidir_factr: 0.9\n").find("did you mean 'copy_bidir_factor'") != std::string::npos);
  CHECK(error_of("  host_h2d_aggregate: [55 GB/s,\n    fast]\n").find(scratch_path().filename().string() + ":4:") != std::string::npos);
  CHECK(error_of("  host_d2h_aggregate: []\n").find("GPUs copying D2H at once") != std::string::npos);
  for (const char* bad :
       {"    - [1048576, 0.9, 0.9]\n    - [65536, 0.7, 0.7]\n", "    - [65536, 1.2, 0.7]\n", "    - [65536, 0.7]\n", "    - [65536, x, 0.7]\n"})
    CHECK(error_of(std::string("  copy_bidir_table:\n") + bad).find("must be a list of [bytes, H2D share, D2H share] by bytes") != std::string::npos);
  for (const char* bad :
       {"    - [2560, 0.4, 0.6]\n    - [128, 0.1, 0.2]\n", "    - [128, 0.1, 1.5]\n", "    - [128, 0.1]\n", "    - [0, 0.1, 0.2]\n"})
    CHECK(error_of(std::string("  framework_norm_rows:\n") + bad)
              .find("must be a list of [row elements, layer norm's share, RMS norm's share] by row") != std::string::npos);
  CHECK(error_of("  handoff_phase_min: 0.3 us\n").find("give handoff_phase_min and handoff_phase_max together") != std::string::npos);
  CHECK(error_of("  handoff_phase_min: 5 us\n  handoff_phase_max: 1 us\n").find("must be >= handoff_phase_min") != std::string::npos);
  // Retired terms are named with what to do, not taken for typos.
  CHECK(error_of("  copy_step_bytes: 1 MiB\n  copy_step_latency: 1 us\n").find("re-run overlapsim calibrate") != std::string::npos);
  CHECK(error_of("  copy_bidir_small_bytes: 1 MiB\n").find("'copy_bidir_small_bytes' is a retired term") != std::string::npos);
}

TEST_CASE("the documentation's table lists every field once, by family") {
  const std::string md = model_fields_markdown();
  std::set<std::string> names, families;
  std::string last_family;
  for (const ModelFieldDoc& d : model_field_docs()) {
    CAPTURE(d.name);
    CHECK(md.find("| `" + d.name + "` |") != std::string::npos);
    CHECK(!d.doc.empty());
    CHECK(names.insert(d.name).second);  // once
    if (d.family != last_family) {
      CHECK(families.insert(d.family).second);  // a family's fields together
      CHECK(md.find("### " + d.family + "\n") != std::string::npos);
      last_family = d.family;
    }
  }
  // Every family of the bench's testcases has its fields, and no other family.
  std::set<std::string> bench_families;
  for (const bench::Testcase& t : bench::kTestcases) bench_families.insert(std::string(t.family));
  CHECK(families == bench_families);
  CHECK(names.size() > 60);
}
