#include "calib/family.hpp"

#include <algorithm>
#include <cassert>

namespace osim {

namespace {
std::vector<const CalibFamily*>& registry() {
  static std::vector<const CalibFamily*> r;
  return r;
}

// No key of `f` is another registered family's.
[[maybe_unused]] bool keys_unclaimed(const CalibFamily& f) {
  for (const CalibFamily* g : registry())
    for (const std::string& k : f.keys)
      if (std::find(g->keys.begin(), g->keys.end(), k) != g->keys.end()) return false;
  return true;
}

}  // namespace

CalibFamilyRegistration::CalibFamilyRegistration(const CalibFamily& f) {
  assert(keys_unclaimed(f) && "a testcase key belongs to one family");
  auto& r = registry();
  r.insert(std::upper_bound(r.begin(), r.end(), &f, [](const CalibFamily* a, const CalibFamily* b) { return a->name < b->name; }), &f);
}

const std::vector<const CalibFamily*>& calib_families() { return registry(); }

const CalibFamily* calib_family_for(const std::string& key) {
  for (const CalibFamily* f : registry())
    if (std::find(f->keys.begin(), f->keys.end(), key) != f->keys.end()) return f;
  return nullptr;
}

double FitContext::close_us() const {
  return (p.overheads.event_gpu_time_copy >= Time::zero() ? p.overheads.event_gpu_time_copy : p.overheads.event_gpu_time).us();
}

ReplayContext::ReplayContext(const json& d, const hw::Topology& t, const ModelParams& prm)
    : doc(d), topo(t), params(prm), p(prm), p2p_off(p2p_disabled_run(d)), ngpu(static_cast<int>(t.gpus().size())), bench_ranks(interference_ranks(d)) {
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
}

}  // namespace osim
