// overlapsim command line: each command parses its inputs, runs the library
// and prints (cli/cmd_*.cpp); every error surfaces here as one line
// "file:line:col: error: ..." and exit code 2 (input, an unwritable output
// path, an input too large for memory), 3 (simulation) or 4 (a defect).
#include <filesystem>
#include <iostream>
#include <new>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "cli/interrupt.hpp"
#include "core/errors.hpp"

int main(int argc, char** argv) {
  namespace cli = osim::cli;
  cli::handle_interrupts();  // first: every thread started later inherits the blocked signals
  CLI::App app{"overlapsim: a discrete-event simulator of offload and communication scheduling on GPU nodes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "overlapsim 0.1.0");
  const std::vector<cli::Command> commands = {cli::add_topo(app),
                                              cli::add_flows(app),
                                              cli::add_run(app),
                                              cli::add_compare(app),
                                              cli::add_report(app),
                                              cli::add_calibrate(app),
                                              cli::add_calibration_fields(app),
                                              cli::add_reference(app),
                                              cli::add_sweep(app),
                                              cli::add_merge(app),
                                              cli::add_import_trace(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad flag or value is an input error: 2, as every other.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const cli::Command& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const osim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const osim::SimulationError& e) {
    std::cerr << "simulation error: " << e.what() << "\n";
    return 3;
  } catch (const std::filesystem::filesystem_error& e) {
    // An output path that cannot be written (a file where a folder is
    // needed, no permission, a read-only file system).
    std::cerr << fmt::format("{}: error: {}: choose another path\n", e.path1().string(), e.code().message());
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory: the input asks for more than this machine holds (a huge repeat, loop count, grid or step count?)\n";
    return 2;
  } catch (const std::exception& e) {
    // Anything else is a defect of overlapsim's, not of the input: say so.
    std::cerr << "internal error (please report it, with the command and its input files): " << e.what() << "\n";
    return 4;
  }
  return 0;
}
