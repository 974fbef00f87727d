// What the commands share: a run's records path, the calibration note, the
// percentage check, and each command's registration on the command line.
// Files are read and written through io/text_file.hpp (outputs atomic, never
// over a user's file without --force).
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/interrupt.hpp"  // claim_new_output: what an interrupt cleans
#include "io/text_file.hpp"   // refuse_overwrite, write_file

namespace osim::cli {

namespace fs = std::filesystem;

/// A run's records file: the path itself, or records.json (else
/// records.json.gz) in that folder.
std::string records_path(const std::string& p);

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
