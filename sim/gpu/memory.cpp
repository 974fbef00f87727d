#include "gpu/memory.hpp"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

namespace osim::exec {

Memory::Memory(ExecContext& x) : x_(x), ranks_(static_cast<size_t>(x.s.ranks())), timeline_(static_cast<size_t>(x.s.ranks())) {
  for (size_t r = 0; r < ranks_.size(); ++r) ranks_[r].capacity = x_.ranks[r].node->gpu.memory.value_or(0);
}

void Memory::alloc(int r, int pc, const Op& op) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  if (op.space == MemSpace::Device) {
    if (M.capacity > 0 && M.vram + op.bytes > M.capacity)
      throw SimulationError(fmt::format("{}: rank {} ({}) runs out of GPU memory: alloc '{}' of {} needs {} with {} already in use of {} capacity",
                                        x_.where(r, pc), r, R.node->name, op.label, format_bytes(static_cast<double>(op.bytes)),
                                        format_bytes(static_cast<double>(M.vram + op.bytes)), format_bytes(static_cast<double>(M.vram)),
                                        format_bytes(static_cast<double>(M.capacity))));
    M.vram += op.bytes;
    M.peak = std::max(M.peak, M.vram);
    timeline_[static_cast<size_t>(r)].emplace_back(x_.engine.now(), M.vram);
  } else {
    const hw::NodeSpec& cpu = x_.topo.node(R.cpu);
    Bytes& used = pinned_[R.cpu];
    if (cpu.memory && used + op.bytes > *cpu.memory)
      throw SimulationError(fmt::format("{}: rank {} runs out of host memory on {}: alloc '{}' of {} with {} pinned of {}", x_.where(r, pc), r,
                                        cpu.name, op.label, format_bytes(static_cast<double>(op.bytes)), format_bytes(static_cast<double>(used)),
                                        format_bytes(static_cast<double>(*cpu.memory))));
    used += op.bytes;
  }
  M.allocs[op.label] = {op.bytes, op.space};
}

void Memory::free(int r, const Op& op) {
  Rank& M = ranks_[static_cast<size_t>(r)];
  auto it = M.allocs.find(op.label);
  assert(it != M.allocs.end());
  if (it->second.second == MemSpace::Device) {
    M.vram -= it->second.first;
    timeline_[static_cast<size_t>(r)].emplace_back(x_.engine.now(), M.vram);
  } else {
    pinned_[x_.ranks[static_cast<size_t>(r)].cpu] -= it->second.first;
  }
  M.allocs.erase(it);
}

}  // namespace osim::exec
