// A folder of outputs that appears whole or not at all. Its files are written
// into a temporary sibling, `.<name>.tmp<pid>`, and moved into place once all
// are written: a run that fails or is killed leaves no half-written folder
// (a killed run's temporary is removed by the next one on that folder, once
// its process is gone). The overwrite rules are those of single files: an
// existing output file is refused unless `force`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace osim {

class OutputFolder {
 public:
  /// `dir` will hold files named from `names` (every file this kind of folder
  /// may hold; those a run does not write are removed from an earlier one).
  /// Refuses (InputError naming `dir`) an existing one of them unless
  /// `force`, a `dir` that is not a folder, and a place that cannot be written.
  OutputFolder(std::filesystem::path dir, std::vector<std::string> names, bool force);
  ~OutputFolder();  // removes the temporary folder unless committed
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  /// Where to write the file `name` (one of `names`) until commit().
  [[nodiscard]] std::filesystem::path path(const std::string& name) const;
  /// The files written become `dir`: the temporary folder is renamed to it
  /// (replacing an empty folder, or with `force` an earlier run's folder that
  /// holds only such files). Into a folder that holds other files too, each
  /// file is moved in on its own.
  void commit();
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_, tmp_;
  std::vector<std::string> names_;
  bool committed_ = false;
};

/// Removes the temporaries `.<name>.tmp<pid>` and `.<name>.old<pid>` beside
/// `dir` whose process has ended (a killed run's); returns how many.
int remove_stale_temporaries(const std::filesystem::path& dir);

/// Removes this process's temporaries of the output `out`, a folder's
/// (OutputFolder: `.<name>.tmp<pid>` beside it) or a file's (OutputFile:
/// `<out>.tmp<pid>`), those of a run being abandoned (an interrupted one's);
/// never the output itself. Returns how many it removed.
int remove_own_temporaries(const std::filesystem::path& out);

}  // namespace osim
