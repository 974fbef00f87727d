// Calibration files: every field's unit and range, the end marker.
#include "fuzz_input.hpp"
#include "gpu/params_io.hpp"

OSIM_FUZZ_TARGET({ (void)osim::parse_calibration_string(text, "fuzz.yaml"); })
