// Schedules: parsed (templates, repeat, expressions) and checked.
#include "fuzz_input.hpp"
#include "schedule/schedule.hpp"

OSIM_FUZZ_TARGET({ (void)osim::parse_schedule_string(text, "fuzz.yaml"); })
