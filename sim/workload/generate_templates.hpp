// The workload's block types evaluated once into op templates (the job's
// values never change), for the generator (generate.cpp) to copy per block
// and rank. Internal to the workload library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.hpp"
#include "workload/dit.hpp"

namespace osim::gen {

// The generator's two streams every rank has, in this order.
constexpr int kCompute = 0, kCopy = 1;

// The kind of group a block op's collective runs on.
enum class Group : uint8_t { None, Ulysses, Tp, Cfg, Ring };

// A block type's ops evaluated once (the job's values never change), ready
// to copy per block with its tag and group.
struct Template {
  Op op;
  std::string name;
  Group group = Group::None;
  int phase = 0;
  // Ring attention (ring > 1): `op` is one of its ring steps' chunks; each
  // step but the last passes kv_bytes of K and V on to the next ring rank.
  bool ring = false;
  Bytes kv_bytes = 0;
  uint8_t views = 0;  // BlockOp::views: on the first GPU op emitted for it
  // A tied tensor-parallel collective (BlockOp::overlap): whole, or in
  // `chunks` pieces beside as many pieces of the GEMM.
  bool tied = false, before = true;  // before: an all-gather of the input; else a reduce-scatter of the output
  Op coll, coll_chunk, gemm_chunk;
  std::string coll_name;
  Group coll_group = Group::Tp;
  int chunks = 1;
};
struct TypeTemplate {
  std::vector<Template> ops;
  std::vector<Bytes> units;  // offload policy `phase`: each sub-layer's weights; else the block's
  Bytes bytes = 0;           // the block's weights on one rank
};

struct BlockTemplates {
  std::vector<TypeTemplate> types;
  std::vector<int> seq;  // block l of a forward -> its type

  [[nodiscard]] const TypeTemplate& of_block(int l) const { return types[static_cast<size_t>(seq[static_cast<size_t>(l)])]; }
  [[nodiscard]] Bytes layer_bytes(int l) const { return of_block(l).bytes; }
};

/// The ranks in a group of kind g.
int group_size(const DitWorkload& w, Group g);

/// The workload's block types as templates. `tp_stream`: the tied
/// collectives' stream (tp_overlap: chunked), `tp_send`: their sends'
/// (ring_exchange); -1 where none. InputError where an expression is out of range.
BlockTemplates build_block_templates(const DitWorkload& w, int tp_stream, int tp_send);

}  // namespace osim::gen
