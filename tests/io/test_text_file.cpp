// The one text-file reader and writer (io/text_file.hpp): a file read whole,
// an output written whole in place of the old one, never over a user's file
// unless asked to, every failure an InputError naming the path; an output
// streamed in pieces (OutputFile), plain or gzip-compressed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {
std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("a text file is written whole over the old one and read back, and a missing one is refused by name") {
  const fs::path dir = fs::temp_directory_path() / ("osim-text-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path f = dir / "out.txt";
  write_file(f, "first\n");
  write_file(f, "second, longer\n");
  CHECK(read_maybe_gzip(f.string()) == "second, longer\n");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);  // no temporary file left beside it
  CHECK(plain_or_gz(dir.string(), "out.txt") == f.string());
  CHECK(plain_or_gz(dir.string(), "none.txt") == (dir / "none.txt").string());

  CHECK_NOTHROW(refuse_overwrite(dir / "none.txt", false));
  CHECK_NOTHROW(refuse_overwrite(f, true));
  CHECK_THROWS_WITH_AS(refuse_overwrite(f, false), doctest::Contains("exists already: pass --force"), InputError);
  CHECK_THROWS_WITH_AS(write_file(dir / "no-folder" / "x.txt", "x"), doctest::Contains("no-folder/x.txt"), InputError);
  // Its bytes as given: a name ending in .gz is not compressed (its callers
  // write YAML and CSV, read back as plain text), more than the 1 MiB buffer whole.
  const std::string big = std::string(3 << 20, 'y') + "\n";
  write_file(dir / "plain.yaml.gz", "a: 1\n");
  write_file(dir / "big.txt", big);
  CHECK(read_bytes(dir / "plain.yaml.gz") == "a: 1\n");
  CHECK(read_bytes(dir / "big.txt") == big);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 3);
  CHECK_THROWS_WITH_AS(read_maybe_gzip((dir / "none.txt").string()), doctest::Contains("none.txt"), InputError);
  CHECK_THROWS_AS(read_maybe_gzip(dir.string()), InputError);  // a folder
  fs::remove_all(dir);
}

TEST_CASE("an output written in pieces reads back the same, plain and gzip-compressed, and appears only when committed") {
  const fs::path dir = fs::temp_directory_path() / ("osim-output-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // More than the 1 MiB buffer, in small pieces and one larger than it.
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "{\"ph\":\"X\",\"ts\":" + std::to_string(i) + "},\n";
  text += std::string(3 << 20, 'x') + "\n";
  for (const char* name : {"t.json", "t.json.gz"}) {
    CAPTURE(name);
    const fs::path p = dir / name;
    {
      OutputFile f(p);
      const size_t small = text.size() - (3 << 20) - 1;  // the small pieces' part
      for (size_t at = 0; at < small; at += 1000) f.write(std::string_view(text).substr(at, std::min<size_t>(1000, small - at)));
      f.write(std::string_view(text).substr(small));
      CHECK(f.bytes() == text.size());
      CHECK_FALSE(fs::exists(p));  // not before commit
      f.commit();
    }
    CHECK(read_maybe_gzip(p.string()) == text);
    std::ifstream in(p, std::ios::binary);
    const int b0 = in.get(), b1 = in.get();
    CHECK((b0 == 0x1f && b1 == 0x8b) == (p.extension() == ".gz"));  // gzip's magic bytes, only for .gz
  }
  CHECK(fs::file_size(dir / "t.json.gz") * 10 < fs::file_size(dir / "t.json"));
  // Two writes of the same text give the same bytes (no time in the gzip header).
  {
    OutputFile f(dir / "u.json.gz");
    f.write(text);
    f.commit();
  }
  CHECK(read_bytes(dir / "u.json.gz") == read_bytes(dir / "t.json.gz"));
  {
    OutputFile f(dir / "dropped.json");
    f.write("half");
  }  // destroyed uncommitted: neither it nor its temporary is left
  CHECK_FALSE(fs::exists(dir / "dropped.json"));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 3);
  CHECK_THROWS_WITH_AS(OutputFile(dir / "no-folder" / "x.json"), doctest::Contains("no-folder/x.json"), InputError);
  fs::remove_all(dir);
}
