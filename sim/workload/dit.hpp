// Inference workloads of a model written as blocks (Wan2.1 / Wan2.2 14B and
// custom dims, Flux.1, HunyuanVideo, Llama-style decoders, or blocks of the
// user's own), expanded into a Schedule: one program per rank with the
// kernels, collectives and weight copies of every step. docs/formats/workload.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "gpu/params.hpp"
#include "schedule/schedule.hpp"
#include "workload/blocks.hpp"
#include "workload/stages.hpp"
#include "workload/placement.hpp"

namespace YAML {
class Node;
}

namespace osim {

enum class OffloadPolicy { None, Blocking, Layerwise, Block, Phase };
enum class CfgMode { None, Serial, Parallel };
// How a GEMM runs beside its tensor-parallel all-gather / reduce-scatter
// (Transformer Engine's userbuffers methods): in line, in pipelined chunks
// of the collective, or as a ring of point-to-point exchanges.
enum class TpOverlap { None, Chunked, RingExchange };
// Where the models outside the blocks (text encoder, VAE) are while the
// steps run: auto = resident without offloading, else offloaded.
enum class OutsidePlace { Auto, Resident, Offloaded, None };
// How an fp8 model's GEMM gets its bf16 input into fp8: one fused kernel
// (read bf16, write fp8: what fp8 serving stacks run), eager PyTorch's
// multiply by the scale then cast (two kernels), or not at all (the inputs
// are fp8 already).
enum class Fp8InputQuant { Fused, ScaleThenCast, None };

struct DitModel {
  std::string preset;  // "wan2.1-14b", "wan2.2-14b", "wan2.2-ti2v-5b", "custom" (Wan-shaped), a block preset, or "blocks" (the file's own)
  BlockModel spec;     // what a forward runs, block by block
  // Wan-shaped models: the dims the spec is written from.
  int blocks = 40;
  int64_t hidden = 5120;
  int64_t ffn = 13824;
  int heads = 40;
  int head_dim = 128;
  int64_t text_tokens = 512;
  int experts = 1;          // Wan2.2: 2 (high-noise, low-noise)
  double boundary = 0.875;  // fraction of steps on the first expert (Wan2.2)
  DType dtype = DType::BF16;
  int token_stride = 16;  // a token's side in pixels: the VAE's spatial compression x the 2x2 patch
  [[nodiscard]] bool wan_shaped() const {
    return preset == "wan2.1-14b" || preset == "wan2.2-14b" || preset == "wan2.2-ti2v-5b" || preset == "custom";
  }
};

struct DitWorkload {
  std::string name;
  std::string file;
  std::string topology;                  // optional, relative to the workload file
  std::string calibration;               // optional calibration file (resolved path)
  CalibrationOrigin calibration_origin;  // what it was measured on
  DitModel model;
  int64_t width = 1280, height = 720, frames = 81;
  int64_t tokens = 0;  // ((F-1)/4+1) * (H/s) * (W/s), s the model's token_stride, or given
  int steps = 40;
  CfgMode cfg = CfgMode::Serial;
  int ulysses = 1;
  int tp = 1;                              // tensor-parallel degree (groups tp{i} of consecutive ranks)
  int ring = 1;                            // ring-attention degree (USP: ulysses x ring ranks share the sequence)
  TpOverlap tp_overlap = TpOverlap::None;  // GEMMs beside their tensor-parallel all-gather / reduce-scatter
  int tp_comm_sms = 0;     // with overlap: SMs the communication holds (its channels; the GEMMs beside leave them: sm_margin); 0 = NCCL's default
  int attention_comm = 4;  // 4 all-to-alls (q, k, v, out) or 2 (packed qkv, out)
  CollAlgo all_to_all = CollAlgo::Nccl;
  DType comm_dtype = DType::BF16;
  int channels = 0;  // 0 = NCCL default
  OffloadPolicy offload = OffloadPolicy::None;
  int prefetch_size = 2;  // layerwise; 0 = blocking copies
  HostMem host_memory = HostMem::Pinned;
  AttnBackend attention_backend = AttnBackend::Default;  // the SDPA kernel its attention runs
  Fp8InputQuant fp8_input_quant = Fp8InputQuant::Fused;  // model dtype fp8: each GEMM's input quantisation
  OutsidePlace outside = OutsidePlace::Auto;             // memory.outside
  std::vector<Stage> stages;                             // the request's stages beside the steps (none: the steps alone)
  // The framework's per-request costs (request:), each off by default.
  struct Request {
    bool first_prefetch_blocking = false;  // layerwise: each forward's prefetch starts at its first layer, the host waiting for it
    bool move_outside = false;             // offloaded outside models copied in before they run and out after
  } request;
  RuntimeSettings runtime;
  Placement placement;            // `placement:`, resolved on the topology by place_ranks
  std::vector<std::string> gpus;  // rank -> GPU name (place_on); empty: the topology's GPUs in order
  ModelParams params;             // its calibration's (or the defaults') with its own 'compute:' over them
  struct Compute {                // the workload's 'compute:' efficiencies, kept to apply over another calibration
    std::optional<double> gemm_efficiency, attention_efficiency, hbm_efficiency;
  } compute;

  [[nodiscard]] int ranks() const { return ulysses * ring * tp * (cfg == CfgMode::Parallel ? 2 : 1); }
  [[nodiscard]] int forwards_per_rank() const { return steps * (cfg == CfgMode::Serial ? 2 : 1); }
  /// What a stage sees of this job (its kernels on `stream`).
  [[nodiscard]] StageJob stage_job(int stream) const {
    StageJob j{width, height, frames, cfg == CfgMode::None ? 1 : 2, stream};
    j.ranks = ulysses;
    return j;
  }
  /// The names the model's expressions see, with this job's values.
  [[nodiscard]] RepeatVars vars() const;
};

/// What one forward costs one rank, and the model's parameters.
ForwardCost workload_cost(const DitWorkload& w);

/// What a rank holds beside its block weights (docs/formats/metrics.md "Peak VRAM").
struct MemoryPlan {
  Bytes activations = 0;  // the largest block's at its peak
  Bytes reserve = 0;      // the caching allocator's, over the activations
  struct Outside {
    std::string name;
    Bytes weights = 0, activations = 0;
    OutsideModel::Runs runs = OutsideModel::Runs::Before;
    bool resident = false;  // held through the steps (else on the GPU only while it runs)
  };
  std::vector<Outside> outside;                 // none with memory.outside: none
  OutsidePlace place = OutsidePlace::Resident;  // memory.outside, resolved
};
MemoryPlan memory_plan(const DitWorkload& w);

/// The workload run on `base` (another calibration, the measured defaults of
/// the topology's GPUs): its parameters are base's with its own 'compute:' over them.
void set_base_params(DitWorkload& w, const ModelParams& base);

/// `overrides` are --set key=value pairs ("offload.prefetch_size=3").
DitWorkload parse_workload_file(const std::string& path, const std::vector<std::string>& overrides = {});
/// The same with each edit's own place (a sweep's line): errors in its value name it.
DitWorkload parse_workload_file(const std::string& path, const std::vector<Override>& overrides);
DitWorkload parse_workload_string(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides = {});
/// True when a YAML file is a workload (has 'model:') rather than a schedule
/// (has 'programs:'; read only up to its first program's ops).
bool is_workload_file(const std::string& path);

/// Its ranks placed on `topo` (`placement:`, where it has one): sets `gpus`.
void place_on(DitWorkload& w, const hw::Topology& topo);

Schedule generate_schedule(const DitWorkload& w);
/// The same schedule with its programs generated as a run reaches them
/// (Program::source): memory for the ops in flight, not for every step. It
/// runs without records (ExecOptions::keep_records = false) and cannot be
/// written out; the run's results are those of generate_schedule's.
Schedule generate_schedule_as_run(const DitWorkload& w);

std::string to_string(OffloadPolicy p);

}  // namespace osim
