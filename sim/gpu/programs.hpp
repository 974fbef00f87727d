// What the executor needs to know of a program before it runs, built once per
// program and kind of GPU (ranks may share a program; kernel times depend
// only on the GPU's rates): each kernel's solo time, and the hardware queues'
// entries in the order the host will issue them.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpu/executor.hpp"

namespace osim::exec {

// A hardware queue entry. Which ops go to which queue, in what order and
// waiting on what, follows from the program alone (the host issues it in
// order), so entries are shared by the ranks that run it; the head's
// dispatch condition is in its entry, so a pump scans the queues without
// touching the ops.
struct QueueEntry {  // 16 bytes
  int32_t index;               // the op's index in the program
  int16_t stream, dep_stream;  // the op's stream; the stream it waits on, or -1
  int32_t pos, dep_pos;        // its place in its stream; dep_stream must have finished its op dep_pos
};

struct ProgramQueues {
  std::vector<std::vector<QueueEntry>> queues;   // per hardware queue
  std::vector<size_t> used;                      // the queues that get ops, in order
  std::vector<std::vector<int32_t>> stream_ops;  // per stream: its ops' indices, in order
  std::vector<int32_t> coll_ord;                 // per op: its place among the program's collectives, or -1
  int colls = 0;
};

struct ProgramInfo {
  std::vector<double> work;  // solo seconds per op (kernels)
  ProgramQueues q;
  bool p2p = false;          // has peer-to-peer copies
};

class Programs {
 public:
  /// The info of rank r's program on its GPU (built on first use). Throws
  /// InputError naming the op where a kernel needs a rate its GPU lacks.
  const ProgramInfo& of(const Schedule& s, int r, const hw::NodeSpec& gpu, const ModelParams& p);

 private:
  // The first GPU seen with the same rates (peak_tflops, hbm_bandwidth: all
  // kernel_time reads): eight GPUs of a DGX share one ProgramInfo.
  const hw::NodeSpec* compute_twin(const hw::NodeSpec* n);
  std::map<std::pair<const std::vector<Op>*, const hw::NodeSpec*>, ProgramInfo> programs_;
  std::vector<const hw::NodeSpec*> compute_kinds_;
};

}  // namespace osim::exec
