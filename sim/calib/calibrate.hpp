// Calibration: fit the execution model's parameters to `overlapsim-validate
// bench` results, write them as a calibration file that runs load, and
// compare the calibrated simulator with every measurement it can replay.
// The work is the effect families' (families/): this runs their fit steps in
// the pipeline table's order and hands each bench row to its key's replay
// (pipeline.hpp).
#pragma once

#include <string>
#include <vector>

#include "calib/bench_doc.hpp"
#include "calib/calibration.hpp"
#include "calibrations/measured_defaults.hpp"
#include "gpu/params_io.hpp"
#include "hw/fabric.hpp"

namespace osim {

/// Fits from one or more bench documents (a NCCL-defaults machine run among
/// them). Throws InputError naming the file when a document is not a bench
/// result or a row lacks a field a fit reads.
Calibration calibrate(const BenchDocs& docs, const hw::Topology& topo, const ModelParams& base = {});
/// The calibration file: its sources and fits as comments, then the model.
std::string calibration_yaml(const Calibration& c);

/// Throws InputError when the GPUs the bench documents ran on are not the
/// topology's (another family): the fit would scale one GPU's rates by
/// another's peaks.
void check_bench_gpus(const BenchDocs& docs, const hw::Topology& topo);

/// Replays each measurement of a bench document on `topo`. A malformed row
/// throws: a json exception (a field missing or of the wrong type) or
/// std::invalid_argument (a value outside its testcase's cases).
std::vector<Comparison> compare_bench(const json& doc, const hw::Topology& topo, const ModelParams& params);

struct ClassSummary {
  std::string cls;
  int cases = 0;
  double median_abs_pct = 0, worst_abs_pct = 0;
};
std::vector<ClassSummary> summarise(const std::vector<Comparison>& rows);
std::string format_comparison(const std::vector<Comparison>& rows);

}  // namespace osim
