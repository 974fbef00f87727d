// What the executor's components share (internal to sim/gpu): the run's
// inputs, the event engine and flow model, each rank's identity and program,
// the ops' flags and records, the mirrored ranks. No component: each gets
// the ports it calls in its constructor (ports.hpp).
//
// An op is known by its rank and its place in the rank's program. What
// changes as it runs is one byte of flags and its record; a full workload
// holds ~10^6 ops, and writing more per op was much of a run's cost.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.hpp"
#include "core/flows.hpp"
#include "core/id_window.hpp"
#include "core/maxmin.hpp"
#include "core/window.hpp"
#include "gpu/executor.hpp"
#include "gpu/programs.hpp"

namespace osim::exec {

enum OpFlag : uint8_t { kDispatched = 1, kDone = 2, kArrived = 4 };

/// The ops that run on a stream (the rest are the host's alone).
inline bool is_gpu_op(const Op& op) {
  switch (op.kind) {
    case OpKind::Kernel:
    case OpKind::Memcpy:
    case OpKind::EventRecord:
    case OpKind::StreamWaitEvent:
    case OpKind::StreamWaitStream:
    case OpKind::Collective: return true;
    case OpKind::Marker:
    case OpKind::Free: return op.stream >= 0;
    default: return false;
  }
}

/// The stream ops that are CUDA calls, each an entry of CUDA's launch queue
/// (a marker or a free on a stream is the model's own bookkeeping).
inline bool takes_launch_slot(const Op& op) {
  switch (op.kind) {
    case OpKind::Kernel:
    case OpKind::Memcpy:
    case OpKind::EventRecord:
    case OpKind::StreamWaitEvent:
    case OpKind::StreamWaitStream:
    case OpKind::Collective: return true;
    default: return false;
  }
}

/// PyTorch's pairwise exchange (batch_isend_irecv): NCCL's point-to-point
/// calls tie the send and receive tensors to NCCL's stream, so the caching
/// allocator reuses them only once that stream has run the exchange, however
/// early the host frees them (Memory::hold_behind_stream).
inline bool holds_past_free(const Op& op, Framework f) {
  return f == Framework::PyTorch && op.kind == OpKind::Collective && op.coll == CollKind::AllToAll && op.algo == CollAlgo::Pairwise;
}

/// An event callback's argument: a rank and an op id.
inline uint64_t pack(int r, int id) { return (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(id); }
inline int packed_rank(uint64_t v) { return static_cast<int>(v >> 32); }
inline int packed_id(uint64_t v) { return static_cast<int>(v & 0xffffffffu); }

/// A mirror's copy or collective ended at another time than its
/// representative's: the ranks are not symmetric (the executor runs again
/// with every rank in full).
struct AsymmetricRanks : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Symmetric ranks (ExecOptions::symmetric_ranks): a mirror runs its
/// representative's timeline. Its host, streams, kernels and memory are not
/// simulated; its copies and collectives are (their flows share the fabric),
/// and each must end when the representative's same op does.
struct Mirrors {
  std::vector<int> rep;              // per rank: whose timeline it runs (itself: simulated in full); empty: off
  std::vector<std::vector<int>> of;  // per rank: its mirrors
  // Per representative, by op: when the first of its copies ended, how many
  // have not (programs generated as they run keep the lowest such op).
  std::vector<IdWindow<std::pair<Time, int>>> pending;
  [[nodiscard]] bool on() const { return !rep.empty(); }
  [[nodiscard]] bool is_mirror(int r) const { return on() && rep[static_cast<size_t>(r)] != r; }
  [[nodiscard]] int rep_of(int r) const { return on() ? rep[static_cast<size_t>(r)] : r; }
  [[nodiscard]] bool has_mirrors(int r) const { return on() && !of[static_cast<size_t>(r)].empty(); }
  /// Whether rank r's copies and collectives are checked against their mirrors' or representative's.
  [[nodiscard]] bool checked(int r) const { return is_mirror(r) || has_mirrors(r); }
};

/// Where a rank runs and what: fixed for the run.
struct RankInfo {
  int gpu = -1, cpu = -1;
  const hw::NodeSpec* node = nullptr;
  int sms = 1;
  ProgramInfo* program = nullptr;  // its program's ops, queue entries and kernel times
  Window<uint8_t> flags;           // per op: OpFlag bits
  Time last_end;                   // the latest end of any of its ops
};

struct ExecContext {
  ExecContext(const Schedule& schedule, const hw::Topology& topology, const ModelParams& params, const ExecOptions& options)
      : s(schedule), topo(topology), p(params), o(options), handoffs(p.handoff.any(p.overheads.event_gpu_time_copy)), flows(engine, sys) {}
  ExecContext(const ExecContext&) = delete;
  ExecContext& operator=(const ExecContext&) = delete;

  const Schedule& s;
  const hw::Topology& topo;
  const ModelParams p;
  const ExecOptions o;
  // A hand-off between engines is modelled: streams keep what they wait on.
  const bool handoffs;

  Engine engine;
  MaxMinSystem sys;
  FlowModel flows;

  std::vector<RankInfo> ranks;
  std::vector<std::vector<OpRecord>> records;  // with ExecOptions::keep_records, of the ranks kept
  std::vector<char> recorded;                  // per rank: its records kept (ExecOptions::record_ranks, their representatives)
  RunSpans spans;                              // without records, or with some ranks' alone
  bool spans_on = false;                       // spans are kept
  OpRecord scratch;                            // what records get without them
  int64_t most_ops_held = 0;                   // ExecResult::most_ops_held
  Mirrors mirrors;

  const Op& op_of(int r, int id) const { return ranks[static_cast<size_t>(r)].program->op(id); }
  uint8_t& flag(int r, int id) { return ranks[static_cast<size_t>(r)].flags[id]; }
  uint8_t flag(int r, int id) const { return ranks[static_cast<size_t>(r)].flags[id]; }
  /// Rank r's op's group (index into s.groups) and peer rank, roles resolved (Program::group_of).
  int group_of(int r, const Op& op) const { return s.programs[static_cast<size_t>(r)].group_of(op); }
  int peer_of(int r, const Op& op) const { return s.programs[static_cast<size_t>(r)].peer_of(op); }
  /// Whether rank r is traced (ExecOptions::record_ranks; empty: every rank): the links its transfers cross keep link samples.
  bool traced(int r) const { return o.record_ranks.empty() || o.record_ranks[static_cast<size_t>(r)]; }
  /// Whether rank r's records are kept.
  bool keeps(int r) const { return recorded[static_cast<size_t>(r)] != 0; }
  /// An op's record; of a rank whose records are not kept a scratch one, written and never read.
  OpRecord& record(int r, int index) { return keeps(r) ? records[static_cast<size_t>(r)][static_cast<size_t>(index)] : scratch; }
  /// A representative with mirrors dispatches copy or collective `id`: each of theirs must end with it.
  void mirrored_start(int r, int id);
  /// Rank r's copy or collective `id` ended (r a representative with mirrors, or a mirror).
  void mirrored_end(int r, int id);
  /// Where an op came from: file:line, or its place in a generated schedule.
  std::string where(int r, int index) const { return s.location(r, index).str(); }
};

}  // namespace osim::exec
