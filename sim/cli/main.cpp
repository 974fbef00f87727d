// overlapsim command line: each command parses its inputs, runs the library
// and prints (cli/cmd_*.cpp); every error surfaces here as one line
// "file:line:col: error: ..." and exit code 2 (input) or 3 (simulation).
#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "core/errors.hpp"

int main(int argc, char** argv) {
  namespace cli = osim::cli;
  CLI::App app{"overlapsim: a discrete-event simulator of offload and communication scheduling on GPU nodes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "overlapsim 0.1.0");
  const std::vector<cli::Command> commands = {cli::add_topo(app),    cli::add_flows(app),     cli::add_run(app),
                                              cli::add_compare(app), cli::add_report(app),    cli::add_calibrate(app), cli::add_calibration_fields(app),
                                              cli::add_reference(app), cli::add_sweep(app),   cli::add_merge(app)};
  CLI11_PARSE(app, argc, argv);
  try {
    for (const cli::Command& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const osim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const osim::SimulationError& e) {
    std::cerr << "simulation error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
