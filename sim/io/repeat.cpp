#include "io/repeat.hpp"

#include <cctype>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/yaml_reader.hpp"

namespace osim {

namespace {

class ExprParser {
 public:
  ExprParser(const std::string& s, const RepeatVars& vars) : s_(s), vars_(vars) {}
  int64_t parse() {
    const int64_t v = comparison();
    skip_ws();
    if (pos_ != s_.size()) fail(fmt::format("unexpected '{}'", s_.substr(pos_)));
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw std::invalid_argument(fmt::format("bad expression '{}': {}", s_, why)); }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip_ws();
    if (s_.compare(pos_, tok.size(), tok) == 0) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  int64_t comparison() {
    const int64_t a = sum();
    if (eat("==")) return a == sum();
    if (eat("!=")) return a != sum();
    if (eat("<=")) return a <= sum();
    if (eat(">=")) return a >= sum();
    if (eat("<")) return a < sum();
    if (eat(">")) return a > sum();
    return a;
  }
  // Arithmetic that refuses to overflow 64 bits (a result no item count can use).
  void overflow_if(bool overflowed) const {
    if (overflowed) fail("the value overflows 64 bits");
  }
  int64_t sum() {
    int64_t v = product();
    for (;;) {
      if (eat("+")) {
        const int64_t b = product();
        overflow_if(__builtin_add_overflow(v, b, &v));
      } else if (eat("-")) {
        const int64_t b = product();
        overflow_if(__builtin_sub_overflow(v, b, &v));
      } else {
        return v;
      }
    }
  }
  int64_t product() {
    int64_t v = factor();
    for (;;) {
      if (eat("*")) {
        const int64_t b = factor();
        overflow_if(__builtin_mul_overflow(v, b, &v));
      } else if (eat("/")) {
        const int64_t d = factor();
        if (d == 0) fail("division by zero");
        overflow_if(v == INT64_MIN && d == -1);
        v /= d;
      } else if (eat("%")) {
        const int64_t d = factor();
        if (d == 0) fail("division by zero");
        v = d == -1 ? 0 : v % d;
      } else
        return v;
    }
  }
  int64_t factor() {
    skip_ws();
    if (++depth_ > kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (eat("(")) {
      const int64_t v = sum();
      if (!eat(")")) fail("missing ')'");
      return v;
    }
    if (eat("-")) {
      const int64_t v = factor();
      overflow_if(v == INT64_MIN);
      return -v;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        int64_t r = 0;
        if (__builtin_mul_overflow(v, 10, &r) || __builtin_add_overflow(r, s_[pos_++] - '0', &v)) fail("the number overflows 64 bits");
      }
      return v;
    }
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      const size_t b = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      const std::string name = s_.substr(b, pos_ - b);
      auto it = vars_.find(name);
      if (it == vars_.end()) fail(fmt::format("unknown variable '{}' (this item repeats over: {})", name, var_list()));
      return it->second;
    }
    fail("expected a number, a variable or '('");
  }
  std::string var_list() const {
    std::vector<std::string> names;
    for (const auto& [k, v] : vars_) names.push_back(k);
    return names.empty() ? "nothing" : fmt::format("{}", fmt::join(names, ", "));
  }

  static constexpr int kMaxDepth = 200;
  const std::string& s_;
  const RepeatVars& vars_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// The scalars of a copied item that hold {expr}, with their text as written.
void templated_scalars(YAML::Node n, std::vector<std::pair<YAML::Node, std::string>>& out) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s.find('{') != std::string::npos) out.emplace_back(n, s);
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) templated_scalars(n[i], out);
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) templated_scalars(it->second, out);
  }
}

}  // namespace

int64_t eval_int_expr(const std::string& expr, const RepeatVars& vars) { return ExprParser(expr, vars).parse(); }

std::string substitute(const std::string& text, const RepeatVars& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      const size_t close = text.find('}', i);
      if (close == std::string::npos) throw std::invalid_argument(fmt::format("'{}' has '{{' without '}}'", text));
      out += std::to_string(eval_int_expr(text.substr(i + 1, close - i - 1), vars));
      i = close + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

void for_each_repeated(const std::string& file, const YAML::Node& list, const std::string& what, const RepeatVisitor& visit) {
  if (!list.IsSequence()) throw InputError(location_of(file, list), fmt::format("'{}' must be a list", what));
  for (size_t idx = 0; idx < list.size(); ++idx) {
    const YAML::Node item = list[idx];
    if (!item.IsMap()) throw InputError(location_of(file, item), fmt::format("each entry of '{}' must be a mapping", what));
    std::vector<std::pair<std::string, int64_t>> ranges;
    const YAML::Node rep = item["repeat"];
    if (rep.IsDefined() && !rep.IsNull()) {
      auto count_of = [&](const YAML::Node& n) {
        int64_t c = 0;
        try {
          c = n.as<int64_t>();
        } catch (const YAML::Exception&) {
          throw InputError(location_of(file, n), "repeat count must be a whole number");
        }
        if (c < 1) throw InputError(location_of(file, n), "repeat count must be at least 1");
        return c;
      };
      if (rep.IsScalar()) {
        ranges.emplace_back("i", count_of(rep));
      } else if (rep.IsMap()) {
        for (auto it = rep.begin(); it != rep.end(); ++it) {
          if (!it->first.IsScalar()) throw InputError(location_of(file, it->first), "a repeat variable is a name, e.g. {i: 4, j: 2}");
          const std::string var = it->first.Scalar();
          for (const auto& [seen, n] : ranges)
            if (seen == var) throw InputError(location_of(file, it->first), fmt::format("repeat variable '{}' is given twice", var));
          ranges.emplace_back(var, count_of(it->second));
        }
      } else {
        throw InputError(location_of(file, rep), "repeat must be a count (variable i) or a mapping like {i: 4, j: 2}");
      }
      int64_t combinations = 1;
      for (const auto& [var, n] : ranges) {
        if (n > limits::kMaxRepeatIterations / combinations)
          throw InputError(location_of(file, rep), fmt::format("this repeat runs through more than {} combinations (skipped ones included): "
                                                               "use fewer, or split the item",
                                                               limits::kMaxRepeatIterations));
        combinations *= n;
      }
    }
    const YAML::Node skip = item["skip_if"];
    if (skip.IsDefined() && ranges.empty()) throw InputError(location_of(file, skip), "skip_if needs a repeat on the same item");
    RepeatVars vars;
    for (const auto& [k, n] : ranges) vars[k] = 0;
    if (ranges.empty()) {  // as written: nothing to substitute
      visit(item, item, vars);
      continue;
    }
    // One copy per written item; each expansion rewrites its {expr} scalars.
    YAML::Node copy = YAML::Clone(item);
    copy.remove("repeat");
    copy.remove("skip_if");
    std::vector<std::pair<YAML::Node, std::string>> templated;
    templated_scalars(copy, templated);
    for (;;) {
      bool skipped = false;
      if (skip.IsDefined()) {
        try {
          skipped = eval_int_expr(skip.as<std::string>(), vars) != 0;
        } catch (const std::invalid_argument& e) {
          throw InputError(location_of(file, skip), e.what());
        }
      }
      if (!skipped) {
        try {
          for (auto& [n, text] : templated) n = substitute(text, vars);
        } catch (const std::invalid_argument& e) {
          throw InputError(location_of(file, item), e.what());
        }
        visit(copy, item, vars);
      }
      // next combination (last variable fastest)
      bool carry = true;
      for (size_t k = ranges.size(); carry && k > 0; --k) {
        int64_t& v = vars[ranges[k - 1].first];
        if (++v < ranges[k - 1].second)
          carry = false;
        else
          v = 0;
      }
      if (carry) break;
    }
  }
}

}  // namespace osim
