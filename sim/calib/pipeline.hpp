// The calibration pipeline: one table of fit steps, run in the table's order,
// and one table of replays by bench key (pipeline.cpp). A fit step's row says
// what it reads and writes, so the order a reader sees is the order that runs
// and a test can check it: each bench key it reads (schedule/bench_keys.hpp),
// the fields fitted by earlier steps it uses and the fields it sets
// ("family.field", the calibration file's names), and the cross-family
// values (FitOutput) it consumes and produces, which FitContext holds to the
// row. Adding a step or a family is a row here.
#pragma once

#include <string_view>
#include <vector>

#include "calib/family.hpp"

namespace osim {

struct FitStep {
  std::string_view family;                    // the effect family whose file holds it
  std::string_view name;                      // the step within its family
  std::vector<std::string_view> keys = {};    // the bench testcases it reads
  std::vector<std::string_view> reads = {};   // fields fitted before it that it uses; kReadsModel: it replays the bench on the model so far
  std::vector<std::string_view> writes = {};  // the fields it sets
  std::vector<FitOutput> consumes = {};       // cross-family values it reads, produced by an earlier step
  std::vector<FitOutput> produces = {};       // cross-family values it sets
  FitFn run = nullptr;
};
/// A `reads` entry: the step simulates the bench on every field fitted so far.
inline constexpr std::string_view kReadsModel = "model";

struct ReplayStep {
  std::string_view key;  // a bench testcase; its family is bench::family_of(key)
  ReplayFn replay = nullptr;
};

/// Every fit step, in the order calibrate runs them.
const std::vector<FitStep>& fit_steps();
/// Every replayed bench key with its replay (a key at most once).
const std::vector<ReplayStep>& replay_steps();
/// The replay of testcase `key`, or null (a key fitted or reported only).
ReplayFn replay_for(std::string_view key);
/// The families of fit_steps(), by name.
std::vector<std::string> calib_families();

/// Runs every fit step on `ctx`, in order.
void run_fit_pipeline(FitContext& ctx);

}  // namespace osim
