// The schedule format's names of its enums, in enum order: what the parser
// reads, the writer and to_string write. Internal to the schedule library.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace osim::schedule_names {

inline const std::vector<std::string> kOpNames = {"kernel",      "memcpy",     "event_record", "stream_wait_event", "stream_wait_stream",
                                                  "stream_sync", "event_sync", "device_sync",  "collective",        "alloc",
                                                  "free",        "host_work",  "marker"};
inline const std::vector<std::string> kCopyNames = {"h2d", "d2h", "d2d", "p2p"};
inline const std::vector<std::string> kCollNames = {"all_to_all", "all_gather", "reduce_scatter", "all_reduce", "send", "recv"};
inline const std::vector<std::string> kAlgoNames = {"nccl", "pairwise", "ring"};
inline const std::vector<std::string> kDtypeNames = {"bf16", "fp16", "fp32", "fp8"};
inline const std::vector<std::string> kBackendNames = {"default", "cudnn", "flash2", "flash3", "efficient", "math"};
inline const std::vector<std::string> kPartNames = {"weights", "activations", "workspace", "outside", "runtime", "reserve", "comm"};
inline const std::vector<std::string> kAccessNames = {"elementwise", "norm",         "broadcast", "strided", "roll",    "layer_norm",
                                                      "rms_norm",    "channel_norm", "indexed",   "pad",     "upsample"};
inline const std::vector<std::string> kNcclRunsNames = {"all_to_all", "ring_exchange", "collectives"};  // the kNccl* bits in order (alloc `runs`)

template <class E>
E enum_of(const std::vector<std::string>& names, const std::string& s) {
  return static_cast<E>(std::find(names.begin(), names.end(), s) - names.begin());
}

}  // namespace osim::schedule_names
