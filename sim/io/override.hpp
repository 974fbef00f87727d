// An edit of a document before it is read: `--set key=value`, a sweep's key.
#pragma once

#include <string>

#include "core/errors.hpp"

namespace osim {

/// One edit, "a.b.c=value" as `--set` takes it, and where it was given: the
/// flag ("--set a.b.c=value"), or the place in a sweep file that holds the
/// value. An error in the value names that place (io/yaml_reader.hpp,
/// apply_overrides).
struct Override {
  std::string key_value;
  SourceLocation where;
};

}  // namespace osim
