// Reading a schedule file: its ops, loops and templates expanded per rank
// (docs/formats/schedule.md), then checked (check_schedule).
#include "schedule/schedule.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "io/limits.hpp"
#include "io/repeat.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_stream.hpp"
#include "schedule/schedule_names.hpp"

namespace osim {

using namespace schedule_names;

namespace {

// A file read in one pass whose header (all but `programs`) or entries'
// `rank` do not come before the ops that need them: it is read twice instead.
struct NotInOrder {};

// A measured kernel's `beside_copies: [T1, T2, T3]`: how much of its duration 1, 2 and 3 copy
// engines were busy where it was measured (trailing ones may be left out), whole nanoseconds.
void read_beside_copies(const MapReader& r, Op& op) {
  if (!op.duration) r.fail("beside_copies", "is part of a measured 'duration': give the kernel its duration");
  const YAML::Node n = r.get("beside_copies");
  if (!n.IsSequence() || n.size() < 1 || n.size() > op.beside_copies_ns.size())
    r.fail("beside_copies", "must be a list of 1 to 3 durations: the part of the duration 1, 2 and 3 copy engines were busy");
  Time sum = Time::zero();
  for (size_t i = 0; i < n.size(); ++i) {
    Time t;
    try {
      t = parse_duration(scalar_str(r.file(), n[i], "beside_copies"));
    } catch (const std::invalid_argument& e) {
      r.fail("beside_copies", e.what());
    }
    if (t < Time::zero() || t.ps() % 1000 != 0 || t.ps() / 1000 > UINT32_MAX)
      r.fail("beside_copies", "takes whole nanoseconds from 0 to 4.29 s");
    op.beside_copies_ns[i] = static_cast<uint32_t>(t.ps() / 1000);
    sum = sum + t;
  }
  if (sum > *op.duration) r.fail("beside_copies", fmt::format("adds up to {} ps, more than the kernel's duration ({} ps)", sum.ps(), op.duration->ps()));
}

std::vector<std::string> keys_for(OpKind k) {
  std::vector<std::string> common = {"op"};
  auto add = [&](std::initializer_list<const char*> more) {
    for (const char* m : more) common.emplace_back(m);
  };
  switch (k) {
    case OpKind::Kernel:
      add({"name", "stream", "duration", "flops", "bytes", "access", "row", "gemm", "attention", "conv", "dtype", "sm_limit", "sm_margin",
           "efficiency", "views", "launches", "beside_copies"});
      break;
    case OpKind::Memcpy: add({"name", "kind", "bytes", "stream", "host", "host_span", "async", "peer", "views"}); break;
    case OpKind::EventRecord: add({"event", "stream"}); break;
    case OpKind::StreamWaitEvent: add({"stream", "event"}); break;
    case OpKind::StreamWaitStream: add({"stream", "on"}); break;
    case OpKind::StreamSync: add({"stream"}); break;
    case OpKind::EventSync: add({"event"}); break;
    case OpKind::DeviceSync: break;
    case OpKind::Collective: add({"name", "kind", "bytes", "group", "stream", "algorithm", "dtype", "channels", "peer", "views"}); break;
    case OpKind::Alloc: add({"tag", "bytes", "space", "component", "group", "runs", "loaded"}); break;
    case OpKind::Free: add({"tag", "stream"}); break;
    case OpKind::HostWork: add({"name", "duration"}); break;
    case OpKind::Marker: add({"name", "stream"}); break;
  }
  return common;
}

void substitute_all(YAML::Node n, const RepeatVars& vars) {
  if (n.IsScalar()) {
    if (n.Scalar().find('{') != std::string::npos) n = substitute(n.Scalar(), vars);
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) substitute_all(n[i], vars);
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) substitute_all(it->second, vars);
  }
}

struct Parser {
  std::string file;
  Schedule s;
  size_t unrolled = 0;  // ops and loop iterations so far, every rank's (limits::max_unrolled_ops)

  // Counts n more; false (nothing counted) past the limit.
  bool unroll(size_t n) {
    if (n > limits::max_unrolled_ops() - unrolled) return false;
    unrolled += n;
    return true;
  }
  [[nodiscard]] static std::string too_many() {
    return fmt::format(
        "the programs unroll to more than {} ops and loop iterations (every rank's; they are held in memory): "
        "use fewer iterations or ranks",
        limits::max_unrolled_ops());
  }

  [[noreturn]] void unknown(const MapReader& r, const std::string& key, const std::string& what, const std::string& name,
                            const std::vector<std::string>& names, const std::string& fix) {
    const std::string near = closest_match(name, names);
    r.fail(key, fmt::format("unknown {} '{}'{}; {}", what, name, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near), fix));
  }
  int stream_of(const MapReader& r, const std::string& key) {
    const std::string n = r.str(key);
    if (const int i = s.find_stream(n); i >= 0) return i;
    std::vector<std::string> names;
    for (const auto& d : s.streams) names.push_back(d.name);
    unknown(r, key, "stream", n, names, "declare it under 'streams:'");
  }
  int group_of(const MapReader& r, const std::string& key) {
    const std::string n = r.str(key);
    if (const int i = s.find_group(n); i >= 0) return i;
    std::vector<std::string> names;
    for (const auto& g : s.groups) names.push_back(g.name);
    unknown(r, key, "group", n, names, "declare it under 'groups:'");
  }
  // `runs`: one of kNcclRunsNames or a list of them.
  uint8_t nccl_runs_of(const MapReader& r) {
    const YAML::Node n = r.get("runs");
    std::vector<YAML::Node> items;
    if (n.IsSequence()) {
      for (const auto& i : n) items.push_back(i);
    } else {
      items.push_back(n);
    }
    if (items.empty()) r.fail("runs", fmt::format("name what the communicator runs: {}", fmt::join(kNcclRunsNames, ", ")));
    uint8_t bits = 0;
    for (const YAML::Node& i : items) {
      const std::string name = scalar_str(file, i, "runs");
      const auto it = std::find(kNcclRunsNames.begin(), kNcclRunsNames.end(), name);
      if (it == kNcclRunsNames.end())
        unknown(r, "runs", "kind of calls", name, kNcclRunsNames, "runs takes all_to_all, ring_exchange or collectives, or a list of them");
      bits |= static_cast<uint8_t>(1u << (it - kNcclRunsNames.begin()));
    }
    return bits;
  }
  int event_of(const MapReader& r, const std::string& key) {
    const std::string n = r.str(key);
    if (const int i = s.find_event(n); i >= 0) return i;
    s.events.push_back(n);
    return static_cast<int>(s.events.size() - 1);
  }
  int rank_of(const MapReader& r, const std::string& key) {
    const int64_t v = r.integer(key);
    if (v < 0 || v >= s.ranks()) r.fail(key, fmt::format("rank {} is out of range 0..{}", v, s.ranks() - 1));
    return static_cast<int>(v);
  }
  Op parse_op(const YAML::Node& n, const YAML::Node& origin) {
    Op op;
    const SourceLocation where = location_of(file, origin);
    op.line = where.line;
    op.column = where.column;
    if (!n.IsMap()) throw InputError(where, "each op must be a mapping like {op: kernel, ...}");
    if (!n["op"].IsDefined()) throw InputError(where, "op is missing the required key 'op'");
    const std::string kind_s = scalar_str(file, n["op"], "op");
    if (std::find(kOpNames.begin(), kOpNames.end(), kind_s) == kOpNames.end()) {
      auto names = kOpNames;
      names.emplace_back("loop");
      const std::string near = closest_match(kind_s, names);
      throw InputError(
          location_of(file, origin["op"]),
          fmt::format("unknown op '{}'{}; ops: {}", kind_s, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near), fmt::join(names, ", ")));
    }
    op.kind = enum_of<OpKind>(kOpNames, kind_s);
    MapReader r(file, n, kind_s + " op", keys_for(op.kind), origin);
    auto nonneg_int = [&](const std::string& key) -> int {
      const auto v = r.opt_int32(key);
      if (!v) return 0;
      if (*v < 0) r.fail(key, "must not be negative");
      return static_cast<int>(*v);
    };
    switch (op.kind) {
      case OpKind::Kernel: {
        op.label = r.opt_str("name").value_or("kernel");
        op.stream = stream_of(r, "stream");
        op.dtype = enum_of<DType>(kDtypeNames, r.opt_choice("dtype", kDtypeNames).value_or("bf16"));
        op.sm_limit = nonneg_int("sm_limit");
        if (r.has("sm_margin")) {
          if (r.has("sm_limit")) r.fail("sm_margin", "give sm_limit (the SMs it may use) or sm_margin (the SMs it leaves to others), not both");
          const int margin = nonneg_int("sm_margin");
          if (margin < 1) r.fail("sm_margin", "is the SMs the kernel leaves to others: at least 1");
          op.sm_limit = -margin;
        }
        if (auto e = r.opt_num("efficiency")) {
          if (!(*e > 0 && *e <= 1)) r.fail("efficiency", "must be in (0, 1]");
          op.efficiency = static_cast<float>(*e);
        }
        // The work one way; a measured `duration` may stand beside the shape
        // (imported traces): the shape is what --remodel-kernels times.
        const int shapes = (r.has("gemm") ? 1 : 0) + (r.has("attention") ? 1 : 0) + ((r.has("flops") || r.has("bytes")) ? 1 : 0);
        if (shapes > 1 || (shapes == 0 && !r.has("duration")))
          r.fail_here(
              "give the work one way: 'duration', 'gemm: {m, n, k}', 'attention: {heads, seq, head_dim}', "
              "or 'flops' and/or 'bytes' (HBM traffic); a measured 'duration' may go beside one of the others");
        op.duration = r.opt_duration("duration");
        if (r.has("beside_copies")) read_beside_copies(r, op);
        if (r.has("flops")) {
          op.flops = r.num("flops");
          if (op.flops < 0) r.fail("flops", "must not be negative");
        }
        if (r.has("bytes")) op.hbm_bytes = static_cast<double>(r.bytes("bytes"));
        if (r.has("access")) {
          if (!r.has("bytes") || op.flops > 0 || r.has("gemm") || r.has("attention"))
            r.fail("access", "applies to a kernel of HBM bytes only (how it walks memory)");
          op.access = enum_of<Access>(kAccessNames, r.choice("access", kAccessNames));
        }
        if (r.has("row")) {
          if (!is_norm(op.access)) r.fail("row", "is the elements of each row a norm normalises: give it with access: norm, layer_norm or rms_norm");
          const int64_t row = r.integer("row");
          if (row < 1 || row > INT32_MAX) r.fail("row", "must be 1 .. 2^31-1 (elements of a normalised row)");
          op.norm_row = static_cast<int32_t>(row);
        }
        auto dim = [&](const MapReader& rd, const char* key) {
          const int64_t v = rd.integer(key);
          if (v < 1 || v > INT32_MAX) rd.fail(key, "must be 1 .. 2^31-1");
          return static_cast<int32_t>(v);
        };
        if (r.has("gemm")) {
          MapReader g(file, n["gemm"], "gemm", {"m", "n", "k"}, origin["gemm"]);
          op.gemm = GemmShape{dim(g, "m"), dim(g, "n"), dim(g, "k")};
        }
        if (r.has("conv")) {
          if (!r.has("flops") || op.flops <= 0) r.fail("conv", "describes a convolution's flops: give it beside 'flops'");
          MapReader c(file, n["conv"], "conv", {"positions", "in_positions", "cin", "cout", "taps", "tf32", "channels_last"}, origin["conv"]);
          ConvShape cs{dim(c, "positions"), dim(c, "in_positions"), dim(c, "cin"), dim(c, "cout"), c.has("taps") ? dim(c, "taps") : 1};
          cs.tf32 = c.boolean("tf32", false);
          cs.channels_last = c.boolean("channels_last", false);
          op.conv = cs;
        }
        if (r.has("attention")) {
          MapReader a(file, n["attention"], "attention", {"batch", "heads", "seq", "seq_kv", "head_dim", "backend", "causal"}, origin["attention"]);
          AttentionShape as;
          as.batch = a.has("batch") ? dim(a, "batch") : 1;
          as.heads = dim(a, "heads");
          as.seq_q = dim(a, "seq");
          as.seq_kv = a.has("seq_kv") ? dim(a, "seq_kv") : as.seq_q;
          as.head_dim = dim(a, "head_dim");
          if (auto b = a.opt_choice("backend", kBackendNames)) as.backend = *attn_backend_of(*b);
          as.causal = a.boolean("causal", false);
          op.attention = as;
        }
        break;
      }
      case OpKind::Memcpy: {
        op.copy = enum_of<CopyKind>(kCopyNames, r.choice("kind", kCopyNames));
        op.bytes = r.bytes("bytes");
        op.stream = stream_of(r, "stream");
        op.label = r.opt_str("name").value_or("memcpy_" + to_string(op.copy));
        const std::string host = r.opt_choice("host", {"pinned", "pageable"}).value_or("pinned");
        op.host_mem = host == "pinned" ? HostMem::Pinned : HostMem::Pageable;
        if (r.has("host") && (op.copy == CopyKind::D2D || op.copy == CopyKind::P2P)) r.fail("host", "applies only to h2d and d2h copies");
        if (r.has("host_span")) {
          if (op.copy == CopyKind::D2D || op.copy == CopyKind::P2P) r.fail("host_span", "applies only to h2d and d2h copies");
          op.host_span = r.bytes("host_span");
          if (op.host_span < op.bytes)
            r.fail("host_span",
                   fmt::format(
                       "is the host memory the copies walk through: at least the copy's {} bytes (leave it out for one buffer of the copy's size)",
                       op.bytes));
        }
        op.async = r.boolean("async", true);
        if (op.copy == CopyKind::P2P)
          op.peer = rank_of(r, "peer");
        else if (r.has("peer"))
          r.fail("peer", "applies only to p2p copies");
        break;
      }
      case OpKind::EventRecord:
        op.event = event_of(r, "event");
        op.stream = stream_of(r, "stream");
        break;
      case OpKind::StreamWaitEvent:
        op.stream = stream_of(r, "stream");
        op.event = event_of(r, "event");
        break;
      case OpKind::StreamWaitStream:
        op.stream = stream_of(r, "stream");
        op.stream2 = stream_of(r, "on");
        if (op.stream == op.stream2) r.fail("on", "a stream cannot wait on itself");
        break;
      case OpKind::StreamSync: op.stream = stream_of(r, "stream"); break;
      case OpKind::EventSync: op.event = event_of(r, "event"); break;
      case OpKind::DeviceSync: break;
      case OpKind::Collective: {
        std::vector<std::string> kinds = kCollNames;
        kinds.emplace_back("barrier");
        const std::string kind = r.choice("kind", kinds);
        // A barrier is what torch.distributed.barrier runs on NCCL: an all-reduce of one fp32 value.
        const bool barrier = kind == "barrier";
        op.coll = barrier ? CollKind::AllReduce : enum_of<CollKind>(kCollNames, kind);
        if (barrier && r.has("bytes")) r.fail("bytes", "a barrier moves one fp32 value: leave bytes out");
        op.bytes = barrier ? 4 : r.bytes("bytes");
        op.stream = stream_of(r, "stream");
        op.label = r.opt_str("name").value_or(barrier ? "barrier" : to_string(op.coll));
        if (barrier && r.has("dtype")) r.fail("dtype", "a barrier moves one fp32 value: leave dtype out");
        op.dtype = barrier ? DType::FP32 : enum_of<DType>(kDtypeNames, r.opt_choice("dtype", kDtypeNames).value_or("bf16"));
        op.channels = nonneg_int("channels");
        const bool p2p = op.coll == CollKind::Send || op.coll == CollKind::Recv;
        if (p2p) {
          op.peer = rank_of(r, "peer");
          if (r.has("group")) r.fail("group", "send/recv name a 'peer' rank, not a group");
          if (r.has("algorithm")) r.fail("algorithm", "does not apply to send/recv");
        } else {
          op.group = group_of(r, "group");
          if (r.has("peer")) r.fail("peer", "applies only to send/recv");
          const std::string algo = r.opt_choice("algorithm", kAlgoNames).value_or("nccl");
          op.algo = enum_of<CollAlgo>(kAlgoNames, algo);
          if (op.algo == CollAlgo::Pairwise && op.coll != CollKind::AllToAll)
            r.fail("algorithm", "pairwise (round-robin) applies to all_to_all only");
          if (op.algo == CollAlgo::Ring && op.coll == CollKind::AllToAll)
            r.fail("algorithm", "all_to_all runs as nccl (all peers at once) or pairwise, not ring");
        }
        break;
      }
      case OpKind::Alloc: {
        op.label = r.str("tag");
        const std::string sp = r.opt_choice("space", {"device", "pinned_host"}).value_or("device");
        op.space = sp == "device" ? MemSpace::Device : MemSpace::PinnedHost;
        if (r.has("group")) {  // NCCL's buffers for that communicator: the run sizes them
          if (r.has("bytes"))
            r.fail("bytes", "an alloc naming a group is NCCL's buffers, sized by the run (calibration vram.nccl_*): give group or bytes, not both");
          if (op.space != MemSpace::Device) r.fail("space", "NCCL's buffers (an alloc naming a group) are device memory");
          if (r.opt_choice("component", kPartNames).value_or("comm") != "comm")
            r.fail("component", "an alloc naming a group is NCCL's buffers: component comm");
          op.group = group_of(r, "group");
          op.part = MemPart::Comm;
          if (r.has("runs")) op.nccl_runs = nccl_runs_of(r);
          break;
        }
        if (r.has("runs")) r.fail("runs", "says what a communicator runs, for NCCL's buffers: an alloc naming a group (and no bytes)");
        op.bytes = r.bytes("bytes");
        op.part = enum_of<MemPart>(kPartNames, r.opt_choice("component", kPartNames).value_or("weights"));
        if (op.part == MemPart::Comm) r.fail("component", "comm is NCCL's buffers for a communicator: name its group (and no bytes)");
        if (r.has("component") && op.space != MemSpace::Device) r.fail("component", "applies to device allocations (space: device)");
        if (r.boolean("loaded", false)) op.launches = 0;
        break;
      }
      case OpKind::Free:
        op.label = r.str("tag");
        if (r.has("stream")) op.stream = stream_of(r, "stream");
        break;
      case OpKind::HostWork:
        op.label = r.opt_str("name").value_or("host_work");
        op.duration = r.duration("duration");
        break;
      case OpKind::Marker:
        op.label = r.str("name");
        if (r.has("stream")) op.stream = stream_of(r, "stream");
        break;
    }
    // A count of the host's framework calls, held in a byte: lo .. 255.
    const auto call_count = [&](const char* key, int64_t lo, const char* meaning) {
      const int64_t v = r.integer(key);
      if (v < lo || v > 255) r.fail(key, meaning);
      return static_cast<uint8_t>(v);
    };
    if (r.has("launches"))  // kernel (keys_for)
      op.launches =
          call_count("launches", 1, "is how many kernel launches the host issues for this kernel (the framework ops it stands for): 1 .. 255");
    if (r.has("views"))  // kernel, memcpy, collective (keys_for)
      op.views = call_count("views", 0,
                            "is how many framework calls that launch nothing (views, transposes, splits, reshapes) come before the op: 0 .. 255");
    return op;
  }

  void expand_ops(const YAML::Node& list, const YAML::Node& origin_list, const RepeatVars& vars, std::vector<Op>& out) {
    if (!list.IsSequence()) throw InputError(location_of(file, origin_list), "'ops' must be a list");
    for (size_t i = 0; i < list.size(); ++i) expand_item(list[i], origin_list[i], vars, out);
  }

  // One item of an ops list: an op, or a loop of them.
  void expand_item(const YAML::Node& item, const YAML::Node& origin, const RepeatVars& vars, std::vector<Op>& out) {
    if (item.IsMap() && item["op"].IsDefined() && item["op"].IsScalar() && item["op"].Scalar() == "loop") {
      MapReader r(file, item, "loop", {"op", "count", "var", "ops"}, origin);
      const std::string var = r.opt_str("var").value_or("i");
      int64_t count = 0;
      try {
        count = eval_int_expr(substitute(r.str("count"), vars), vars);
      } catch (const std::invalid_argument& e) {
        r.fail("count", e.what());
      }
      if (count < 0) r.fail("count", "must not be negative");
      if (vars.count(var)) r.fail("var", fmt::format("'{}' is already a loop variable here", var));
      if (!unroll(static_cast<size_t>(count))) r.fail("count", too_many());
      for (int64_t k = 0; k < count; ++k) {
        RepeatVars inner = vars;
        inner[var] = k;
        expand_ops(r.get("ops"), origin["ops"], inner, out);
      }
      return;
    }
    YAML::Node copy = YAML::Clone(item);
    try {
      substitute_all(copy, vars);
    } catch (const std::invalid_argument& e) {
      throw InputError(location_of(file, origin), e.what());
    }
    if (!unroll(1)) throw InputError(location_of(file, origin), too_many());
    out.push_back(parse_op(copy, origin));
  }

  // A `programs:` entry: the ranks it is the program of, and whether its ops
  // never name `rank` (the same on every rank: expanded once and shared).
  struct Entry {
    std::vector<int> ranks;
    bool shared = false;
    std::vector<YAML::Node> items;  // items kept to expand for each rank in turn (not shared, several ranks)
  };
  std::vector<Entry> entries;
  std::vector<std::vector<Op>> rank_ops;
  // A file read as it is parsed (parse_schedule_file): the programs' ops
  // lists are empty in the document parse() reads; read_streamed reads them
  // (add_item, end_entry), and which entries' ops name `rank` was found as the
  // document was read.
  std::function<void()> read_streamed;
  std::vector<char> streamed_names_rank;

  // One item of entry e's ops, expanded for its ranks. An entry of several
  // ranks whose ops name `rank` is kept and expanded rank by rank at its end
  // (end_entry), so that events are numbered as the file orders them.
  void add_item(size_t e, const YAML::Node& item) {
    Entry& en = entries[e];
    if (en.ranks.size() > 1 && !en.shared)
      en.items.push_back(item);
    else if (!en.ranks.empty())
      expand_item(item, item, RepeatVars{{"rank", en.ranks[0]}, {"world", s.ranks()}}, rank_ops[en.ranks[0]]);
  }
  void end_entry(size_t e) {
    Entry& en = entries[e];
    for (int w : en.ranks)
      for (const YAML::Node& item : en.items) expand_item(item, item, RepeatVars{{"rank", w}, {"world", s.ranks()}}, rank_ops[w]);
    en.items.clear();
  }

  void parse(const YAML::Node& root) {
    MapReader top(file, root, "schedule", kTopKeys);
    const YAML::Node programs = parse_header(top, true);
    // Programs: each entry's ranks; then their ops, from the entries' lists
    // or, for a file read twice, from read_streamed.
    std::vector<bool> seen(s.ranks(), false);
    for (size_t e = 0; e < programs.size(); ++e) {
      const YAML::Node p = programs[e];
      Entry en = read_entry(p, seen);
      const YAML::Node ops = MapReader(file, p, "program", {"rank", "ops"}).get("ops");
      if (!ops.IsSequence()) throw InputError(location_of(file, p["ops"]), "'ops' must be a list");
      en.shared = !(read_streamed ? e < streamed_names_rank.size() && streamed_names_rank[e] : YAML::Dump(ops).find("rank") != std::string::npos);
      entries.push_back(std::move(en));
    }
    check_every_rank_has_a_program(top, seen);
    if (read_streamed) {
      read_streamed();
    } else {
      for (size_t e = 0; e < entries.size(); ++e) {
        for (const YAML::Node& item : programs[e]["ops"]) add_item(e, item);
        end_entry(e);
      }
    }
    finish();
  }

  static inline const std::vector<std::string> kTopKeys = {"name", "topology", "gpus", "ranks", "settings", "streams", "groups", "programs"};

  // All but the programs: name, settings, streams, ranks, GPUs, groups;
  // returns the programs list. The list gives the ranks where `ranks:` does
  // not; a file read in one pass (`whole` false) has not read it yet
  // (NotInOrder where it is needed) and returns an empty node.
  YAML::Node parse_header(const MapReader& top, bool whole) {
    s.file = file;
    s.name = top.str("name");
    s.topology = top.opt_str("topology").value_or("");
    if (top.has("settings"))
      s.runtime = read_runtime_settings(
          MapReader(file, top.get("settings"), "settings", {"device_max_connections", "nccl_p2p_disable", "nccl_nvls_enable", "framework", "framework_kernels", "host_calls", "copy_rates"}));
    // Streams
    const YAML::Node streams = top.get("streams");
    if (!streams.IsSequence()) top.fail("streams", "must be a list of stream names or {name, priority}");
    for (const YAML::Node& sn : streams) {
      StreamDecl d;
      if (sn.IsScalar()) {
        d.name = sn.Scalar();
      } else {
        MapReader r(file, sn, "stream", {"name", "priority"});
        d.name = r.str("name");
        d.priority = r.opt_int32("priority").value_or(0);
      }
      if (s.find_stream(d.name) >= 0) throw InputError(location_of(file, sn), fmt::format("duplicate stream '{}'", d.name));
      s.streams.push_back(d);
    }
    // Ranks: explicit, or from the programs' rank numbers.
    YAML::Node programs;
    if (whole) {
      programs.reset(top.get("programs"));
      if (!programs.IsSequence() || programs.size() == 0) top.fail("programs", "must be a non-empty list of {rank, ops}");
    }
    int ranks = 0;
    if (auto v = top.opt_int32("ranks")) {
      if (*v < 1 || *v > limits::kMaxRanks) top.fail("ranks", fmt::format("must be in 1..{}", limits::kMaxRanks));
      ranks = *v;
    } else {
      if (!whole) throw NotInOrder{};
      for (const YAML::Node& p : programs) {
        const YAML::Node rk = p.IsMap() ? p["rank"] : YAML::Node();
        if (rk.IsDefined() && rk.IsScalar() && rk.Scalar() != "all") {
          try {
            ranks = std::max(ranks, std::clamp(rk.as<int>(), -1, limits::kMaxRanks - 1) + 1);
          } catch (const YAML::Exception&) {
          }
        }
      }
      if (ranks == 0) top.fail_here("give 'ranks:' when every program is 'rank: all'");
    }
    s.programs.resize(ranks);
    for (int r = 0; r < ranks; ++r) s.programs[r].rank = r;
    rank_ops.resize(ranks);
    if (top.has("gpus")) {
      const YAML::Node g = top.get("gpus");
      if (!g.IsSequence()) top.fail("gpus", "must be a list of topology GPU names, one per rank");
      for (const YAML::Node& x : g) s.gpus.push_back(scalar_str(file, x, "GPU name"));
      if (static_cast<int>(s.gpus.size()) != ranks) top.fail("gpus", fmt::format("lists {} GPUs for {} ranks", s.gpus.size(), ranks));
    }
    // Groups ("world" is implicit).
    if (top.has("groups")) {
      for (const YAML::Node& gn : top.get("groups")) {
        MapReader r(file, gn, "group", {"name", "ranks"});
        Group g;
        g.name = r.str("name");
        const YAML::Node rk = r.get("ranks");
        if (rk.IsScalar() && rk.Scalar() == "all") {
          for (int i = 0; i < ranks; ++i) g.ranks.push_back(i);
        } else if (rk.IsSequence()) {
          for (const YAML::Node& x : rk) {
            int v = -1;
            try {
              v = x.as<int>();
            } catch (const YAML::Exception&) {
              throw InputError(location_of(file, x), "group ranks must be whole numbers");
            }
            if (v < 0 || v >= ranks) throw InputError(location_of(file, x), fmt::format("rank {} is out of range 0..{}", v, ranks - 1));
            if (std::find(g.ranks.begin(), g.ranks.end(), v) != g.ranks.end())
              throw InputError(location_of(file, x), fmt::format("rank {} is listed twice", v));
            g.ranks.push_back(v);
          }
        } else {
          r.fail("ranks", "must be 'all' or a list of ranks");
        }
        if (g.ranks.size() < 2) r.fail("ranks", "a group needs at least 2 ranks");
        if (s.find_group(g.name) >= 0) r.fail("name", fmt::format("duplicate group '{}'", g.name));
        s.groups.push_back(g);
      }
    }
    if (s.find_group("world") < 0 && ranks >= 2) {
      Group w{"world", {}};
      for (int i = 0; i < ranks; ++i) w.ranks.push_back(i);
      s.groups.push_back(w);
    }
    return programs;
  }

  // A `programs:` entry's ranks, each in range and not seen in an entry before.
  Entry read_entry(const YAML::Node& p, std::vector<bool>& seen) const {
    MapReader r(file, p, "program", {"rank", "ops"});
    const int ranks = s.ranks();
    Entry en;
    const YAML::Node rk = r.get("rank");
    if (rk.IsScalar() && rk.Scalar() == "all") {
      for (int i = 0; i < ranks; ++i) en.ranks.push_back(i);
    } else if (rk.IsSequence()) {
      for (const YAML::Node& x : rk) {
        if (!x.IsScalar() || !std::all_of(x.Scalar().begin(), x.Scalar().end(), ::isdigit) || x.Scalar().empty() || x.Scalar().size() > 9)
          throw InputError(location_of(file, x), "each rank in a rank list is a whole number, e.g. rank: [0, 2]");
        en.ranks.push_back(static_cast<int>(std::stoll(x.Scalar())));
      }
    } else {
      en.ranks.push_back(r.int32("rank"));
    }
    for (int w : en.ranks) {
      if (w < 0 || w >= ranks) r.fail("rank", fmt::format("rank {} is out of range 0..{}", w, ranks - 1));
      if (seen[w]) r.fail("rank", fmt::format("rank {} has two programs", w));
      seen[w] = true;
    }
    return en;
  }

  void check_every_rank_has_a_program(const MapReader& top, const std::vector<bool>& seen) const {
    for (size_t i = 0; i < seen.size(); ++i)
      if (!seen[i]) top.fail("programs", fmt::format("rank {} has no program", i));
  }

  // A file whose header and entries' `rank` come before their ops (as
  // to_yaml writes it), read in one pass: the header as the first ops list
  // opens, an entry's ranks as its list opens, each op as it ends; the
  // entries read again whole at the end (keys after `ops`). False where the
  // file is not in that order. `edit` applies the --set overrides to the
  // header. finish() then makes the schedule.
  bool read_in_one_pass(const StreamedList& list, const std::function<void(YAML::Node)>& edit) {
    size_t header_keys = 0;
    std::vector<bool> seen;
    StreamHandler h;
    h.on_open = [&](size_t e, const YAML::Node& root, const YAML::Node& entry) {
      if (e != entries.size()) throw NotInOrder{};  // an entry before it had no ops list
      if (e == 0) {
        edit(root);
        parse_header(MapReader(file, root, "schedule", kTopKeys), false);
        header_keys = root.size();
        seen.assign(s.ranks(), false);
      }
      if (!entry["rank"].IsDefined()) throw NotInOrder{};
      entries.push_back(read_entry(entry, seen));
    };
    // An entry of several ranks keeps its items to its end, where whether they name `rank` is known.
    h.on_item = [&](size_t e, const YAML::Node& item) {
      Entry& en = entries[e];
      if (en.ranks.size() > 1)
        en.items.push_back(item);
      else if (!en.ranks.empty())
        expand_item(item, item, RepeatVars{{"rank", en.ranks[0]}, {"world", s.ranks()}}, rank_ops[en.ranks[0]]);
    };
    h.on_close = [&](size_t e) {
      Entry& en = entries[e];
      if (en.ranks.size() <= 1) return;
      en.shared = std::none_of(en.items.begin(), en.items.end(), [](const YAML::Node& n) { return YAML::Dump(n).find("rank") != std::string::npos; });
      if (en.shared) {
        for (const YAML::Node& item : en.items) expand_item(item, item, RepeatVars{{"rank", en.ranks[0]}, {"world", s.ranks()}}, rank_ops[en.ranks[0]]);
        en.items.clear();
      }
      end_entry(e);
    };
    try {
      const YAML::Node root = stream_yaml_file(file, list, h);
      if (entries.empty() || root.size() != header_keys + 1) return false;  // a key after `programs`
      const MapReader top(file, root, "schedule", kTopKeys);
      const YAML::Node programs = top.get("programs");
      if (!programs.IsSequence() || programs.size() != entries.size()) return false;
      std::vector<bool> again(s.ranks(), false);
      for (size_t e = 0; e < programs.size(); ++e) {
        if (read_entry(programs[e], again).ranks != entries[e].ranks) return false;
        if (!MapReader(file, programs[e], "program", {"rank", "ops"}).get("ops").IsSequence()) return false;
      }
      check_every_rank_has_a_program(top, again);
    } catch (const NotInOrder&) {
      return false;
    }
    return true;
  }

  // Each rank's ops into its program (an entry's ranks share theirs where
  // they never name `rank`), then the schedule checked.
  void finish() {
    for (const Entry& en : entries) {
      if (en.ranks.empty()) continue;
      auto ops = std::make_shared<const std::vector<Op>>(std::move(rank_ops[en.ranks[0]]));
      for (size_t k = 0; k < en.ranks.size(); ++k)
        s.programs[en.ranks[k]].ops = k == 0 || en.shared ? ops : std::make_shared<const std::vector<Op>>(std::move(rank_ops[en.ranks[k]]));
    }
    rank_ops.clear();
    check_schedule(s);
  }
};

}  // namespace

RuntimeSettings read_runtime_settings(const MapReader& r) {
  RuntimeSettings out;
  if (auto v = r.opt_int32("device_max_connections")) {
    if (*v < 1 || *v > 32) r.fail("device_max_connections", "must be 1..32 (CUDA's range)");
    out.device_max_connections = *v;
  }
  out.nccl_p2p_disable = r.boolean("nccl_p2p_disable", false);
  out.nccl_nvls_enable = r.boolean("nccl_nvls_enable", false);
  if (out.nccl_nvls_enable) out.nccl_nvls_at = r.where("nccl_nvls_enable");
  if (auto f = r.opt_choice("framework", {"none", "pytorch"})) out.framework = *f == "pytorch" ? Framework::PyTorch : Framework::None;
  out.framework_kernels = r.boolean("framework_kernels", out.framework == Framework::PyTorch);
  if (out.framework == Framework::PyTorch && !out.framework_kernels)
    r.fail("framework_kernels", "a PyTorch program's kernels are PyTorch's: leave it out, or set framework: none");
  if (r.has("host_calls")) {
    using HostCalls = RuntimeSettings::HostCalls;
    std::vector<std::string> keys;
    for (const auto& [key, field] : HostCalls::kFields) keys.emplace_back(key);
    const MapReader h(r.file(), r.get("host_calls"), "settings.host_calls", keys);
    for (const auto& [key, field] : HostCalls::kFields) {
      auto& v = out.host_calls.*field;
      v = h.opt_duration(key);
      if (v && (*v < Time::zero() || *v > Time::from_us(1e6)))
        h.fail(key, field == &HostCalls::wait_return ? "a wait's return from 0 to 1 s (a measured one: microseconds)"
                                                     : "a call's host time from 0 to 1 s (a measured call: tens of microseconds)");
    }
  }
  if (r.has("copy_rates")) {
    using CopyRates = RuntimeSettings::CopyRates;
    std::vector<std::string> keys;
    for (const auto& [key, field] : CopyRates::kFields) keys.emplace_back(key);
    const MapReader h(r.file(), r.get("copy_rates"), "settings.copy_rates", keys);
    for (const auto& [key, field] : CopyRates::kFields) {
      auto& v = out.copy_rates.*field;
      v = h.opt_bandwidth(key);
      if (v && !(v->GBps() > 0 && v->GBps() <= 10'000)) h.fail(key, "a copy's rate above 0 and at most 10,000 GB/s (a measured one: GB/s)");
    }
  }
  return out;
}

Schedule parse_schedule_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_schedule_file(path, overrides_from_flags(overrides));
}

namespace {
Schedule parse_edited_schedule(const std::string& path, const std::vector<Override>& overrides) {
  Parser p;
  p.file = path;
  const auto edit = [&](YAML::Node root) { apply_overrides(root, overrides, "the schedule " + path); };
  const bool edits_ops = std::any_of(overrides.begin(), overrides.end(), [](const Override& o) {
    const std::string key = o.key_value.substr(0, o.key_value.find('='));
    return key.substr(0, key.find('.')) == "programs";
  });
  if (edits_ops) {  // an override that may edit any op: the whole document
    YAML::Node root = load_yaml_file(path);
    edit(root);
    p.parse(root);
    return std::move(p.s);
  }
  // Read as it is parsed, one op at a time (a many-step schedule's DOM
  // would take gigabytes): in one pass where the file's order allows; else,
  // and where the file is refused (its checks then come in their order),
  // twice: all but the ops first, then the ops.
  const StreamedList ops{"programs", "ops"};
  {
    Parser one;
    one.file = path;
    bool read = false;
    try {
      read = one.read_in_one_pass(ops, edit);
    } catch (const std::exception&) {
    }
    if (read) {
      one.finish();
      return std::move(one.s);
    }
  }
  const YAML::Node root = stream_yaml_file(path, ops, [&p](size_t e, const YAML::Node& item) {
    if (p.streamed_names_rank.size() <= e) p.streamed_names_rank.resize(e + 1, 0);
    if (!p.streamed_names_rank[e] && YAML::Dump(item).find("rank") != std::string::npos) p.streamed_names_rank[e] = 1;
  });
  edit(root);
  p.read_streamed = [&p, &path, &ops] {
    size_t open = SIZE_MAX;  // the entry whose ops are being read
    stream_yaml_file(path, ops, [&p, &open](size_t e, const YAML::Node& item) {
      if (e >= p.entries.size()) throw InputError(location_of(p.file, item), "the file changed while it was read: run again");
      if (e != open && open != SIZE_MAX) p.end_entry(open);
      open = e;
      p.add_item(e, item);
    });
    if (open != SIZE_MAX) p.end_entry(open);
  };
  p.parse(root);
  return std::move(p.s);
}
}  // namespace

Schedule parse_schedule_file(const std::string& path, const std::vector<Override>& overrides) {
  if (overrides.empty()) return parse_edited_schedule(path, overrides);
  try {
    return parse_edited_schedule(path, overrides);
  } catch (const InputError& e) {
    throw override_error(e, path, overrides);
  }
}

Schedule parse_schedule_string(const std::string& yaml, const std::string& name) {
  Parser p;
  p.file = name;
  YAML::Node root = load_yaml_string(yaml, name);
  if (!root.IsMap()) throw InputError(SourceLocation{name, 1, 1}, "expected a YAML mapping at the top level");
  p.parse(root);
  return std::move(p.s);
}

}  // namespace osim
