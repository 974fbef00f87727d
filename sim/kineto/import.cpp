#include "kineto/import.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedule/builder.hpp"

namespace osim::kineto {

namespace {

using json = nlohmann::json;
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
// How late a stream may go on after it could have (launch latency, clock
// skew between host and GPU timestamps) and its wait still count as not binding.
constexpr int64_t kSlackNs = 10'000;
// How long after a record's work ended a stream that waited on it goes on.
constexpr int64_t kExplainNs = 30'000;

int64_t ns_of(double us) { return std::llround(us * 1e3); }

// A GPU activity: a kernel, copy or memset.
struct Activity {
  std::string cat, name;
  int64_t start = 0, end = 0, corr = 0, ext = kNone;
  int stream = -1, device = -1;
  const json* args = nullptr;
};
// A CUDA runtime/driver call on a host thread, with the GPU activity or
// synchronisation record it correlates with.
struct Call {
  std::string name;
  int64_t ts = 0, end = 0, corr = 0, ext = kNone;
  bool main_thread = true;
  const Activity* gpu = nullptr;
  const json* sync = nullptr;
};
struct CpuOp {
  std::string name;
  const json* args = nullptr;
};

struct RankTrace {
  std::string file;
  int rank = -1, world = 0;
  json doc;
  std::vector<Activity> gpu;
  std::vector<Call> calls;  // in time order
  std::unordered_map<int64_t, CpuOp> ops_by_ext;
  struct Step {
    int64_t start, end;
    std::string name;
    bool operator<(const Step& o) const { return start < o.start; }
  };
  std::vector<Step> steps;
  std::string gpu_name;
};

[[noreturn]] void fail(const std::string& file, const std::string& what, int line = 0) {
  throw InputError(SourceLocation{file, line, 0}, what);
}

int64_t int_arg(const json& args, const char* key, int64_t dflt = kNone) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return dflt;
  return it->is_number_integer() ? it->get<int64_t>() : static_cast<int64_t>(it->get<double>());
}
std::string str_arg(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double element_bytes(const std::string& type) {
  static const std::map<std::string, double> sizes = {
      {"c10::BFloat16", 2}, {"c10::Half", 2}, {"float", 4}, {"double", 8}, {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1},
      {"long int", 8}, {"int", 4}, {"short int", 2}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1}};
  auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}
DType dtype_of(const std::string& type) {
  if (type == "c10::Half" || type == "Half") return DType::FP16;
  if (type == "float" || type == "Float") return DType::FP32;
  if (type.find("Float8") != std::string::npos) return DType::FP8;
  return DType::BF16;
}

// The op's tensor inputs: (dims, element type).
std::vector<std::pair<std::vector<int64_t>, std::string>> tensor_inputs(const json& args) {
  std::vector<std::pair<std::vector<int64_t>, std::string>> out;
  auto dims = args.find("Input Dims");
  auto types = args.find("Input type");
  if (dims == args.end() || types == args.end() || !dims->is_array() || !types->is_array()) return out;
  for (size_t i = 0; i < dims->size() && i < types->size(); ++i) {
    const json& d = (*dims)[i];
    if (!d.is_array() || d.empty() || !(*types)[i].is_string() || element_bytes((*types)[i].get<std::string>()) == 0) continue;
    std::vector<int64_t> v;
    for (const json& x : d)
      if (x.is_number_integer()) v.push_back(x.get<int64_t>());
    if (v.size() == d.size()) out.emplace_back(std::move(v), (*types)[i].get<std::string>());
  }
  return out;
}

int32_t dim32(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, 1, INT32_MAX)); }

// A GEMM's [m, n, k] from its ATen op's input shapes; nullopt if it is none.
std::optional<std::pair<GemmShape, DType>> gemm_of(const CpuOp& op) {
  static const std::set<std::string> gemms = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"};
  if (!gemms.count(op.name)) return std::nullopt;
  auto in = tensor_inputs(*op.args);
  const size_t first = (op.name == "aten::addmm" || op.name == "aten::baddbmm") ? 1 : 0;
  if (in.size() < first + 2) return std::nullopt;
  const auto& a = in[first].first;
  const auto& b = in[first + 1].first;
  if (a.size() != b.size() || a.size() < 2 || a.size() > 3) return std::nullopt;
  const int64_t batch = a.size() == 3 ? a[0] : 1;
  GemmShape g{dim32(batch * a[a.size() - 2]), dim32(b.back()), dim32(a.back())};
  return std::make_pair(g, dtype_of(in[first].second));
}

// An attention kernel's shape and backend from its SDPA op; nullopt if it is none.
std::optional<std::pair<AttentionShape, DType>> attention_of(const CpuOp& op) {
  const std::string& n = op.name;
  if (n.find("attention") == std::string::npos || n.find("backward") != std::string::npos) return std::nullopt;
  AttnBackend backend;
  if (n.find("cudnn") != std::string::npos) backend = AttnBackend::Cudnn;
  else if (n.find("flash") != std::string::npos) backend = AttnBackend::Flash2;
  else if (n.find("efficient") != std::string::npos) backend = AttnBackend::Efficient;
  else return std::nullopt;
  auto in = tensor_inputs(*op.args);
  if (in.size() < 3 || in[0].first.size() != 4 || in[1].first.size() != 4) return std::nullopt;
  // q, k: [batch, heads, seq, head_dim] (the flash op's own layout is [batch, seq, heads, head_dim]).
  const bool bshd = n.find("_flash_attention_forward") != std::string::npos || n.find("_efficient_attention_forward") != std::string::npos;
  const auto& q = in[0].first;
  const auto& k = in[1].first;
  AttentionShape a;
  a.batch = dim32(q[0]);
  a.heads = dim32(bshd ? q[2] : q[1]);
  a.seq_q = dim32(bshd ? q[1] : q[2]);
  a.seq_kv = dim32(bshd ? k[1] : k[2]);
  a.head_dim = dim32(q[3]);
  a.backend = backend;
  return std::make_pair(a, dtype_of(in[0].second));
}

// What NCCL's kernel ran, from the collective's parameters (record_param_comms).
struct CollectiveInfo {
  CollKind kind;
  Bytes bytes;
  std::vector<int> ranks;
  DType dtype;
};
std::optional<CollectiveInfo> collective_of(const Activity& k, std::string* why) {
  const json& a = *k.args;
  const std::string name = str_arg(a, "Collective name");
  if (name.empty()) {
    *why = "NCCL kernel without its collective's parameters (profile with record_shapes=True)";
    return std::nullopt;
  }
  static const std::map<std::string, CollKind> kinds = {
      {"all_to_all", CollKind::AllToAll},          {"all_to_allv", CollKind::AllToAll},       {"alltoall", CollKind::AllToAll},
      {"alltoall_base", CollKind::AllToAll},       {"all_gather", CollKind::AllGather},       {"allgather", CollKind::AllGather},
      {"_allgather_base", CollKind::AllGather},    {"all_gather_into_tensor", CollKind::AllGather},
      {"allgather_into_tensor_coalesced", CollKind::AllGather},
      {"reduce_scatter", CollKind::ReduceScatter}, {"_reduce_scatter_base", CollKind::ReduceScatter},
      {"reduce_scatter_tensor", CollKind::ReduceScatter}, {"allreduce", CollKind::AllReduce},
      {"all_reduce", CollKind::AllReduce},         {"barrier", CollKind::AllReduce}};
  auto it = kinds.find(name);
  if (it == kinds.end()) {
    *why = fmt::format("NCCL {} (not a collective the simulator models): kept at its measured time", name);
    return std::nullopt;
  }
  CollectiveInfo c;
  c.kind = it->second;
  const std::string dt = str_arg(a, "dtype");
  const double es = dt == "Float" ? 4 : dt == "Double" || dt == "Long" ? 8 : dt == "Byte" || dt == "Char" || dt == "Bool" ? 1 : 2;
  c.dtype = dt == "Float" ? DType::FP32 : dt == "Half" ? DType::FP16 : DType::BF16;
  const int64_t in = int_arg(a, "In msg nelems", 0), out = int_arg(a, "Out msg nelems", 0);
  // nccl-tests' size: all_gather's output, the others' input buffer.
  const int64_t elems = c.kind == CollKind::AllGather ? out : in;
  c.bytes = static_cast<Bytes>(std::max<double>(4.0, static_cast<double>(elems) * es));  // a barrier: one float
  const std::string ranks = str_arg(a, "Process Group Ranks");
  for (size_t i = 0; i < ranks.size();) {
    if (std::isdigit(static_cast<unsigned char>(ranks[i]))) {
      size_t j = i;
      while (j < ranks.size() && std::isdigit(static_cast<unsigned char>(ranks[j]))) ++j;
      c.ranks.push_back(std::stoi(ranks.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  if (c.ranks.empty()) {
    *why = fmt::format("NCCL {} without its process group's ranks", name);
    return std::nullopt;
  }
  return c;
}

// A kernel's name as a label: without `void `, namespaces in parentheses,
// template arguments and parameters; braces (which schedules substitute) as parentheses.
std::string short_name(std::string n) {
  if (n.rfind("void ", 0) == 0) n.erase(0, 5);
  for (size_t p; (p = n.find("(anonymous namespace)::")) != std::string::npos;) n.erase(p, 23);
  if (const size_t cut = n.find_first_of("<("); cut != std::string::npos && cut > 0) n.erase(cut);
  for (char& ch : n)
    if (ch == '{') ch = '(';
    else if (ch == '}') ch = ')';
  return n;
}

bool is_nccl(const Activity& k) { return k.cat == "kernel" && k.name.rfind("nccl", 0) == 0; }

// Reads one trace file into its GPU activities, host calls, ATen ops and step ranges.
RankTrace read_trace(const std::string& path, const std::regex& steps, ImportSummary& sum) {
  RankTrace t;
  t.file = path;
  const std::string text = read_maybe_gzip(path);
  try {
    t.doc = json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t at = std::min(e.byte, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    fail(path, fmt::format("not JSON ({}): export the trace with prof.export_chrome_trace(path)", e.what()), line);
  }
  if (!t.doc.is_object() || !t.doc.contains("traceEvents") || !t.doc["traceEvents"].is_array())
    fail(path, "no traceEvents list: not a torch.profiler (Kineto) trace; export one with prof.export_chrome_trace(path)");
  if (auto d = t.doc.find("distributedInfo"); d != t.doc.end() && d->is_object()) {
    t.rank = static_cast<int>(int_arg(*d, "rank", -1));
    t.world = static_cast<int>(int_arg(*d, "world_size", 0));
  }
  if (auto props = t.doc.find("deviceProperties"); props != t.doc.end() && props->is_array() && !props->empty() && (*props)[0].is_object())
    t.gpu_name = str_arg((*props)[0], "name");

  const json& events = t.doc["traceEvents"];
  sum.events += static_cast<int64_t>(events.size());
  std::unordered_map<int64_t, const json*> syncs;
  std::map<std::pair<int64_t, int64_t>, int64_t> calls_per_thread;
  struct RawCall {
    const json* e;
    std::pair<int64_t, int64_t> thread;
  };
  std::vector<RawCall> raw_calls;
  static const std::set<std::string> read_only = {"cpu_op", "user_annotation", "gpu_user_annotation", "python_function", "overhead",
                                                  "Trace", "ac2g", "cuda_profiler_range", "fwdbwd", "Kernel"};
  auto as_id = [](const json& v) -> int64_t { return v.is_number() ? v.get<int64_t>() : static_cast<int64_t>(std::hash<std::string>{}(v.dump())); };
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object()) fail(path, fmt::format("traceEvents[{}] is not an object", i));
    const std::string ph = e.value("ph", "");
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    if (ph != "X") continue;  // metadata, instants and flow arrows
    auto need = [&](const char* key) -> const json& {
      auto it = e.find(key);
      if (it == e.end() || (std::string(key) == "args" ? !it->is_object() : !it->is_number()))
        fail(path, fmt::format("traceEvents[{}] ({} '{}') has no {}", i, cat, e.value("name", ""), key));
      return *it;
    };
    const std::string name = e.value("name", "");
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const json& args = need("args");
      Activity a;
      a.cat = cat;
      a.name = name;
      a.start = ns_of(need("ts").get<double>());
      a.end = a.start + ns_of(need("dur").get<double>());
      a.corr = int_arg(args, "correlation");
      a.ext = int_arg(args, "External id");
      a.stream = static_cast<int>(int_arg(args, "stream", -1));
      a.device = static_cast<int>(int_arg(args, "device", -1));
      a.args = &args;
      if (a.corr == kNone) fail(path, fmt::format("traceEvents[{}] ({} '{}') has no args.correlation", i, cat, name));
      t.gpu.push_back(std::move(a));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      need("ts"), need("dur"), need("args");
      const std::pair<int64_t, int64_t> thread{as_id(e.value("pid", json(0))), as_id(e.value("tid", json(0)))};
      ++calls_per_thread[thread];
      raw_calls.push_back({&e, thread});
    } else if (cat == "cuda_sync") {
      const int64_t corr = int_arg(need("args"), "correlation");
      if (corr != kNone) syncs.emplace(corr, &e);
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      if (cat == "cpu_op" && e.contains("args") && e["args"].is_object()) {
        const int64_t ext = int_arg(e["args"], "External id");
        if (ext != kNone) t.ops_by_ext.emplace(ext, CpuOp{name, &e["args"]});
      }
      if (std::regex_search(name, steps) && e.contains("ts") && e["ts"].is_number()) {
        const int64_t ts = ns_of(e["ts"].get<double>());
        const int64_t dur = e.contains("dur") && e["dur"].is_number() ? ns_of(e["dur"].get<double>()) : 0;
        // A record_function range shows as a cpu op and as a user annotation: once.
        if (std::none_of(t.steps.begin(), t.steps.end(), [&](const RankTrace::Step& x) { return x.start == ts && x.name == name; }))
          t.steps.push_back({ts, ts + dur, name});
      }
    } else if (!read_only.count(cat)) {
      ++sum.not_imported[fmt::format("{} events (a category the importer does not know)", cat.empty() ? "uncategorised" : cat)];
    }
  }
  if (raw_calls.empty()) fail(path, "no CUDA runtime calls: profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");

  // The thread that issues most CUDA calls is the program; others' calls that
  // put work on the GPU join it in time order.
  std::pair<int64_t, int64_t> main_thread = calls_per_thread.begin()->first;
  for (const auto& [th, n] : calls_per_thread)
    if (n > calls_per_thread[main_thread]) main_thread = th;
  std::map<int, int64_t> per_device;
  for (const Activity& a : t.gpu) ++per_device[a.device];
  int device = per_device.begin()->first;
  for (const auto& [d, n] : per_device)
    if (n > per_device[device]) device = d;
  std::unordered_map<int64_t, const Activity*> by_corr;
  for (const Activity& a : t.gpu) {
    if (a.device != device) {
      ++sum.not_imported[fmt::format("GPU activities on another device than the trace's GPU {} (one GPU per trace)", device)];
      continue;
    }
    by_corr.emplace(a.corr, &a);
  }
  std::set<int64_t> matched;
  for (const RawCall& rc : raw_calls) {
    const json& e = *rc.e;
    Call c;
    c.name = e.value("name", "");
    c.ts = ns_of(e["ts"].get<double>());
    c.end = c.ts + ns_of(e["dur"].get<double>());
    c.corr = int_arg(e["args"], "correlation");
    c.ext = int_arg(e["args"], "External id");
    c.main_thread = rc.thread == main_thread;
    if (auto it = by_corr.find(c.corr); it != by_corr.end()) c.gpu = it->second, matched.insert(c.corr);
    if (auto it = syncs.find(c.corr); it != syncs.end()) c.sync = it->second;
    if (!c.main_thread && !c.gpu) continue;  // another thread's bookkeeping (NCCL's watchdog, the allocator)
    if (!c.main_thread) ++sum.other_threads;
    t.calls.push_back(std::move(c));
  }
  for (const auto& [corr, a] : by_corr)
    if (!matched.count(corr)) ++sum.not_imported["GPU activities without their CUDA call in the trace (launched before the profiler started)"];
  std::stable_sort(t.calls.begin(), t.calls.end(), [](const Call& a, const Call& b) { return a.ts < b.ts; });
  std::sort(t.steps.begin(), t.steps.end());
  return t;
}

enum class CallKind { Kernel, Memcpy, Memset, Record, Wait, StreamSync, DeviceSync, EventSync, HostOnly };
CallKind kind_of(const Call& c) {
  const std::string& n = c.name;
  if (c.gpu) return c.gpu->cat == "kernel" ? CallKind::Kernel : c.gpu->cat == "gpu_memcpy" ? CallKind::Memcpy : CallKind::Memset;
  if (n.rfind("cudaEventRecord", 0) == 0 || n.rfind("cuEventRecord", 0) == 0) return CallKind::Record;
  if (n == "cudaStreamWaitEvent" || n.rfind("cuStreamWaitEvent", 0) == 0) return CallKind::Wait;
  if (n == "cudaStreamSynchronize" || n.rfind("cuStreamSynchronize", 0) == 0) return CallKind::StreamSync;
  if (n == "cudaDeviceSynchronize" || n.rfind("cuCtxSynchronize", 0) == 0) return CallKind::DeviceSync;
  if (n == "cudaEventSynchronize" || n.rfind("cuEventSynchronize", 0) == 0) return CallKind::EventSync;
  return CallKind::HostOnly;
}

// One event record: the stream it is on and when the work before it ended.
struct RecordInfo {
  size_t call = 0;
  int stream = -1;
  int64_t covered_end = kNone;
  int64_t event_id = kNone;  // the CUDA event, once a wait names it
  bool after_copy = false;   // the thread's last work before it was a copy: it marks that copy's end
  int index = -1;            // the schedule's event
};

// For every wait and event synchronize (by call index): the record it binds.
// A wait the timeline decides (the waiting stream went on late, as a record's
// work ended) binds the latest record on another stream whose work had ended
// by then; one it does not decide binds by the program's idioms (below).
std::map<size_t, size_t> pair_waits(const RankTrace& t, std::vector<RecordInfo>& records, int default_stream, ImportSummary& sum) {
  std::map<size_t, size_t> bound;  // call -> index into records
  const auto& calls = t.calls;
  // Per stream: GPU end of the work enqueued so far, and the activities in issue order.
  std::map<int, std::vector<size_t>> per_stream;  // call indices of activities
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].gpu) per_stream[calls[i].gpu->stream].push_back(i);
  auto next_on = [&](int stream, size_t after) -> const Call* {
    auto it = per_stream.find(stream);
    if (it == per_stream.end()) return nullptr;
    auto jt = std::upper_bound(it->second.begin(), it->second.end(), after);
    return jt == it->second.end() ? nullptr : &calls[*jt];
  };
  auto prev_end_on = [&](int stream, size_t before) -> int64_t {
    auto it = per_stream.find(stream);
    if (it == per_stream.end()) return kNone;
    auto jt = std::lower_bound(it->second.begin(), it->second.end(), before);
    int64_t e = kNone;
    for (auto kt = it->second.begin(); kt != jt; ++kt) e = std::max(e, calls[*kt].gpu->end);
    return e;
  };
  std::map<int, int64_t> enqueued_end;
  int last_stream = default_stream;
  bool last_was_copy = false;
  std::map<std::pair<int, int>, size_t> last_bound;  // (waiting stream, record stream) -> record index + 1
  std::map<int64_t, int> stream_of_event;
  size_t last_gpu_call = SIZE_MAX;  // the last call that was no host-only call
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const CallKind k = kind_of(c);
    if (c.gpu) {
      last_stream = c.gpu->stream;
      last_was_copy = c.gpu->cat == "gpu_memcpy";
      auto& e = enqueued_end[last_stream];
      e = std::max(e, c.gpu->end);
    }
    if (k == CallKind::Record) {
      RecordInfo r;
      r.call = i;
      r.stream = last_stream;
      auto it = enqueued_end.find(last_stream);
      r.covered_end = it == enqueued_end.end() ? kNone : it->second;
      r.after_copy = last_was_copy;
      records.push_back(r);
    }
    if (k == CallKind::Wait || k == CallKind::EventSync) {
      const json* args = c.sync && (*c.sync).contains("args") ? &(*c.sync)["args"] : nullptr;
      const int waiting = k == CallKind::Wait && args ? static_cast<int>(int_arg(*args, "stream", -1)) : -1;
      const int64_t event_id = args ? int_arg(*args, "wait_on_cuda_event_id", kNone) : kNone;
      const int64_t record_corr = args ? int_arg(*args, "wait_on_cuda_event_record_corr_id", -1) : -1;
      if (k == CallKind::Wait && waiting < 0) {
        ++sum.not_imported["stream waits the profiler gave no cuda_sync event for: left out"];
        continue;
      }
      // Record-then-wait: the call just before is a record on another stream
      // (wait_stream), or within the same framework op (NCCL's hand-off, a
      // no-op where the collective runs on the current stream).
      const bool idiom = last_gpu_call != SIZE_MAX && kind_of(calls[last_gpu_call]) == CallKind::Record && !records.empty() &&
                         records.back().call == last_gpu_call &&
                         (records.back().stream != waiting || (c.ext != kNone && calls[last_gpu_call].ext == c.ext)) &&
                         (records.back().event_id == kNone || event_id == kNone || records.back().event_id == event_id);
      std::vector<size_t> cand;
      for (size_t r = 0; r < records.size(); ++r) {
        if (records[r].stream == waiting) continue;
        if (records[r].event_id != kNone && event_id != kNone && records[r].event_id != event_id) continue;
        cand.push_back(r);
      }
      if (record_corr >= 0)  // the profiler says which record, and on which stream
        for (size_t r = 0; r < records.size(); ++r)
          if (calls[records[r].call].corr == record_corr) {
            cand = {r};
            if (const int64_t on = int_arg(*args, "wait_on_stream", -1); on >= 0) records[r].stream = static_cast<int>(on);
          }
      if (auto se = stream_of_event.find(event_id); se != stream_of_event.end() && cand.size() > 1) {
        std::vector<size_t> same;
        for (size_t r : cand)
          if (records[r].stream == se->second) same.push_back(r);
        if (!same.empty()) cand = same;
      }
      if (cand.empty() && !idiom) {
        ++sum.not_imported["waits on an event no record in the trace made (recorded before the profiler started): left out"];
        continue;
      }
      // When the waiter went on: the waiting stream's next work's start (a
      // wait), the host's return (an event synchronize).
      int64_t went_on = c.end, could = c.ts;
      if (k == CallKind::Wait) {
        const Call* next = next_on(waiting, i);
        went_on = next ? next->gpu->start : std::numeric_limits<int64_t>::max();
        could = next ? std::max(prev_end_on(waiting, i), next->ts) : went_on;
      }
      // A record the waiter can have waited on: its work had ended when the waiter went on.
      const auto feasible = [&](size_t r) { return records[r].covered_end == kNone || records[r].covered_end <= went_on + kSlackNs; };
      // The timeline decides a wait whose stream went on late, just as a
      // record's work ended (a delay no record explains is the GPU's own).
      const bool late = went_on != std::numeric_limits<int64_t>::max() && went_on > could + kSlackNs;
      const bool decided = late && std::any_of(cand.begin(), cand.end(), [&](size_t r) {
                             return feasible(r) && records[r].covered_end != kNone && records[r].covered_end >= went_on - kExplainNs;
                           });
      size_t pick = cand.empty() ? records.size() - 1 : cand.back();
      if (record_corr >= 0) {
        // the profiler said
      } else if (decided) {
        int64_t best = kNone;
        for (size_t r : cand)
          if (feasible(r) && records[r].covered_end >= best) best = records[r].covered_end, pick = r;
      } else {
        // Of the records whose work had ended: the one just before the wait
        // within the same framework op (NCCL's hand-off); else the next copy
        // in a queue (a record marking a copy, after the last this stream
        // waited on from that stream: prefetch loops); else the one just
        // before it on another stream (wait_stream); else the first.
        size_t queue = SIZE_MAX, first = SIZE_MAX;
        for (size_t r : cand) {
          if (!feasible(r)) continue;
          first = std::min(first, r);
          auto lb = last_bound.find({waiting, records[r].stream});
          if (records[r].after_copy && (lb == last_bound.end() || r >= lb->second)) queue = std::min(queue, r);
        }
        const size_t just_before = records.size() - 1;
        const bool idiom_ok = idiom && feasible(just_before);
        const bool same_op = idiom_ok && c.ext != kNone && calls[records[just_before].call].ext == c.ext;
        pick = same_op ? just_before : queue != SIZE_MAX ? queue : idiom_ok ? just_before : first != SIZE_MAX ? first : pick;
      }
      ++(decided ? sum.waits_timed : sum.waits_untimed);
      bound[i] = pick;
      last_bound[{waiting, records[pick].stream}] = pick + 1;
      if (event_id != kNone) {
        records[pick].event_id = event_id;
        stream_of_event[event_id] = records[pick].stream;
      }
    }
    if (k != CallKind::HostOnly) last_gpu_call = i;
  }
  return bound;
}

struct OpTimes {
  int64_t issue, returned, start, end;
};

}  // namespace

std::string read_maybe_gzip(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw InputError(SourceLocation{path, 0, 0}, "no such file");
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) throw InputError(SourceLocation{path, 0, 0}, "cannot be read");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const std::string msg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw InputError(SourceLocation{path, 0, 0}, "cannot be decompressed (" + msg + ")");
  return out;
}

std::string ImportSummary::text() const {
  std::string out = fmt::format("{} rank(s), {} trace events\n", ranks, events);
  out += "ops:\n";
  for (const auto& [k, n] : ops) out += fmt::format("  {:>8}  {}\n", n, k);
  if (steps) out += fmt::format("steps: {}\n", steps);
  if (waits_timed + waits_untimed)
    out += fmt::format("stream waits / event syncs: {} bound by the timeline, {} by program order (their wait did not bind)\n", waits_timed,
                       waits_untimed);
  if (other_threads) out += fmt::format("calls from other host threads merged in time order: {}\n", other_threads);
  if (!host_only.empty()) {
    int64_t total = 0;
    for (const auto& [k, n] : host_only) total += n;
    out += fmt::format("CUDA calls kept as host time ({}):", total);
    for (const auto& [k, n] : host_only) out += fmt::format(" {} {},", k, n);
    out.back() = '\n';
  }
  if (!not_imported.empty()) {
    out += "not imported:\n";
    for (const auto& [k, n] : not_imported) out += fmt::format("  {:>8}  {}\n", n, k);
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

ImportedTrace import_traces(const std::vector<std::string>& paths, const ImportOptions& options) {
  if (paths.empty()) throw InputError(SourceLocation{}, "no trace given");
  ImportedTrace out;
  ImportSummary& sum = out.summary;
  std::regex steps;
  try {
    steps = std::regex(options.steps.empty() ? std::string("^ProfilerStep#\\d+$") : options.steps);
  } catch (const std::regex_error& e) {
    throw InputError(SourceLocation{}, fmt::format("--steps '{}' is not a regular expression ({})", options.steps, e.what()));
  }
  std::vector<RankTrace> traces;
  for (const auto& p : paths) traces.push_back(read_trace(p, steps, sum));
  // Ranks: as the traces say, else in the order given.
  const bool ranked = std::all_of(traces.begin(), traces.end(), [](const RankTrace& t) { return t.rank >= 0; });
  std::map<int, size_t> by_rank;
  for (size_t i = 0; i < traces.size(); ++i) {
    const int r = ranked ? traces[i].rank : static_cast<int>(i);
    if (!by_rank.emplace(r, i).second) fail(traces[i].file, fmt::format("rank {} again (also {})", r, traces[by_rank[r]].file));
  }
  if (ranked)
    for (size_t i = 0; i < traces.size(); ++i)
      if (traces[i].rank >= static_cast<int>(traces.size()))
        fail(traces[i].file, fmt::format("rank {} of {}: give every rank's trace of the job, or only rank 0's", traces[i].rank, traces.size()));
  std::vector<RankTrace*> rank_trace;
  for (auto& [r, i] : by_rank) rank_trace.push_back(&traces[i]);
  const int nranks = static_cast<int>(rank_trace.size());
  sum.ranks = nranks;
  if (rank_trace[0]->world > nranks)
    sum.notes.push_back(fmt::format("the job had {} ranks and {} trace(s) were given: collectives keep their measured time", rank_trace[0]->world,
                                    nranks));

  // The name: the first trace's file name without .gz, .json, .trace, .rankN.
  std::string name = options.name;
  if (name.empty()) {
    name = std::filesystem::path(paths[0]).filename().string();
    for (const std::regex& suffix : {std::regex("\\.gz$"), std::regex("\\.json$"), std::regex("\\.pt\\.trace$|\\.trace$"), std::regex("\\.rank\\d+$")})
      name = std::regex_replace(name, suffix, "");
  }
  ScheduleBuilder b(name, nranks);
  // Streams: the one with the most kernel time on rank 0 is "compute".
  std::map<int, int64_t> kernel_time;
  for (const Activity& a : rank_trace[0]->gpu)
    if (a.cat == "kernel") kernel_time[a.stream] += a.end - a.start;
  int compute_id = kernel_time.empty() ? (rank_trace[0]->gpu.empty() ? 7 : rank_trace[0]->gpu[0].stream) : kernel_time.begin()->first;
  for (const auto& [s, t] : kernel_time)
    if (t > kernel_time[compute_id]) compute_id = s;
  auto stream_index = [&](int id) { return b.stream(id == compute_id ? "compute" : fmt::format("stream{}", id)); };
  const int compute = stream_index(compute_id);

  // Collectives: simulated where every rank of the group was imported and each
  // issued as many; otherwise kept at their measured time.
  std::map<std::vector<int>, std::vector<int64_t>> issued;  // group ranks -> count per rank
  for (int r = 0; r < nranks; ++r)
    for (const Call& c : rank_trace[r]->calls) {
      if (!c.gpu || !is_nccl(*c.gpu)) continue;
      std::string why;
      if (auto ci = collective_of(*c.gpu, &why)) {
        auto& v = issued[ci->ranks];
        v.resize(static_cast<size_t>(nranks));
        ++v[static_cast<size_t>(r)];
      }
    }
  std::map<std::vector<int>, int> groups;
  for (const auto& [ranks, counts] : issued) {
    const bool all_here = std::all_of(ranks.begin(), ranks.end(), [&](int r) { return r >= 0 && r < nranks; });
    bool same = all_here;
    for (int r : ranks)
      if (all_here && counts[static_cast<size_t>(r)] != counts[static_cast<size_t>(ranks[0])]) same = false;
    if (!all_here) continue;
    if (!same) {
      sum.notes.push_back(fmt::format("the ranks of group [{}] issued different numbers of collectives in their traces (profile every rank "
                                      "over the same steps): those keep their measured time",
                                      fmt::join(ranks, ", ")));
      continue;
    }
    bool world = static_cast<int>(ranks.size()) == nranks;
    for (int i = 0; world && i < nranks; ++i) world = ranks[static_cast<size_t>(i)] == i;
    groups[ranks] = world ? -1 : b.group(fmt::format("ranks{}", fmt::join(ranks, "_")), ranks);
  }
  const int world_group = nranks > 1 ? b.group("world", [&] {
    std::vector<int> v(static_cast<size_t>(nranks));
    for (int i = 0; i < nranks; ++i) v[static_cast<size_t>(i)] = i;
    return v;
  }())
                                     : -1;

  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const RankTrace* t : rank_trace) t0 = std::min(t0, t->calls.front().ts);
  std::vector<std::vector<OpTimes>> times(static_cast<size_t>(nranks));
  int64_t makespan = 0;
  std::vector<int64_t> rank_end(static_cast<size_t>(nranks), 0);
  for (int r = 0; r < nranks; ++r) {
    const RankTrace& t = *rank_trace[static_cast<size_t>(r)];
    auto& tm = times[static_cast<size_t>(r)];
    auto emit = [&](Op op, OpTimes ot, const std::string& what) {
      b.add(r, std::move(op));
      tm.push_back(OpTimes{ot.issue - t0, ot.returned - t0, ot.start - t0, ot.end - t0});
      ++sum.ops[what];
    };
    // Kernels per ATen op, and each op's longest kernel (the one that carries its shape).
    std::unordered_map<int64_t, int> kernels_of_op;
    std::unordered_map<int64_t, const Activity*> longest;
    for (const Activity& a : t.gpu)
      if (a.cat == "kernel" && a.ext != kNone) {
        ++kernels_of_op[a.ext];
        auto& l = longest[a.ext];
        if (!l || a.end - a.start > l->end - l->start) l = &a;
      }
    std::vector<RecordInfo> records;
    const auto bound = pair_waits(t, records, compute_id, sum);
    std::map<size_t, const RecordInfo*> record_at;
    for (auto& rec : records) {
      rec.index = b.event(fmt::format("r{}e{}", r, &rec - records.data()));
      record_at[rec.call] = &rec;
    }
    int64_t cursor = t.calls.front().ts;  // where the host is: the end of the last call that became an op
    size_t next_step = 0;
    int64_t compute_end = 0;  // GPU end of the work put on the compute stream so far
    auto steps_ended = [&](size_t next, int64_t now) { return next == t.steps.size() && next > 0 && t.steps.back().end <= now; };
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const Call& c = t.calls[i];
      const CallKind k = kind_of(c);
      if (k == CallKind::HostOnly) {
        ++sum.host_only[c.name];
        continue;
      }
      // Step markers go before the first call at or after their range's
      // start; the end of the last goes before the first call after it.
      auto marker_at = [&](int64_t when, std::string label, const char* what) {
        const int64_t at = std::max(cursor, when);
        if (at > cursor) emit(ops::host_work(Time::from_ps((at - cursor) * 1000)), {cursor, at, cursor, at}, "host_work");
        cursor = at;
        const int64_t reached = std::max(at, compute_end);  // the compute stream reaches it after the work before it
        emit(ops::marker(compute, std::move(label)), {at, at, reached, reached}, what);
      };
      if (steps_ended(next_step, c.ts)) marker_at(t.steps.back().end, kStepsEndMarker, "marker (end of steps)"), next_step = SIZE_MAX;
      while (next_step < t.steps.size() && t.steps[next_step].start <= c.ts) {
        marker_at(t.steps[next_step].start, fmt::format("step {} ({})", next_step, t.steps[next_step].name), "marker (step)");
        if (r == 0) ++sum.steps;
        ++next_step;
      }
      if (c.ts > cursor) emit(ops::host_work(Time::from_ps((c.ts - cursor) * 1000)), {cursor, c.ts, cursor, c.ts}, "host_work");
      cursor = std::max(cursor, c.end);
      const OpTimes host{c.ts, c.end, c.ts, c.end};
      if (c.gpu && c.gpu->stream == compute_id) compute_end = std::max(compute_end, c.gpu->end);
      switch (k) {
        case CallKind::Kernel: {
          const Activity& a = *c.gpu;
          const int s = stream_index(a.stream);
          const OpTimes gt{c.ts, c.end, a.start, a.end};
          const Time measured = Time::from_ps((a.end - a.start) * 1000);
          std::string why;
          if (is_nccl(a)) {
            if (auto ci = collective_of(a, &why); ci && groups.count(ci->ranks)) {
              const int g = groups[ci->ranks] < 0 ? world_group : groups[ci->ranks];
              emit(ops::collective(s, ci->kind, g, ci->bytes, CollAlgo::Nccl, ci->dtype, to_string(ci->kind)), gt,
                   "collective " + to_string(ci->kind));
              break;
            }
            if (!why.empty()) ++sum.not_imported[why + ": a kernel at its measured time"];
          }
          Op op = ops::busy(s, measured, short_name(a.name));
          auto opit = a.ext != kNone ? t.ops_by_ext.find(a.ext) : t.ops_by_ext.end();
          std::string what = is_nccl(a) ? "kernel (NCCL, measured)" : "kernel (measured)";
          if (opit != t.ops_by_ext.end() && !is_nccl(a)) {
            const CpuOp& cop = opit->second;
            const bool carries = longest[a.ext] == &a;
            if (auto g = carries ? gemm_of(cop) : std::nullopt) {
              op.gemm = g->first, op.dtype = g->second, what = "kernel (gemm)";
            } else if (auto at = carries ? attention_of(cop) : std::nullopt) {
              op.attention = at->first, op.dtype = at->second, what = "kernel (attention)";
            } else if (kernels_of_op[a.ext] == 1 && !gemm_of(cop) && !attention_of(cop)) {
              // One kernel for the op: its inputs once, and an output as large as the largest.
              double bytes = 0, largest = 0;
              for (const auto& [dims, type] : tensor_inputs(*cop.args)) {
                double n = element_bytes(type);
                for (int64_t d : dims) n *= static_cast<double>(d);
                bytes += n;
                largest = std::max(largest, n);
              }
              if (bytes > 0) op.hbm_bytes = bytes + largest, what = "kernel (memory, HBM bytes from its op's inputs)";
            }
          }
          emit(std::move(op), gt, what);
          break;
        }
        case CallKind::Memset: {
          const Activity& a = *c.gpu;
          Op op = ops::busy(stream_index(a.stream), Time::from_ps((a.end - a.start) * 1000), "memset");
          op.hbm_bytes = static_cast<double>(std::max<int64_t>(0, int_arg(*a.args, "bytes", 0)));
          emit(std::move(op), {c.ts, c.end, a.start, a.end}, "kernel (memset)");
          break;
        }
        case CallKind::Memcpy: {
          const Activity& a = *c.gpu;
          const std::string& n = a.name;
          const Bytes bytes = std::max<int64_t>(1, int_arg(*a.args, "bytes", 1));
          const bool async = c.name.find("Async") != std::string::npos;
          const HostMem mem = n.find("Pageable") != std::string::npos ? HostMem::Pageable : HostMem::Pinned;
          const OpTimes gt{c.ts, c.end, a.start, a.end};
          if (n.find("HtoD") != std::string::npos || n.find("DtoH") != std::string::npos || n.find("DtoD") != std::string::npos) {
            const CopyKind kind = n.find("HtoD") != std::string::npos ? CopyKind::H2D : n.find("DtoH") != std::string::npos ? CopyKind::D2H : CopyKind::D2D;
            Op op = ops::copy(stream_index(a.stream), kind, bytes, mem, async, fmt::format("memcpy_{}", to_string(kind)));
            emit(std::move(op), gt,
                 "memcpy " + to_string(kind) + (kind == CopyKind::D2D ? "" : mem == HostMem::Pageable ? " pageable" : " pinned"));
          } else {
            ++sum.not_imported[fmt::format("'{}' copies (peer or host-to-host): kernels at their measured time", n)];
            emit(ops::busy(stream_index(a.stream), Time::from_ps((a.end - a.start) * 1000), n), gt, "kernel (measured)");
          }
          break;
        }
        case CallKind::Record: {
          const RecordInfo& rec = *record_at.at(i);
          const int64_t at = std::max(c.end, rec.covered_end == kNone ? c.end : rec.covered_end);
          emit(ops::record(stream_index(rec.stream), rec.index), {c.ts, c.end, at, at}, "event_record");
          break;
        }
        case CallKind::Wait: case CallKind::EventSync: {
          auto it = bound.find(i);
          if (it == bound.end()) break;  // counted in not_imported
          const RecordInfo& rec = records[it->second];
          if (k == CallKind::Wait) {
            const int waiting = static_cast<int>(int_arg((*c.sync)["args"], "stream", -1));
            emit(ops::wait_event(stream_index(waiting), rec.index), host, "stream_wait_event");
          } else {
            Op op;
            op.kind = OpKind::EventSync;
            op.event = rec.index;
            emit(std::move(op), host, "event_sync");
          }
          break;
        }
        case CallKind::StreamSync: {
          const int64_t s = c.sync && (*c.sync).contains("args") ? int_arg((*c.sync)["args"], "stream", -1) : -1;
          if (s < 0) {
            sum.notes.push_back("a stream synchronize without its cuda_sync event became a device synchronize");
            emit(ops::device_sync(), host, "device_sync");
          } else {
            emit(ops::stream_sync(stream_index(static_cast<int>(s))), host, "stream_sync");
          }
          break;
        }
        case CallKind::DeviceSync: emit(ops::device_sync(), host, "device_sync"); break;
        case CallKind::HostOnly: break;
      }
    }
    if (!t.steps.empty() && next_step == t.steps.size()) {
      const int64_t at = std::max(cursor, t.steps.back().end);
      if (at > cursor) emit(ops::host_work(Time::from_ps((at - cursor) * 1000)), {cursor, at, cursor, at}, "host_work");
      emit(ops::marker(compute, kStepsEndMarker), {at, at, std::max(at, compute_end), std::max(at, compute_end)}, "marker (end of steps)");
    }
    for (const OpTimes& ot : tm) rank_end[static_cast<size_t>(r)] = std::max({rank_end[static_cast<size_t>(r)], ot.returned, ot.end});  // from t0
    makespan = std::max(makespan, rank_end[static_cast<size_t>(r)]);
  }
  if (sum.not_imported.count("stream waits the profiler gave no cuda_sync event for: left out") && sum.waits_timed + sum.waits_untimed == 0)
    sum.notes.push_back("without the profiler's CUDA sync events the streams' hand-offs are unknown: profile with "
                        "experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)");

  out.schedule = b.build();
  RunRecord& m = out.measured;
  m.ops.resize(static_cast<size_t>(nranks));
  m.ranks.resize(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const auto& prog = *out.schedule.programs[static_cast<size_t>(r)].ops;
    auto& recs = m.ops[static_cast<size_t>(r)];
    recs.resize(prog.size());
    for (size_t i = 0; i < prog.size(); ++i) {
      const OpTimes& ot = times[static_cast<size_t>(r)][i];
      recs[i].op = &prog[i];
      recs[i].issue = Time::from_ps(ot.issue * 1000);
      recs[i].returned = Time::from_ps(ot.returned * 1000);
      recs[i].start = Time::from_ps(ot.start * 1000);
      recs[i].end = Time::from_ps(ot.end * 1000);
      recs[i].ran = true;
    }
    m.ranks[static_cast<size_t>(r)].gpu = rank_trace[static_cast<size_t>(r)]->gpu_name;
    m.ranks[static_cast<size_t>(r)].end = Time::from_ps(rank_end[static_cast<size_t>(r)] * 1000);
  }
  m.makespan = Time::from_ps(makespan * 1000);
  return out;
}

}  // namespace osim::kineto
