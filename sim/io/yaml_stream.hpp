// A YAML file read as yaml-cpp's event parser goes, for documents too large
// to hold as a DOM (a 40-step schedule: ~10^7 nodes, ~5 GB): the items of
// one kind of nested list (a schedule's programs[*].ops[*]) are handed over
// one at a time and not kept; the rest of the document is built as
// load_yaml_file builds it, source marks included, so readers and their
// file:line:column errors are the same either way.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace osim {

/// root[outer][*][inner][*]: the items streamed (e.g. {"programs", "ops"}).
struct StreamedList {
  std::string outer, inner;
};
/// Called with the index of the outer list's entry and one item of its inner list.
using StreamedItem = std::function<void(size_t outer_index, const YAML::Node& item)>;

/// What a reader is told as the file is parsed; on_open and on_close may be empty.
struct StreamHandler {
  /// An entry's inner list opens: the document and the entry as read so far
  /// (the keys written before the outer list and before the inner list), so
  /// that a file whose header comes first can be read in one pass.
  std::function<void(size_t outer_index, const YAML::Node& root, const YAML::Node& entry)> on_open;
  StreamedItem on_item;
  /// An entry's inner list ends.
  std::function<void(size_t outer_index)> on_close;
};

/// Reads `path`, calling `on_item` for each item of the streamed lists in
/// file order; returns the document with those lists left empty. InputError
/// for a file it cannot open, a syntax error (at its line), a top level that
/// is not a mapping, or the shapes load_yaml_file refuses (in the rest or in an item).
YAML::Node stream_yaml_file(const std::string& path, const StreamedList& list, const StreamedItem& on_item);
/// The same, telling `handler` where each inner list opens and ends.
YAML::Node stream_yaml_file(const std::string& path, const StreamedList& list, const StreamHandler& handler);

}  // namespace osim
