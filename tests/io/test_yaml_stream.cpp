// A YAML file read as it is parsed (io/yaml_stream.hpp): the streamed items
// and the rest of the document are what load_yaml_file reads, marks included;
// a file cut short is refused at its line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"
#include "io/yaml_reader.hpp"
#include "io/yaml_stream.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {
const char* kDoc = R"(name: two
base: &b {op: kernel, stream: s, duration: 1 us}
programs:
  - rank: 0
    ops:
      - *b
      - {op: loop, count: 2, ops: [{op: marker, name: "m {i}"}]}
      - op: memcpy
        kind: h2d
        bytes: 4
  - ops: [{op: device_sync}]
    rank: 1
  - rank: 2
    ops: []
other: {ops: [1, 2]}
)";
}  // namespace

TEST_CASE("a streamed file's items and the rest of it are what the whole document holds, marks included") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("osim-yaml-stream-{}", ::getpid());
  fs::create_directories(dir);
  const std::string path = (dir / "doc.yaml").string();
  std::ofstream(path) << kDoc;
  const YAML::Node whole = load_yaml_file(path);
  std::vector<std::pair<size_t, YAML::Node>> items;
  const YAML::Node rest = stream_yaml_file(path, {"programs", "ops"}, [&](size_t e, const YAML::Node& n) { items.emplace_back(e, n); });

  // Every item, in file order, with the entry it is in and where it was written.
  std::vector<std::pair<size_t, YAML::Node>> expected;
  for (size_t e = 0; e < whole["programs"].size(); ++e)
    for (const YAML::Node& n : whole["programs"][e]["ops"]) expected.emplace_back(e, n);
  REQUIRE(items.size() == 4);
  REQUIRE(items.size() == expected.size());
  for (size_t i = 0; i < items.size(); ++i) {
    CAPTURE(i);
    CHECK(items[i].first == expected[i].first);
    CHECK(YAML::Dump(items[i].second) == YAML::Dump(expected[i].second));
    CHECK(items[i].second.Mark().line == expected[i].second.Mark().line);
    CHECK(items[i].second.Mark().column == expected[i].second.Mark().column);
  }
  CHECK(items[0].second["duration"].Scalar() == "1 us");  // the alias, resolved
  CHECK(items[2].second["bytes"].Mark().line + 1 == 10);  // a key's value in a block mapping

  // The rest: the lists emptied, everything else as read whole.
  REQUIRE(rest.size() == whole.size());
  for (const char* k : {"name", "base", "other"}) CHECK(YAML::Dump(rest[k]) == YAML::Dump(whole[k]));
  REQUIRE(rest["programs"].size() == 3);
  for (size_t e = 0; e < 3; ++e) {
    CHECK(YAML::Dump(rest["programs"][e]["rank"]) == YAML::Dump(whole["programs"][e]["rank"]));
    CHECK(rest["programs"][e]["ops"].IsSequence());
    CHECK(rest["programs"][e]["ops"].size() == 0);
  }
  CHECK(rest["other"]["ops"].size() == 2);  // not a program's list: kept
  CHECK(rest["programs"][1]["rank"].Mark().line + 1 == 12);
  fs::remove_all(dir);
}

TEST_CASE("a streamed file cut short or not a mapping is refused with its name and line") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("osim-yaml-stream-bad-{}", ::getpid());
  fs::create_directories(dir);
  const std::string doc(kDoc);
  const std::string cut = (dir / "cut.yaml").string();
  std::ofstream(cut) << doc.substr(0, doc.find("ops: [{op: device_sync") + 12);  // inside a flow mapping on line 11
  size_t n = 0;
  CHECK_THROWS_WITH_AS(stream_yaml_file(cut, {"programs", "ops"}, [&](size_t, const YAML::Node&) { ++n; }),
                       doctest::Contains((cut + ":11:1: error: YAML syntax error").c_str()), InputError);
  CHECK(n == 3);  // the items before the cut were read
  const std::string list = (dir / "list.yaml").string();
  std::ofstream(list) << "- a\n- b\n";
  CHECK_THROWS_WITH_AS(stream_yaml_file(list, {"programs", "ops"}, [](size_t, const YAML::Node&) {}),
                       doctest::Contains("expected a YAML mapping at the top level"), InputError);
  CHECK_THROWS_WITH_AS(stream_yaml_file((dir / "none.yaml").string(), {"programs", "ops"}, [](size_t, const YAML::Node&) {}),
                       doctest::Contains("cannot open file"), InputError);
  fs::remove_all(dir);
}

TEST_CASE("a streamed list's opening shows the document and its entry as read so far, and its end is told") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("osim-yaml-stream-open-{}", ::getpid());
  fs::create_directories(dir);
  const std::string path = (dir / "doc.yaml").string();
  std::ofstream(path) << kDoc;
  std::vector<std::string> told;
  StreamHandler h;
  h.on_open = [&](size_t e, const YAML::Node& root, const YAML::Node& entry) {
    // The keys before `programs` and, in the entry, before `ops`.
    told.push_back(fmt::format("open {} root {} name {} programs {} rank {}", e, root.size(), root["name"].as<std::string>(),
                               root["programs"].IsDefined(), entry["rank"].IsDefined() ? entry["rank"].as<std::string>() : "-"));
  };
  h.on_item = [&](size_t e, const YAML::Node&) { told.push_back(fmt::format("item {}", e)); };
  h.on_close = [&](size_t e) { told.push_back(fmt::format("close {}", e)); };
  stream_yaml_file(path, {"programs", "ops"}, h);
  CHECK(told == std::vector<std::string>{"open 0 root 2 name two programs false rank 0", "item 0", "item 0", "item 0", "close 0",
                                         "open 1 root 2 name two programs false rank -", "item 1", "close 1",
                                         "open 2 root 2 name two programs false rank 2", "close 2"});
  fs::remove_all(dir);
}

TEST_CASE("a gzip-compressed YAML file reads as its text, streamed and whole, and one cut short is refused by name") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("osim-yaml-stream-gz-{}", ::getpid());
  fs::create_directories(dir);
  const std::string plain = (dir / "doc.yaml").string(), gz = (dir / "doc.yaml.gz").string();
  std::ofstream(plain) << kDoc;
  {
    OutputFile f(gz);
    f.write(kDoc);
    f.commit();
  }
  CHECK(read_yaml_text(gz) == kDoc);
  CHECK(YAML::Dump(load_yaml_file(gz)) == YAML::Dump(load_yaml_file(plain)));
  std::vector<std::string> from_plain, from_gz;
  const YAML::Node rest_plain = stream_yaml_file(plain, {"programs", "ops"}, [&](size_t, const YAML::Node& n) { from_plain.push_back(YAML::Dump(n)); });
  const YAML::Node rest_gz = stream_yaml_file(gz, {"programs", "ops"}, [&](size_t, const YAML::Node& n) { from_gz.push_back(YAML::Dump(n)); });
  CHECK(from_gz.size() == 4);
  CHECK(from_gz == from_plain);
  CHECK(YAML::Dump(rest_gz) == YAML::Dump(rest_plain));
  // Half the compressed bytes: the stream ends short of gzip's end.
  std::ifstream in(gz, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = (dir / "cut.yaml.gz").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THROWS_WITH_AS(stream_yaml_file(cut, {"programs", "ops"}, [](size_t, const YAML::Node&) {}),
                       doctest::Contains((cut + ": error: cannot be decompressed").c_str()), InputError);
  CHECK_THROWS_WITH_AS(read_yaml_text(cut), doctest::Contains("cut.yaml.gz"), InputError);
  fs::remove_all(dir);
}
