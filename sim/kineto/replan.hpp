// Re-plans the layer-weight prefetch an imported program holds
// (docs/import-trace.md, "Another prefetch depth").
//
// The pattern is sglang's LayerwiseOffloadManager (and
// validate/programs/dit_offload.py): each block's weights are one or more H2D
// copies on a copy stream, closed by an event record there, and the compute
// stream waits on that record before the block's first kernel. Depth P: the
// first P blocks' copies go before the first block; at every P-th block of a
// cycle (the model's layers) the copy stream waits for the compute stream
// (`copy.wait_stream(compute)`) and the next P blocks' copies are issued, so
// up to 2P blocks' buffers are on the GPU at once. Depth 0: each block's copies
// on the compute stream, followed by a synchronize (a blocking `.to()`).
//
// Re-planning keeps every other op where it was, as measured (kernels, host
// time, collectives), moves each block's copies (with the host time spent
// issuing them) to the place depth N issues them, and gives each block's
// buffer an allocation from its copies' issue to its block's end on the
// compute stream, so peak VRAM holds the blocks resident at once.
#pragma once

#include <string>

#include "schedule/schedule.hpp"

namespace osim::kineto {

struct ReplanOptions {
  int prefetch = 0;  // the depth asked: blocks copied ahead (0: a blocking copy before each block)
  int cycle = 0;     // blocks per cycle of the batches (the model's layers, the program's `L`); 0 = every block
};

/// What a re-plan found and did (the same on every rank).
struct ReplanSummary {
  int ranks = 0;
  int found = 0;                               // the depth the program had
  int asked = 0;                               // the depth written
  int cycle = 0;                               // blocks per cycle of the batches written
  int blocks = 0;                              // per rank
  int64_t copies = 0;                          // H2D copies of the blocks' weights, per rank
  int64_t moved = 0;                           // blocks whose copies are now issued before another block, per rank
  Bytes block_bytes = 0;                       // the largest block's copies
  int resident_found = 0, resident_asked = 0;  // blocks' buffers on the GPU at once, at most
  /// Lines for the terminal.
  std::string text() const;
};

/// `s` (an imported schedule) with its blocks' copies issued `o.prefetch`
/// blocks ahead. InputError at `where` (the trace) when no rank holds the
/// pattern, or holds it in a way this does not recognise: the message says
/// what was found (counts) and why it is refused.
Schedule replan_prefetch(const Schedule& s, const ReplanOptions& o, const std::string& where, ReplanSummary* summary = nullptr);

}  // namespace osim::kineto
