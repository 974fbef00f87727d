// An effect family's calibration: the steps that fit its parameters from
// bench documents, and the replay of its testcases on the simulator. Each
// family lives in families/<family>.cpp and registers itself
// (OSIM_CALIB_FAMILY); calibrate runs every family's fit steps in stage
// order and hands each bench row to the family that owns its testcase key.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "calib/bench_doc.hpp"
#include "calib/calibration.hpp"
#include "hw/fabric.hpp"

namespace osim {

/// What a fit step reads and writes.
struct FitContext {
  const BenchDocs& docs;  // every document, as given
  const BenchDocs& runs;  // merged per kind (merge_bench_runs)
  const json& def;        // the merged NCCL-defaults machine run
  const hw::Topology& topo;
  Calibration& cal;
  ModelParams& p;         // cal.params
  int gpu0;                // the GPU the single-GPU testcases ran on
  double route_latency_us;  // host -> gpu0's route latency
  // Passed from step to step.
  std::optional<double> copy_burst_us[2];  // a gated copy burst's one-off cost (H2D, D2H), from copy_reps
  bool sustained_fitted = false;           // the sustained-load fit ran: back-to-back rates scale to burst by
  double sustained_scale = 1;              // 1 + sustained_slowdown
  /// The GPU time of the event closing a burst of copies, as the model has it.
  [[nodiscard]] double close_us() const;
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
  int bench_ranks;            // the interference testcases' rank count
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

struct FitStep {
  int stage;           // steps run in stage order (later ones read what earlier ones set)
  void (*run)(FitContext&);
};

struct CalibFamily {
  std::string name;                // its doc section and params struct
  std::vector<std::string> keys;   // the bench testcases it replays
  std::vector<FitStep> fits;
  // Replays one row of one of its keys; appends a Comparison per timed value
  // (`c` comes with its key set). A row outside what the topology holds adds none.
  void (*replay)(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out) = nullptr;
};

/// Every registered family, by name.
const std::vector<const CalibFamily*>& calib_families();
/// The family replaying testcase `key`, or null.
const CalibFamily* calib_family_for(const std::string& key);

struct CalibFamilyRegistration {
  explicit CalibFamilyRegistration(const CalibFamily& f);
};
#define OSIM_CALIB_FAMILY(var) static const ::osim::CalibFamilyRegistration var##_registration{var}

}  // namespace osim
