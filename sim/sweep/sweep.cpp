// A sweep's CSV (RFC 4180), its journal (`--resume`) and the merge of shards.
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "io/file_hash.hpp"
#include "io/text_file.hpp"
#include "sweep/internal.hpp"

namespace osim {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- journal

namespace {
constexpr const char* kJournalTag = "# overlapsim sweep journal ";

std::string csv_cell(const std::string& c) {
  if (c.find_first_of(",\"\n\r") == std::string::npos) return c;
  std::string out = "\"";
  for (char ch : c) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// One CSV row, RFC 4180 quoting, "\n"-terminated.
std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_cell(cells[i]);
  return out + "\n";
}

// A row's point column as an index; none unless it is all digits.
std::optional<size_t> point_index(const std::string& cell) {
  try {
    size_t used = 0;
    const size_t i = std::stoul(cell, &used);
    if (used == cell.size()) return i;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string read_text(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(SourceLocation{path, 0, 0}, fmt::format("cannot open {}: check the path", what));
  return read_maybe_gzip(path);
}
}  // namespace

std::string sweep_identity(const SweepSpec& s) {
  uint64_t h = kFnv1a64Offset;
  const std::string calibration = s.calibration == "none" ? "" : s.calibration;  // none: no file
  for (const std::string& f : {s.file, s.base, s.topology, calibration})
    if (!f.empty()) fnv1a64_file(f, h);
  return fmt::format("{:016x}", h);
}

std::string SweepJournal::identity(const SweepSpec& s, const SweepOptions& o) {
  return fmt::format("{}{} shard {}/{}", kJournalTag, sweep_identity(s), o.shard + 1, o.shards);
}

std::map<size_t, std::vector<std::string>> SweepJournal::read(const std::string& path, const SweepSpec& s, const SweepOptions& o) {
  std::string text = read_text(path, "the sweep's journal");
  const size_t first = text.find('\n');
  if (text.rfind(kJournalTag, 0) != 0 || first == std::string::npos)
    throw InputError(SourceLocation{path, 1, 1}, "not a sweep journal: remove it, or run without --resume and with --force to start over");
  if (text.substr(0, first) != identity(s, o))
    throw InputError(SourceLocation{path, 1, 1},
                     "this journal is another sweep's, another shard's, or its sweep, base, topology or calibration file has changed since: "
                     "run with --force (not --resume) to start over");
  // A row is whole once its line ends; a last line without its end was cut short.
  text.erase(text.rfind('\n') + 1);
  SweepTable t = parse_csv(text.substr(first + 1), path, 2);
  if (t.header != sweep_header(s))
    throw InputError(SourceLocation{path, 2, 1}, "the journal's columns are not this sweep's: run with --force to start over");
  std::map<size_t, std::vector<std::string>> rows;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const SourceLocation where{path, static_cast<int>(r + 3), 1};
    const std::optional<size_t> at = point_index(t.rows[r][0]);
    if (!at) throw InputError(where, "a journal row's point is not a number: the journal is damaged; run with --force to start over");
    const size_t i = *at;
    if (i >= s.size() || i % static_cast<size_t>(o.shards) != static_cast<size_t>(o.shard) ||
        !std::equal(t.rows[r].begin(), t.rows[r].begin() + static_cast<long>(s.parameters.size() + 1), point_cells(s, i, s.point(i)).begin()))
      throw InputError(where, fmt::format("point {} is not this sweep's: the journal is damaged; run with --force to start over", t.rows[r][0]));
    rows[i] = std::move(t.rows[r]);
  }
  return rows;
}

SweepJournal::SweepJournal(const std::string& path, const SweepSpec& s, const SweepOptions& o, bool append) : path_(path) {
  if (append) {
    // A row cut short by the interruption goes: the next one starts on its own line.
    const std::string text = read_text(path, "the sweep's journal");
    std::error_code ec;
    fs::resize_file(path, text.rfind('\n') + 1, ec);
    if (ec) throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal (" + ec.message() + ")");
  }
  file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!file_) throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal here: check the folder exists and is writable");
  if (!append) {
    const std::string text = identity(s, o) + "\n" + csv_line(sweep_header(s));
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
      throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal");
  }
}

SweepJournal::~SweepJournal() {
  if (file_) std::fclose(file_);
}

void SweepJournal::add(const std::vector<std::string>& row) {
  const std::string text = csv_line(row);
  // Flushed row by row: a killed sweep loses at most the rows in flight.
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw InputError(SourceLocation{path_, 0, 0}, "cannot append to the sweep's journal (is the disk full?)");
}

// ---------------------------------------------------------------- CSV

int SweepTable::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<std::string> SweepTable::parameters() const {
  const int st = column("status");
  if (st < 1) return {};
  return std::vector<std::string>(header.begin() + 1, header.begin() + st);
}

namespace {
constexpr const char* kShardTag = "# overlapsim sweep shard ";

// "I/N of HASH" (1-based I) as a ShardOrigin; none when it is not one.
std::optional<ShardOrigin> parse_origin(const std::string& text) {
  unsigned i = 0, n = 0;
  char hash[17] = {};
  int used = 0;
  if (std::sscanf(text.c_str(), "%u/%u of %16[0-9a-f]%n", &i, &n, hash, &used) != 3 || static_cast<size_t>(used) != text.size() || i < 1 || i > n ||
      std::string(hash).size() != 16)
    return std::nullopt;
  return ShardOrigin{static_cast<int>(i) - 1, static_cast<int>(n), hash};
}
}  // namespace

std::string to_csv(const SweepTable& t) {
  std::string out;
  if (t.origin) out = fmt::format("{}{}/{} of {}\n", kShardTag, t.origin->shard + 1, t.origin->shards, t.origin->sweep);
  out += csv_line(t.header);
  for (const auto& r : t.rows) out += csv_line(r);
  return out;
}

SweepTable parse_csv(const std::string& text_in, const std::string& file, int first_line) {
  // A shard's first line says where it comes from.
  std::optional<ShardOrigin> origin;
  std::string_view text = text_in;
  if (text.substr(0, std::string_view(kShardTag).size()) == kShardTag) {
    const size_t eol = std::min(text.find('\n'), text.size());
    const std::string line(text.substr(std::string_view(kShardTag).size(), eol - std::string_view(kShardTag).size()));
    origin = parse_origin(line.empty() || line.back() != '\r' ? line : line.substr(0, line.size() - 1));
    if (!origin)
      throw InputError(SourceLocation{file, first_line, 1},
                       "a sweep shard's first line must read '# overlapsim sweep shard I/N of HASH': the file was edited");
    text.remove_prefix(std::min(eol + 1, text.size()));
    ++first_line;
  }
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  int line_no = first_line, row_line = first_line;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_no;
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      if (!cell.empty()) throw InputError(SourceLocation{file, row_line, 0}, "a quote inside an unquoted CSV cell: is this a sweep CSV?");
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(cell));
      cell.clear();
      lines.push_back(std::move(row));
      row.clear();
      any = false;
      row_line = ++line_no;
    } else if (c != '\r') {
      cell += c;
      any = true;
    }
  }
  if (quoted) throw InputError(SourceLocation{file, row_line, 0}, "a quoted CSV cell is not closed: the file is cut short");
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    lines.push_back(std::move(row));
  }
  if (lines.empty()) throw InputError(SourceLocation{file, first_line, 0}, "empty file: expected a sweep CSV (overlapsim sweep -o)");
  SweepTable t;
  t.origin = origin;
  t.header = std::move(lines.front());
  if (t.header.empty() || t.header.front() != "point" || t.column("status") < 0)
    throw InputError(SourceLocation{file, first_line, 1}, "not a sweep CSV: the header must start with 'point' and have a 'status' column");
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].size() != t.header.size())
      throw InputError(SourceLocation{file, static_cast<int>(i) + first_line, 0},
                       fmt::format("row has {} cells, the header {}: the file is damaged or was edited", lines[i].size(), t.header.size()));
    t.rows.push_back(std::move(lines[i]));
  }
  return t;
}

SweepTable read_csv_file(const std::string& path) {
  SweepTable t = parse_csv(read_text(path, "file"), path);
  std::vector<std::string> needed{"error"};
  const auto& metrics = sweep_metric_columns();
  needed.insert(needed.end(), metrics.begin(), metrics.end());
  for (const std::string& c : needed)
    if (t.column(c) < 0)
      throw InputError(SourceLocation{path, 1, 1},
                       fmt::format("not a sweep CSV: it has no '{}' column (overlapsim sweep writes every metric column)", c));
  // A point that ran has a number in every numeric metric.
  const int status = t.column("status");
  const int row0 = t.origin ? 3 : 2;  // the file line of the first row
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& st = t.rows[r][static_cast<size_t>(status)];
    if (st != "ok" && st != "error")
      throw InputError(SourceLocation{path, static_cast<int>(r) + row0, status + 1},
                       fmt::format("status '{}' is neither ok nor error: the file was edited", st));
    if (st != "ok") continue;
    for (const std::string& c : metrics) {
      if (c == "topology_name" || c == "copy_bottleneck" || c == "collective_bottleneck") continue;
      const int col = t.column(c);
      const std::string& cell = t.rows[r][static_cast<size_t>(col)];
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(v))
        throw InputError(SourceLocation{path, static_cast<int>(r) + row0, col + 1},
                         fmt::format("'{}' of a point that ran is '{}', not a number: the file was edited", c, cell));
    }
  }
  return t;
}

namespace {
// Every shard comes from the sweep (and shard count) of the first, and of `expected_sweep` where given.
void check_origins(const std::vector<std::pair<std::string, SweepTable>>& shards, const std::string& expected_sweep) {
  const auto& [first_file, first] = shards.front();
  for (const auto& [file, t] : shards) {
    if (t.origin.has_value() != first.origin.has_value()) {
      const std::string& plain = t.origin ? first_file : file;
      throw InputError(SourceLocation{plain, 1, 1}, fmt::format("not a shard's CSV (it has no '{}I/N of HASH' line) while {} is one: give only the "
                                                                "shards of one sweep (overlapsim sweep --shard i/N)",
                                                                kShardTag, t.origin ? file : first_file));
    }
    if (!t.origin) continue;
    if (t.origin->sweep != first.origin->sweep || t.origin->shards != first.origin->shards)
      throw InputError(SourceLocation{file, 1, 1},
                       fmt::format("shard {}/{} of sweep {}, but {} is shard {}/{} of sweep {}: these are shards of different sweeps (or the "
                                   "sweep's files changed between their runs): merge only the shards of one sweep, re-running any "
                                   "whose files changed (overlapsim sweep FILE --shard i/N)",
                                   t.origin->shard + 1, t.origin->shards, t.origin->sweep, first_file, first.origin->shard + 1, first.origin->shards,
                                   first.origin->sweep));
    if (!expected_sweep.empty() && t.origin->sweep != expected_sweep)
      throw InputError(SourceLocation{file, 1, 1},
                       fmt::format("a shard of sweep {}, not of the --sweep file's ({}): another sweep's shard, or the sweep, its base, "
                                   "topology or calibration file was edited since the shard ran",
                                   t.origin->sweep, expected_sweep));
  }
}
}  // namespace

SweepTable merge_sweep_tables(const std::vector<std::pair<std::string, SweepTable>>& shards, std::optional<size_t> expected_points,
                              const std::string& expected_sweep) {
  if (shards.empty()) throw std::invalid_argument("merge_sweep_tables: no input");
  SweepTable out;
  out.header = shards.front().second.header;
  for (const auto& [file, t] : shards)
    if (t.header != out.header)
      throw InputError(SourceLocation{file, 1, 1},
                       fmt::format("its columns differ from {}'s: these are not shards of one sweep", shards.front().first));
  check_origins(shards, expected_sweep);
  std::map<size_t, std::pair<std::vector<std::string>, std::string>> by_point;
  for (const auto& [file, t] : shards) {
    const int row0 = t.origin ? 3 : 2;  // the file line of the first row
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const std::optional<size_t> at = point_index(t.rows[r][0]);
      if (!at) throw InputError(SourceLocation{file, static_cast<int>(r) + row0, 1}, fmt::format("point '{}' is not a number", t.rows[r][0]));
      const size_t idx = *at;
      auto [it, fresh] = by_point.emplace(idx, std::make_pair(t.rows[r], file));
      if (!fresh)
        throw InputError(
            SourceLocation{file, static_cast<int>(r) + row0, 1},
            fmt::format("point {} is also in {}: a shard was given twice, or shards of different runs were mixed", idx, it->second.second));
    }
  }
  size_t expect = 0;
  for (const auto& [idx, row] : by_point) {
    if (idx != expect)
      throw InputError(SourceLocation{shards.front().first, 0, 0},
                       fmt::format("point {} is in no shard: a shard is missing (give every shard's CSV)", expect));
    out.rows.push_back(row.first);
    ++expect;
  }
  if (expected_points && expect != *expected_points)
    throw InputError(
        SourceLocation{shards.front().first, 0, 0},
        fmt::format("the shards hold {} points, the sweep has {}: a shard is missing (give every shard's CSV)", expect, *expected_points));
  return out;
}

}  // namespace osim
