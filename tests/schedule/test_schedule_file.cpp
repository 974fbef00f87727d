// A schedule file is read as it is parsed, one op at a time (a many-step
// schedule's YAML document would take gigabytes), in one pass where its
// header comes first: the schedule and its errors are what the same text
// read whole gives.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "schedule/schedule.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {
// `text` with its first `from` replaced by `to`: a bad value put into a good file.
std::string with(std::string text, const std::string& from, const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  return text.replace(text.find(from), from.size(), to);
}

// Ranks by a list naming `rank` (each rank's own events, numbered in file
// order), a shared `rank: all`-like list, a loop, keys in any order.
const char* kSchedule = R"(programs:
  - rank: [0, 1]
    ops:
      - {op: event_record, event: "done{rank}", stream: compute}
      - {op: loop, count: 2, ops: [{op: kernel, name: "k{i}", stream: compute, duration: 5 us}]}
      - {op: event_record, event: "late{rank}", stream: compute}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: world, stream: comm}
  - ops:
      - {op: kernel, name: k, stream: compute, duration: 2 us}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: world, stream: comm}
    rank: [2, 3]
name: streamed
streams: [compute, {name: comm, priority: 1}]
ranks: 4
)";

struct TempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("osim-schedule-file-{}", ::getpid());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  [[nodiscard]] std::string write(const std::string& name, const std::string& text) const {
    std::ofstream((path / name).string()) << text;
    return (path / name).string();
  }
};
}  // namespace

TEST_CASE("a schedule file read as it is parsed is the schedule its text gives read whole") {
  const TempDir dir;
  const std::string file = dir.write("s.yaml", kSchedule);
  const Schedule a = parse_schedule_file(file), b = parse_schedule_string(kSchedule, file);
  CHECK(to_yaml(a) == to_yaml(b));
  CHECK(a.events == b.events);
  CHECK(a.events == std::vector<std::string>{"done0", "late0", "done1", "late1"});  // rank by rank, as written
  REQUIRE(a.ranks() == 4);
  CHECK(a.programs[0].ops->size() == 5);
  CHECK(a.programs[0].ops->at(2).label == "k1");
  CHECK(a.programs[0].ops->at(1).line == 5);      // where the loop's op was written
  CHECK(a.programs[2].ops == a.programs[3].ops);  // ops that never name `rank`: one copy for the entry's ranks
  CHECK(a.programs[0].ops != a.programs[1].ops);
  // Written and read back: the same schedule.
  const std::string again = dir.write("again.yaml", to_yaml(a));
  CHECK(to_yaml(parse_schedule_file(again)) == to_yaml(a));
}

TEST_CASE("a schedule file cut short or with a bad op is refused at its line, as read whole") {
  const TempDir dir;
  const std::string text(kSchedule);
  // Cut inside an op: a syntax error at the line of the cut.
  const std::string cut = dir.write("cut.yaml", text.substr(0, text.find("name: k, stream: compute, duration: 2") + 10));
  CHECK_THROWS_WITH_AS(parse_schedule_file(cut), doctest::Contains((cut + ":9:").c_str()), InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_file(cut), doctest::Contains("YAML syntax error"), InputError);
  // An op naming a stream never declared: the key's line and column, and what to do.
  std::string bad = text;
  bad.replace(bad.find("duration: 2 us"), 0, "sm_limit: -1, ");
  const std::string bad_file = dir.write("bad.yaml", bad);
  std::string streamed, whole;
  try {
    parse_schedule_file(bad_file);
  } catch (const InputError& e) {
    streamed = e.what();
  }
  try {
    parse_schedule_string(bad, bad_file);
  } catch (const InputError& e) {
    whole = e.what();
  }
  CHECK(streamed == whole);
  CHECK(streamed.find(bad_file + ":9:") != std::string::npos);
  CHECK(streamed.find("must not be negative") != std::string::npos);
  // An entry lost: the ranks left without a program named.
  const std::string short_file = dir.write("short.yaml", text.substr(0, text.find("  - ops:")) + text.substr(text.find("name: streamed")));
  CHECK_THROWS_WITH_AS(parse_schedule_file(short_file), doctest::Contains("rank 2 has no program"), InputError);
}

namespace {
// The same schedule in the order to_yaml writes (header first, `rank`
// before `ops`): read in one pass.
const char* kInOrder = R"(name: streamed
ranks: 5
streams: [compute, {name: comm, priority: 1}]
groups: [{name: pair, ranks: [0, 1, 4]}]
programs:
  - rank: [0, 1]
    ops:
      - {op: event_record, event: "done{rank}", stream: compute}
      - {op: loop, count: 2, ops: [{op: kernel, name: "k{i}", stream: compute, duration: 5 us}]}
      - {op: event_record, event: "late{rank}", stream: compute}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: world, stream: comm}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: pair, stream: comm}
  - rank: [2, 3]
    ops:
      - {op: kernel, name: k, stream: compute, duration: 2 us}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: world, stream: comm}
  - rank: 4
    ops:
      - {op: event_record, event: "e{rank}", stream: compute}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: world, stream: comm}
      - {op: collective, kind: all_reduce, bytes: 1 MB, group: pair, stream: comm}
)";

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a schedule file in to_yaml's order read in one pass is the schedule read whole") {
  const TempDir dir;
  const std::string file = dir.write("in-order.yaml", kInOrder);
  const Schedule a = parse_schedule_file(file), b = parse_schedule_string(kInOrder, file);
  CHECK(to_yaml(a) == to_yaml(b));
  CHECK(a.events == std::vector<std::string>{"done0", "late0", "done1", "late1", "e4"});
  REQUIRE(a.ranks() == 5);
  CHECK(a.programs[0].ops->size() == 6);
  CHECK(a.programs[0].ops->at(2).label == "k1");
  CHECK(a.programs[0].ops->at(2).line == 9);  // where the loop's op was written
  CHECK(a.programs[4].ops->at(0).line == 19);
  CHECK(a.programs[2].ops == a.programs[3].ops);  // ops that never name `rank`: one copy for the entry's ranks
  CHECK(a.programs[0].ops != a.programs[1].ops);
  // The header after the programs (the group an op names comes last): read twice, the same schedule.
  std::string late = kInOrder;
  const std::string groups = "groups: [{name: pair, ranks: [0, 1, 4]}]\n";
  late.erase(late.find(groups), groups.size());
  late += groups;
  CHECK(to_yaml(parse_schedule_file(dir.write("late.yaml", late))) == to_yaml(b));
  // `ops` before `rank`: the same.
  std::string swapped = kInOrder;
  swapped.replace(swapped.find("  - rank: 4\n    ops:"), 20, "  - ops:");
  swapped.replace(swapped.find("group: pair, stream: comm}\n", swapped.find("\"e{rank}\"")), 27, "group: pair, stream: comm}\n    rank: 4\n");
  CHECK(to_yaml(parse_schedule_file(dir.write("swapped.yaml", swapped))) == to_yaml(b));
}

TEST_CASE("a schedule file in to_yaml's order is refused with the error its text read whole gives") {
  const TempDir dir;
  const std::string text(kInOrder);
  // A key after an entry's ops; a rank out of range after the ops of the entries before; a bad op.
  std::string key_after = text;
  key_after.replace(key_after.find("  - rank: [2, 3]"), 0, "    color: red\n");
  std::string rank_late = text;
  rank_late.replace(rank_late.find("rank: 4"), 7, "rank: 7");
  std::string bad_op = text;
  bad_op.replace(bad_op.find("duration: 2 us"), 0, "sm_limit: -1, ");
  for (const std::string& t : {key_after, rank_late, bad_op}) {
    const std::string file = dir.write("bad.yaml", t);
    const std::string streamed = error_of([&] { parse_schedule_file(file); });
    CAPTURE(streamed);
    CHECK(!streamed.empty());
    CHECK(streamed == error_of([&] { parse_schedule_string(t, file); }));
  }
  CHECK(error_of([&] { parse_schedule_file(dir.write("bad.yaml", key_after)); }).find("bad.yaml:13:") != std::string::npos);
  CHECK(error_of([&] { parse_schedule_file(dir.write("bad.yaml", rank_late)); }).find("rank 7 is out of range 0..4") != std::string::npos);
}

TEST_CASE("--set on a schedule file read as it is parsed: the schedule its edited text gives") {
  const TempDir dir;
  const std::string file = dir.write("in-order.yaml", kInOrder);
  std::string renamed = kInOrder;
  renamed.replace(renamed.find("name: streamed"), 14, "name: renamed");
  const std::string want = to_yaml(parse_schedule_string(renamed, file));
  CHECK(to_yaml(parse_schedule_file(file, {"name=renamed"})) == want);  // in one pass
  std::string late = kInOrder;
  late.erase(late.find("name: streamed\n"), 15);
  late += "name: streamed\n";
  CHECK(to_yaml(parse_schedule_file(dir.write("late.yaml", late), {"name=renamed"})) == want);  // read twice
  // An op edited: the whole document, as before.
  std::string slower = kInOrder;
  slower.replace(slower.find("duration: 2 us"), 14, "duration: 3 us");
  CHECK(to_yaml(parse_schedule_file(file, {"programs.1.ops.0.duration=3 us"})) == to_yaml(parse_schedule_string(slower, file)));
  // A bad key: the error the whole document gives (an edit of an op, to the value it has, reads it whole).
  const std::string streamed = error_of([&] { parse_schedule_file(file, {"nmae=x"}); });
  CAPTURE(streamed);
  CHECK(!streamed.empty());
  CHECK(streamed == error_of([&] { parse_schedule_file(file, std::vector<std::string>{"nmae=x", "programs.0.rank=[0, 1]"}); }));
}

TEST_CASE("an edited value refused: the error names where the edit was given and its key, not the file's line 1") {
  const TempDir dir;
  const std::string file = dir.write("in-order.yaml", kInOrder);
  const std::string why = "(foo given for programs.1.ops.0.stream in " + file + ")";
  // --set: the flag; an edit of the header (the file read in one pass) and of an op (read whole) alike.
  for (const std::vector<std::string>& sets : {std::vector<std::string>{"programs.1.ops.0.stream=foo"},
                                               std::vector<std::string>{"name=renamed", "programs.1.ops.0.stream=foo"}}) {
    const std::string e = error_of([&] { parse_schedule_file(file, sets); });
    CAPTURE(e);
    CHECK(e.find("--set programs.1.ops.0.stream=foo: error: ") == 0);
    CHECK(e.find(why) != std::string::npos);
  }
  // A sweep's value: its line in the sweep file.
  const std::vector<Override> swept{{"name=renamed", SourceLocation{"s.yaml", 3, 9}}, {"programs.1.ops.0.stream=foo", SourceLocation{"s.yaml", 4, 28}}};
  const std::string e = error_of([&] { parse_schedule_file(file, swept); });
  CAPTURE(e);
  CHECK(e.find("s.yaml:4:28: error: ") == 0);
  CHECK(e.find(why) != std::string::npos);
  // An error in the file itself keeps the file's place, edits or not.
  std::string bad = kInOrder;
  bad.replace(bad.find("group: pair, stream: comm}\n  - rank: [2"), 11, "group: nope");
  const std::string bad_file = dir.write("bad.yaml", bad);
  CHECK(error_of([&] { parse_schedule_file(bad_file, swept); }) == error_of([&] { parse_schedule_file(bad_file); }));
  CHECK(error_of([&] { parse_schedule_file(bad_file); }).find(bad_file + ":") == 0);
}

TEST_CASE("settings.host_calls: a trace's measured call costs read, written back and checked") {
  const std::string text = R"(name: calls
settings: {framework_kernels: true, host_calls: {kernel_launch: 8 us, sync_call: 7500 ns, wait_return: 9 us}}
streams: [compute]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: compute, duration: 1 us}
)";
  const Schedule s = parse_schedule_string(text, "calls.yaml");
  const auto& c = s.runtime.host_calls;
  REQUIRE(c.kernel_launch);
  CHECK(c.kernel_launch->ps() == 8'000'000);
  CHECK(c.sync_call->ps() == 7'500'000);
  REQUIRE(c.wait_return);
  CHECK(c.wait_return->ps() == 9'000'000);
  CHECK_FALSE(c.memcpy_call);
  CHECK_FALSE(c.event_call);
  // Written as exact picoseconds, the unset ones left out; read back the same.
  const std::string written = to_yaml(s);
  CHECK(written.find("host_calls: {kernel_launch: 8000000 ps, sync_call: 7500000 ps, wait_return: 9000000 ps}") != std::string::npos);
  CHECK(to_yaml(parse_schedule_string(written, "calls.yaml")) == written);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "8 us", "-1 us"), "calls.yaml"), doctest::Contains("kernel_launch"), InputError);
  const std::string long_wait = with(text, "9 us", "2 s");
  CHECK_THROWS_WITH_AS(parse_schedule_string(long_wait, "calls.yaml"), doctest::Contains("'wait_return'"), InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_string(long_wait, "calls.yaml"), doctest::Contains("a wait's return from 0 to 1 s"), InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "8 us", "2 s"), "calls.yaml"), doctest::Contains("from 0 to 1 s"), InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "sync_call", "sink_call"), "calls.yaml"), doctest::Contains("sink_call"), InputError);
}

TEST_CASE("settings.copy_rates: a trace's measured copy rates read, written back and checked") {
  const std::string text = R"(name: rates
settings: {framework_kernels: true, copy_rates: {h2d_pinned: 51.5 GB/s, h2d_pageable: 9310 MB/s}}
streams: [compute]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: compute, duration: 1 us}
)";
  const Schedule s = parse_schedule_string(text, "rates.yaml");
  const auto& c = s.runtime.copy_rates;
  REQUIRE(c.h2d_pinned);
  CHECK(c.h2d_pinned->GBps() == doctest::Approx(51.5));
  REQUIRE(c.h2d_pageable);
  CHECK(c.h2d_pageable->GBps() == doctest::Approx(9.31));
  CHECK_FALSE(c.d2h_pinned);
  CHECK_FALSE(c.d2h_pageable);
  // Written in GB/s, the unset ones left out; read back the same.
  const std::string written = to_yaml(s);
  CHECK(written.find("copy_rates: {h2d_pinned: 51.5 GB/s, h2d_pageable: 9.31 GB/s}") != std::string::npos);
  CHECK(to_yaml(parse_schedule_string(written, "rates.yaml")) == written);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "51.5 GB/s", "0 GB/s"), "rates.yaml"), doctest::Contains("'h2d_pinned'"), InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "51.5 GB/s", "20 TB/s"), "rates.yaml"), doctest::Contains("above 0 and at most 10,000 GB/s"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_schedule_string(with(text, "h2d_pageable", "h2d_paged"), "rates.yaml"), doctest::Contains("h2d_paged"), InputError);
}
