// `repeat:` in YAML lists. An item such as
//     - {name: "gpu{i}", kind: gpu, repeat: 8}
//     - {a: "gpu{i}", b: "sw{i/2}", repeat: 8}
//     - {src: "gpu{i}", dst: "gpu{j}", repeat: {i: 4, j: 4}, skip_if: "i == j"}
// stands for one item per value of its variables (0..n-1; several variables
// give the cartesian product in the order written). `{expr}` in any string
// value is replaced by the integer expression over the variables
// (+ - * / % and parentheses; / and % are integer division and remainder).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace osim {

using RepeatVars = std::map<std::string, int64_t>;

/// Called once per expanded item, in order: `node` is the item with {expr}
/// substituted and repeat/skip_if removed, `original` the item as written
/// (for source locations), `vars` the variables' values. `node` is valid
/// only during the call: the next item reuses it (a 1,024-GPU topology
/// expands thousands of items; one copy per written item, not per expansion).
using RepeatVisitor = std::function<void(const YAML::Node& node, const YAML::Node& original, const RepeatVars& vars)>;

/// Expands every item of a YAML sequence. Throws InputError on a bad repeat
/// or expression. `what` names the list in messages ("nodes", "links").
void for_each_repeated(const std::string& file, const YAML::Node& list, const std::string& what, const RepeatVisitor& visit);

/// Evaluates an integer expression; throws std::invalid_argument.
int64_t eval_int_expr(const std::string& expr, const RepeatVars& vars);
/// Replaces every {expr} in `text`; throws std::invalid_argument.
std::string substitute(const std::string& text, const RepeatVars& vars);

}  // namespace osim
