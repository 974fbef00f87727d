// Strict YAML reading: parse, validate, then build (STYLE.md). Every error
// names file:line:column and what to do; unknown keys are errors with a
// suggestion of the closest known key.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "io/override.hpp"

namespace osim {

/// Where a YAML node came from.
SourceLocation location_of(const std::string& file, const YAML::Node& node);

/// Loads a YAML file; a missing file or a syntax error is an InputError.
YAML::Node load_yaml_file(const std::string& path);
/// load_yaml_file in two steps, for a reader that also needs the text:
/// the file's text (InputError for a folder or a file it cannot open), then
/// the text parsed (InputError unless a mapping).
std::string read_yaml_text(const std::string& path);
YAML::Node load_yaml_mapping(const std::string& text, const std::string& path);
YAML::Node load_yaml_string(const std::string& text, const std::string& name);
/// Shapes every reader relies on, checked by the loaders for the whole
/// document: keys are plain names (not lists or mappings), and the document,
/// with its aliases expanded, stays small (a few aliases can expand
/// exponentially). InputError naming `name` otherwise.
void check_yaml_shape(const YAML::Node& root, const std::string& name);

/// A YAML mapping whose keys are checked against a known set.
class MapReader {
 public:
  /// `origin`: for an item expanded from `repeat:` (a copy without source
  /// marks), the item as written; locations are taken from it.
  MapReader(std::string file, YAML::Node node, std::string what, std::vector<std::string> known,
            YAML::Node origin = YAML::Node(YAML::NodeType::Undefined));

  [[nodiscard]] bool has(const std::string& key) const;
  [[nodiscard]] YAML::Node node() const { return node_; }
  [[nodiscard]] YAML::Node get(const std::string& key) const;  // required
  [[nodiscard]] const std::string& file() const { return file_; }

  std::string str(const std::string& key) const;
  std::optional<std::string> opt_str(const std::string& key) const;
  double num(const std::string& key) const;
  std::optional<double> opt_num(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  std::optional<int64_t> opt_int(const std::string& key) const;
  /// A whole number that lands in an `int` (counts, ranks, priorities): refused outside 32 bits.
  int int32(const std::string& key) const;
  std::optional<int> opt_int32(const std::string& key) const;
  bool boolean(const std::string& key, bool fallback) const;
  Bytes bytes(const std::string& key) const;
  std::optional<Bytes> opt_bytes(const std::string& key) const;
  Bandwidth bandwidth(const std::string& key) const;
  std::optional<Bandwidth> opt_bandwidth(const std::string& key) const;
  Time duration(const std::string& key) const;
  std::optional<Time> opt_duration(const std::string& key) const;
  /// One of `choices`; the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& choices) const;
  std::optional<std::string> opt_choice(const std::string& key, const std::vector<std::string>& choices) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  [[nodiscard]] SourceLocation where(const std::string& key) const;

 private:
  [[nodiscard]] SourceLocation key_location(const std::string& key) const;
  /// The value under `key`, or nullptr where it is absent or null: a scan of
  /// the keys read once (yaml-cpp's own lookup converts every key it passes
  /// to a string).
  [[nodiscard]] const YAML::Node* find(const std::string& key) const;

  std::string file_;
  YAML::Node node_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;  // node_'s keys and values, in order
  YAML::Node origin_;
  std::string what_;
};

/// Applies one override "a.b.c=value" (value in YAML) to a document: mapping
/// keys by name (missing ones are created), sequence items by 0-based index
/// or by the item's `name:`, else every item whose `role:` it is (each edited
/// alike). `what` names the document in errors ("the workload"); `where` is
/// the override's own location for messages.
void apply_override(YAML::Node root, const std::string& key_value, const std::string& what, const SourceLocation& where);
/// The same with the key and the value given apart.
void apply_override(YAML::Node root, const std::string& key, const YAML::Node& value, const std::string& what, const SourceLocation& where);

/// `--set` flags as overrides, each located at its flag (`prefix` + its text).
std::vector<Override> overrides_from_flags(const std::vector<std::string>& flags, const std::string& prefix = "--set ");
/// Applies `edits` in order, as apply_override does. Each value's nodes carry
/// a mark no file has (a line below 1, one per edit), so that an error a
/// reader finds in an edited value can be told from one in the document.
void apply_overrides(YAML::Node root, const std::vector<Override>& edits, const std::string& what);
/// `e`, thrown reading `file` as `edits` edited it, located where the edit
/// whose value it points at was given, naming that edit's key and value; `e`
/// as it is when it points elsewhere.
InputError override_error(const InputError& e, const std::string& file, const std::vector<Override>& edits);

/// Scalar helpers that throw InputError naming the node's location.
std::string scalar_str(const std::string& file, const YAML::Node& n, const std::string& what);

}  // namespace osim
