// Calibration completeness: the fields a calibration leaves at the model's
// default although another measured machine of the same GPU family fitted
// them. `calibrate` and `reference` warn of each; `calibrate
// --fill-from-family` takes them from the nearest such machine and says so in
// the calibration's provenance (taken_from_family).
//
// The unit is a fit step (pipeline.hpp): its fields are fitted together, so
// they are missing, and taken, together. Only per-GPU physics may be taken
// (borrowable_field): what one GPU of the family does whatever box it sits
// in — its clock under load, its kernel rates, its per-call overheads and
// hand-offs, its memory. Never what depends on the GPU count or the box:
// copies (the host, its PCIe and memory limits), NCCL and the collectives'
// share of the clock, NVLink, interference between the engines, NCCL's VRAM.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "calib/calibrate.hpp"
#include "calib/calibration.hpp"
#include "hw/topology.hpp"
#include "gpu/params.hpp"

namespace osim {

/// Whether a field ("family.name") is per-GPU physics another machine of the
/// same GPU family may lend (the rule above).
bool borrowable_field(std::string_view field);

/// Another machine's calibration, as a gap may be filled from.
struct FamilySibling {
  std::string file;  // e.g. configs/calibrations/h200.yaml
  CalibrationOrigin origin;
  const ModelParams* params = nullptr;
  std::set<std::string> taken;  // the fields it took from another machine itself (not measured there)
};
/// The shipped calibrations (calibrations/shipped.hpp) as siblings.
std::vector<FamilySibling> shipped_siblings();
/// The fields a calibration's provenance says it took from the GPU family
/// (`taken_from_family:`'s keys).
std::set<std::string> taken_from_family(const std::string& calibration_text, const std::string& name);

/// One fit step's fields, all at their defaults here, that a sibling measured.
struct FamilyGap {
  std::string step;                      // "power attention_load"
  std::vector<std::string> fields;       // "power.sustained_attention_load", ...
  std::vector<std::string> here, there;  // their values as written, here (defaults) and on the sibling
  std::string file;                      // the sibling's calibration
  CalibrationOrigin origin;              // what the sibling measured on
  const ModelParams* params = nullptr;   // the sibling's
};

/// The gaps of `p` (a calibration of `gpus` GPUs of `gpu_model`, e.g. the
/// topology's "H200-SXM"): per borrowable fit step whose fields all hold
/// their defaults, the sibling of the same family (and the same PCIe card or
/// not) that fitted it, nearest in GPU count (the fewer on a tie). A
/// sibling's own taken fields count as not measured; a sibling whose file
/// has `self_file`'s name is skipped (an older copy of this calibration).
std::vector<FamilyGap> family_gaps(const ModelParams& p, const std::string& gpu_model, int gpus, const std::vector<FamilySibling>& siblings,
                                   const std::string& self_file = "");
/// The same for a calibration of `topo`'s GPUs, against the shipped calibrations.
std::vector<FamilyGap> family_gaps(const ModelParams& p, const hw::Topology& topo, const std::string& self_file);

/// One line (no newline) naming the gap's fields, their defaults here and
/// the sibling's values, and the flag that takes them.
std::string family_gap_warning(const FamilyGap& g);
/// One line (no newline) saying what was taken, from where.
std::string family_gap_taken(const FamilyGap& g);

/// The model's defaults with every gap's fields as its sibling has them: the
/// base to fit again from, so that the steps that replay the model (and run
/// after) see the taken fields.
ModelParams family_base(const std::vector<FamilyGap>& gaps);
/// Takes every gap's fields into `c` from its sibling, and records each in
/// the provenance: `taken_from_family:`, per field where from.
void take_from_family(Calibration& c, const std::vector<FamilyGap>& gaps);
/// `c`, fitted from `docs` on `topo`, fitted again from family_base(gaps)
/// and the gaps' fields taken (take_from_family); nothing where no gap.
void fill_from_family(Calibration& c, const BenchDocs& docs, const hw::Topology& topo, const std::vector<FamilyGap>& gaps);

/// The host's limits on copies from several GPUs at once (the copies'
/// *_aggregate tables) that `p` measured with fewer GPUs than `topo` has:
/// under one host bridge (host_*) or on the host (pageable_*). Beyond a
/// table's last entry only the topology's elements hold pinned copies, and
/// pageable ones each keep the last entry's share (gpu/copies.cpp). One
/// warning line naming each table and how many GPUs it covers; empty where
/// all cover it.
std::string host_limit_gap(const ModelParams& p, const hw::Topology& topo);

/// What a run holds that a calibration may not have measured.
struct RunUses {
  bool collectives = true;         // NCCL collectives
  bool framework_pairwise = true;  // a framework's pairwise all-to-all (PyTorch's batch_isend_irecv rounds)
};
/// What `p`, measured with `measured_gpus` GPUs, holds no measurement of on
/// `topo`'s larger GPU count, of what the run `uses`: NCCL's collectives
/// beyond the rank counts its tables cover (none: NCCL's own model stands
/// in), PyTorch's pairwise all-to-all (no table: its rounds cost what NCCL's
/// do, no framework time between them), and the host limits host_limit_gap
/// names. One line (no newline); empty where `measured_gpus` is unknown (0)
/// or not below the topology's count, or nothing is missing.
std::string gpu_count_gap(const ModelParams& p, int measured_gpus, const hw::Topology& topo, RunUses uses = {});

}  // namespace osim
