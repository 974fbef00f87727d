// A model as blocks of ops whose shapes are integer expressions of the
// model's dimensions and the job's parallel degrees (docs/formats/workload.md
// "Any model"). The Wan presets are written in it, and Flux.1, HunyuanVideo
// and a Llama-style decoder beside them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "io/repeat.hpp"
#include "schedule/schedule.hpp"

namespace YAML {
class Node;
}

namespace osim {

/// One op of a block, its shape as expressions.
struct BlockOp {
  enum class Kind { Gemm, Attention, Memory, Collective };
  Kind kind = Kind::Gemm;
  std::string name;
  std::string m, n, k;                  // gemm
  std::string heads, q, kv;             // attention (its head_dim is the model's)
  std::string bytes;                    // memory kernel (HBM bytes) or collective (bytes per rank, nccl-tests size)
  Access access = Access::Elementwise;  // memory kernel: how it walks memory
  std::string row;                      // memory kernel of a norm: the elements of each row it normalises ("" = long rows)
  CollKind coll = CollKind::AllToAll;
  std::string group;     // collective: ulysses | tp | cfg
  std::string when;      // emitted only where this is non-zero ("" = always)
  std::string views;     // framework calls before it that launch nothing (views, transposes, splits; "" = none)
  std::string launches;  // gemm, attention, memory: the framework ops it stands for, each a launch ("" = 1)
  int phase = 0;         // offload policy `phase`: the sub-layer it belongs to
  bool ring = false;     // attention: the sequence-parallel one ring attention splits (ring > 1)
  bool causal = false;   // attention: each query sees the keys up to its own (is_causal)
  // gemm: a tensor-parallel collective tied to it: an all-gather of its input
  // before it, or a reduce-scatter of its output after it; with
  // parallelism.tp_overlap: chunked both run in `chunks` pieces, each GEMM
  // piece beside the next piece's communication.
  struct Overlap {
    CollKind coll = CollKind::AllGather;
    std::string name, group = "tp", bytes, chunks = "1";
  };
  std::optional<Overlap> overlap;
  SourceLocation where;
};

struct BlockType {
  std::string name;
  std::string count;                // how many of these blocks, in order
  std::string params;               // parameters of one block held by one rank
  std::vector<std::string> phases;  // parameters of each sub-layer (offload policy `phase`); empty: one
  std::string activations;          // bytes of activations live at the block's peak on one rank ("": from its ops)
  std::vector<BlockOp> ops;
  SourceLocation where;
};

/// A model outside the blocks (text encoder, VAE, embeddings): its weights
/// on one rank, the activations it holds while it runs, and when it runs.
struct OutsideModel {
  std::string name;
  std::string params;
  std::string activations = "0";
  enum class Runs { Before, After, Throughout } runs = Runs::Before;  // encoders before the steps, decoders after, embeddings with the blocks
  SourceLocation where;
};

/// The model: its dimensions, its blocks in order, and what sits outside them.
struct BlockModel {
  std::map<std::string, int64_t> dims;
  std::vector<BlockType> blocks;
  std::vector<OutsideModel> outside;
};

/// Reads `dims:` (a mapping of names to whole numbers) into `model`.
void read_block_dims(const std::string& file, const YAML::Node& dims, BlockModel& model);
/// Reads `blocks:` (a list of block types) into `model`.
void read_block_types(const std::string& file, const YAML::Node& blocks, BlockModel& model);
/// Reads `outside:` (a list of models outside the blocks) into `model`, replacing any it had.
void read_outside_models(const std::string& file, const YAML::Node& outside, BlockModel& model);

/// The names a block's expressions may use beside the model's dims.
struct JobVars {
  int64_t tokens = 0, ulysses = 1, ring = 1, tp = 1, attention_comm = 4, comm_bytes = 2, act_bytes = 2;
};
/// Every variable an expression sees: dims, the job's, and `local` (tokens / (ulysses x ring)).
RepeatVars block_vars(const BlockModel& model, const JobVars& job);
/// An expression's value; InputError at `where` naming the variables known.
int64_t eval_block_expr(const std::string& expr, const RepeatVars& vars, const SourceLocation& where, const std::string& what);

/// One block instance as laid out for a rank: its type and its index over all blocks.
struct BlockInstance {
  const BlockType* type = nullptr;
  int index = 0;  // 0 .. total - 1
};
/// How many blocks of type `t` a forward runs (its `count`, 1..100000).
int block_count(const BlockType& t, const RepeatVars& vars);
/// The blocks of one forward in order (each type `count` times).
std::vector<BlockInstance> block_sequence(const BlockModel& model, const RepeatVars& vars);

/// Bytes of activations live at block type `t`'s peak on one rank: its
/// `activations:`, else from its ops (the largest op's inputs and output
/// plus the block's input); with the math backend, plus the largest
/// attention's score and probability matrices, which it materialises.
int64_t block_activations(const BlockType& t, const RepeatVars& vars, bool math_attention);

/// What one forward costs one rank: GEMM and attention FLOPs, parameters held.
struct ForwardCost {
  double gemm_flops = 0, attention_flops = 0;
  double params = 0;  // the blocks' parameters on one rank
  int blocks = 0;
};
ForwardCost forward_cost(const BlockModel& model, const RepeatVars& vars);

/// The built-in model presets written as blocks ("flux.1-dev", ...): the YAML
/// text of a `model:` mapping without `preset:`; nullopt for an unknown name.
std::optional<std::string> block_preset_text(const std::string& name);
std::vector<std::string> block_preset_names();

}  // namespace osim
