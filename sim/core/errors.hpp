// Typed exceptions. Library code throws these; it never calls exit().
// InputError: something a user wrote is wrong (a file, a flag); the message
// names where (file:line:col) and what to do. SimulationError: the input was
// well-formed but the simulated program cannot proceed (deadlock, OOM, ...).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace osim {

struct SourceLocation {
  std::string file;  // empty when the input did not come from a file
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown
  [[nodiscard]] std::string str() const;
};

class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, const std::string& message);
  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string message_;
};

class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The closest candidate to `word` by edit distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace osim
