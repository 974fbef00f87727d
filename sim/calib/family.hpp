// What an effect family's calibration steps work on. A family (families/<family>.cpp,
// its functions declared in families/steps.hpp) fits its parameters from bench
// documents and replays its testcases on the simulator; the calibration pipeline
// (pipeline.hpp) says which step runs when and which replay takes which bench key.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "calib/bench_doc.hpp"
#include "calib/calibration.hpp"
#include "hw/fabric.hpp"

namespace osim {

struct FitStep;

/// A value one family's fit step hands to another family's: not a model
/// field, produced by the one step of the pipeline table that lists it under
/// `produces`, read by later steps that list it under `consumes`.
enum class FitOutput {
  copy_burst_h2d_us,  // a gated burst of H2D copies' one-off cost (handoff, from copy_reps); the copies' pinned lines hold it
  copy_burst_d2h_us,  // the same for D2H copies
  sustained_scale,    // 1 + sustained_slowdown as the sustained-load fit left it: back-to-back rates scale to burst by it
};
inline constexpr size_t kFitOutputs = 3;
std::string_view fit_output_name(FitOutput o);

/// What a fit step reads (the documents, the topology), the calibration it
/// adds to, and the cross-family values of the steps before it.
class FitContext {
 public:
  FitContext(const BenchDocs& docs, const BenchDocs& runs, const json& def, const hw::Topology& topo, Calibration& cal);
  const BenchDocs& docs;  // every document, as given
  const BenchDocs& runs;  // merged per kind (merge_bench_runs)
  const json& def;        // the merged NCCL-defaults machine run
  const hw::Topology& topo;
  Calibration& cal;
  ModelParams& p;           // cal.params
  int gpu0;                 // the GPU the single-GPU testcases ran on
  double route_latency_us;  // host -> gpu0's route latency
  bool host_c2c;            // gpu0's host route crosses nvlink_c2c (a Grace Hopper's), not PCIe
  /// The copy engine's caps over gpu0's kind of host link, which its pinned
  /// copies measure: copy_engine_bandwidth_c2c (_c2c_d2h) over nvlink_c2c,
  /// else PCIe's copy_engine_bandwidth (_d2h). Over nvlink_c2c never
  /// unlimited: the public GH200 defaults stand until the pinned fit sets it.
  [[nodiscard]] PerDirection<Bandwidth>& engine_bandwidth() const;
  /// Those caps' calibration field names (H2D, D2H).
  [[nodiscard]] std::array<std::string_view, 2> engine_fields() const;
  /// The GPU time of the event closing a burst of copies, as the model has it.
  [[nodiscard]] double close_us() const;

  /// Sets output `o`; the running step's row must list it under `produces`
  /// (std::logic_error otherwise).
  void produce(FitOutput o, double value);
  /// Output `o`, none where its producer did not set it; the running step's
  /// row must list it under `consumes` (std::logic_error otherwise).
  [[nodiscard]] std::optional<double> consume(FitOutput o) const;

  /// Runs `step` on this context (run_fit_pipeline's, and tests').
  void run(const FitStep& step);

 private:
  const FitStep* step_ = nullptr;
  std::array<std::optional<double>, kFitOutputs> outputs_;
};

/// What a family's replay of one row reads: the document, the parameters
/// (p: host overheads zeroed: a replay takes the op alone), and state the
/// family keeps across the document's rows.
class ReplayContext {
 public:
  ReplayContext(const json& doc, const hw::Topology& topo, const ModelParams& params);
  const json& doc;
  const hw::Topology& topo;
  const ModelParams& params;  // as calibrated
  ModelParams p;              // for replays
  bool p2p_off;
  int ngpu;
  int bench_ranks;  // the interference testcases' rank count
  /// The family's own per-document state (created on first use).
  template <class S>
  S& state() {
    std::shared_ptr<void>& s = states_[std::type_index(typeid(S))];
    if (!s) s = std::make_shared<S>();
    return *static_cast<S*>(s.get());
  }

 private:
  std::map<std::type_index, std::shared_ptr<void>> states_;
};

/// A fit step: fits fields of `cal.params` from the documents.
using FitFn = void (*)(FitContext& ctx);
/// A replay of one row of a bench key: appends a Comparison per timed value
/// (`c` comes with its key set); a row outside what the topology holds adds none.
using ReplayFn = void (*)(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);

}  // namespace osim
