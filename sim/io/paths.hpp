// Paths one file writes to another (a schedule's `topology:`, a run folder's
// schedule): read relative to the file that names them, written so that they
// still resolve after the file is moved.
#pragma once

#include <string>

namespace osim {

/// `named` as the file `file` names it: absolute as written, else relative to
/// `file`'s folder ("" stays "").
std::string resolve_named_path(const std::string& file, const std::string& named);

/// How a file written at `written` should name `target` (a path as the caller
/// sees it): relative to `written`'s folder when both lie under the current
/// folder (a tree moved or cloned whole keeps them together), else absolute
/// (the file can then be moved anywhere on this machine).
std::string path_to_write(const std::string& written, const std::string& target);

}  // namespace osim
