// Records files as the reference machines keep them (gzip-compressed) and as
// runs write them (plain): the same records either way.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

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
