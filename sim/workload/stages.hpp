// The request's stages beside the DiT steps: the text encoders before them
// and the VAE decode after, each as the kernels it runs (FLOPs, bytes and
// activation peaks from the model's real shapes) and where it runs:
// resident, offloaded (moved in before it runs, out after) or on the CPU.
// docs/formats/workload.md "Stages".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "schedule/schedule.hpp"

namespace YAML {
class Node;
}

namespace osim {

enum class StagePlace { Resident, Offloaded, Cpu };

// A transformer text encoder (T5/umT5, CLIP, a Llama-style language model):
// `layers` blocks of attention and an MLP over `tokens` tokens.
struct EncoderShape {
  int layers = 24;
  int64_t hidden = 4096, ffn = 10240, heads = 64, head_dim = 64, kv_heads = 64, vocab = 32128, tokens = 512;
  int mlp_matrices = 3;  // gated MLPs (T5's gated GELU, Llama's SwiGLU): 3; CLIP's: 2
  /// The parameters: the blocks' projections and the token embeddings.
  [[nodiscard]] int64_t params() const;
};

// A causal 3-D VAE decoder as its convolutions, norms, mid-block attention
// and upsampling blocks. `channels`: conv_in's width (the mid block's), then
// each up block's output width.
struct VaeShape {
  // Wan 2.1: RMS norms, the mid-block attention per frame, each upsampling
  // conv halving the width (the next block takes half), decoded one latent
  // frame at a time with a cache of each causal conv's last two frames.
  // HunyuanVideo: group norms, the mid-block attention over every token of
  // the pass, upsampling convs 3x3x3 keeping the width.
  // Image: HunyuanVideo's layout in 2-D (Flux's AutoencoderKL): 3x3 convs,
  // no time axis, one frame.
  // Wan 2.2: Wan 2.1's code paths, but each upsampling conv keeps the width
  // (the residual blocks change it), an upsampling block adds its input
  // duplicated up to its output's size (DupUp3D) to what it computes from a
  // clone, and the decoder writes `patch` x `patch` pixels a position
  // (unpatchified at the end).
  enum class Family { Wan21, Hunyuan, Image, Wan22 } family = Family::Wan21;
  int64_t z_dim = 16;
  std::vector<int64_t> channels;
  int res_blocks = 2;                   // each up block holds res_blocks + 1 residual blocks
  std::vector<bool> time_up, space_up;  // per up block but the last: it doubles frames / height and width
  int64_t out_channels = 3;
  int spatial = 8, temporal = 4;  // the latent's compression
  int patch = 1;                  // pixels a decoded position holds along each side (Wan 2.2: 2)
  [[nodiscard]] bool wan() const { return family == Family::Wan21 || family == Family::Wan22; }
  /// The decoder's parameters (its convolutions and attention projections).
  [[nodiscard]] int64_t params() const;
};

struct Stage {
  std::string name;
  enum class Kind { Encoder, VaeDecode } kind = Kind::Encoder;
  StagePlace place = StagePlace::Resident;
  DType dtype = DType::BF16;
  EncoderShape encoder;
  VaeShape vae;
  int prompts = 0;                      // encoder: prompts encoded one after the other (0: 2 with CFG, else 1)
  int64_t tile = 0, tile_stride = 0;    // VAE spatial tiles, in output pixels (0: the whole frame)
  int64_t chunk = 0, chunk_stride = 0;  // VAE temporal chunks, in output frames (0: the family's own)
  double cpu_tflops = 0.5;              // place cpu: the host's rate
  double efficiency = 0;                // its convolutions' share of the peak rate (0: the model's default)
  std::optional<int64_t> params;        // the weights it loads (default: its own blocks', or an outside model's of its name)
  bool parallel = false;                // VAE: each rank of the Ulysses group decodes a band of rows, exchanging halos
  // Offloaded: where its host copy lives (a framework's .to() of pageable
  // weights, or pinned ones kept for the purpose), and whether it is copied
  // back after (a framework that keeps the host copy drops the GPU's).
  HostMem host = HostMem::Pageable;
  bool copy_back = true;
  SourceLocation where;
};

/// What a stage runs: passes of ops (a pass is one prompt, one chunk or one
/// tile), what it moves and holds.
struct StagePlan {
  struct Pass {
    std::vector<Op> ops;
    int count = 1;  // run this many times in a row
  };
  std::vector<Pass> passes;
  double flops = 0, bytes = 0;  // over every pass
  Bytes weights = 0;            // its parameters, in its dtype
  Bytes activations = 0;        // live at its peak (the largest op's inputs and outputs, what a block holds, the caches)
  Bytes result = 0;             // what it hands on (the text embeddings, the decoded frames)
};

/// What the stage sees of the job.
struct StageJob {
  int64_t width = 1280, height = 720, frames = 81;
  int prompts = 1;  // with CFG 2
  int stream = 0;   // its kernels' stream
  // A parallel decode's ranks (the Ulysses group; 1: none), the group and
  // its next and previous rank (role refs), the halo exchange's send and
  // receive streams and the event that joins them back.
  int ranks = 1, group = -1, next = -1, prev = -1, send_stream = -1, recv_stream = -1, event = -1;
};

/// The bytes a convolution holds beyond its input and output while it runs,
/// elements of `element` bytes: cuDNN runs a channels-first one of more than
/// one tap on channels-last copies of its input, weights and output, taken
/// from PyTorch's allocator for the call (conv.py --workspace: 1.000-1.034x
/// from 256 MiB up on an H100, cuDNN 9.19); none for one tap or
/// channels-last tensors.
double conv_layout_copies_bytes(const ConvShape& c, double element);

/// The stage's plan for `job`; InputError at the stage where its shape does not fit.
StagePlan stage_plan(const Stage& s, const StageJob& job);

/// Reads `stages:` (a list of stages) of a workload file.
std::vector<Stage> read_stages(const std::string& file, const YAML::Node& node);

/// The stage presets ("umt5-xxl", "wan2.1-vae", ...).
std::vector<std::string> stage_preset_names();
/// The keys a stage takes (`name`, `preset`, `place`, ...): what read_stages knows.
const std::vector<std::string>& stage_keys();

}  // namespace osim
