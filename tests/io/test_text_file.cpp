// The one text-file reader and writer (io/text_file.hpp): a file read whole,
// an output written whole in place of the old one, never over a user's file
// unless asked to, every failure an InputError naming the path.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/errors.hpp"
#include "io/text_file.hpp"

using namespace osim;
namespace fs = std::filesystem;

TEST_CASE("a text file is written whole over the old one and read back, and a missing one is refused by name") {
  const fs::path dir = fs::temp_directory_path() / "osim-text-file";
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
  CHECK_THROWS_WITH_AS(read_maybe_gzip((dir / "none.txt").string()), doctest::Contains("none.txt"), InputError);
  CHECK_THROWS_AS(read_maybe_gzip(dir.string()), InputError);  // a folder
  fs::remove_all(dir);
}
