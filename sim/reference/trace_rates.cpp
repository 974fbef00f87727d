#include "reference/trace_rates.hpp"

#include <array>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "io/paths.hpp"

namespace osim {

std::string take_measured_rates(CopyParams& p, const RuntimeSettings::CopyRates& c, size_t first, bool keep_d2h) {
  using R = RuntimeSettings::CopyRates;
  const std::array<Bandwidth*, R::kFields.size()> to{&p.copy_engine_bandwidth.h2d, &p.copy_engine_bandwidth.d2h, &p.pageable_bandwidth.h2d,
                                                     &p.pageable_bandwidth.d2h};
  const std::array<Bandwidth, R::kFields.size()> was{p.copy_engine_bandwidth[Direction::H2D], p.copy_engine_bandwidth[Direction::D2H],
                                                     p.pageable_bandwidth[Direction::H2D], p.pageable_bandwidth[Direction::D2H]};
  std::string taken;
  for (size_t i = first; i < R::kFields.size(); ++i)
    if (const auto& [key, field] = R::kFields[i]; c.*field) {
      taken += fmt::format("{}{} {:.2f} GB/s (was {:.2f})", taken.empty() ? "" : ", ", key, (c.*field)->GBps(), was[i].GBps());
      if (keep_d2h && i % 2 == 0) *to[i + 1] = was[i + 1];
      *to[i] = *(c.*field);
    }
  return taken;
}

PageableRatesTaken take_pageable_rates(ModelParams& params, const Schedule& sched, bool other_topology) {
  const auto& c = sched.runtime.copy_rates;
  if (!c.h2d_pageable && !c.d2h_pageable) return {};
  bool pageable_copies = false;
  for (const Program& p : sched.programs)
    for (const Op& op : *p.ops)
      pageable_copies = pageable_copies || (op.kind == OpKind::Memcpy && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H) &&
                                            op.host_mem == HostMem::Pageable);
  if (!pageable_copies) return {};
  if (other_topology) return {PageableRatesTaken::State::other_topology, ""};
  // The pageable fields (from h2d_pageable on): an unmeasured D2H keeps the calibration's rate.
  return {PageableRatesTaken::State::taken, take_measured_rates(params.copies, c, 2, true)};
}

bool other_topology_than_named(const std::string& given, const std::string& schedule_path, const Schedule& sched) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string named = sched.topology.empty() ? "" : resolve_named_path(schedule_path, sched.topology);
  return !given.empty() && !named.empty() && fs::exists(named, ec) && !fs::equivalent(given, named, ec);
}

}  // namespace osim
