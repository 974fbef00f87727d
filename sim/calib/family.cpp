#include "calib/family.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "calib/pipeline.hpp"

namespace osim {

std::string_view fit_output_name(FitOutput o) {
  switch (o) {
    case FitOutput::copy_burst_h2d_us: return "copy_burst_h2d_us";
    case FitOutput::copy_burst_d2h_us: return "copy_burst_d2h_us";
    case FitOutput::sustained_scale: return "sustained_scale";
  }
  return "?";
}

FitContext::FitContext(const BenchDocs& d, const BenchDocs& r, const json& df, const hw::Topology& t, Calibration& c)
    : docs(d),
      runs(r),
      def(df),
      topo(t),
      cal(c),
      p(c.params),
      gpu0(t.gpus().front()),
      route_latency_us(t.route(t.nearest_cpu(gpu0), gpu0).latency.us()),
      host_c2c(t.route(t.nearest_cpu(gpu0), gpu0).crosses(hw::LinkKind::NvLinkC2C)) {}

PerDirection<Bandwidth>& FitContext::engine_bandwidth() const {
  return host_c2c ? p.copies.copy_engine_bandwidth_c2c : p.copies.copy_engine_bandwidth;
}

std::array<std::string_view, 2> FitContext::engine_fields() const {
  if (host_c2c) return {"copy_engine_bandwidth_c2c", "copy_engine_bandwidth_c2c_d2h"};
  return {"copy_engine_bandwidth", "copy_engine_bandwidth_d2h"};
}

double FitContext::close_us() const {
  return (p.overheads.event_gpu_time_copy >= Time::zero() ? p.overheads.event_gpu_time_copy : p.overheads.event_gpu_time).us();
}

namespace {
// A step touching an output its row does not list: the table is wrong.
void check_listed(const FitStep* step, const std::vector<FitOutput>& list, FitOutput o, const char* what) {
  if (step && std::find(list.begin(), list.end(), o) != list.end()) return;
  throw std::logic_error(fmt::format("fit step {}.{} {} {}, which its row of the pipeline table (calib/pipeline.cpp) does not list",
                                     step ? step->family : "?", step ? step->name : "?", what, fit_output_name(o)));
}
}  // namespace

void FitContext::produce(FitOutput o, double value) {
  check_listed(step_, step_ ? step_->produces : std::vector<FitOutput>{}, o, "produces");
  outputs_[static_cast<size_t>(o)] = value;
}

std::optional<double> FitContext::consume(FitOutput o) const {
  check_listed(step_, step_ ? step_->consumes : std::vector<FitOutput>{}, o, "consumes");
  return outputs_[static_cast<size_t>(o)];
}

void FitContext::run(const FitStep& step) {
  step_ = &step;
  step.run(*this);
  step_ = nullptr;
}

ReplayContext::ReplayContext(const json& d, const hw::Topology& t, const ModelParams& prm)
    : doc(d),
      topo(t),
      params(prm),
      p(prm),
      p2p_off(p2p_disabled_run(d)),
      ngpu(static_cast<int>(t.gpus().size())),
      bench_ranks(interference_ranks(d)) {
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
}

}  // namespace osim
