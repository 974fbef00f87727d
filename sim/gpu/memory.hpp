// GPU and pinned host memory: what each rank's allocations hold, the VRAM
// timeline and peak, and the refusal of one that does not fit.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/exec_context.hpp"

namespace osim::exec {

class Memory {
 public:
  explicit Memory(ExecContext& x);
  /// Rank r's alloc / free op (at its program's place `pc`). Throws
  /// SimulationError when it does not fit its GPU or host memory.
  void alloc(int r, int pc, const Op& op);
  void free(int r, const Op& op);

  Bytes peak(int r) const { return ranks_[static_cast<size_t>(r)].peak; }
  Bytes capacity(int r) const { return ranks_[static_cast<size_t>(r)].capacity; }
  /// Per rank: (time, bytes in use) after each alloc/free.
  std::vector<std::vector<std::pair<Time, Bytes>>> take_timeline() { return std::move(timeline_); }

 private:
  struct Rank {
    std::map<std::string, std::pair<Bytes, MemSpace>> allocs;
    Bytes vram = 0, peak = 0, capacity = 0;
  };
  ExecContext& x_;
  std::vector<Rank> ranks_;
  std::vector<std::vector<std::pair<Time, Bytes>>> timeline_;
  std::map<int, Bytes> pinned_;  // per CPU node
};

}  // namespace osim::exec
