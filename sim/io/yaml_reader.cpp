#include "io/yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/node_mark.hpp"
#include "io/text_file.hpp"

namespace osim {

SourceLocation location_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return SourceLocation{file, 0, 0};
  return SourceLocation{file, m.line + 1, m.column + 1};
}

void check_yaml_shape(const YAML::Node& root, const std::string& name) {
  constexpr size_t kMaxNodes = 4'000'000;
  std::vector<YAML::Node> todo{root};
  size_t seen = 0;
  while (!todo.empty()) {
    const YAML::Node n = todo.back();
    todo.pop_back();
    if (++seen > kMaxNodes)
      throw InputError(location_of(name, root), fmt::format("the document expands to more than {} values (aliases used many times?)", kMaxNodes));
    if (n.IsMap()) {
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar()) throw InputError(location_of(name, it->first), "a key must be a plain name, not a list, mapping or null");
        todo.push_back(it->second);
      }
    } else if (n.IsSequence()) {
      for (auto it = n.begin(); it != n.end(); ++it) todo.push_back(*it);
    }
  }
}

namespace {
YAML::Node parse(const std::string& text, const std::string& name) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(SourceLocation{name, e.mark.line + 1, e.mark.column + 1}, fmt::format("YAML syntax error: {}", e.msg));
  }
  check_yaml_shape(n, name);
  return n;
}
}  // namespace

std::string read_yaml_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(SourceLocation{path, 0, 0}, "is a folder: give a YAML file");
  std::ifstream in(path);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "cannot open file: check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // A gzip-compressed file (by its magic bytes: reference runs keep schedule.yaml.gz) reads as its text.
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) return read_maybe_gzip(path);
  return text;
}

YAML::Node load_yaml_mapping(const std::string& text, const std::string& path) {
  YAML::Node n = parse(text, path);
  if (!n.IsMap()) throw InputError(SourceLocation{path, 1, 1}, "expected a YAML mapping at the top level");
  return n;
}

YAML::Node load_yaml_file(const std::string& path) { return load_yaml_mapping(read_yaml_text(path), path); }

YAML::Node load_yaml_string(const std::string& text, const std::string& name) { return parse(text, name); }

namespace {
// An override's value is marked as edit `index`'s: line -2 - index (location_of: -1 - index).
constexpr int kFirstOverrideLine = -2;
void mark_tree(YAML::Node n, const YAML::Mark& m) {
  set_node_mark(n, m);
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      mark_tree(it->first, m);
      mark_tree(it->second, m);
    }
  } else if (n.IsSequence()) {
    for (auto it = n.begin(); it != n.end(); ++it) mark_tree(*it, m);
  }
}
// The marks of `from`'s nodes on `to`'s, a copy of it (YAML::Clone marks its copy line 1).
void copy_marks(const YAML::Node& from, YAML::Node to) {
  set_node_mark(to, from.Mark());
  if (from.IsMap()) {
    auto b = to.begin();
    for (auto a = from.begin(); a != from.end() && b != to.end(); ++a, ++b) {
      copy_marks(a->first, b->first);
      copy_marks(a->second, b->second);
    }
  } else if (from.IsSequence()) {
    auto b = to.begin();
    for (auto a = from.begin(); a != from.end() && b != to.end(); ++a, ++b) copy_marks(*a, *b);
  }
}
YAML::Node clone_marked(const YAML::Node& n) {
  YAML::Node c = YAML::Clone(n);
  copy_marks(n, c);
  return c;
}
}  // namespace

std::vector<Override> overrides_from_flags(const std::vector<std::string>& flags, const std::string& prefix) {
  std::vector<Override> out;
  out.reserve(flags.size());
  for (const std::string& f : flags) out.push_back(Override{f, SourceLocation{prefix + f, 0, 0}});
  return out;
}

void apply_overrides(YAML::Node root, const std::vector<Override>& edits, const std::string& what) {
  for (size_t k = 0; k < edits.size(); ++k) {
    const std::string& kv = edits[k].key_value;
    const SourceLocation& where = edits[k].where;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(where, "expected key=value, e.g. offload.prefetch_size=3");
    YAML::Node value = parse(kv.substr(eq + 1), where.file);
    YAML::Mark m;
    m.pos = -1;
    m.line = kFirstOverrideLine - static_cast<int>(std::min<size_t>(k, 1u << 30));
    m.column = 0;
    mark_tree(value, m);
    apply_override(root, kv.substr(0, eq), value, what, where);
  }
}

InputError override_error(const InputError& e, const std::string& file, const std::vector<Override>& edits) {
  const int line = e.where().line;
  if (e.where().file != file || line > kFirstOverrideLine + 1) return e;
  const size_t k = static_cast<size_t>(kFirstOverrideLine + 1 - line);
  if (k >= edits.size()) return e;
  const std::string& kv = edits[k].key_value;
  const size_t eq = kv.find('=');
  return InputError(edits[k].where, fmt::format("{} ({} given for {} in {})", e.message(), kv.substr(eq + 1), kv.substr(0, eq), file));
}

void apply_override(YAML::Node root, const std::string& kv, const std::string& what, const SourceLocation& where) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(where, "expected key=value, e.g. offload.prefetch_size=3");
  apply_override(root, kv.substr(0, eq), parse(kv.substr(eq + 1), where.file), what, where);
}

void apply_override(YAML::Node root, const std::string& key, const YAML::Node& value, const std::string& what, const SourceLocation& where) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw InputError(where, fmt::format("empty part in key '{}': write keys as a.b.c", key));
    parts.push_back(p);
  }
  if (parts.empty()) throw InputError(where, "empty key");
  // yaml-cpp: Node::operator= copies content; reset() rebinds the handle.
  YAML::Node cur;
  cur.reset(root);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    YAML::Node next;
    if (cur.IsSequence()) {
      const bool digits = std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) {
        const size_t idx = std::stoul(part);
        if (idx >= cur.size())
          throw InputError(where, fmt::format("'{}' in key '{}': index {} is past the end of a list of {} in {}", part, key, idx, cur.size(), what));
        next.reset(cur[idx]);
      } else {
        // The item of that name; else every item of that role (an imported
        // topology's per-device lines: docs/formats/topology.md "Link names").
        std::vector<std::string> names, roles;
        bool found = false;
        std::vector<YAML::Node> of_role;
        for (size_t k = 0; k < cur.size(); ++k) {
          if (!cur[k].IsMap()) continue;
          if (cur[k]["name"].IsScalar()) {
            names.push_back(cur[k]["name"].Scalar());
            if (names.back() == part && !found) {
              next.reset(cur[k]);
              found = true;
            }
          }
          if (cur[k]["role"].IsScalar()) {
            const std::string& role = cur[k]["role"].Scalar();
            if (role == part) of_role.push_back(cur[k]);
            if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
          }
        }
        if (!found && !of_role.empty()) {
          std::string rest;
          for (size_t j = i + 1; j < parts.size(); ++j) rest += (rest.empty() ? "" : ".") + parts[j];
          for (YAML::Node item : of_role) {  // each its own copy: yaml-cpp's assignment shares the node
            if (rest.empty())
              item = clone_marked(value);
            else
              apply_override(item, rest, clone_marked(value), what, where);
          }
          return;
        }
        if (!found)
          throw InputError(where,
                           fmt::format("'{}' in key '{}': no item of that name{} in the list in {}; give an index (0..{}) or one of: {}", part, key,
                                       roles.empty() ? "" : " or role", what, cur.size() == 0 ? 0 : cur.size() - 1, fmt::join(names, ", ")) +
                               (roles.empty() ? "" : fmt::format(" (roles: {})", fmt::join(roles, ", "))));
      }
      if (last) {
        next = value;
        return;
      }
    } else {
      if (!cur.IsMap()) throw InputError(where, fmt::format("'{}' is not a mapping or list in {} (key '{}')", parts[i - 1], what, key));
      if (last) {
        cur[part] = value;
        return;
      }
      if (!cur[part].IsDefined() || cur[part].IsNull()) cur[part] = YAML::Node(YAML::NodeType::Map);
      next.reset(cur[part]);
    }
    cur.reset(next);
  }
}

std::string scalar_str(const std::string& file, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) throw InputError(location_of(file, n), fmt::format("{} must be a single value", what));
  return n.Scalar();
}

MapReader::MapReader(std::string file, YAML::Node node, std::string what, std::vector<std::string> known, YAML::Node origin)
    : file_(std::move(file)), node_(std::move(node)), origin_(origin.IsDefined() ? origin : node_), what_(std::move(what)) {
  if (!node_.IsMap()) throw InputError(location_of(file_, origin_), fmt::format("{} must be a mapping (key: value)", what_));
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    entries_.emplace_back(key, it->second);
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string near = closest_match(key, known);
    std::string msg = fmt::format("unknown key '{}' in {}", key, what_);
    if (!near.empty())
      msg += fmt::format("; did you mean '{}'?", near);
    else
      msg += fmt::format("; known keys: {}", fmt::join(known, ", "));
    throw InputError(key_location(key), msg);
  }
}

SourceLocation MapReader::key_location(const std::string& key) const {
  for (auto it = origin_.begin(); it != origin_.end(); ++it)
    if (it->first.as<std::string>() == key) return location_of(file_, it->first);
  return location_of(file_, origin_);
}

const YAML::Node* MapReader::find(const std::string& key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return v.IsDefined() && !v.IsNull() ? &v : nullptr;
  return nullptr;
}

bool MapReader::has(const std::string& key) const { return find(key) != nullptr; }

SourceLocation MapReader::where(const std::string& key) const {
  const YAML::Node n = origin_[key];
  if (n.IsDefined() && !n.IsNull()) return location_of(file_, n);
  return location_of(file_, origin_);
}

void MapReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(where(key), fmt::format("{} '{}': {}", what_, key, message));
}

void MapReader::fail_here(const std::string& message) const { throw InputError(location_of(file_, origin_), fmt::format("{}: {}", what_, message)); }

YAML::Node MapReader::get(const std::string& key) const {
  const YAML::Node* n = find(key);
  if (!n) throw InputError(location_of(file_, origin_), fmt::format("{} is missing the required key '{}'", what_, key));
  return *n;
}

std::string MapReader::str(const std::string& key) const {
  const YAML::Node n = get(key);
  if (!n.IsScalar()) fail(key, "must be a single value");
  return n.Scalar();
}

std::optional<std::string> MapReader::opt_str(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return str(key);
}

double MapReader::num(const std::string& key) const {
  const std::string s = str(key);
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument("trailing");
    if (!std::isfinite(v)) throw std::out_of_range("not finite");
    return v;
  } catch (const std::exception&) {
    fail(key, fmt::format("'{}' is not a finite number", s));
  }
}

std::optional<double> MapReader::opt_num(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return num(key);
}

int64_t MapReader::integer(const std::string& key) const {
  const std::string s = str(key);
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    fail(key, fmt::format("'{}' is not a whole number", s));
  }
}

std::optional<int64_t> MapReader::opt_int(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

int MapReader::int32(const std::string& key) const {
  const int64_t v = integer(key);
  if (v < INT32_MIN || v > INT32_MAX) fail(key, fmt::format("{} is out of range: at most {} in magnitude", v, INT32_MAX));
  return static_cast<int>(v);
}

std::optional<int> MapReader::opt_int32(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return int32(key);
}

bool MapReader::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string s = str(key);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(key, fmt::format("'{}' is not true or false", s));
}

Bytes MapReader::bytes(const std::string& key) const {
  const std::string s = str(key);
  try {
    return parse_bytes(s);
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

std::optional<Bytes> MapReader::opt_bytes(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return bytes(key);
}

Bandwidth MapReader::bandwidth(const std::string& key) const {
  const std::string s = str(key);
  try {
    return parse_bandwidth(s);
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

std::optional<Bandwidth> MapReader::opt_bandwidth(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return bandwidth(key);
}

Time MapReader::duration(const std::string& key) const {
  const std::string s = str(key);
  try {
    return parse_duration(s);
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

std::optional<Time> MapReader::opt_duration(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return duration(key);
}

std::string MapReader::choice(const std::string& key, const std::vector<std::string>& choices) const {
  const std::string s = str(key);
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  const std::string near = closest_match(s, choices);
  fail(key, fmt::format("'{}' is not one of {}{}", s, fmt::join(choices, ", "), near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
}

std::optional<std::string> MapReader::opt_choice(const std::string& key, const std::vector<std::string>& choices) const {
  if (!has(key)) return std::nullopt;
  return choice(key, choices);
}

}  // namespace osim
