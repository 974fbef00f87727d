#include "schedule/whatif.hpp"

#include <map>
#include <memory>

namespace osim {

Schedule apply_what_if(const Schedule& s, const WhatIf& w) {
  if (!w.any()) return s;
  Schedule out = s;
  // Ranks that share a program keep sharing the changed one.
  std::map<const std::vector<Op>*, std::shared_ptr<const std::vector<Op>>> changed;
  for (Program& p : out.programs) {
    auto& slot = changed[p.ops.get()];
    if (!slot) {
      auto ops = std::make_shared<std::vector<Op>>(*p.ops);
      for (Op& op : *ops) {
        if (w.remodel_kernels && op.kind == OpKind::Kernel && op.duration && (op.gemm || op.attention || op.flops > 0 || op.hbm_bytes > 0))
          op.duration.reset();
        if (w.host_memory && op.kind == OpKind::Memcpy && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H)) op.host_mem = *w.host_memory;
      }
      slot = std::move(ops);
    }
    p.ops = slot;
  }
  return out;
}

}  // namespace osim
