#include "schedule/records.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <filesystem>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"
#include "schedule/stage_spans.hpp"

namespace osim {

std::string format_vram_parts(const std::array<Bytes, kMemParts>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i] > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", mem_part_names()[i], format_bytes(static_cast<double>(parts[i])));
  return out;
}

std::string op_class(const Op& op) {
  switch (op.kind) {
    case OpKind::Kernel:
      if (op.gemm) return "gemm";
      if (op.attention)
        return op.attention->causal ? "attention (causal)" : op.attention->seq_q == op.attention->seq_kv ? "attention (self)" : "attention (cross)";
      if (op.flops <= 0 && op.hbm_bytes > 0) return "memory kernel";
      return "kernel";
    case OpKind::Memcpy:
      return to_string(op.copy) + (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H ? (op.host_mem == HostMem::Pageable ? " pageable" : "") : "");
    case OpKind::Collective:
      if (op.coll == CollKind::AllToAll) return "all_to_all " + to_string(op.algo);
      return to_string(op.coll);
    default: return to_string(op.kind);
  }
}

bool timed_class(const Op& op) { return op.kind == OpKind::Kernel || op.kind == OpKind::Memcpy || op.kind == OpKind::Collective; }

nlohmann::ordered_json records_json(const Schedule& s, const RunRecord& r, const std::string& topology, const std::string& source,
                                    const nlohmann::ordered_json& meta, const std::vector<char>* kept) {
  using nlohmann::ordered_json;
  assert(r.ops.size() == static_cast<size_t>(s.ranks()) && "a run without ExecOptions::keep_records has no per-op records");
  ordered_json j;
  j["schema"] = "overlapsim.records/v1";
  j["source"] = source;
  j["name"] = s.name;
  j["topology"] = topology;
  j["makespan_ns"] = static_cast<double>(r.makespan.ps()) * 1e-3;
  j["columns"] = {"index", "class", "label", "issue_ns", "returned_ns", "start_ns", "end_ns"};
  ordered_json ranks = ordered_json::array();
  auto ns = [](Time t) { return static_cast<double>(t.ps()) * 1e-3; };
  for (int rank = 0; rank < s.ranks(); ++rank) {
    if (kept && !(*kept)[static_cast<size_t>(rank)]) continue;
    ordered_json ops = ordered_json::array();
    for (size_t index = 0; index < r.ops[rank].size(); ++index) {
      const OpRecord& rec = r.ops[rank][index];
      if (!rec.ran) continue;
      ops.push_back({static_cast<int>(index), op_class(*rec.op), rec.op->label, ns(rec.issue), ns(rec.returned), ns(rec.start), ns(rec.end)});
    }
    ranks.push_back({{"rank", rank}, {"gpu", r.ranks[rank].gpu}, {"ops", std::move(ops)}});
  }
  j["ranks"] = std::move(ranks);
  j["meta"] = meta;
  return j;
}

std::string records_text(const nlohmann::ordered_json& j) {
  std::string out = "{\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += " " + nlohmann::ordered_json(it.key()).dump() + ": ";
    if (it.key() != "ranks") {
      out += it.value().dump();
      continue;
    }
    out += "[";
    for (size_t r = 0; r < it.value().size(); ++r) {
      const auto& rj = it.value()[r];
      out += r ? ",\n  {" : "\n  {";
      out += "\"rank\": " + rj["rank"].dump() + ", \"gpu\": " + rj["gpu"].dump() + ", \"ops\": [";
      for (size_t i = 0; i < rj["ops"].size(); ++i) out += (i ? ",\n   " : "\n   ") + rj["ops"][i].dump();
      out += "\n  ]}";
    }
    out += "\n ]";
  }
  return out + "\n}\n";
}

int runs_before_recorded(const Records& r) {
  if (!r.meta.is_object() || !r.meta.contains("warmup") || !r.meta.contains("makespans_s")) return 0;
  const auto& w = r.meta.at("warmup");
  const auto& ms = r.meta.at("makespans_s");
  auto bad = [&](const std::string& what) {
    return InputError(SourceLocation{r.file, 0, 0},
                      "meta: " + what + " (overlapsim-validate run writes warmup and makespans_s, the timed runs in order)");
  };
  if (!w.is_number_integer() || w.get<int64_t>() < 0 || w.get<int64_t>() > 1000000) throw bad("warmup is not a count");
  if (!ms.is_array() || ms.empty()) throw bad("makespans_s is not a list of the timed runs' makespans");
  int best = -1;
  double best_d = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (!ms[i].is_number()) throw bad(fmt::format("makespans_s[{}] is not a number", i));
    const double d = std::abs(ms[i].get<double>() * 1e9 - r.makespan_ns);
    if (best < 0 || d < best_d) best = static_cast<int>(i), best_d = d;
  }
  // The runner stores the recorded run's makespan in both places (ns and s).
  if (best_d > 1e-6 * std::max(1.0, r.makespan_ns))
    throw bad(fmt::format("no run in makespans_s has the recorded makespan {:.6f} ms", r.makespan_ns * 1e-6));
  return static_cast<int>(w.get<int64_t>()) + best;
}

namespace {

// The times a records file may hold: ns from the run's start, finite, within
// what Time holds (a run of 10^15 ns is 11 days). A measured op may start a
// little before 0 where the host's and the GPU's clocks were aligned (the
// reference runs have -304 ns); more than kClockSlackNs, or than 1 % of a
// run shorter than 100 us, is no alignment (a 2 us run's op at -500 ns would
// make its busy time exceed its makespan).
constexpr double kMaxRecordNs = 1e15;
constexpr double kClockSlackNs = 1000;
double clock_slack_ns(double makespan_ns) { return std::min(kClockSlackNs, 0.01 * makespan_ns); }

// An op's times in order (issue <= returned, start <= end), inside the run.
void check_record_op(const RecordOp& o, int rank, double makespan_ns, const std::string& file) {
  const auto bad = [&](const std::string& what) {
    return InputError(SourceLocation{file, 0, 0},
                      fmt::format("rank {} op {} ('{}'): {}: these records are damaged; record the run again (times are ns from the "
                                  "run's start, docs/formats/records.md)",
                                  rank, o.index, o.label, what));
  };
  const std::pair<const char*, double> times[] = {{"issue", o.issue}, {"returned", o.returned}, {"start", o.start}, {"end", o.end}};
  const double clock_slack = clock_slack_ns(makespan_ns);
  for (const auto& [name, t] : times) {
    if (!std::isfinite(t) || std::abs(t) > kMaxRecordNs) throw bad(fmt::format("{} {} ns is no time of a run", name, t));
    if (t < -clock_slack) throw bad(fmt::format("{} {:.3f} ns is before the run's start", name, t));
  }
  if (o.end < o.start) throw bad(fmt::format("end {:.3f} ns is before its start {:.3f} ns", o.end, o.start));
  if (o.returned < o.issue) throw bad(fmt::format("returned {:.3f} ns is before its issue {:.3f} ns", o.returned, o.issue));
  const double last = std::max(o.end, o.returned), slack = clock_slack + 1e-4 * makespan_ns;
  if (last > makespan_ns + slack) throw bad(fmt::format("it ends at {:.3f} ns, after the run's makespan_ns {:.3f}", last, makespan_ns));
}

// Op rows read from a file straight into RecordOps (the DOM of a file of a
// million ops took gigabytes), per rank object in the "ranks" array, in order;
// the first row that is no op row (its error said where the DOM would say it).
struct RankRows {
  std::vector<RecordOp> ops;
  std::optional<std::string> bad_row;  // "" : not 7 columns; else a JSON type error
};

// One op row as the file holds it.
RecordOp record_op_of(const nlohmann::json& o) {
  return RecordOp{o[0].get<int>(),    o[1].get<std::string>(), o[2].get<std::string>(), o[3].get<double>(),
                  o[4].get<double>(), o[5].get<double>(),      o[6].get<double>()};
}

Records parse_records_with(const nlohmann::json& j, const std::string& file, std::vector<RankRows>* rows) {
  auto bad = [&](const std::string& what) {
    return InputError(SourceLocation{file, 0, 0},
                      what + " (expected an overlapsim.records/v1 file, as `overlapsim run --records` or `overlapsim-validate run` write)");
  };
  if (!j.is_object() || j.value("schema", "") != "overlapsim.records/v1") throw bad("not a records file");
  Records rec;
  rec.file = file;
  try {
    rec.source = j.at("source").get<std::string>();
    rec.name = j.at("name").get<std::string>();
    rec.topology = j.value("topology", "");
    rec.makespan_ns = j.at("makespan_ns").get<double>();
    if (!std::isfinite(rec.makespan_ns) || rec.makespan_ns <= 0 || rec.makespan_ns > kMaxRecordNs)
      throw InputError(SourceLocation{file, 0, 0}, fmt::format("makespan_ns {} is no run's length (more than 0, at most {:g}): these records "
                                                               "are damaged; record the run again",
                                                               rec.makespan_ns, kMaxRecordNs));
    if (j.contains("meta")) rec.meta = nlohmann::ordered_json::parse(j.at("meta").dump());
    size_t k = 0;
    for (const auto& rj : j.at("ranks")) {
      RecordRank rr;
      rr.rank = rj.at("rank").get<int>();
      // Readers pair ranks by position: each once, in order (a writer that leaves ranks out keeps the order).
      if (rr.rank < 0 || (!rec.ranks.empty() && rr.rank <= rec.ranks.back().rank))
        throw InputError(SourceLocation{file, 0, 0},
                         fmt::format("ranks[{}] is rank {}{}: each rank is listed once, in order from 0; these records are damaged; record the "
                                     "run again",
                                     k, rr.rank, rec.ranks.empty() ? "" : fmt::format(", after rank {}", rec.ranks.back().rank)));
      rr.gpu = rj.value("gpu", "");
      for (const auto& o : rj.at("ops")) {
        if (!o.is_array() || o.size() != 7) throw bad(fmt::format("rank {}: an op row does not have 7 columns", rr.rank));
        rr.ops.push_back(record_op_of(o));
        check_record_op(rr.ops.back(), rr.rank, rec.makespan_ns, file);
      }
      if (rows && k < rows->size()) {
        RankRows& rk = (*rows)[k];
        for (const RecordOp& o : rk.ops) check_record_op(o, rr.rank, rec.makespan_ns, file);
        if (rk.bad_row)
          throw bad(rk.bad_row->empty() ? fmt::format("rank {}: an op row does not have 7 columns", rr.rank) : "malformed: " + *rk.bad_row);
        if (rr.ops.empty())
          rr.ops = std::move(rk.ops);
        else
          rr.ops.insert(rr.ops.end(), rk.ops.begin(), rk.ops.end());
        rk.ops = {};
      }
      rec.ranks.push_back(std::move(rr));
      ++k;
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("malformed: ") + e.what());
  }
  return rec;
}

// A SAX reader of a records file: the document as a DOM but for the op rows
// (root."ranks"[k]."ops"[i]), which go into RankRows as they are read.
class RecordsSax {
 public:
  using json = nlohmann::ordered_json;
  RecordsSax(std::string file) : file_(std::move(file)) {}
  json root;
  std::vector<RankRows> rows;

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return value(v); }
  bool string(json::string_t& v) { return value(std::move(v)); }
  bool binary(json::binary_t&) { return value(nullptr); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool key(json::string_t& k) {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw InputError(SourceLocation{file_, 0, 0}, std::string("not valid JSON: ") + e.what());
  }

 private:
  // What a container is: where it sits decides whether its values are kept.
  enum class Role { Other, Ranks, Rank, Ops, Row, Skip };
  struct Frame {
    json* node = nullptr;  // null for a row and what a row holds
    Role role = Role::Other;
    std::string key;  // an object's key for the next value
  };
  std::string file_;
  std::vector<Frame> stack_;
  nlohmann::json row_ = nlohmann::json::array();

  // The role a container opened here takes.
  Role role_here(bool array) const {
    if (stack_.empty()) return Role::Other;
    const Frame& f = stack_.back();
    if (f.role == Role::Row || f.role == Role::Skip) return Role::Skip;
    if (f.role == Role::Ops) return array ? Role::Row : Role::Skip;
    if (stack_.size() == 1 && f.key == "ranks" && array) return Role::Ranks;
    if (f.role == Role::Ranks && !array) return Role::Rank;
    if (f.role == Role::Rank && f.key == "ops" && array) return Role::Ops;
    return Role::Other;
  }
  RankRows& rank_rows() { return rows.back(); }
  json* place(json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.node->is_object()) return &((*f.node)[f.key] = std::move(v));
    f.node->push_back(std::move(v));
    return &f.node->back();
  }
  template <class T>
  bool value(T&& v) {
    if (!stack_.empty()) {
      const Role r = stack_.back().role;
      if (r == Role::Skip) return true;
      if (r == Role::Row) {
        row_.push_back(std::forward<T>(v));
        return true;
      }
      if (r == Role::Ops) {  // an op that is no row
        if (!rank_rows().bad_row) rank_rows().bad_row = "";
        return true;
      }
    }
    place(json(std::forward<T>(v)));
    return true;
  }
  bool open(json&& c) {
    const Role role = role_here(c.is_array());
    if (role == Role::Skip) {
      if (stack_.back().role == Role::Ops || stack_.back().role == Role::Row)
        if (!rank_rows().bad_row) rank_rows().bad_row = "";  // an object for a row, or a column that holds one
      stack_.push_back({nullptr, Role::Skip, {}});
      return true;
    }
    if (role == Role::Row) {
      row_ = nlohmann::json::array();
      stack_.push_back({nullptr, Role::Row, {}});
      return true;
    }
    if (role == Role::Rank) rows.emplace_back();
    json* node = place(std::move(c));
    stack_.push_back({node, role, {}});
    return true;
  }
  bool close() {
    const Role role = stack_.back().role;
    stack_.pop_back();
    if (role == Role::Row && !rank_rows().bad_row) {
      if (row_.size() != 7) {
        rank_rows().bad_row = "";
      } else {
        try {
          rank_rows().ops.push_back(record_op_of(row_));
        } catch (const nlohmann::json::exception& e) {
          rank_rows().bad_row = e.what();
        }
      }
    }
    return true;
  }
};

}  // namespace

Records parse_records(const nlohmann::json& j, const std::string& file) { return parse_records_with(j, file, nullptr); }

Records read_records(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(SourceLocation{path, 0, 0}, "cannot open the records file: check the path");
  // Read as it is decompressed (the reference machines' are gzipped), the op
  // rows straight into records: memory for the records, not for the text or a DOM.
  const std::unique_ptr<std::streambuf> buf = open_maybe_gzip(path);
  std::istream in(buf.get());
  RecordsSax sax(path);
  nlohmann::ordered_json::sax_parse(in, &sax);
  Records rec = parse_records_with(nlohmann::json(sax.root), path, &sax.rows);
  if (sax.root.is_object() && sax.root.contains("meta")) rec.meta = sax.root.at("meta");  // in the writer's order
  return rec;
}

RunRecord run_record_of(const Schedule& s, const Records& rec) {
  const auto bad = [&](const std::string& what) {
    return InputError(SourceLocation{rec.file, 0, 0}, what + ": these records are not of schedule '" + s.name + "' (" + s.file + ")");
  };
  if (rec.ranks.size() != static_cast<size_t>(s.ranks())) {
    // A writer that left ranks out says so (run --records past kRecordsOps).
    if (rec.meta.is_object() && rec.meta.contains("left_out") && rec.meta.at("left_out").is_string())
      throw InputError(SourceLocation{rec.file, 0, 0}, fmt::format("{} ranks recorded, the schedule has {}: {}", rec.ranks.size(), s.ranks(),
                                                                   rec.meta.at("left_out").get<std::string>()));
    throw bad(fmt::format("{} ranks recorded, the schedule has {}", rec.ranks.size(), s.ranks()));
  }
  RunRecord r;
  r.makespan = Time::from_ns(rec.makespan_ns);
  r.ops.resize(rec.ranks.size());
  r.vram.resize(rec.ranks.size());
  for (size_t k = 0; k < rec.ranks.size(); ++k) {
    const std::vector<Op>& ops = *s.programs[k].ops;
    std::vector<OpRecord>& out = r.ops[k];
    out.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) out[i].op = &ops[i];
    RankSummary sum;
    sum.gpu = rec.ranks[k].gpu;
    for (const RecordOp& o : rec.ranks[k].ops) {
      if (o.index < 0 || static_cast<size_t>(o.index) >= ops.size() || o.label != ops[static_cast<size_t>(o.index)].label)
        throw bad(fmt::format("rank {} op {} ('{}') is not in the program", k, o.index, o.label));
      OpRecord& x = out[static_cast<size_t>(o.index)];
      x.issue = Time::from_ns(o.issue);
      x.returned = Time::from_ns(o.returned);
      x.start = Time::from_ns(o.start);
      x.end = Time::from_ns(o.end);
      x.ran = true;
      sum.end = std::max({sum.end, x.end, x.returned});
    }
    // VRAM in use after each alloc/free, at the host call; the peak as the
    // schedule's allocations add up (NCCL's buffers, an alloc naming a group,
    // count nothing here: only a simulation sizes them; the runner's NCCL
    // holds its own). Each request stage's peak the same way, between the
    // host's issue of its markers, as the simulator's memory does.
    int64_t v = 0;
    std::array<Bytes, kMemParts> parts{};
    std::map<std::string, const Op*> live;
    bool in_stage = false;
    for (const OpRecord& x : out) {
      if (!x.ran) continue;
      if (x.op->kind == OpKind::Marker && x.op->label.starts_with(kStageMarker)) {
        sum.stage_peaks.push_back({x.op->label.substr(std::string_view(kStageMarker).size()), static_cast<Bytes>(v), parts});
        in_stage = true;
      } else if (x.op->kind == OpKind::Marker && x.op->label.starts_with(kStageEndMarker)) {
        in_stage = false;
      } else if (x.op->kind == OpKind::Alloc && x.op->space == MemSpace::Device) {
        live[x.op->label] = x.op;
        v += x.op->bytes;
        parts[static_cast<size_t>(x.op->part)] += x.op->bytes;
        if (v > sum.peak_vram) {
          sum.peak_vram = v;
          sum.peak_parts = parts;
        }
        if (in_stage && v > sum.stage_peaks.back().vram) {
          sum.stage_peaks.back().vram = static_cast<Bytes>(v);
          sum.stage_peaks.back().parts = parts;
        }
        r.vram[k].push_back({x.returned, v});
      } else if (x.op->kind == OpKind::Free) {
        if (auto it = live.find(x.op->label); it != live.end()) {
          v -= it->second->bytes;
          parts[static_cast<size_t>(it->second->part)] -= it->second->bytes;
          live.erase(it);
          r.vram[k].push_back({x.returned, v});
        }
      }
    }
    sum.peak_vram_held = sum.peak_vram;
    r.ranks.push_back(sum);
  }
  return r;
}

}  // namespace osim
