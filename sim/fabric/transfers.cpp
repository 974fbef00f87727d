#include "transfers.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/flows.hpp"
#include "io/repeat.hpp"
#include "io/yaml_reader.hpp"

namespace osim {

namespace {

int resolve_node(const hw::Topology& topo, const MapReader& r, const std::string& key, const std::string& name) {
  const int i = topo.find(name);
  if (i >= 0) return i;
  std::vector<std::string> names{"host"};
  for (size_t k = 0; k < topo.node_count(); ++k) names.push_back(topo.node(static_cast<int>(k)).name);
  const std::string near = closest_match(name, names);
  r.fail(key, fmt::format("'{}' is not a node of topology '{}'{}", name, topo.name(), near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
}

Scenario parse(const YAML::Node& root, const std::string& file, const hw::Topology& topo) {
  MapReader top(file, root, "scenario", {"name", "description", "p2p_disabled", "transfers"});
  Scenario sc;
  sc.name = top.str("name");
  sc.description = top.opt_str("description").value_or("");
  sc.route_options.p2p_disabled = top.boolean("p2p_disabled", false);
  sc.route_options.dma = true;  // transfers are copy-engine copies
  const std::vector<std::string> known = {"name", "src", "dst", "bytes", "start", "cap"};
  for_each_repeated(file, top.get("transfers"), "transfers", [&](const YAML::Node& node, const YAML::Node& original, const RepeatVars&) {
    MapReader r(file, node, "transfer", known, original);
    TransferSpec t;
    t.where = location_of(file, original);
    {
      const std::string src = r.str("src"), dst = r.str("dst");
      if (src == "host" && dst == "host") r.fail_here("src and dst cannot both be 'host'");
      if (src != "host") t.src = resolve_node(topo, r, "src", src);
      if (dst != "host") t.dst = resolve_node(topo, r, "dst", dst);
      if (t.src < 0) t.src = topo.nearest_cpu(t.dst);
      if (t.dst < 0) t.dst = topo.nearest_cpu(t.src);
      if (t.src < 0 || t.dst < 0) r.fail_here("'host' needs the other end to have host memory on its host");
      if (t.src == t.dst) r.fail_here(fmt::format("src and dst are the same node '{}'", topo.node(t.src).name));
      t.bytes = r.bytes("bytes");
      t.start = r.opt_duration("start").value_or(Time::zero());
      if (auto cap = r.opt_bandwidth("cap")) t.rate_cap = cap->bytes_per_s;
      t.name = r.opt_str("name").value_or(fmt::format("{}->{}", topo.node(t.src).name, topo.node(t.dst).name));
      try {
        (void)topo.route(t.src, t.dst, sc.route_options);  // unroutable pairs fail here, with a location
      } catch (const InputError& e) {
        throw InputError(t.where, e.message());
      }
    }
    sc.transfers.push_back(std::move(t));
  });
  if (sc.transfers.empty()) top.fail("transfers", "is empty: list at least one transfer");
  return sc;
}

}  // namespace

Scenario parse_scenario_file(const std::string& path, const hw::Topology& topo) { return parse(load_yaml_file(path), path, topo); }

Scenario parse_scenario_string(const std::string& yaml, const std::string& name, const hw::Topology& topo) {
  return parse(load_yaml_string(yaml, name), name, topo);
}

FabricRun run_transfers(const hw::Topology& topo, const Scenario& sc) {
  Engine engine;
  MaxMinSystem sys;
  const std::vector<ConstraintId> cons = topo.install(sys);
  FlowModel flows(engine, sys);
  FabricRun run;
  run.transfers.resize(sc.transfers.size());
  auto start = [&](size_t i) {
    const TransferSpec& ts = sc.transfers[i];
    const hw::Route& route = topo.route(ts.src, ts.dst, sc.route_options);
    FlowSpec f;
    for (const hw::ResourceUse& u : route.uses) f.route.push_back({cons[u.resource], u.coefficient});
    f.bytes = static_cast<double>(ts.bytes);
    f.latency = route.latency;
    if (ts.rate_cap > 0) f.rate_cap = ts.rate_cap;
    run.transfers[i].spec = &ts;
    run.transfers[i].route_kind = route.kind;
    f.on_done = {[](void* ctx, uint64_t k, const FlowRecord& rec) {
                   FabricRun& fr = *static_cast<FabricRun*>(ctx);
                   TransferResult& res = fr.transfers[k];
                   res.first_byte = rec.first_byte;
                   res.end = rec.end;
                   res.achieved = rec.achieved();
                   res.main_bottleneck = rec.main_bottleneck();
                   fr.makespan = std::max(fr.makespan, rec.end);
                 },
                 &run, i};
    flows.start(std::move(f));
  };
  // One event per start time, starting its transfers in scenario order: what
  // one event per transfer gives (they were all scheduled before any other),
  // without an event for each of a million transfers.
  std::vector<size_t> order(sc.transfers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto earlier = [&](size_t a, size_t b) { return sc.transfers[a].start < sc.transfers[b].start; };
  if (!std::is_sorted(order.begin(), order.end(), earlier)) std::stable_sort(order.begin(), order.end(), earlier);
  for (size_t k = 0; k < order.size();) {
    size_t end = k + 1;
    while (end < order.size() && sc.transfers[order[end]].start == sc.transfers[order[k]].start) ++end;
    engine.at(sc.transfers[order[k]].start, [&order, &start, k, end] {
      for (size_t j = k; j < end; ++j) start(order[j]);
    });
    k = end;
  }
  engine.run();
  // Map constraint bytes back to resources (install() assigned ids in order).
  run.resource_bytes.assign(topo.resources().size(), 0.0);
  const auto& cb = flows.constraint_bytes();
  for (size_t r = 0; r < cons.size(); ++r)
    if (static_cast<size_t>(cons[r]) < cb.size()) run.resource_bytes[r] = cb[cons[r]];
  return run;
}

std::string format_fabric_report(const hw::Topology& topo, const Scenario& sc, const FabricRun& run) {
  std::string out;
  out += fmt::format("scenario {} on topology {}{}\n", sc.name, topo.name(), sc.route_options.p2p_disabled ? " (P2P disabled)" : "");
  out += fmt::format("{:<16} {:<16} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", "transfer", "route", "bytes", "start", "first byte", "end",
                     "duration", "achieved", "bottleneck");
  for (const TransferResult& r : run.transfers) {
    const TransferSpec& t = *r.spec;
    const std::string bottleneck = r.main_bottleneck < 0 ? "own cap" : topo.resources()[r.main_bottleneck].name;
    out += fmt::format("{:<16} {:<16} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", t.name, hw::to_string(r.route_kind),
                       format_bytes(static_cast<double>(t.bytes)), format_time(t.start), format_time(r.first_byte), format_time(r.end),
                       format_time(r.end - t.start), format_bandwidth(r.achieved), bottleneck);
  }
  out += fmt::format("makespan {}\n", format_time(run.makespan));
  out += "busiest resources (average over the makespan):\n";
  const double span = run.makespan.s();
  const std::vector<size_t> order = hw::by_utilisation(topo, run.resource_bytes, span);
  auto util = [&](size_t i) { return run.resource_bytes[i] / span / topo.resources()[i].capacity; };
  for (size_t k = 0; k < order.size() && k < 8; ++k) {
    const size_t i = order[k];
    out += fmt::format("  {:<28} {:>10} moved  {:>12} of {:>12}  {:5.1f} %\n", topo.resources()[i].name, format_bytes(run.resource_bytes[i]),
                       format_bandwidth({run.resource_bytes[i] / span}), format_bandwidth({topo.resources()[i].capacity}), 100.0 * util(i));
  }
  return out;
}

std::string format_topology_report(const hw::Topology& topo, const hw::RouteOptions& opt) {
  using hw::NodeKind;
  std::string out;
  const auto& spec = topo.spec();
  out += fmt::format("topology {}: {} nodes, {} links, {} host{}; P2P level {}, GPUDirect RDMA level {}{}\n", spec.name, spec.nodes.size(),
                     spec.links.size(), topo.host_count(), topo.host_count() == 1 ? "" : "s", hw::to_string(spec.p2p_level),
                     hw::to_string(spec.gdr_level), opt.p2p_disabled ? " (P2P disabled)" : "");
  if (!spec.description.empty()) out += spec.description + "\n";
  out += "\nnodes:\n";
  for (size_t i = 0; i < topo.node_count(); ++i) {
    const hw::NodeSpec& n = topo.node(static_cast<int>(i));
    std::string extra;
    if (n.kind == NodeKind::Gpu) {
      if (!n.gpu.model.empty()) extra += " " + n.gpu.model;
      if (n.gpu.memory) extra += " " + format_bytes(static_cast<double>(*n.gpu.memory));
      if (!n.gpu.p2p) extra += " no-p2p";
    }
    if (n.throughput) extra += " aggregate " + format_bandwidth(*n.throughput);
    if (n.memory_bandwidth) extra += " dram " + format_bandwidth(*n.memory_bandwidth);
    out += fmt::format("  {:<14} {:<14} host {}{}\n", n.name, hw::to_string(n.kind), topo.host_of(static_cast<int>(i)), extra);
  }
  const auto gpus = topo.gpus();
  out += "\nGPU path types (as nvidia-smi topo -m):\n";
  out += fmt::format("  {:<10}", "");
  for (int b : gpus) out += fmt::format(" {:>6}", topo.node(b).name);
  out += "\n";
  for (int a : gpus) {
    out += fmt::format("  {:<10}", topo.node(a).name);
    for (int b : gpus) out += fmt::format(" {:>6}", a == b ? std::string("X") : hw::to_string(topo.path_type(a, b)));
    out += "\n";
  }
  auto line = [&](int a, int b, const hw::RouteOptions& o) {
    const hw::Route& r = topo.route(a, b, o);
    return fmt::format("  {:<10} -> {:<10} {:<16} {:>12} {:>12}  {}\n", topo.node(a).name, topo.node(b).name, hw::to_string(r.kind),
                       format_bandwidth(r.bottleneck), format_time(r.latency), topo.describe(r));
  };
  // Host memory <-> GPU as copies (copy-engine DMA limits apply); GPU <-> GPU
  // as NCCL routes them.
  out += "\nroutes (kind, bottleneck bandwidth of a lone transfer, latency, path):\n";
  hw::RouteOptions copy = opt;
  copy.dma = true;
  for (int a : gpus) {
    const int cpu = topo.nearest_cpu(a);
    out += line(cpu, a, copy);
    out += line(a, cpu, copy);
    for (int b : gpus)
      if (a != b) out += line(a, b, opt);
  }
  return out;
}

}  // namespace osim
