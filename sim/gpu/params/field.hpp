// The calibration file's field table, family by family: what a row says
// (key, member, unit, valid range, default's example, when it is written,
// one-line doc) and the conditions writers use. Internal to gpu/: each
// params/<family>.cpp lists its family's rows, params_io.cpp reads, writes
// and documents them all from the one table.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "gpu/params.hpp"
#include "io/yaml_reader.hpp"

namespace osim::params {

// What a field holds, and how it is written: times in us or ms, bandwidths
// in GB/s, plain numbers, counts, byte sizes; lists and mappings through
// their own reader and writer.
enum class Kind { TimeUs, TimeMs, Bandwidth, Number, Count, Bytes, Custom };

using Ref =
    std::variant<Time* (*)(ModelParams&), Bandwidth* (*)(ModelParams&), double* (*)(ModelParams&), int* (*)(ModelParams&), Bytes* (*)(ModelParams&)>;
// A field's member: p.family.member, or p.family.member.side (a PerDirection's h2d or d2h).
template <auto Family, auto... Members>
auto* member(ModelParams& p) {
  return &((p.*Family).*....*Members);
}

// A row names the parts it sets (designated initialisers, in this order);
// a part it leaves out takes the default below.
struct Field {
  const char* name;
  const char* family;
  Kind kind;
  Ref ref{static_cast<double* (*)(ModelParams&)>(nullptr)};
  int precision = 4;      // digits written after the point
  double lo = 0, hi = 0;  // valid range, in the unit written
  bool lo_open = false;   // lo itself is out of range
  const char* example = "";
  bool (*written)(const ModelParams&) = nullptr;  // null: always
  const char* doc = "";
  // Custom fields: their own reader and writer (the writer's text is
  // everything after "  name:", its newline included).
  std::function<void(const MapReader&, const std::string& file, ModelParams&)> read = nullptr;
  std::function<std::string(const ModelParams&)> write = nullptr;
};

// Writers' conditions: a field is written where it says more than "none".
template <auto F, auto... M>
bool positive(const ModelParams& p) {
  const auto& v = ((p.*F).*....*M);
  if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Time>)
    return v > Time::zero();
  else
    return v > 0;
}
template <auto F, auto... M>
bool non_negative(const ModelParams& p) {
  return ((p.*F).*....*M) >= Time::zero();
}
template <auto F, auto... M>
bool limited(const ModelParams& p) {
  return !((p.*F).*....*M).is_unlimited();
}
template <auto F, auto M>
bool not_default(const ModelParams& p) {
  static const ModelParams d;
  return (p.*F).*M != (d.*F).*M;
}

#define OSIM_REF(fam, mem) Ref(&member<&ModelParams::fam, &std::decay_t<decltype(ModelParams::fam)>::mem>)
#define OSIM_POS(fam, mem) &positive<&ModelParams::fam, &std::decay_t<decltype(ModelParams::fam)>::mem>
#define OSIM_NONNEG(fam, mem) &non_negative<&ModelParams::fam, &std::decay_t<decltype(ModelParams::fam)>::mem>
#define OSIM_LIMITED(fam, mem) &limited<&ModelParams::fam, &std::decay_t<decltype(ModelParams::fam)>::mem>
#define OSIM_NOTDEF(fam, mem) &not_default<&ModelParams::fam, &std::decay_t<decltype(ModelParams::fam)>::mem>
// The same for one side of a PerDirection member (side: h2d or d2h).
#define OSIM_SIDE(fam, mem, side) &std::decay_t<decltype(ModelParams::fam)>::mem, &decltype(std::decay_t<decltype(ModelParams::fam)>::mem)::side
#define OSIM_REF_DIR(fam, mem, side) Ref(&member<&ModelParams::fam, OSIM_SIDE(fam, mem, side)>)
#define OSIM_POS_DIR(fam, mem, side) &positive<&ModelParams::fam, OSIM_SIDE(fam, mem, side)>
#define OSIM_NONNEG_DIR(fam, mem, side) &non_negative<&ModelParams::fam, OSIM_SIDE(fam, mem, side)>
#define OSIM_LIMITED_DIR(fam, mem, side) &limited<&ModelParams::fam, OSIM_SIDE(fam, mem, side)>

/// A list of [x, share, share] rows by ascending x > 0, shares in (0, 1]
/// (copy_bidir_table, framework_norm_rows); `usage`: what the error says it must be.
std::vector<std::array<double, 3>> read_share_table(const MapReader& m, const char* key, const std::string& usage);
/// Its text as written after "  key:".
std::string format_share_table(const std::vector<std::array<double, 3>>& table);

/// Each family's rows, in the order its part of the file is written.
std::vector<Field> overheads_fields();
std::vector<Field> handoff_fields();
std::vector<Field> copies_fields();
std::vector<Field> gemm_fields();
std::vector<Field> conv_fields();
std::vector<Field> attention_fields();
std::vector<Field> memory_fields();
std::vector<Field> nccl_fields();
std::vector<Field> power_fields();
std::vector<Field> nvlink_fields();
std::vector<Field> interference_fields();
std::vector<Field> vram_fields();

}  // namespace osim::params
