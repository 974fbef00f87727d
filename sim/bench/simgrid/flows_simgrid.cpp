// The SimGrid side of the flow-solver comparison (docs/performance.md): runs
// an instance written by overlapsim_bench_flows --instance with SimGrid's s4u
// API and its max-min network model, and prints the makespan and wall time.
// Not part of overlapsim's build: SimGrid is built from its source for this
// benchmark only (compare.sh).
//
// The same instance: one SimGrid link per overlapsim resource (its capacity,
// no latency, shared), one host per node a flow starts or ends at, each
// (src, dst) pair's route the list of resources overlapsim routes it over (a
// coefficient n > 1 is the link n times). A flow's latency is a pure delay
// before its first byte in both models, so each flow is launched at
// start + latency; flows launched at one instant start from one actor.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace {

struct Flow {
  double launch_at = 0, bytes = 0, cap = 0;  // start + latency: its first byte
  int src = 0, dst = 0;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "flows_simgrid: %s\n", what.c_str());
  std::exit(2);
}

bool same_route(const std::vector<sg4::LinkInRoute>& a, const std::vector<sg4::LinkInRoute>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].get_link() != b[i].get_link()) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  if (argc != 2) fail("usage: flows_simgrid INSTANCE [--cfg=...]");
  const auto t_read = std::chrono::steady_clock::now();
  std::ifstream in(argv[1]);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != "overlapsim-flow-instance" || version != 1)
    fail(std::string(argv[1]) + ": not an overlapsim flow instance (v1)");
  size_t n_res = 0, n_flows = 0;
  if (!(in >> word >> n_res) || word != "resources") fail("expected 'resources N'");
  auto* zone = engine.get_netzone_root()->add_netzone_full("fabric");
  std::vector<const sg4::Link*> links(n_res);
  for (size_t r = 0; r < n_res; ++r) {
    double capacity = 0;
    if (!(in >> capacity)) fail("truncated resources");
    links[r] = zone->add_link("r" + std::to_string(r), capacity)->set_latency(0)->seal();
  }
  if (!(in >> word >> n_flows) || word != "flows") fail("expected 'flows N'");
  std::unordered_map<int, sg4::Host*> hosts;
  auto host = [&](int node) {
    auto [it, fresh] = hosts.try_emplace(node, nullptr);
    if (fresh) it->second = zone->add_host("n" + std::to_string(node), 1e9)->seal();
    return it->second;
  };
  std::unordered_map<uint64_t, std::vector<sg4::LinkInRoute>> routes;
  std::vector<Flow> flows(n_flows);
  for (Flow& f : flows) {
    double start = 0, latency = 0;
    size_t uses = 0;
    if (!(in >> start >> latency >> f.bytes >> f.cap >> f.src >> f.dst >> uses)) fail("truncated flows");
    f.launch_at = start + latency;
    std::vector<sg4::LinkInRoute> route;
    for (size_t k = 0; k < uses; ++k) {
      size_t r = 0;
      double coef = 0;
      if (!(in >> r >> coef) || r >= n_res) fail("bad route");
      if (coef != std::round(coef) || coef < 1) fail("a coefficient that is not a whole number: SimGrid links take 1 per use");
      for (int c = 0; c < static_cast<int>(coef); ++c) route.emplace_back(links[r]);
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(f.src)) << 32) | static_cast<uint32_t>(f.dst);
    auto [it, fresh] = routes.try_emplace(key, std::move(route));
    if (fresh)
      zone->add_route(host(f.src), host(f.dst), it->second, /*symmetrical=*/false);
    else if (!same_route(it->second, route))
      fail("two flows between one pair of nodes on different routes");
  }
  zone->seal();
  std::map<double, std::vector<const Flow*>> by_launch;
  for (const Flow& f : flows) by_launch[f.launch_at].push_back(&f);
  int starter = 0;
  for (const auto& [launch_at, group] : by_launch) {
    hosts.begin()->second->add_actor("launch" + std::to_string(starter++), [launch_at, &group, &hosts] {
      if (launch_at > 0) sg4::this_actor::sleep_for(launch_at);
      sg4::ActivitySet set;
      for (const Flow* f : group) {
        sg4::CommPtr c = sg4::Comm::sendto_init(hosts.at(f->src), hosts.at(f->dst));
        c->set_payload_size(static_cast<uint64_t>(f->bytes));
        if (f->cap > 0) c->set_rate(f->cap);
        set.push(c->start());
      }
      set.wait_all();
    });
  }
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  const auto t_run = std::chrono::steady_clock::now();
  engine.run();
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  const double makespan = sg4::Engine::get_clock();
  std::printf("%zu flows, %zu resources, %zu routes; platform and flows built in %.3f s\n", n_flows, n_res, routes.size(), read_s);
  std::printf("makespan %.0f ps (%.12f s); run %.3f s\n", makespan * 1e12, makespan, run_s);
  return 0;
}
