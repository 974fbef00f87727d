// What a run uses when no calibration is given: the measured calibration of
// its GPU's family that is shipped in configs/calibrations/ (built into the
// binary), not the datasheet peaks; those only where none of the family was
// measured, or when asked for (`--calibration none`).
#pragma once

#include <optional>
#include <string>

#include "gpu/params.hpp"
#include "hw/fabric.hpp"

namespace osim {

/// The GPU model's family as a token to find in a GPU's name ("H100-SXM5" ->
/// "H100", "RTX-4090" -> "RTX4090"), upper case, letters and digits only.
std::string gpu_family(const std::string& model);
/// Whether a GPU's name (e.g. "NVIDIA H100 80GB HBM3") holds the model's family (true where the model has none).
bool gpu_in_family(const std::string& gpu_name, const std::string& model);

struct MeasuredDefaults {
  std::string file;  // its path in the repository, e.g. configs/calibrations/h100-sxm.yaml
  CalibrationOrigin origin;
  const ModelParams& params;  // the built-in copy, parsed once for the program's life
};
/// The shipped calibration measured on GPUs of `gpu_model`'s family, of the
/// machine with the GPU count nearest `gpus` (the fewer on a tie); none where
/// that family was not measured.
std::optional<MeasuredDefaults> measured_defaults(const std::string& gpu_model, int gpus);
/// The measured defaults of the topology's GPUs (its first GPU's model, its GPU count).
std::optional<MeasuredDefaults> measured_defaults(const hw::Topology& topo);

/// The parameters a run starts from: `file`'s calibration; "none": the
/// model's datasheet defaults; empty: the measured defaults of the
/// topology's GPUs (datasheet defaults where there are none); with what
/// the run's closing note says of them (base_params_note).
struct BaseParams {
  ModelParams params;
  std::string file;          // the calibration file loaded, or the shipped one whose copy is built in
  bool built_in = false;     // the measured defaults
  CalibrationOrigin origin;  // what the calibration was measured on (empty: not recorded)
};
BaseParams base_params(const std::string& file, const hw::Topology& topo);
/// The line a run's summary opens with when its calibration was measured on another GPU than the
/// topology's (another family, or the PCIe card for an SXM module and back), or the topology has
/// links the calibration's copies never crossed (nvlink_c2c to the host, its copy-engine caps left at
/// the public GH200 figures): what it borrowed and what it cannot know. "" otherwise.
std::string borrowed_calibration_note(const BaseParams& b, const hw::Topology& topo);
/// The note a run prints after its summary: which parameters it used.
std::string base_params_note(const BaseParams& b, const hw::Topology* topo);

}  // namespace osim
