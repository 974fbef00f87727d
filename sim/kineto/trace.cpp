#include "kineto/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "io/text_file.hpp"

namespace osim::kineto::trace {

[[noreturn]] void fail(const std::string& file, const std::string& what, int line) { throw InputError(SourceLocation{file, line, 0}, what); }

int64_t int_arg(const json& args, const char* key, int64_t dflt) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return dflt;
  if (it->is_number_integer()) return it->get<int64_t>();
  // A float: its whole part where an int64 holds it (no cast past its range).
  const double v = it->get<double>();
  return std::isfinite(v) && std::abs(v) < 9e18 ? static_cast<int64_t>(v) : dflt;
}
std::string str_arg(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

namespace {

// PyTorch 1.8 to 1.10 (Kineto's first traces: the TensorBoard plugin's samples)
// named the categories in capitals and an op's link `external id`.
std::string current_category(const std::string& cat) {
  static const std::map<std::string, std::string> legacy = {
      {"Kernel", "kernel"}, {"Memcpy", "gpu_memcpy"}, {"Memset", "gpu_memset"}, {"Runtime", "cuda_runtime"}, {"Operator", "cpu_op"}};
  const auto it = legacy.find(cat);
  return it == legacy.end() ? cat : it->second;
}
int64_t external_id(const json& args) {
  const int64_t id = int_arg(args, "External id");
  return id != kNone ? id : int_arg(args, "external id");
}

// The ranks a process group's text names ("[0, 1, 2]"): each run of digits,
// and whether a '-' stands before it.
struct GroupRank {
  std::string digits;
  bool negative = false;
};
std::vector<GroupRank> group_ranks(const std::string& text) {
  std::vector<GroupRank> out;
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    out.push_back({text.substr(i, j - i), i > 0 && text[i - 1] == '-'});
    i = j;
  }
  return out;
}

double element_bytes(const std::string& type) {
  static const std::map<std::string, double> sizes = {{"c10::BFloat16", 2},      {"c10::Half", 2},        {"float", 4},         {"double", 8},
                                                      {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}, {"long int", 8},      {"int", 4},
                                                      {"short int", 2},          {"signed char", 1},      {"unsigned char", 1}, {"bool", 1}};
  auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}
DType dtype_of(const std::string& type) {
  if (type == "c10::Half" || type == "Half") return DType::FP16;
  if (type == "float" || type == "Float") return DType::FP32;
  if (type.find("Float8") != std::string::npos) return DType::FP8;
  return DType::BF16;
}

// A JSON list of integers; empty if it is not one (a scalar, a list of lists, nothing).
std::vector<int64_t> int_list(const json& a) {
  std::vector<int64_t> v;
  if (!a.is_array()) return v;
  for (const json& x : a)
    if (x.is_number_integer()) v.push_back(x.get<int64_t>());
  return v.size() == a.size() ? v : std::vector<int64_t>{};
}

// The op's tensor inputs: (dims, element type).
std::vector<std::pair<std::vector<int64_t>, std::string>> tensor_inputs(const json& args) {
  std::vector<std::pair<std::vector<int64_t>, std::string>> out;
  auto dims = args.find("Input Dims");
  auto types = args.find("Input type");
  if (dims == args.end() || types == args.end() || !dims->is_array() || !types->is_array()) return out;
  for (size_t i = 0; i < dims->size() && i < types->size(); ++i) {
    if (!(*types)[i].is_string() || element_bytes((*types)[i].get<std::string>()) == 0) continue;
    if (std::vector<int64_t> v = int_list((*dims)[i]); !v.empty()) out.emplace_back(std::move(v), (*types)[i].get<std::string>());
  }
  return out;
}

int32_t dim32(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, 1, INT32_MAX)); }

}  // namespace

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

// Whether an SDPA op ran causal: its is_causal argument among the profiler's
// "Concrete Inputs" (recorded with record_shapes), at its place in the op's
// schema; false where the trace does not hold it.
bool is_causal(const CpuOp& op) {
  // (op, argument, its value when causal); the efficient kernel's custom_mask_type 1 is the top-left diagonal.
  static const std::vector<std::tuple<std::string, size_t, std::string>> place = {
      {"aten::_scaled_dot_product_cudnn_attention", 6, "True"},     {"aten::_cudnn_attention_forward", 10, "True"},
      {"aten::_scaled_dot_product_flash_attention", 4, "True"},     {"aten::_flash_attention_forward", 8, "True"},
      {"aten::_scaled_dot_product_efficient_attention", 6, "True"}, {"aten::_efficient_attention_forward", 9, "1"}};
  const auto it = op.args->find("Concrete Inputs");
  if (it == op.args->end() || !it->is_array()) return false;
  for (const auto& [name, i, causal] : place)
    if (op.name == name) return i < it->size() && (*it)[i].is_string() && (*it)[i].get<std::string>() == causal;
  return false;
}

std::optional<std::pair<AttentionShape, DType>> attention_of(const CpuOp& op) {
  const std::string& n = op.name;
  if (n.find("attention") == std::string::npos || n.find("backward") != std::string::npos) return std::nullopt;
  AttnBackend backend;
  if (n.find("cudnn") != std::string::npos)
    backend = AttnBackend::Cudnn;
  else if (n.find("flash") != std::string::npos)
    backend = AttnBackend::Flash2;
  else if (n.find("efficient") != std::string::npos)
    backend = AttnBackend::Efficient;
  else
    return std::nullopt;
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
  a.causal = is_causal(op);
  return std::make_pair(a, dtype_of(in[0].second));
}

std::optional<CollectiveInfo> collective_of(const Activity& k, std::string* why) {
  const json& a = *k.args;
  const std::string name = str_arg(a, "Collective name");
  if (name.empty()) {
    // PyTorch links no parameters to the kernels of grouped point-to-point
    // calls (batch_isend_irecv), with record_shapes or without.
    *why = k.name.find("SendRecv") != std::string::npos ? "NCCL point-to-point kernel without parameters (batch_isend_irecv's carry none)"
                                                        : "NCCL kernel without its collective's parameters (profile with record_shapes=True)";
    return std::nullopt;
  }
  static const std::map<std::string, CollKind> kinds = {{"all_to_all", CollKind::AllToAll},
                                                        {"all_to_allv", CollKind::AllToAll},
                                                        {"alltoall", CollKind::AllToAll},
                                                        {"alltoall_base", CollKind::AllToAll},
                                                        {"all_gather", CollKind::AllGather},
                                                        {"allgather", CollKind::AllGather},
                                                        {"_allgather_base", CollKind::AllGather},
                                                        {"all_gather_into_tensor", CollKind::AllGather},
                                                        {"allgather_into_tensor_coalesced", CollKind::AllGather},
                                                        {"reduce_scatter", CollKind::ReduceScatter},
                                                        {"_reduce_scatter_base", CollKind::ReduceScatter},
                                                        {"reduce_scatter_tensor", CollKind::ReduceScatter},
                                                        {"allreduce", CollKind::AllReduce},
                                                        {"all_reduce", CollKind::AllReduce},
                                                        {"barrier", CollKind::AllReduce}};
  auto it = kinds.find(name);
  if (it == kinds.end()) {
    *why = fmt::format("NCCL {} (not a collective the simulator models): kept at its measured time", name);
    return std::nullopt;
  }
  CollectiveInfo c;
  c.kind = it->second;
  // PyTorch's scalar type names (c10::toString) and their bytes; none given: 2, as bf16.
  static const std::map<std::string, double> sizes = {{"", 2},
                                                      {"Byte", 1},
                                                      {"Char", 1},
                                                      {"Bool", 1},
                                                      {"QInt8", 1},
                                                      {"QUInt8", 1},
                                                      {"Float8_e5m2", 1},
                                                      {"Float8_e4m3fn", 1},
                                                      {"Float8_e5m2fnuz", 1},
                                                      {"Float8_e4m3fnuz", 1},
                                                      {"Short", 2},
                                                      {"UInt16", 2},
                                                      {"Half", 2},
                                                      {"BFloat16", 2},
                                                      {"Int", 4},
                                                      {"UInt32", 4},
                                                      {"QInt32", 4},
                                                      {"Float", 4},
                                                      {"ComplexHalf", 4},
                                                      {"Long", 8},
                                                      {"UInt64", 8},
                                                      {"Double", 8},
                                                      {"ComplexFloat", 8},
                                                      {"ComplexDouble", 16}};
  const std::string dt = str_arg(a, "dtype");
  const auto size = sizes.find(dt);
  if (size == sizes.end()) {
    *why = fmt::format("NCCL {} of dtype '{}' (an element type the importer does not know)", name, dt);
    return std::nullopt;
  }
  const double es = size->second;
  c.dtype = dt == "Float" ? DType::FP32 : dt == "Half" ? DType::FP16 : DType::BF16;
  const int64_t in = int_arg(a, "In msg nelems", 0), out = int_arg(a, "Out msg nelems", 0);
  // nccl-tests' size: all_gather's output, the others' input buffer.
  const int64_t elems = c.kind == CollKind::AllGather ? out : in;
  c.bytes = static_cast<Bytes>(std::max<double>(4.0, static_cast<double>(elems) * es));  // a barrier: one float
  // read_trace refused ranks past kMaxRank: at most 8 digits here.
  for (const GroupRank& r : group_ranks(str_arg(a, "Process Group Ranks")))
    c.ranks.push_back(static_cast<int>(std::strtol(r.digits.substr(0, 9).c_str(), nullptr, 10)));
  if (c.ranks.empty()) {
    *why = fmt::format("NCCL {} without its process group's ranks", name);
    return std::nullopt;
  }
  return c;
}

std::string short_name(std::string n) {
  if (n.rfind("void ", 0) == 0) n.erase(0, 5);
  for (size_t p; (p = n.find("(anonymous namespace)::")) != std::string::npos;) n.erase(p, 23);
  if (const size_t cut = n.find_first_of("<("); cut != std::string::npos && cut > 0) n.erase(cut);
  for (char& ch : n)
    if (ch == '{')
      ch = '(';
    else if (ch == '}')
      ch = ')';
  return n;
}

bool is_nccl(const Activity& k) { return k.cat == "kernel" && k.name.rfind("nccl", 0) == 0; }

std::string event_at(size_t index, const std::string& cat, const std::string& name, double ts_us) {
  return fmt::format("traceEvents[{}] ({} '{}' at ts {} us)", index, cat.empty() ? "uncategorised" : cat, name, ts_us);
}

namespace {

// The trace's rank, world size, GPU and clock base, checked.
void read_header(RankTrace& t) {
  if (auto d = t.doc.find("distributedInfo"); d != t.doc.end() && d->is_object()) {
    auto field = [&](const char* key, int64_t lowest, int absent) {
      auto it = d->find(key);
      if (it == d->end()) return absent;
      if (!it->is_number_integer() || it->get<int64_t>() < lowest || it->get<int64_t>() > (1 << 24))
        fail(t.file, fmt::format("distributedInfo.{} is {}: {}; correct it, or remove distributedInfo (ranks then follow the order the "
                                 "traces are given)",
                                 key, it->dump(), lowest == 0 ? "ranks count from 0" : "a job has 1 rank or more"));
      return static_cast<int>(it->get<int64_t>());
    };
    t.rank = field("rank", 0, -1);
    t.world = field("world_size", 1, 0);
    if (t.rank >= 0 && t.world > 0 && t.rank >= t.world)
      fail(t.file, fmt::format("distributedInfo.rank {} is not below its world_size {}; correct it, or remove distributedInfo (ranks then "
                               "follow the order the traces are given)",
                               t.rank, t.world));
  }
  if (auto b = t.doc.find("baseTimeNanoseconds"); b != t.doc.end() && b->is_number_integer()) {
    if (b->is_number_unsigned() ? b->get<uint64_t>() > static_cast<uint64_t>(kMaxBaseNs) : b->get<int64_t>() < 0 || b->get<int64_t>() > kMaxBaseNs)
      fail(t.file, fmt::format("baseTimeNanoseconds {} is past any clock (0 to 4e18 ns: nanoseconds since 1970 reach it in 2096); correct it, or "
                               "remove it (the traces are then taken as on one clock)",
                               b->dump()));
    t.base_ns = b->get<int64_t>();
  }
}

// The trace's GPU from deviceProperties: the entry of `device` (the one its
// activities ran on), else the first.
void read_device(RankTrace& t, int device) {
  auto props = t.doc.find("deviceProperties");
  if (props == t.doc.end() || !props->is_array() || props->empty()) return;
  const json* pick = nullptr;
  for (const json& d : *props)
    if (d.is_object() && (!pick || (d.contains("id") && d["id"].is_number_integer() && d["id"].get<int64_t>() == device))) pick = &d;
  if (!pick) return;
  t.gpu_name = str_arg(*pick, "name");
  if (const int64_t sms = int_arg(*pick, "numSms", 0); sms > 0 && sms < (1 << 20)) t.gpu_sms = static_cast<int>(sms);
  if (const int64_t mem = int_arg(*pick, "totalGlobalMem", 0); mem > 0) t.gpu_memory = mem;
}

// Begin/end (ph B/E) pairs, which other exporters write for what Kineto
// writes as complete (X) events, joined into t.joined; returns the index of
// each one's begin. An end closes the latest open begin on its thread.
std::vector<size_t> join_begin_end(RankTrace& t, const json& events, ImportSummary& sum) {
  std::vector<size_t> from;
  std::map<std::string, std::vector<size_t>> open;  // thread -> begins
  auto thread = [](const json& e) { return e.value("pid", json(0)).dump() + "/" + e.value("tid", json(0)).dump(); };
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object()) fail(t.file, fmt::format("traceEvents[{}] is not an object", i));
    const std::string ph = e.value("ph", "");
    if (ph == "B") {
      open[thread(e)].push_back(i);
    } else if (ph == "E") {
      auto& stack = open[thread(e)];
      const json& b = stack.empty() ? e : events[stack.back()];
      if (stack.empty() || !b.contains("ts") || !b["ts"].is_number() || !e.contains("ts") || !e["ts"].is_number()) {
        ++sum.not_imported["end (ph E) events without their begin, or either without its ts: left out"];
        if (!stack.empty()) stack.pop_back();
        continue;
      }
      json x = b;
      x["ph"] = "X";
      x["dur"] = e["ts"].get<double>() - b["ts"].get<double>();
      if (auto a = e.find("args"); a != e.end() && a->is_object()) {
        if (!x.contains("args") || !x["args"].is_object()) x["args"] = json::object();
        x["args"].update(*a);
      }
      t.joined.push_back(std::move(x));
      from.push_back(stack.back());
      stack.pop_back();
    }
  }
  for (const auto& [th, stack] : open)
    if (!stack.empty()) sum.not_imported["begin (ph B) events without their end (ph E): left out"] += static_cast<int64_t>(stack.size());
  if (!from.empty()) sum.notes.push_back(fmt::format("{} begin/end (ph B/E) pairs read as complete events", from.size()));
  return from;
}

// An NCCL kernel's collective parameters: element counts whole and within
// kMaxElems, its process group's ranks within the job (distributedInfo).
void check_collective_args(const RankTrace& t, const json& args, const std::string& at) {
  const std::string fix = "the event is corrupt; re-export the trace or remove the event";
  for (const char* key : {"In msg nelems", "Out msg nelems"}) {
    auto it = args.find(key);
    if (it == args.end()) continue;
    const double v = it->is_number() ? it->get<double>() : -1;
    if (!(v >= 0 && v <= kMaxElems && v == std::floor(v)))
      fail(t.file, fmt::format("{}: args.{} {} is not an element count (0 to 2^46): {}", at, key, it->dump(), fix));
  }
  auto it = args.find("Process Group Ranks");
  if (it == args.end() || !it->is_string()) return;
  bool mine = t.rank < 0;  // the trace's own rank is in the group (where distributedInfo names it)
  for (const GroupRank& g : group_ranks(it->get_ref<const std::string&>())) {
    if (g.negative) fail(t.file, fmt::format("{}: args.Process Group Ranks {} holds a negative rank: ranks count from 0; {}", at, it->dump(), fix));
    const int64_t r = g.digits.size() > 9 ? kMaxRank : std::stoll(g.digits);
    if (r >= kMaxRank)
      fail(t.file, fmt::format("{}: args.Process Group Ranks {} names rank {}, past any job's (below 2^24): {}", at, it->dump(), g.digits, fix));
    if (t.world > 0 && r >= t.world)
      fail(t.file, fmt::format("{}: args.Process Group Ranks {} names rank {}, outside the job's {} ranks (distributedInfo.world_size): {}", at,
                               it->dump(), r, t.world, fix));
    mine = mine || r == t.rank;
  }
  if (!mine)
    fail(t.file, fmt::format("{}: args.Process Group Ranks {} does not hold this trace's rank {} (distributedInfo.rank): a rank runs the "
                             "collectives of its own groups; {}",
                             at, it->dump(), t.rank, fix));
}

// Kineto writes microseconds. A trace written in nanoseconds reads 1000x too
// long: calls that never block (event records and queries, stream waits) take
// milliseconds, or the trace spans hours. Refused, naming the events.
void check_time_unit(const RankTrace& t) {
  std::vector<const Call*> quick;
  for (const Call& c : t.calls)
    if (c.name.rfind("cudaEventRecord", 0) == 0 || c.name == "cudaEventQuery" || c.name == "cudaStreamWaitEvent" || c.name == "cudaStreamIsCapturing")
      quick.push_back(&c);
  const std::string what = "Kineto writes ts and dur in microseconds; if this trace's are nanoseconds, divide them by 1000";
  if (quick.size() >= 3) {
    std::nth_element(quick.begin(), quick.begin() + static_cast<std::ptrdiff_t>(quick.size() / 2), quick.end(),
                     [](const Call* a, const Call* b) { return a->end - a->ts < b->end - b->ts; });
    const Call& m = *quick[quick.size() / 2];
    if (m.end - m.ts > 500'000)
      fail(t.file, fmt::format("its event records, queries and stream waits take {:.0f} us at the median (as {}), where they take a few "
                               "microseconds: {}",
                               us_of(m.end - m.ts), event_at(m.index, "CUDA call", m.name, us_of(m.ts)), what));
  }
  const Call* first = &t.calls.front();
  int64_t last = first->end;
  std::string last_at = event_at(first->index, "CUDA call", first->name, us_of(first->ts));
  for (const Call& c : t.calls)
    if (c.end > last) last = c.end, last_at = event_at(c.index, "CUDA call", c.name, us_of(c.ts));
  for (const Activity& a : t.gpu)
    if (a.end > last) last = a.end, last_at = event_at(a.index, a.cat, a.name, us_of(a.start));
  if (last - first->ts > kMaxSpanNs)
    fail(t.file, fmt::format("it spans {:.1f} hours, from {} to the end of {}, where a profiled window is seconds: {}",
                             static_cast<double>(last - first->ts) / 3.6e12, event_at(first->index, "CUDA call", first->name, us_of(first->ts)),
                             last_at, what));
}

}  // namespace

RankTrace read_trace(const std::string& path, const std::vector<StepPattern>& steps, ImportSummary& sum) {
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
  read_header(t);

  const json& events = t.doc["traceEvents"];
  sum.events += static_cast<int64_t>(events.size());
  // What every reader below takes as a string, checked once here.
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].is_object()) fail(path, fmt::format("traceEvents[{}] is not an object", i));
    for (const char* key : {"ph", "cat", "name"})
      if (auto it = events[i].find(key); it != events[i].end() && !it->is_string())
        fail(path, fmt::format("traceEvents[{}]: {} {} is not a string: not an event as Kineto writes it; re-export the trace or remove the event", i,
                               key, it->dump()));
  }
  const std::vector<size_t> joined_from = join_begin_end(t, events, sum);
  std::unordered_map<int64_t, const json*> syncs;
  std::map<std::pair<int64_t, int64_t>, int64_t> calls_per_thread;
  struct RawCall {
    const json* e;
    size_t index;
    std::pair<int64_t, int64_t> thread;
    int64_t ts, end;
  };
  std::vector<RawCall> raw_calls;
  static const std::set<std::string> read_only = {
      "cpu_op", "user_annotation", "gpu_user_annotation", "python_function", "overhead", "Trace", "ac2g", "cuda_profiler_range", "fwdbwd"};
  static const std::set<std::string> imported = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cuda_sync"};
  auto as_id = [](const json& v) -> int64_t {
    if (v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) && std::abs(v.get<double>()) < 9e18)) return v.get<int64_t>();
    return static_cast<int64_t>(std::hash<std::string>{}(v.dump()));
  };
  auto visit = [&](const json& e, size_t i) {
    const std::string cat = current_category(e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "");
    const std::string name = e.value("name", "");
    const double raw_ts = e.contains("ts") && e["ts"].is_number() ? e["ts"].get<double>() : 0;
    auto need = [&](const char* key) -> const json& {
      auto it = e.find(key);
      if (it == e.end() || (std::string(key) == "args" ? !it->is_object() : !it->is_number()))
        fail(path, fmt::format("traceEvents[{}] ({} '{}') has no {}", i, cat, name, key));
      return *it;
    };
    // ts and dur: finite, ts within any clock's reach, dur from 0 to an hour.
    auto time_of = [&](const char* key) -> int64_t {
      const double v = need(key).get<double>();
      const bool dur = std::string(key) == "dur";
      const std::string at = event_at(i, cat, name, raw_ts);
      if (!std::isfinite(v) || (!dur && std::abs(v) > kMaxTsUs))
        fail(path, fmt::format("{}: ts {} us is past any clock: Kineto writes microseconds; if this trace's ts and dur are nanoseconds, divide "
                               "them by 1000",
                               at, v));
      if (dur && v < 0) fail(path, fmt::format("{}: dur {} us is negative: the event is corrupt; re-export the trace or remove the event", at, v));
      if (dur && v > kMaxDurUs)
        fail(path, fmt::format("{}: dur {} us is over an hour: Kineto writes microseconds; if this trace's ts and dur are nanoseconds, divide "
                               "them by 1000",
                               at, v));
      return ns_of(v);
    };
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const json& args = need("args");
      Activity a;
      a.cat = cat;
      a.name = name;
      a.index = i;
      a.start = time_of("ts");
      a.end = a.start + time_of("dur");
      a.corr = int_arg(args, "correlation");
      a.ext = external_id(args);
      a.stream = static_cast<int>(int_arg(args, "stream", -1));
      a.device = static_cast<int>(int_arg(args, "device", -1));
      a.args = &args;
      if (a.corr == kNone) fail(path, fmt::format("traceEvents[{}] ({} '{}') has no args.correlation", i, cat, name));
      if (cat == "kernel" && args.contains("Collective name")) check_collective_args(t, args, event_at(i, cat, name, raw_ts));
      if (auto b = args.find("bytes"); cat != "kernel" && b != args.end()) {
        const double v = b->is_number() ? b->get<double>() : -1;
        if (!(v >= 0 && v <= static_cast<double>(kMaxBytes) && v == std::floor(v)))
          fail(path, fmt::format("{}: args.bytes {} is not a size (0 to 2^47 bytes): the event is corrupt; re-export the trace or remove the event",
                                 event_at(i, cat, name, raw_ts), b->dump()));
        a.bytes = static_cast<int64_t>(v);
      }
      t.gpu.push_back(std::move(a));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const int64_t ts = time_of("ts"), end = ts + time_of("dur");
      need("args");
      const std::pair<int64_t, int64_t> thread{as_id(e.value("pid", json(0))), as_id(e.value("tid", json(0)))};
      ++calls_per_thread[thread];
      raw_calls.push_back({&e, i, thread, ts, end});
    } else if (cat == "cuda_sync") {
      const int64_t corr = int_arg(need("args"), "correlation");
      if (corr != kNone) syncs.emplace(corr, &e);
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      if (cat == "cpu_op" && e.contains("args") && e["args"].is_object()) {
        const int64_t ext = external_id(e["args"]);
        if (ext != kNone) t.ops_by_ext.emplace(ext, CpuOp{name, &e["args"]});
      }
      for (const StepPattern& p : steps) {
        if (!std::regex_search(name, p.re) || !e.contains("ts") || !e["ts"].is_number()) continue;
        const int64_t ts = time_of("ts");
        const int64_t dur = e.contains("dur") && e["dur"].is_number() ? time_of("dur") : 0;
        // A record_function range shows as a cpu op and as a user annotation: once.
        auto& v = t.step_candidates[p.label];
        if (std::none_of(v.begin(), v.end(), [&](const RankTrace::Step& x) { return x.start == ts && x.name == name; }))
          v.push_back({ts, ts + dur, name});
      }
    } else if (!read_only.count(cat)) {
      ++sum.not_imported[fmt::format("{} events (a category the importer does not know)", cat.empty() ? "uncategorised" : cat)];
    }
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string ph = events[i].value("ph", "");
    if (ph == "X") {
      visit(events[i], i);
    } else if (ph != "B" && ph != "E" && events[i].contains("cat") && events[i]["cat"].is_string() &&
               imported.count(current_category(events[i]["cat"].get<std::string>()))) {
      ++sum.not_imported[fmt::format("{} events with ph '{}' (neither complete nor begin/end): left out",
                                     current_category(events[i]["cat"].get<std::string>()), ph)];
    }  // else metadata, instants and flow arrows
  }
  for (size_t j = 0; j < t.joined.size(); ++j) visit(t.joined[j], joined_from[j]);
  if (raw_calls.empty()) fail(path, "no CUDA runtime calls: profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");

  // The thread that issues most CUDA calls is the program; others' calls that
  // put work on the GPU join it in time order.
  std::pair<int64_t, int64_t> main_thread = calls_per_thread.begin()->first;
  for (const auto& [th, n] : calls_per_thread)
    if (n > calls_per_thread[main_thread]) main_thread = th;
  std::map<int, int64_t> per_device;
  for (const Activity& a : t.gpu) ++per_device[a.device];
  int device = per_device.empty() ? -1 : per_device.begin()->first;
  for (const auto& [d, n] : per_device)
    if (n > per_device[device]) device = d;
  read_device(t, device);
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
    c.index = rc.index;
    c.ts = rc.ts;
    c.end = rc.end;
    c.corr = int_arg(e["args"], "correlation");
    c.ext = external_id(e["args"]);
    c.main_thread = rc.thread == main_thread;
    if (auto it = by_corr.find(c.corr); it != by_corr.end()) c.gpu = it->second, matched.insert(c.corr);
    if (c.gpu && c.gpu->start < c.ts - kLaunchSkewNs)
      fail(path, fmt::format("{} starts {:.3f} us before {}, the call that launched it: the GPU runs work after its launch (their clocks are "
                             "microseconds apart); the event is corrupt; re-export the trace or remove the event",
                             event_at(c.gpu->index, c.gpu->cat, c.gpu->name, us_of(c.gpu->start)), us_of(c.ts - c.gpu->start),
                             event_at(c.index, "CUDA call", c.name, us_of(c.ts))));
    if (auto it = syncs.find(c.corr); it != syncs.end()) c.sync = it->second;
    if (!c.main_thread && !c.gpu) continue;  // another thread's bookkeeping (NCCL's watchdog, the allocator)
    if (!c.main_thread) ++sum.other_threads;
    t.calls.push_back(std::move(c));
  }
  for (const auto& [corr, a] : by_corr)
    if (!matched.count(corr)) ++sum.not_imported["GPU activities without their CUDA call in the trace (launched before the profiler started)"];
  std::stable_sort(t.calls.begin(), t.calls.end(), [](const Call& a, const Call& b) { return a.ts < b.ts; });
  check_time_unit(t);
  return t;
}

double input_hbm_bytes(const CpuOp& op) {
  double bytes = 0, largest = 0;
  for (const auto& [dims, type] : tensor_inputs(*op.args)) {
    double n = element_bytes(type);
    for (int64_t d : dims) n *= static_cast<double>(d);
    bytes += n;
    largest = std::max(largest, n);
  }
  return bytes > 0 ? bytes + largest : 0;
}

// The op that launches the norm's kernel; its row: the product of its
// normalized_shape (the second of the profiler's "Concrete Inputs", e.g.
// "[128]"), else its input's last dimension.
std::optional<std::pair<Access, int32_t>> norm_of(const CpuOp& op) {
  Access kind;
  if (op.name == "aten::native_layer_norm" || op.name == "aten::layer_norm")
    kind = Access::LayerNorm;
  else if (op.name == "aten::_fused_rms_norm" || op.name == "aten::rms_norm")
    kind = Access::RmsNorm;
  else
    return std::nullopt;
  int64_t row = 0;
  if (const auto it = op.args->find("Concrete Inputs"); it != op.args->end() && it->is_array() && it->size() > 1 && (*it)[1].is_string()) {
    const std::vector<int64_t> shape = int_list(json::parse((*it)[1].get<std::string>(), nullptr, false));  // "[128]"
    if (!shape.empty() && std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d > 0; })) {
      row = 1;
      for (const int64_t d : shape) row = std::min<int64_t>(row * std::min<int64_t>(d, INT32_MAX), INT32_MAX);
    }
  }
  if (row <= 0) {
    const auto in = tensor_inputs(*op.args);
    if (!in.empty() && !in.front().first.empty()) row = in.front().first.back();
  }
  return std::make_pair(kind, static_cast<int32_t>(std::clamp<int64_t>(row, 0, INT32_MAX)));
}

Access memory_access_of(const CpuOp& op) {
  if (op.name == "aten::roll") return Access::Roll;
  const auto dims = op.args->find("Input Dims"), strides = op.args->find("Input Strides");
  if (dims == op.args->end() || !dims->is_array()) return Access::Elementwise;
  const bool have_strides = strides != op.args->end() && strides->is_array() && strides->size() == dims->size();
  std::vector<double> numels;
  bool strided = false;
  for (size_t i = 0; i < dims->size(); ++i) {
    const std::vector<int64_t> d = int_list((*dims)[i]);
    if (d.empty()) continue;  // a scalar, a list or nothing
    double n = 1;
    for (int64_t x : d) n *= static_cast<double>(x);
    numels.push_back(n);
    if (!have_strides) continue;
    const std::vector<int64_t> st = int_list((*strides)[i]);
    if (st.size() != d.size()) continue;
    int64_t expected = 1;
    for (size_t j = d.size(); j-- > 0;) {
      if (d[j] != 1 && st[j] != expected) strided = true;
      expected *= d[j];
    }
  }
  if (numels.size() >= 2 && *std::min_element(numels.begin(), numels.end()) < *std::max_element(numels.begin(), numels.end()))
    return Access::Broadcast;
  return strided ? Access::Strided : Access::Elementwise;
}

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

}  // namespace osim::kineto::trace
