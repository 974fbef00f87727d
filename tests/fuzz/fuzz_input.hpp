// The libFuzzer harnesses' shared part: what a parser may do with any input
// is return, or throw InputError (a message naming file, line and fix).
// Anything else escaping (another exception type, a crash, a sanitizer
// report, a hang, a huge allocation) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "io/limits.hpp"

// Inputs may unroll to 4 million ops: enough for every shipped config, small
// enough that one input stays well within the fuzzer's memory limit.
#define OSIM_FUZZ_TARGET(body)                                              \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                      \
    osim::limits::set_max_unrolled_ops(4'000'000);                          \
    return 0;                                                               \
  }                                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    const std::string text(reinterpret_cast<const char*>(data), size);      \
    try {                                                                   \
      body;                                                                 \
    } catch (const osim::InputError&) {                                     \
    }                                                                       \
    return 0;                                                               \
  }
