#include "gpu/memory.hpp"

#include <algorithm>
#include <cassert>
#include <string_view>

#include <fmt/format.h>

#include "schedule/stage_spans.hpp"

namespace osim::exec {

Memory::Memory(ExecContext& x, Routes& routes)
    : x_(x), routes_(routes), ranks_(static_cast<size_t>(x.s.ranks())), timeline_(static_cast<size_t>(x.s.ranks())) {}

Bytes Memory::bytes_of(int r, const Op& op) const {
  if (op.group == -1) return op.bytes;
  // A peer NCCL reaches peer to peer holds buffers on this GPU; through host
  // memory they sit in host memory and the communicator's part is smaller.
  // A peer's buffers are a send and a receive connection: all-to-alls
  // connect both ways to every other member, a ring exchange sends to the
  // next member and receives from the previous (one peer's worth, whatever
  // the ring's size), collectives hold NCCL's ring and tree channels (one
  // figure, whatever the group's size).
  const std::vector<int>& members = x_.s.groups[static_cast<size_t>(x_.group_of(r, op))].ranks;
  auto p2p = [&](int peer) { return peer != r && !through_host(routes_.pair_route(r, peer, false).kind); };
  int p2p_connections = 0;  // one way each
  if (op.nccl_runs & kNcclAllToAll) {
    p2p_connections = 2 * static_cast<int>(std::count_if(members.begin(), members.end(), p2p));
  } else if (op.nccl_runs & kNcclRingExchange) {
    const size_t n = members.size(), i = static_cast<size_t>(std::find(members.begin(), members.end(), r) - members.begin());
    p2p_connections = int{p2p(members[(i + 1) % n])} + int{p2p(members[(i + n - 1) % n])};
  }
  const bool collectives = (op.nccl_runs & kNcclCollectives) && std::any_of(members.begin(), members.end(), p2p);
  const VramParams& v = x_.p.vram;
  const Bytes process = ranks_[static_cast<size_t>(r)].nccl_live == 0 ? v.nccl_process : 0;  // with the rank's first communicator
  if (p2p_connections == 0 && !collectives) return process + v.nccl_via_host;
  return process + v.nccl_communicator + v.nccl_peer * p2p_connections / 2 + (collectives ? v.nccl_collective : 0);
}

void Memory::alloc(int r, int pc, const Op& op) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  const Bytes bytes = bytes_of(r, op);
  if (op.space == MemSpace::Device) {
    if (M.capacity > 0 && M.held + bytes > M.capacity)
      throw SimulationError(fmt::format("{}: rank {} ({}) runs out of GPU memory: alloc '{}' of {} needs {} with {} already in use of {} capacity",
                                        x_.where(r, pc), r, R.node->name, op.label, format_bytes(static_cast<double>(bytes)),
                                        format_bytes(static_cast<double>(M.held + bytes)), format_bytes(static_cast<double>(M.held)),
                                        format_bytes(static_cast<double>(M.capacity))));
    M.held += bytes;
    M.peak_held = std::max(M.peak_held, M.held);
    M.vram += bytes;
    M.parts[static_cast<size_t>(op.part)] += bytes;
    if (M.vram > M.peak) {
      M.peak = M.vram;
      M.peak_parts = M.parts;
    }
    if (M.in_stage && M.vram > M.stage_peaks.back().vram) {
      M.stage_peaks.back().vram = M.vram;
      M.stage_peaks.back().parts = M.parts;
    }
    if (x_.keeps(r)) timeline_[static_cast<size_t>(r)].emplace_back(x_.engine.now(), M.vram);
  } else {
    const hw::NodeSpec& cpu = x_.topo.node(R.cpu);
    Bytes& used = pinned_[R.cpu];
    if (cpu.memory && used + bytes > *cpu.memory)
      throw SimulationError(fmt::format("{}: rank {} runs out of host memory on {}: alloc '{}' of {} with {} pinned of {}", x_.where(r, pc), r,
                                        cpu.name, op.label, format_bytes(static_cast<double>(bytes)), format_bytes(static_cast<double>(used)),
                                        format_bytes(static_cast<double>(*cpu.memory))));
    used += bytes;
  }
  M.allocs[op.label] = Alloc{bytes, op.part, op.space};
  if (op.part == MemPart::Comm) ++M.nccl_live;
}

void Memory::marker(int r, const std::string& label) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  if (label.rfind(kStageMarker, 0) == 0) {
    M.stage_peaks.push_back({label.substr(std::string_view(kStageMarker).size()), M.vram, M.parts});
    M.in_stage = true;
  } else if (label.rfind(kStageEndMarker, 0) == 0) {
    M.in_stage = false;
  }
}

MemPart Memory::part_of(int r, const std::string& tag) const {
  const auto& allocs = ranks_[static_cast<size_t>(r)].allocs;
  const auto it = allocs.find(tag);
  return it == allocs.end() ? MemPart::Weights : it->second.part;
}

void Memory::free_behind_stream(int r, int pc, const Op& op, int stream_count) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  auto it = M.allocs.find(op.label);
  assert(it != M.allocs.end());
  const Alloc a = it->second;
  if (a.space == MemSpace::Device) drop(r, a);
  pend(M, pc, a, op.stream, stream_count);
  M.allocs.erase(it);
}

void Memory::hold_behind_stream(int r, int pc, int stream, int stream_count, Bytes bytes) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  M.held += bytes;
  M.peak_held = std::max(M.peak_held, M.held);
  pend(M, pc, Alloc{bytes, MemPart::Activations, MemSpace::Device}, stream, stream_count);
}

void Memory::pend(Rank& M, int pc, const Alloc& a, int stream, int stream_count) {
  M.pending[pc] = {a, stream, stream_count};
  if (a.space == MemSpace::Device) M.device_pending.emplace(stream_count, pc, stream);
}

std::optional<std::pair<int, int>> Memory::room_after(int r, const Op& op) const {
  const Rank& M = ranks_[static_cast<size_t>(r)];
  if (op.space != MemSpace::Device || M.capacity == 0 || M.held + bytes_of(r, op) <= M.capacity) return std::nullopt;
  if (M.device_pending.empty()) return std::nullopt;
  const auto& [count, pc, stream] = *M.device_pending.begin();
  return std::make_pair(stream, count);
}

void Memory::drop(int r, const Alloc& a) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  M.vram -= a.bytes;
  M.parts[static_cast<size_t>(a.part)] -= a.bytes;
  if (x_.keeps(r)) timeline_[static_cast<size_t>(r)].emplace_back(x_.engine.now(), M.vram);
}

void Memory::free(int r, int pc, const Op& op) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  Alloc a;
  if (auto p = M.pending.find(pc); p != M.pending.end()) {
    a = p->second.alloc;  // its tensor dropped when the host freed it
    if (a.space == MemSpace::Device) M.device_pending.erase({p->second.count, pc, p->second.stream});
    M.pending.erase(p);
  } else {
    auto it = M.allocs.find(op.label);
    assert(it != M.allocs.end());
    a = it->second;
    M.allocs.erase(it);
    if (a.space == MemSpace::Device) drop(r, a);
  }
  if (a.space == MemSpace::Device)
    M.held -= a.bytes;
  else
    pinned_[x_.ranks[static_cast<size_t>(r)].cpu] -= a.bytes;
  if (a.part == MemPart::Comm) --M.nccl_live;
}

}  // namespace osim::exec
