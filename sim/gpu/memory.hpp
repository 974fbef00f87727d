// GPU and pinned host memory: what each rank's allocations hold, the VRAM
// timeline and peak, and the refusal of one that does not fit.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"

namespace osim::exec {

class Memory {
 public:
  Memory(ExecContext& x, Routes& routes);
  /// Rank r, placed on its GPU: its capacity.
  void add_rank(int r) { ranks_[static_cast<size_t>(r)].capacity = x_.ranks[static_cast<size_t>(r)].node->gpu.memory.value_or(0); }
  /// Rank r's alloc / free op (at its program's place `pc`). Throws
  /// SimulationError when it does not fit its GPU or host memory.
  void alloc(int r, int pc, const Op& op);
  /// A free (at its program's place `pc`) takes the memory back: at once, or
  /// for a free on a stream, once the stream reaches it (free_behind_stream() has freed
  /// the tensor before).
  void free(int r, int pc, const Op& op);
  /// A free on a stream, issued by the host: the tensor is gone (peak
  /// allocated), its memory held until the stream reaches the free.
  /// `stream_count`: the stream's op count once the free is on it.
  void free_behind_stream(int r, int pc, const Op& op, int stream_count);
  /// Memory a collective's tensors hold past the host's free until the
  /// stream has run it (PyTorch's pairwise exchange: NCCL's point-to-point
  /// calls tie them to its stream): held, not live, from the host's issue of
  /// the op at place `pc` until the stream's count reaches `stream_count`,
  /// when free(r, pc, op) gives it back, as for a free on a stream.
  void hold_behind_stream(int r, int pc, int stream, int stream_count, Bytes bytes);
  /// Where a device alloc that does not fit can wait for a free on a stream
  /// to come back (the caching allocator waits for it before it gives up):
  /// the stream and the op count it must reach; nullopt when none is pending.
  std::optional<std::pair<int, int>> room_after(int r, const Op& op) const;
  /// What alloc `op` takes on rank r: its bytes, or for NCCL's buffers (an
  /// alloc naming a group) the calibration's figure for how r reaches the
  /// group's other members, with the process's part on its first (VramParams).
  Bytes bytes_of(int r, const Op& op) const;

  /// What rank r's live allocation `tag` holds (Weights if none is live).
  MemPart part_of(int r, const std::string& tag) const;
  /// The most bytes live tensors held (a free on a stream counted when the
  /// host issues it): the VRAM the job needs.
  Bytes peak(int r) const { return ranks_[static_cast<size_t>(r)].peak; }
  /// The most bytes the GPU held: live tensors and memory freed on a stream
  /// that has not reached the free yet (the allocator cannot reuse it).
  Bytes peak_held(int r) const { return ranks_[static_cast<size_t>(r)].peak_held; }
  /// What each part held when rank r's VRAM peaked (the first time it did).
  const std::array<Bytes, kMemParts>& peak_parts(int r) const { return ranks_[static_cast<size_t>(r)].peak_parts; }
  Bytes capacity(int r) const { return ranks_[static_cast<size_t>(r)].capacity; }
  /// Rank r's host issued marker `label`: a request stage's start ("stage
  /// NAME") opens a window of its VRAM, its end ("end of stage NAME") closes it.
  void marker(int r, const std::string& label);
  /// Per request stage of rank r, in order: its name and the most bytes live
  /// tensors held between its markers (as peak(), in the host's order).
  const std::vector<StagePeak>& stage_peaks(int r) const { return ranks_[static_cast<size_t>(r)].stage_peaks; }
  /// Per rank: (time, bytes in use) after each alloc/free (the trace's VRAM
  /// track; kept only for ranks whose records are kept, as the trace needs them).
  std::vector<std::vector<std::pair<Time, Bytes>>> take_timeline() { return std::move(timeline_); }

 private:
  // A live allocation (its op may be gone: a program generated as it runs
  // keeps only the ops in flight).
  struct Alloc {
    Bytes bytes = 0;
    MemPart part = MemPart::Weights;
    MemSpace space = MemSpace::Device;
  };
  void drop(int r, const Alloc& a);  // the tensor is gone
  struct Rank {
    std::map<std::string, Alloc> allocs;
    struct Pending {
      Alloc alloc;
      int stream, count;
    };
    std::map<int, Pending> pending;  // free on a stream (its place) -> its alloc, until the stream reaches it
    // The device ones by (count, place, stream): the first to come back first.
    std::set<std::tuple<int, int, int>> device_pending;
    Bytes vram = 0, peak = 0, capacity = 0;  // live tensors (what the job needs)
    Bytes held = 0, peak_held = 0;           // with the memory freed on streams not there yet
    int nccl_live = 0;                       // NCCL buffers allocated (the first carries the process's part)
    std::array<Bytes, kMemParts> parts{}, peak_parts{};
    std::vector<StagePeak> stage_peaks;
    bool in_stage = false;  // stage_peaks.back()'s window is open
  };
  ExecContext& x_;
  Routes& routes_;
  // Alloc `a` held until `stream` has run stream_count ops (free(r, pc, ...) then gives it back).
  static void pend(Rank& M, int pc, const Alloc& a, int stream, int stream_count);
  std::vector<Rank> ranks_;
  std::vector<std::vector<std::pair<Time, Bytes>>> timeline_;
  std::map<int, Bytes> pinned_;  // per CPU node
};

}  // namespace osim::exec
