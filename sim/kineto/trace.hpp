// A torch.profiler (Kineto) Chrome trace as the importer reads it: the host
// thread's CUDA calls in time order, each with the GPU activity or CUDA sync
// record it correlates with; the ATen ops by External id; the step ranges;
// and what the ops' recorded shapes say (GEMM, attention, HBM bytes, NCCL
// collectives). Internal to the kineto library (kineto/import.hpp is its face).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kineto/import.hpp"

namespace osim::kineto::trace {

using json = nlohmann::json;
inline constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

/// Kineto's microseconds (with nanosecond decimals) as integer nanoseconds.
inline int64_t ns_of(double us) { return std::llround(us * 1e3); }

// A GPU activity: a kernel, copy or memset.
struct Activity {
  std::string cat, name;
  int64_t start = 0, end = 0, corr = 0, ext = kNone;
  int64_t bytes = kNone;  // a copy's or memset's args.bytes, checked; kNone: not given
  size_t index = 0;       // in traceEvents
  int stream = -1, device = -1;
  const json* args = nullptr;
};
// A CUDA runtime/driver call on a host thread, with the GPU activity or
// synchronisation record it correlates with.
struct Call {
  std::string name;
  int64_t ts = 0, end = 0, corr = 0, ext = kNone;
  size_t index = 0;  // in traceEvents
  bool main_thread = true;
  const Activity* gpu = nullptr;
  const json* sync = nullptr;
};
struct CpuOp {
  std::string name;
  const json* args = nullptr;
};

// One file: one rank. Its activities, calls and ops point into `doc`.
struct RankTrace {
  std::string file;
  int rank = -1, world = 0;  // from distributedInfo (checked); -1, 0: not given
  int64_t base_ns = 0;       // baseTimeNanoseconds: the clock ts counts from
  json doc;
  json joined = json::array();  // begin/end (ph B/E) pairs as complete events
  std::vector<Activity> gpu;
  std::vector<Call> calls;  // in time order
  std::unordered_map<int64_t, CpuOp> ops_by_ext;
  struct Step {
    int64_t start, end;
    std::string name;
    bool operator<(const Step& o) const { return start < o.start; }
  };
  std::vector<Step> steps;                                   // the ranges import_traces chose, in time order
  std::map<std::string, std::vector<Step>> step_candidates;  // ranges matching each step pattern, by its label
  std::string gpu_name;  // deviceProperties of its GPU: name, SMs, memory (0: not given)
  int gpu_sms = 0;
  int64_t gpu_memory = 0;
};

/// Reads one trace file; InputError naming it (and the line) when it is no
/// usable trace. Step candidates: ranges whose names match each pattern.
struct StepPattern {
  std::string label, regex;
  std::regex re;
};
RankTrace read_trace(const std::string& path, const std::vector<StepPattern>& steps, ImportSummary& sum);
[[noreturn]] void fail(const std::string& file, const std::string& what, int line = 0);
/// An event as messages name it: `traceEvents[i] (cat 'name' at ts µs)`.
std::string event_at(size_t index, const std::string& cat, const std::string& name, double ts_us);
inline double us_of(int64_t ns) { return static_cast<double>(ns) / 1e3; }

/// Bounds on measured values (the importer refuses values past them):
/// ts within ±4e15 µs (microseconds since 1970 reach it in 2096) and
/// baseTimeNanoseconds from 0 to 4e18 ns, a duration and a rank's whole trace
/// at most an hour (a profiled window is seconds), a copy at most 2^47 bytes
/// (128 TiB), a collective at most 2^46 elements, a rank below 2^24, a GPU
/// activity starting at most a millisecond before the call that launched it
/// (the GPU's clock is put on the host's: microseconds apart at most).
inline constexpr double kMaxTsUs = 4e15;
inline constexpr int64_t kMaxBaseNs = 4'000'000'000'000'000'000;
inline constexpr double kMaxDurUs = 3.6e9;
inline constexpr int64_t kMaxSpanNs = 3'600'000'000'000;
inline constexpr int64_t kMaxBytes = int64_t{1} << 47;
inline constexpr double kMaxElems = 70368744177664.0;  // 2^46
inline constexpr int64_t kMaxRank = int64_t{1} << 24;
inline constexpr int64_t kLaunchSkewNs = 1'000'000;

int64_t int_arg(const json& args, const char* key, int64_t dflt = kNone);
std::string str_arg(const json& args, const char* key);

enum class CallKind { Kernel, Memcpy, Memset, Record, Wait, StreamSync, DeviceSync, EventSync, HostOnly };
/// What a call does: puts work on the GPU, records, waits, synchronises, or nothing the schedule holds.
CallKind kind_of(const Call& c);

/// A GEMM's [m, n, k] from its ATen op's input shapes; nullopt if it is none.
std::optional<std::pair<GemmShape, DType>> gemm_of(const CpuOp& op);
/// An attention kernel's shape and backend from its SDPA op; nullopt if it is none.
std::optional<std::pair<AttentionShape, DType>> attention_of(const CpuOp& op);
/// An op's HBM traffic as one kernel: its tensor inputs once and an output as large as the largest (0: no shapes).
double input_hbm_bytes(const CpuOp& op);
/// How a memory-bound op walks memory, from its inputs' shapes and strides: roll; an operand
/// broadcast over another (fewer elements); a view that is not contiguous; else elementwise.
Access memory_access_of(const CpuOp& op);
/// A layer or RMS norm's kind and the elements of each row it normalises; nullopt if the op is none.
std::optional<std::pair<Access, int32_t>> norm_of(const CpuOp& op);

/// What NCCL's kernel ran, from the collective's parameters (record_param_comms).
struct CollectiveInfo {
  CollKind kind;
  Bytes bytes;
  std::vector<int> ranks;
  DType dtype;
};
/// nullopt with `why` set when the kernel is not a collective the simulator models.
std::optional<CollectiveInfo> collective_of(const Activity& k, std::string* why);
bool is_nccl(const Activity& k);
/// A kernel's name as a label: without `void `, anonymous namespaces, template
/// arguments and parameters; braces (which schedules substitute) as parentheses.
std::string short_name(std::string n);

}  // namespace osim::kineto::trace
