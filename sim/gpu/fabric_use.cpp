#include "gpu/fabric_use.hpp"

#include <algorithm>
#include <cmath>

#include "core/intervals.hpp"

namespace osim::exec {

FabricUse::FabricUse(ExecContext& x) : x_(x) {
  cons_ = x_.topo.install(x_.sys);
  dma_.dma = true;
  opts_.p2p_disabled = x_.s.runtime.nccl_p2p_disable;
  const size_t nres = x_.topo.resources().size();
  for (size_t i = 0; i < cons_.size(); ++i) {
    if (res_of_cons_.size() <= static_cast<size_t>(cons_[i])) res_of_cons_.resize(cons_[i] + 1, -1);
    res_of_cons_[cons_[i]] = static_cast<int>(i);
  }
  copy_bottlenecks.assign(nres + 1, {});
  collective_bottlenecks.assign(nres + 1, {});
  if (x_.o.link_samples) {
    usage_.assign(nres, 0.0);
    samples_ = WindowedSamples(x_.o.sample_windows);
    sampled_.assign(nres, x_.o.record_ranks.empty() ? 1 : 0);
    x_.flows.rate_observer = [this](FlowId f, double before, double after) {
      const Time now = x_.engine.now();
      for (const auto& u : flow_uses_[f]) {
        usage_[u.resource] += (after - before) * u.coefficient;
        if (std::abs(usage_[u.resource]) < 1e-3) usage_[u.resource] = 0;
        if (sampled_[static_cast<size_t>(u.resource)]) samples_.add(now, u.resource, usage_[u.resource]);
      }
      if (after == 0) flow_uses_.erase(f);
    };
  }
}

void FabricUse::add_constraint_alias(ConstraintId c, int res) {
  if (res_of_cons_.size() <= static_cast<size_t>(c)) res_of_cons_.resize(static_cast<size_t>(c) + 1, -1);
  res_of_cons_[static_cast<size_t>(c)] = res;
}

const hw::Route& FabricUse::route_between(int r, int peer, bool dma) {
  return x_.topo.route(x_.ranks[static_cast<size_t>(r)].gpu, x_.ranks[static_cast<size_t>(peer)].gpu, dma ? dma_ : opts_);
}

void FabricUse::set_flow_route(FlowRoute& fr, const hw::Route& route) const {
  fr.uses.clear();
  for (const auto& u : route.uses) fr.uses.push_back({cons_[u.resource], u.coefficient});
  fr.latency = route.latency;
  fr.kind = route.kind;
  fr.link_kinds = route.link_kinds;
  fr.known = true;
}

const FlowRoute& FabricUse::pair_route(int a, int b, bool dma) {
  const int n = x_.s.ranks();
  if (n > kRouteMemoRanks) {
    auto& memo = dma ? dma_routes_sparse_ : coll_routes_sparse_;
    const uint64_t key = static_cast<uint64_t>(a) * static_cast<uint64_t>(n) + static_cast<uint64_t>(b);
    const auto last_key = static_cast<int64_t>(2 * key + (dma ? 1 : 0));
    if (last_key_ == last_key) return *last_route_;
    last_key_ = last_key;
    if (auto it = memo.find(key); it != memo.end()) return *(last_route_ = &it->second);  // a map's values never move
    if (memo.size() >= kRouteMemoPairs) {  // an all-pairs exchange: routes on demand
      set_flow_route(scratch_route_, route_between(a, b, dma));
      return *(last_route_ = &scratch_route_);
    }
    FlowRoute& fr = memo[key];
    set_flow_route(fr, route_between(a, b, dma));
    return *(last_route_ = &fr);
  }
  auto& memo = dma ? dma_routes_ : coll_routes_;
  if (memo.empty()) memo.resize(static_cast<size_t>(n) * static_cast<size_t>(n));
  FlowRoute& fr = memo[static_cast<size_t>(a) * static_cast<size_t>(n) + static_cast<size_t>(b)];
  if (!fr.known) set_flow_route(fr, route_between(a, b, dma));
  return fr;
}

const FlowRoute& FabricUse::host_route(int r, bool h2d) {
  if (host_routes_.empty()) host_routes_.resize(2 * static_cast<size_t>(x_.s.ranks()));
  FlowRoute& fr = host_routes_[2 * static_cast<size_t>(r) + (h2d ? 0 : 1)];
  if (!fr.known) {
    const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
    set_flow_route(fr, h2d ? x_.topo.route(R.cpu, R.gpu, dma_) : x_.topo.route(R.gpu, R.cpu, dma_));
  }
  return fr;
}

const FlowRoute& FabricUse::switch_port(int r, bool up) {
  if (switch_routes_.empty()) switch_routes_.resize(2 * static_cast<size_t>(x_.s.ranks()));
  FlowRoute& fr = switch_routes_[2 * static_cast<size_t>(r) + (up ? 0 : 1)];
  if (!fr.known) set_flow_route(fr, x_.topo.switch_port(x_.ranks[static_cast<size_t>(r)].gpu, up));
  return fr;
}

void FabricUse::account(Transfer kind, const FlowRecord& rec) {
  std::vector<BottleneckStat>& s = stats(kind);
  for (const auto& [c, t] : rec.bottleneck_time) stat_of(s, c).time += t;
  ++stat_of(s, rec.main_bottleneck()).transfers;
  bound_span(kind, rec.main_bottleneck(), rec.first_byte, rec.end);
}

void FabricUse::bound_span(Transfer kind, ConstraintId c, Time first_byte, Time end) {
  if (end <= first_byte) return;
  std::vector<BottleneckStat>& s = stats(kind);
  const size_t i = static_cast<size_t>(&stat_of(s, c) - s.data());
  BoundSpans& b = bound_[kind == Transfer::Copy ? 0 : 1];
  if (b.spans.empty()) {
    b.spans.resize(s.size());
    b.merged.assign(s.size(), 0);
    b.dropped.assign(s.size(), 0);
  }
  auto& v = b.spans[i];
  v.emplace_back(first_byte.ps(), end.ps());
  if (v.size() >= 2 * b.merged[i] + 64) {  // merged as it doubles: memory for the disjoint spans, not every transfer
    merge_in_place(v);
    // Spans that end before every transfer of the kind still to come starts can join none of
    // theirs: only their length is kept (a run of many steps holds its last few spans, not one
    // per transfer).
    const auto settled = std::find_if(v.begin(), v.end(), [&](const auto& iv) { return iv.second > b.settled.ps(); });
    for (auto it = v.begin(); it != settled; ++it) b.dropped[i] += it->second - it->first;
    v.erase(v.begin(), settled);
    b.merged[i] = v.size();
  }
}

std::vector<Time> FabricUse::binding(Transfer kind) {
  std::vector<Time> out(stats(kind).size());
  BoundSpans& b = bound_[kind == Transfer::Copy ? 0 : 1];
  for (size_t i = 0; i < b.spans.size(); ++i) {
    merge_in_place(b.spans[i]);
    out[i] = Time::from_ps(b.dropped[i] + length(b.spans[i]));
  }
  return out;
}

BottleneckStat& FabricUse::stat_of(std::vector<BottleneckStat>& stats, ConstraintId c) const {
  const int res = c < 0 ? -1 : res_of_cons_[static_cast<size_t>(c)];
  return stats[res < 0 ? stats.size() - 1 : static_cast<size_t>(res)];
}

void FabricUse::observe(FlowId f, const FlowRoute& route, bool traced) {
  std::vector<hw::ResourceUse> out;
  for (const FlowUse& u : route.uses) {
    out.push_back({res_of_cons_[u.constraint], u.coefficient});
    if (traced) sampled_[static_cast<size_t>(out.back().resource)] = 1;
  }
  flow_uses_[f] = std::move(out);
}

std::vector<double> FabricUse::resource_bytes() const {
  std::vector<double> out(x_.topo.resources().size(), 0);
  const auto& cb = x_.flows.constraint_bytes();
  for (size_t i = 0; i < cons_.size(); ++i)
    if (static_cast<size_t>(cons_[i]) < cb.size()) out[i] = cb[cons_[i]];
  return out;
}

}  // namespace osim::exec
