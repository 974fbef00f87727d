#include "schedule/whatif.hpp"

#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace osim {

Schedule apply_what_if(const Schedule& s, const WhatIf& w) {
  if (!w.any()) return s;
  if (w.remodel_kernels) {
    // Kernels of measured duration none of which carries a shape (a trace profiled without
    // record_shapes): nothing to remodel, which the user would otherwise not see.
    int64_t measured = 0, shaped = 0;
    for (const Program& p : s.programs)
      for (const Op& op : *p.ops)
        if (op.kind == OpKind::Kernel && op.duration) {
          ++measured;
          shaped += op.gemm || op.attention || op.flops > 0 || op.hbm_bytes > 0;
        }
    if (measured > 0 && shaped == 0)
      throw InputError(SourceLocation{},
                       fmt::format("--remodel-kernels: none of schedule '{}''s {} kernels of measured time carries a shape (GEMM, attention, "
                                   "HBM bytes): nothing to remodel; import a trace profiled with record_shapes=True",
                                   s.name, measured));
  }
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
