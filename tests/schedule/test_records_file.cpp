// Records files as the reference machines keep them (gzip-compressed) and as
// runs write them (plain): the same records either way.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "io/text_file.hpp"
#include "schedule/records.hpp"

using namespace osim;
namespace fs = std::filesystem;

TEST_CASE("a gzipped records file reads as its plain text does") {
  const std::string run = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h200/validation/sp1-pf0-default";
  const std::string gz = plain_or_gz(run, "records.json");
  REQUIRE(gz == run + "/records.json.gz");  // kept compressed: the plain name absent
  const fs::path dir = fs::temp_directory_path() / "osim-records-file";
  fs::create_directories(dir);
  const std::string text = read_maybe_gzip(gz);
  REQUIRE(text.rfind("{", 0) == 0);  // decompressed JSON
  std::ofstream(dir / "records.json") << text;
  CHECK(plain_or_gz(dir.string(), "records.json") == (dir / "records.json").string());  // the plain one first
  const Records a = read_records(gz), b = read_records((dir / "records.json").string());
  CHECK(a.makespan_ns > 0);
  CHECK(a.makespan_ns == b.makespan_ns);
  CHECK(a.name == b.name);
  REQUIRE(a.ranks.size() == b.ranks.size());
  CHECK(a.ranks[0].ops.size() == b.ranks[0].ops.size());
  CHECK(a.meta == b.meta);
  CHECK_THROWS_WITH_AS(read_records((dir / "none.json").string()), doctest::Contains("cannot open the records file"), InputError);
  std::ofstream(dir / "broken.json.gz") << "\x1f\x8b not gzip";
  CHECK_THROWS_WITH_AS(read_records((dir / "broken.json.gz").string()), doctest::Contains("broken.json.gz"), InputError);
  // A gzip file cut short (a copy interrupted): refused, not read as the part it holds.
  {
    std::ifstream whole(gz, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.json.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THROWS_WITH_AS(read_maybe_gzip((dir / "cut.json.gz").string()), doctest::Contains("the gzip stream is cut short"), InputError);
}

TEST_CASE("records read as a stream hold what the whole document holds, and bad rows are refused as before") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("osim-records-stream-{}", ::getpid());
  fs::create_directories(dir);
  // The keys in another order than the writer's (ranks before makespan), meta nested, rows of every type.
  const std::string text = R"({"schema": "overlapsim.records/v1", "name": "n", "ranks": [
  {"ops": [[0, "gemm", "a", 1.0, 2.0, 3.0, 4.5], [1, "h2d", "b c", 2, 3, 4, 9]], "gpu": "gpu0", "rank": 0},
  {"rank": 1, "gpu": "gpu1", "ops": []},
  {"rank": 2, "ops": [[5, "marker", "step 0", 0.0, 0.0, 7.25, 7.25]]}],
 "source": "measured", "topology": "t", "makespan_ns": 10.0,
 "meta": {"z": 1, "a": {"k": [1, 2, {"x": null}]}, "warm": true}})";
  std::ofstream(dir / "r.json") << text;
  const Records a = read_records((dir / "r.json").string());
  const Records b = parse_records(nlohmann::json::parse(text), "r.json");
  REQUIRE(a.ranks.size() == 3);
  REQUIRE(b.ranks.size() == 3);
  CHECK(a.makespan_ns == 10.0);
  CHECK(a.source == "measured");
  for (size_t r = 0; r < 3; ++r) {
    CHECK(a.ranks[r].rank == b.ranks[r].rank);
    CHECK(a.ranks[r].gpu == b.ranks[r].gpu);
    REQUIRE(a.ranks[r].ops.size() == b.ranks[r].ops.size());
    for (size_t i = 0; i < a.ranks[r].ops.size(); ++i) {
      const RecordOp &x = a.ranks[r].ops[i], &y = b.ranks[r].ops[i];
      CHECK(x.index == y.index);
      CHECK(x.cls == y.cls);
      CHECK(x.label == y.label);
      CHECK(x.issue == y.issue);
      CHECK(x.returned == y.returned);
      CHECK(x.start == y.start);
      CHECK(x.end == y.end);
    }
  }
  CHECK(a.ranks[0].ops[1].label == "b c");
  CHECK(a.ranks[0].ops[1].end == 9.0);
  CHECK(a.ranks[2].ops[0].start == 7.25);
  CHECK(a.meta.dump() == R"({"z":1,"a":{"k":[1,2,{"x":null}]},"warm":true})");  // in the writer's order
  // Bad rows, each refused naming the file and the rank.
  auto refused = [&](const std::string& body, const std::string& makespan_ns = "10.0") {
    std::ofstream(dir / "bad.json") << R"({"schema": "overlapsim.records/v1", "source": "s", "name": "n", "makespan_ns": )" + makespan_ns +
                                           R"(, "ranks": [)" + body + "]}";
    try {
      read_records((dir / "bad.json").string());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", 1, 2, 3]]})").find("bad.json") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", 1, 2, 3]]})").find("rank 3: an op row does not have 7 columns") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [5]})").find("rank 3: an op row does not have 7 columns") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [{"a": 1}]})").find("rank 3: an op row does not have 7 columns") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", "one", 2, 3, 4]]})").find("malformed") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", 5, 2, 3, 4]]})").find("rank 3 op 0 ('a'): returned 2.000 ns is before its issue") !=
        std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", 1, 2, 3, 2000]]})").find("after the run's makespan_ns") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": []}] trailing)").find("not valid JSON") != std::string::npos);
  CHECK(refused(R"({"rank": 3, "ops": [[0, "gemm", "a", 1, 2, 3, 4]]})") == "accepted");
  // Clocks aligned within 1 us (the reference runs' -304 ns), or 1 % of a run
  // shorter than 100 us: a 2 us run's op at -500 ns would be busier than the run.
  CHECK(refused(R"({"rank": 0, "ops": [[0, "gemm", "a", -304, 0, -304, 900000]]})", "1000000") == "accepted");
  CHECK(refused(R"({"rank": 0, "ops": [[0, "gemm", "a", -1001, 0, 0, 900000]]})", "1000000").find("issue -1001.000 ns is before the run's start") !=
        std::string::npos);
  CHECK(refused(R"({"rank": 0, "ops": [[0, "gemm", "a", 0, 1, -500, 1500]]})", "2000").find("start -500.000 ns is before the run's start") !=
        std::string::npos);
  CHECK(refused(R"({"rank": 0, "ops": [[0, "gemm", "a", 0, 1, -19, 1500]]})", "2000") == "accepted");  // within 20 ns
  CHECK(refused(R"({"rank": 0, "ops": [[0, "gemm", "a", 0, 1, 0, 2000]]})", "1000").find("after the run's makespan_ns 1000.000") != std::string::npos);
  fs::remove_all(dir);
}
