// What the commands share: JSON input with the file named in errors, and each
// command's registration on the command line. Files are read and written
// through io/text_file.hpp (outputs atomic, never over a user's file without
// --force).
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpu/params.hpp"
#include "hw/fabric.hpp"
#include "io/text_file.hpp"  // refuse_overwrite, write_file

namespace osim::cli {

namespace fs = std::filesystem;

/// A JSON document, plain or gzip-compressed; InputError naming the file when it is missing, unreadable or not JSON.
nlohmann::json read_json(const std::string& path);
/// A run's records file: the path itself, or records.json (else
/// records.json.gz) in that folder.
std::string records_path(const std::string& p);

/// A reference program's torch.profiler trace imported and simulated: its
/// step time as the program measured it (median, no profiler), as the trace
/// measured it (the profiled run), and simulated.
struct TraceFigure {
  std::string name;
  double program_s = 0, trace_s = 0, simulated_s = 0;
  bool pageable = false;
  [[nodiscard]] double error() const { return simulated_s / program_s - 1; }
};
/// Every NAME[.rankN].trace.json.gz in `dir` with its NAME.json, imported
/// (steps: ranges matching `steps`) and simulated with `params`.
std::vector<TraceFigure> trace_figures(const std::string& dir, const hw::Topology& topo, const ModelParams& params, const std::string& steps);
std::string format_trace_figures(const std::vector<TraceFigure>& figures);

/// The line `sweep` ends with for one calibration file (or "none": the
/// datasheet defaults), and the GPU it was measured on.
std::string calibration_note(const std::string& calibration);

/// A percentage option's check: a finite number >= 0 (CLI11's Range lets NaN through).
CLI::Validator finite_percent();

/// A subcommand: its CLI11 node, and what it does once parsed (the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command add_topo(CLI::App& app);
Command add_flows(CLI::App& app);
Command add_run(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_report(CLI::App& app);
Command add_calibrate(CLI::App& app);
Command add_calibration_fields(CLI::App& app);
Command add_reference(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_merge(CLI::App& app);
Command add_import_trace(CLI::App& app);

}  // namespace osim::cli
