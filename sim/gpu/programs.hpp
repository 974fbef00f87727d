// What the executor needs to know of a program's ops, built once per program
// and kind of GPU (ranks may share a program; kernel times depend only on the
// GPU's rates): each kernel's solo time, and the hardware queues' entries in
// the order the host will issue them; for a program generated as it runs,
// built part by part and dropped once every rank running it is past.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/window.hpp"
#include "gpu/executor.hpp"

namespace osim::exec {

// Everything kernel_time() reads from an op: kernels of one shape are timed once.
struct KernelKey {
  int64_t duration_ps = -1;
  GemmShape gemm{-1, -1, -1};
  AttentionShape attention{-1, -1, -1, -1, -1};
  double flops = 0, hbm_bytes = 0;
  float efficiency = 0;
  DType dtype = DType::BF16;
  Access access = Access::Elementwise;
  int32_t norm_row = 0;
  ConvShape conv;
  static KernelKey of(const Op& op);
  bool operator==(const KernelKey& o) const;
};
struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const;
};

// A hardware queue entry. Which ops go to which queue, in what order and
// waiting on what, follows from the program alone (the host issues it in
// order), so entries are shared by the ranks that run it; the head's
// dispatch condition is in its entry, so a pump scans the queues without
// touching the ops.
struct QueueEntry {            // 16 bytes
  int32_t index;               // the op's index in the program
  int16_t stream, dep_stream;  // the op's stream; the stream it waits on, or -1
  int32_t pos, dep_pos;        // its place in its stream; dep_stream must have finished its op dep_pos
};

struct ProgramQueues {
  std::vector<Window<QueueEntry>> queues;   // per hardware queue
  std::vector<size_t> used;                 // the queues that get ops, in order
  std::vector<Window<int32_t>> stream_ops;  // per stream: its ops' places, in order
  Window<int32_t> coll_ord;                 // per op: its place among the program's collectives, or -1
  int colls = 0;
};

/// A program as the executor holds it: every op of a written (or wholly
/// generated) program; of one generated as it runs (Program::source), the
/// ops from the earliest any of its ranks still needs to the last generated.
/// Ops, and what is kept per op, are known by their place in the program.
class ProgramInfo {
 public:
  [[nodiscard]] const Op& op(int64_t i) const { return whole_ ? whole_[i] : window_[i]; }
  /// One past the last op generated (the program's size, for a whole one).
  [[nodiscard]] int64_t end() const { return q.coll_ord.end(); }
  [[nodiscard]] double work(int64_t i) const { return work_[i]; }  // solo seconds (kernels)
  [[nodiscard]] bool generated_as_run() const { return source_ != nullptr; }
  /// The ops held of a program generated as it runs (whole chunks of them).
  [[nodiscard]] int64_t held() const { return window_.end() - window_.begin(); }
  /// Appends the program's next part; false once none is left.
  bool generate();
  /// Drops what lies before: op places, each hardware queue's entries, each
  /// stream's places (the lowest any of the program's ranks still reads).
  void drop_before(int64_t op, const std::vector<int64_t>& queue_entry, const std::vector<int64_t>& stream_pos);

  ProgramQueues q;
  bool p2p = false;        // has peer-to-peer copies
  std::vector<int> ranks;  // the ranks that run it

 private:
  friend class Programs;
  void append(const Op& op, int64_t i);
  const Schedule* s_ = nullptr;
  const hw::NodeSpec* gpu_ = nullptr;
  const ModelParams* p_ = nullptr;
  const Op* whole_ = nullptr;  // a whole program's ops
  Window<Op> window_;          // else the ops held
  Window<double> work_;
  std::unique_ptr<OpSource> source_;
  std::vector<Op> part_;                                        // the part being appended
  std::vector<std::pair<int, int>> event_pos_;                  // per event: its latest record's stream and place
  std::unordered_map<KernelKey, double, KernelKeyHash> timed_;  // kernel times by shape
};

class Programs {
 public:
  /// The info of rank r's program on its GPU (built on first use; rank r
  /// joins its ranks). Throws InputError naming the op where a kernel needs
  /// a rate its GPU lacks (for a program generated as it runs: when generated).
  ProgramInfo& of(const Schedule& s, int r, const hw::NodeSpec& gpu, const ModelParams& p);

 private:
  // The first GPU seen with the same rates (peak_tflops, hbm_bandwidth: all
  // kernel_time reads): eight GPUs of a DGX share one ProgramInfo.
  const hw::NodeSpec* compute_twin(const hw::NodeSpec* n);
  std::map<std::pair<const std::vector<Op>*, const hw::NodeSpec*>, ProgramInfo> programs_;
  std::vector<const hw::NodeSpec*> compute_kinds_;
};

}  // namespace osim::exec
