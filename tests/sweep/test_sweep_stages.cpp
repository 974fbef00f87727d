// Sweeps over a request's stages: stage keys by name or index, refused
// where the base has no such stage or a stage no such key; the request's
// columns and a summary ranked by request time.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "gpu/sim_fixture.hpp"
#include "sweep/sweep.hpp"
#include "workload/stage_jobs.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {

// A folder of this process's own: the test topology and the stage job on it.
fs::path job_dir() {
  const fs::path dir = fs::temp_directory_path() / ("overlapsim-test-sweep-stages-" + std::to_string(getpid()));
  fs::create_directories(dir);
  // The test node with 16 GiB a GPU: room for the encoder's 1 GB beside the VAE.
  std::string topo = test::kTopo;
  topo.replace(topo.find("memory: 1 GiB"), 13, "memory: 16 GiB");
  std::ofstream(dir / "topo.yaml") << topo;
  // The encoder's weights given as 500 M parameters: 1 GB in bf16.
  std::string job = test::stage_job("resident");
  job.replace(job.find("dtype: bf16}"), 12, "dtype: bf16, params: 500000000}");
  std::ofstream(dir / "job.yaml") << "topology: topo.yaml\n" << job;
  return dir;
}

std::string write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

std::string cell(const SweepTable& t, size_t row, const std::string& col) {
  const int c = t.column(col);
  REQUIRE(c >= 0);
  return t.rows[row][static_cast<size_t>(c)];
}

std::string parse_error(const std::string& f) {
  try {
    (void)parse_sweep_file(f);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("sweep over a stage's placement: the request differs by the encoder's weights copied in and out") {
  const fs::path dir = job_dir();
  const std::string f = write(dir, "place.yaml", "name: p\nworkload: job.yaml\ncalibration: none\ngrid:\n  stages.enc.place: [resident, offloaded]\n");
  const SweepSpec s = parse_sweep_file(f);
  CHECK(s.has_stages);
  CHECK(s.stage_names == std::vector<std::string>{"enc", "vae"});
  const SweepTable t = run_sweep(s);
  REQUIRE(t.rows.size() == 2);
  CHECK(cell(t, 0, "status") == "ok");
  CHECK(cell(t, 1, "status") == "ok");
  CHECK(cell(t, 0, "stages.enc.place") == "resident");
  // The request is the makespan, its stages and steps its parts.
  for (size_t r = 0; r < 2; ++r) {
    CHECK(cell(t, r, "request_ms") == cell(t, r, "makespan_ms"));
    CHECK(std::stod(cell(t, r, "stages_ms")) + std::stod(cell(t, r, "dit_ms")) <= std::stod(cell(t, r, "request_ms")) + 1e-3);
  }
  // 1 GB in and 1 GB out over the 10 GB/s link (pageable staging at 10 GB/s
  // too), 0.1 s each way, each after its copy call's host time (the
  // datasheet defaults': calibration none).
  const double extra_ms = std::stod(cell(t, 1, "request_ms")) - std::stod(cell(t, 0, "request_ms"));
  CHECK(extra_ms == doctest::Approx(2 * (1e9 / 10e9 * 1e3 + ModelParams{}.overheads.memcpy_call.ms())).epsilon(1e-6));  // the CSV's 0.1 us
  // All of it in the encoder's stage (to a microsecond: its window ends at its last op).
  CHECK(std::abs(std::stod(cell(t, 1, "stages_ms")) - std::stod(cell(t, 0, "stages_ms")) - extra_ms) < 1e-3);
  // The steps the same but for their first kernel's launch, exposed after
  // the encoder's blocking copy out (the host ran ahead of a resident one).
  const double dit_extra_ms = std::stod(cell(t, 1, "dit_ms")) - std::stod(cell(t, 0, "dit_ms"));
  CHECK(dit_extra_ms >= 0);
  CHECK(dit_extra_ms <= ModelParams{}.overheads.kernel_launch.ms());
  // The summary ranks by request time.
  const std::string sum = sweep_summary(t, 0.01);
  CHECK(sum.find(fmt::format("best: point 0, {:.2f} ms/request", std::stod(cell(t, 0, "request_ms")))) != std::string::npos);
  CHECK(sum.find("peak VRAM vs request time") != std::string::npos);

  // By index: the same points, the same figures.
  const SweepTable by_index =
      run_sweep(parse_sweep_file(write(dir, "index.yaml", "name: i\nworkload: job.yaml\ncalibration: none\ngrid:\n  stages.0.place: [resident, offloaded]\n")));
  CHECK(cell(by_index, 1, "request_ms") == cell(t, 1, "request_ms"));
  fs::remove_all(dir);
}

TEST_CASE("sweep over VAE keys: tiling and parallel decode change the stages, not the steps") {
  const fs::path dir = job_dir();
  const std::string f =
      write(dir, "vae.yaml", "name: v\nworkload: job.yaml\ncalibration: none\nset: {stages.vae.dtype: bf16}\npoints:\n  - {stages.vae.tile: [none, {size: 32, stride: 32}]}\n");
  const SweepTable t = run_sweep(parse_sweep_file(f));
  REQUIRE(t.rows.size() == 2);
  CHECK(cell(t, 1, "status") == "ok");
  CHECK(cell(t, 0, "dit_ms") == cell(t, 1, "dit_ms"));
  CHECK(cell(t, 0, "stages_ms") != cell(t, 1, "stages_ms"));
  fs::remove_all(dir);
}

TEST_CASE("sweep stage keys are checked against the base's stages, with the sweep's line") {
  const fs::path dir = job_dir();
  CHECK(parse_error(write(dir, "b1.yaml", "name: b\nworkload: job.yaml\ngrid:\n  stages.vea.place: [resident, cpu]\n"))
            .find("b1.yaml:4:3: error: 'stages.vea.place': the base " + (dir / "job.yaml").string() +
                  " has no stage 'vea'; its stages: enc, vae (or an index 0..1); did you mean 'stages.vae'?") != std::string::npos);
  CHECK(parse_error(write(dir, "b2.yaml", "name: b\nworkload: job.yaml\nset: {stages.2.place: cpu}\n")).find("b2.yaml:3:7: error: 'stages.2.place'") !=
        std::string::npos);
  CHECK(parse_error(write(dir, "b3.yaml", "name: b\nworkload: job.yaml\npoints:\n  - {stages.vae.plce: cpu}\n"))
            .find("'stages.vae.plce': a stage has no key 'plce'; did you mean 'place'?") != std::string::npos);
  // A base without stages: say so.
  std::ofstream(dir / "plain.yaml") << "topology: topo.yaml\nname: w\nmodel:\n  dims: {hidden: 64}\n  blocks:\n    - {name: b, count: 2, params: 1, ops: "
                                       "[{gemm: g, m: local, n: hidden, k: hidden}]}\ntokens: 64\n";
  CHECK(parse_error(write(dir, "b4.yaml", "name: b\nworkload: plain.yaml\ngrid: {stages.vae.tile: [none]}\n")).find("has no stages") !=
        std::string::npos);
  // A sweep that gives the whole list may address what it brings; no request columns without stages.
  CHECK(parse_error(write(dir, "ok.yaml", "name: b\nworkload: plain.yaml\nset: {stages: [{name: x, preset: clip-l}]}\ngrid: {stages.x.layers: [1, 2]}\n")) ==
        "no error");
  const SweepSpec plain = parse_sweep_file(write(dir, "p.yaml", "name: b\nworkload: plain.yaml\ngrid: {steps: [1, 2]}\n"));
  CHECK_FALSE(plain.has_stages);
  CHECK(sweep_header(plain).back() == "collective_bottleneck");
  // `set: {stages: null}`: the steps alone, as a base without stages.
  const SweepSpec dropped = parse_sweep_file(write(dir, "d.yaml", "name: b\nworkload: job.yaml\nset: {stages: null}\ngrid: {steps: [1, 2]}\n"));
  CHECK_FALSE(dropped.has_stages);
  CHECK(sweep_header(dropped).back() == "collective_bottleneck");
  CHECK(parse_error(write(dir, "b5.yaml", "name: b\nworkload: job.yaml\nset: {stages: null}\ngrid: {stages.vae.tile: [none]}\n")).find("has no stages") !=
        std::string::npos);
  fs::remove_all(dir);
}
