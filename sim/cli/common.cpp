#include "cli/common.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "core/errors.hpp"
#include "gpu/params_io.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

std::string calibration_note(const std::string& calibration) {
  BaseParams b;
  if (calibration != "none") {
    b.file = calibration;
    b.origin = read_calibration_file(calibration).origin;
  }
  return base_params_note(b, nullptr);
}

CLI::Validator finite_percent() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          size_t used = 0;
          const double v = std::stod(s, &used);
          if (used == s.size() && std::isfinite(v) && v >= 0) return "";
        } catch (const std::exception&) {
        }
        return "'" + s + "' is not a percentage (a finite number >= 0)";
      },
      "PERCENT");
}

std::string records_path(const std::string& p) { return fs::is_directory(p) ? plain_or_gz(p, "records.json") : p; }

}  // namespace osim::cli
