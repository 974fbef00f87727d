#include "gpu/params_io.hpp"

#include <cmath>
#include <functional>
#include <variant>

#include <fmt/format.h>

#include "io/yaml_reader.hpp"

namespace osim {

namespace {

// What a field holds, and how it is written: times in us or ms, bandwidths
// in GB/s, plain numbers, counts, byte sizes; lists and mappings through
// their own reader and writer.
enum class Kind { TimeUs, TimeMs, Bandwidth, Number, Count, Bytes, Custom };

using Ref = std::variant<Time* (*)(ModelParams&), Bandwidth* (*)(ModelParams&), double* (*)(ModelParams&), int* (*)(ModelParams&),
                         Bytes* (*)(ModelParams&)>;
template <auto Family, auto Member>
auto* member(ModelParams& p) {
  return &((p.*Family).*Member);
}

struct Field {
  const char* name;
  const char* family;
  Kind kind;
  Ref ref{static_cast<double* (*)(ModelParams&)>(nullptr)};
  int precision = 4;                       // digits written after the point
  double lo = 0, hi = 0;                   // valid range, in the unit written
  bool lo_open = false;                    // lo itself is out of range
  const char* example = "";
  bool (*written)(const ModelParams&) = nullptr;  // null: always
  const char* doc = "";
  // Custom fields: their own reader and writer (the writer's text is
  // everything after "  name:", its newline included).
  std::function<void(const MapReader&, const std::string& file, ModelParams&)> read = nullptr;
  std::function<std::string(const ModelParams&)> write = nullptr;
};

// Writers' conditions: a field is written where it says more than "none".
template <auto F, auto M>
bool positive(const ModelParams& p) {
  const auto& v = (p.*F).*M;
  if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Time>) return v > Time::zero();
  else return v > 0;
}
template <auto F, auto M>
bool non_negative(const ModelParams& p) {
  return (p.*F).*M >= Time::zero();
}
template <auto F, auto M>
bool limited(const ModelParams& p) {
  return !((p.*F).*M).is_unlimited();
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

std::string format_bandwidth_list(const std::vector<Bandwidth>& table) {
  std::string out = " [";
  for (size_t i = 0; i < table.size(); ++i) out += (i ? ", " : "") + fmt::format("{:.4f} GB/s", table[i].GBps());
  return out + "]\n";
}

void read_bandwidth_list(const MapReader& m, const std::string& file, const std::string& key, std::vector<Bandwidth>& table) {
  const YAML::Node list = m.get(key);
  if (!list.IsSequence() || list.size() == 0)
    m.fail(key, fmt::format("must be a list of bandwidths: the host bridge's limit with 1, 2, ... GPUs copying {} at once, e.g. [55 GB/s, 106 GB/s]",
                            key == "host_h2d_aggregate" ? "H2D" : "D2H"));
  table.clear();
  for (const YAML::Node& e : list) {
    try {
      if (!e.IsScalar()) throw std::invalid_argument("not a bandwidth");
      const Bandwidth b = parse_bandwidth(e.Scalar());
      if (!(b.bytes_per_s > 0) || b.is_unlimited()) throw std::invalid_argument("must be positive and finite");
      table.push_back(b);
    } catch (const std::invalid_argument& ex) {
      throw InputError(location_of(file, e), fmt::format("{}: each entry is a bandwidth such as '55 GB/s' ({})", key, ex.what()));
    }
  }
}

void read_gemm_shapes(const MapReader& m, const std::string& file, ModelParams& p) {
  const YAML::Node list = m.get("gemm_shapes");
  if (!list.IsSequence()) m.fail("gemm_shapes", "must be a list of [m, n, k, efficiency]");
  p.gemm.gemm_shapes.clear();
  for (const YAML::Node& e : list) {
    if (!e.IsSequence() || e.size() != 4) throw InputError(location_of(file, e), "each gemm_shapes entry is [m, n, k, efficiency]");
    try {
      const double eff = e[3].as<double>();
      if (!(eff > 0 && eff <= 1)) throw InputError(location_of(file, e), "efficiency must be in (0, 1]");
      p.gemm.gemm_shapes.push_back({e[0].as<int>(), e[1].as<int>(), e[2].as<int>(), eff});
    } catch (const YAML::Exception&) {
      throw InputError(location_of(file, e), "each gemm_shapes entry is [m, n, k, efficiency] with whole numbers m, n, k");
    }
  }
}

void read_gemm_model(const MapReader& m, const std::string& file, ModelParams& p) {
  MapReader g(file, m.get("gemm_model"), "gemm_model", {"efficiency", "m0", "n0", "k0", "pow2_m"});
  GemmShapeModel gm;
  gm.efficiency = g.num("efficiency");
  if (!(gm.efficiency > 0 && gm.efficiency <= 1)) g.fail("efficiency", "must be in (0, 1], e.g. 0.88");
  for (auto [key, field] : {std::pair<const char*, double*>{"m0", &gm.m0}, {"n0", &gm.n0}, {"k0", &gm.k0}}) {
    *field = g.opt_num(key).value_or(0);
    if (!(*field >= 0)) g.fail(key, "must be >= 0 (the size at which that dimension halves the efficiency's headroom), e.g. 77");
  }
  gm.pow2_m = g.opt_num("pow2_m").value_or(0);
  if (!(gm.pow2_m >= 0 && gm.pow2_m < 1)) g.fail("pow2_m", "must be in [0, 1): the extra loss when m is a power of two, e.g. 0.025");
  p.gemm.gemm_model = gm;
}

void read_nccl_tables(const MapReader& m, const std::string& file, ModelParams& p) {
  const YAML::Node list = m.get("nccl_tables");
  if (!list.IsSequence()) m.fail("nccl_tables", "must be a list of {collective, ranks, transport, channels (optional), points}");
  p.nccl.nccl_tables.clear();
  for (const YAML::Node& e : list) {
    MapReader t(file, e, "nccl_tables entry", {"collective", "ranks", "transport", "channels", "points"});
    NcclTable tab;
    const std::string coll = t.str("collective"), transport = t.str("transport");
    bool known = false;
    for (const auto k : kTableColls)
      if (coll == table_coll_name(k)) {
        tab.coll = k;
        known = true;
      }
    if (!known) t.fail("collective", "must be all_to_all, all_to_all_pairwise, all_gather, reduce_scatter or all_reduce");
    if (transport != "p2p" && transport != "host") t.fail("transport", "must be p2p or host");
    tab.via_host = transport == "host";
    const auto ranks = t.opt_int("ranks");
    if (!ranks || *ranks < 2) t.fail("ranks", "must be a whole number >= 2");
    tab.ranks = static_cast<int>(*ranks);
    if (const auto ch = t.opt_int("channels")) {
      if (*ch < 1 || *ch > 64) t.fail("channels", "must be 1..64 (leave it out for NCCL's choice)");
      tab.channels = static_cast<int>(*ch);
    }
    const YAML::Node pts = t.get("points");
    if (!pts.IsSequence() || pts.size() == 0) t.fail("points", "must be a non-empty list of [bytes per rank, time in us]");
    for (const YAML::Node& q : pts) {
      double b = 0, us = 0;
      try {
        if (!q.IsSequence() || q.size() != 2) throw YAML::Exception(q.Mark(), "");
        b = q[0].as<double>();
        us = q[1].as<double>();
      } catch (const YAML::Exception&) {
        throw InputError(location_of(file, q), "each point is [bytes per rank, time in us]");
      }
      if (!(b > 0 && us > 0) || (!tab.points.empty() && (b <= tab.points.back().first || us * 1e-6 < tab.points.back().second)))
        throw InputError(location_of(file, q), "points need positive bytes and times, bytes ascending and times not decreasing");
      tab.points.emplace_back(b, us * 1e-6);
    }
    p.nccl.nccl_tables.push_back(std::move(tab));
  }
}

void read_bidir_table(const MapReader& m, const std::string&, ModelParams& p) {
  const YAML::Node list = m.get("copy_bidir_table");
  const auto bad = [&] {
    m.fail("copy_bidir_table", "must be a list of [bytes, H2D share, D2H share] by bytes, shares in (0, 1], e.g. [[4096, 0.7, 0.7], [1048576, 0.9, 0.9]]");
  };
  if (!list.IsSequence() || list.size() == 0) bad();
  auto& table = p.copies.copy_bidir_table;
  table.clear();
  for (const auto& e : list) {
    if (!e.IsSequence() || e.size() != 3) bad();
    std::array<double, 3> v{};
    try {
      for (size_t i = 0; i < 3; ++i) v[i] = e[i].as<double>();
    } catch (const YAML::Exception&) {
      bad();
    }
    if (!(v[0] > 0 && v[1] > 0 && v[1] <= 1 && v[2] > 0 && v[2] <= 1) || (!table.empty() && v[0] <= table.back()[0])) bad();
    table.push_back(v);
  }
}

// The table. Families in the order the file writes them; within a family,
// the fields in order. `lo`/`hi` are in the unit written (us, ms, GB/s).
const std::vector<Field>& fields() {
  constexpr double kBig = 1e9;
  static const std::vector<Field> table = {
      // host overheads
      {"kernel_launch", "overheads", Kind::TimeUs, OSIM_REF(overheads, kernel_launch), 4, 0, 1e6, false, "4 us", nullptr,
       "host time a kernel launch costs before it returns"},
      {"memcpy_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, memcpy_call), 4, 0, 1e6, false, "10 us", nullptr,
       "host time an async copy call costs before it returns"},
      {"event_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_call), 4, 0, 1e6, false, "2 us", nullptr,
       "host time of event_record, stream_wait_event and stream_wait_stream"},
      {"sync_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, sync_call), 4, 0, 1e6, false, "2 us", nullptr,
       "host time of a synchronize call before it waits"},
      {"collective_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, collective_call), 4, 0, 1e6, false, "6 us",
       OSIM_NOTDEF(overheads, collective_call), "host time a collective call costs"},
      {"alloc_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, alloc_call), 4, 0, 1e6, false, "2 us", OSIM_NOTDEF(overheads, alloc_call),
       "host time of an allocation (the caching allocator)"},
      {"free_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, free_call), 4, 0, 1e6, false, "1 us", OSIM_NOTDEF(overheads, free_call),
       "host time of a free"},
      {"event_gpu_time", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time), 4, 0, 1e6, false, "1.9 us", OSIM_POS(overheads, event_gpu_time),
       "GPU time an event record holds its stream (0: none)"},
      {"event_gpu_time_h2d", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time_h2d), 4, 0, 1e6, false, "5.5 us",
       OSIM_POS(overheads, event_gpu_time_h2d), "what an event record takes more while its GPU has an H2D copy in flight"},
      {"event_gpu_time_copy", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time_copy), 4, 0, 1e6, false, "1.3 us",
       OSIM_NONNEG(overheads, event_gpu_time_copy), "GPU time of an event recorded after a copy (absent: event_gpu_time)"},
      // hand-offs
      {"copy_after_kernel_latency", "handoff", Kind::TimeUs, OSIM_REF(handoff, copy_after_kernel_latency), 4, 0, 1e6, false, "5.8 us",
       OSIM_POS(handoff, copy_after_kernel_latency), "a pinned copy after a kernel on its stream (or waited on, still running) starts this much later"},
      {"copy_after_kernel_latency_d2h", "handoff", Kind::TimeUs, OSIM_REF(handoff, copy_after_kernel_latency_d2h), 4, 0, 1e6, false, "6.0 us",
       OSIM_NONNEG(handoff, copy_after_kernel_latency_d2h), "the same for a D2H copy (absent: copy_after_kernel_latency)"},
      {"kernel_after_copy_latency", "handoff", Kind::TimeUs, OSIM_REF(handoff, kernel_after_copy_latency), 4, 0, 1e6, false, "2.8 us",
       OSIM_POS(handoff, kernel_after_copy_latency), "a kernel after a copy, by the same rule"},
      {"handoff_phase_min", "handoff", Kind::TimeUs, OSIM_REF(handoff, handoff_phase_min), 4, 0, 1e6, false, "0.3 us",
       [](const ModelParams& p) { return p.handoff.has_handoff_phase(); }, "the shortest one hand-off takes (with handoff_phase_max)"},
      {"handoff_phase_max", "handoff", Kind::TimeUs, OSIM_REF(handoff, handoff_phase_max), 4, 0, 1e6, false, "7.4 us",
       [](const ModelParams& p) { return p.handoff.has_handoff_phase(); }, "the longest one hand-off takes (with handoff_phase_min)"},
      // copies
      {"copy_engine_bandwidth", "copies", Kind::Bandwidth, OSIM_REF(copies, copy_engine_bandwidth), 4, 0, 1e5, true, "54 GB/s",
       OSIM_LIMITED(copies, copy_engine_bandwidth), "one copy engine's ceiling for copies to and from host memory (absent: none)"},
      {"copy_engine_bandwidth_d2h", "copies", Kind::Bandwidth, OSIM_REF(copies, copy_engine_bandwidth_d2h), 4, 0, 1e5, true, "55 GB/s",
       OSIM_LIMITED(copies, copy_engine_bandwidth_d2h), "the D2H engine's own ceiling (absent: copy_engine_bandwidth)"},
      {"copy_latency", "copies", Kind::TimeUs, OSIM_REF(copies, copy_latency), 4, 0, 1e6, false, "2.4 us", nullptr,
       "DMA set-up before a copy's first byte, beyond its route's latency"},
      {"copy_latency_d2h", "copies", Kind::TimeUs, OSIM_REF(copies, copy_latency_d2h), 4, 0, 1e6, false, "1.4 us", OSIM_NONNEG(copies, copy_latency_d2h),
       "the same for D2H copies (absent: copy_latency)"},
      {"pageable_bandwidth", "copies", Kind::Bandwidth, OSIM_REF(copies, pageable_bandwidth), 4, 0, 1e5, true, "6.6 GB/s", nullptr,
       "a pageable copy's rate (the driver stages it through pinned memory)"},
      {"pageable_bandwidth_d2h", "copies", Kind::Bandwidth, OSIM_REF(copies, pageable_bandwidth_d2h), 4, 0, 1e5, true, "10.8 GB/s",
       OSIM_LIMITED(copies, pageable_bandwidth_d2h), "the same for D2H (absent: pageable_bandwidth)"},
      {"pageable_latency", "copies", Kind::TimeUs, OSIM_REF(copies, pageable_latency), 4, 0, 1e6, false, "30 us", OSIM_NONNEG(copies, pageable_latency),
       "a pageable copy's set-up (absent: the pinned one's)"},
      {"pageable_latency_d2h", "copies", Kind::TimeUs, OSIM_REF(copies, pageable_latency_d2h), 4, 0, 1e6, false, "45 us",
       OSIM_NONNEG(copies, pageable_latency_d2h), "the same for D2H (absent: pageable_latency)"},
      {"copy_bidir_factor", "copies", Kind::Number, OSIM_REF(copies, copy_bidir_factor), 4, 0.05, 1, false, "0.95",
       [](const ModelParams& p) { return p.copies.copy_bidir_factor < 1 || p.copies.copy_bidir_factor_d2h < 1; },
       "share of its engine's rate an H2D copy keeps while the GPU copies D2H too"},
      {"copy_bidir_factor_d2h", "copies", Kind::Number, OSIM_REF(copies, copy_bidir_factor_d2h), 4, 0.05, 1, false, "0.92",
       [](const ModelParams& p) { return p.copies.copy_bidir_factor < 1 || p.copies.copy_bidir_factor_d2h < 1; },
       "the same for a D2H copy beside an H2D one"},
      {"copy_bidir_table", "copies", Kind::Custom, {}, 4, 0, 0, false, "[[65536, 0.7, 0.7], [268435456, 0.9, 0.9]]",
       [](const ModelParams& p) { return p.copies.copy_bidir_tabled(); },
       "[bytes, H2D share, D2H share] by size: both ways at once per size, interpolated in log(bytes); replaces the factors",
       read_bidir_table,
       [](const ModelParams& p) {
         std::string out = "\n";
         for (const auto& e : p.copies.copy_bidir_table) out += fmt::format("    - [{:.0f}, {:.4f}, {:.4f}]\n", e[0], e[1], e[2]);
         return out;
       }},
      {"host_h2d_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[55 GB/s, 106 GB/s]",
       [](const ModelParams& p) { return !p.copies.host_h2d_aggregate.empty(); },
       "a host bridge's limit on H2D copies with 1, 2, ... GPUs copying at once (never above the topology's)",
       [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "host_h2d_aggregate", p.copies.host_h2d_aggregate); },
       [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_h2d_aggregate); }},
      {"host_d2h_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[55 GB/s, 108 GB/s]",
       [](const ModelParams& p) { return !p.copies.host_d2h_aggregate.empty(); }, "the same for D2H copies",
       [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "host_d2h_aggregate", p.copies.host_d2h_aggregate); },
       [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_d2h_aggregate); }},
      // GEMM
      {"gemm_efficiency", "gemm", Kind::Number, OSIM_REF(gemm, gemm_efficiency), 4, 1e-3, 1, false, "0.75", nullptr,
       "share of the GPU's peak a GEMM reaches where neither table nor model covers its shape"},
      {"gemm_model", "gemm", Kind::Custom, {}, 4, 0, 0, false, "{efficiency: 0.88, m0: 77, n0: 0, k0: 160, pow2_m: 0.025}",
       [](const ModelParams& p) { return p.gemm.gemm_model.efficiency > 0; },
       "efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power of two]) for shapes not in gemm_shapes", read_gemm_model,
       [](const ModelParams& p) {
         const auto& g = p.gemm.gemm_model;
         return fmt::format(" {{efficiency: {:.4f}, m0: {:.2f}, n0: {:.2f}, k0: {:.2f}, pow2_m: {:.4f}}}\n", g.efficiency, g.m0, g.n0, g.k0, g.pow2_m);
       }},
      {"gemm_shapes", "gemm", Kind::Custom, {}, 4, 0, 0, false, "[[16384, 5120, 5120, 0.82]]",
       [](const ModelParams& p) { return !p.gemm.gemm_shapes.empty(); }, "[m, n, k, efficiency] per measured shape (the last entry of a shape wins)",
       read_gemm_shapes,
       [](const ModelParams& p) {
         std::string out = "\n";
         for (const auto& g : p.gemm.gemm_shapes) out += fmt::format("    - [{}, {}, {}, {:.4f}]\n", g.m, g.n, g.k, g.efficiency);
         return out;
       }},
      {"flops_efficiency", "gemm", Kind::Number, OSIM_REF(gemm, flops_efficiency), 4, 1e-3, 1, false, "0.6", OSIM_NOTDEF(gemm, flops_efficiency),
       "share of the peak a kernel given as FLOPs reaches"},
      // attention
      {"attention_efficiency", "attention", Kind::Number, OSIM_REF(attention, attention_efficiency), 4, 1e-3, 1, false, "0.6", nullptr,
       "share of the GPU's peak self-attention reaches"},
      {"cross_attention_efficiency", "attention", Kind::Number, OSIM_REF(attention, cross_attention_efficiency), 4, 1e-3, 1, false, "0.3",
       OSIM_POS(attention, cross_attention_efficiency), "the same for cross-attention, over cross_attention_q0 (absent: attention_efficiency)"},
      {"cross_attention_q0", "attention", Kind::Number, OSIM_REF(attention, cross_attention_q0), 1, 0, kBig, false, "930",
       OSIM_POS(attention, cross_attention_q0), "cross-attention efficiency / (1 + q0 / seq_q): short query sets lose more"},
      {"attention_slow_share", "attention", Kind::Number, OSIM_REF(attention, attention_slow_share), 2, 0, 1, false, "0",
       [](const ModelParams& p) { return p.attention.attention_slow_share != 1.0; }, "the share of the sustained-load slow term attention takes"},
      // memory-bound kernels
      {"hbm_efficiency", "memory", Kind::Number, OSIM_REF(memory, hbm_efficiency), 4, 1e-3, 1, false, "0.85", nullptr,
       "share of the HBM bandwidth a memory-bound kernel reaches"},
      {"hbm_latency", "memory", Kind::TimeUs, OSIM_REF(memory, hbm_latency), 4, 0, 1e6, false, "3 us", OSIM_POS(memory, hbm_latency),
       "added to a memory-bound kernel's time (ramp-up and tail)"},
      // NCCL
      {"nccl_channels", "nccl", Kind::Count, OSIM_REF(nccl, nccl_channels), 0, 1, 64, false, "24", nullptr,
       "channels a collective uses where the schedule gives none"},
      {"nccl_channel_bandwidth", "nccl", Kind::Bandwidth, OSIM_REF(nccl, nccl_channel_bandwidth), 4, 0, 1e5, true, "19.5 GB/s", nullptr,
       "one channel's rate"},
      {"nccl_latency", "nccl", Kind::TimeUs, OSIM_REF(nccl, nccl_latency), 4, 0, 1e6, false, "10 us", nullptr,
       "per collective launch (and per pairwise round)"},
      {"nccl_step_latency", "nccl", Kind::TimeUs, OSIM_REF(nccl, nccl_step_latency), 4, 0, 1e6, false, "1 us", nullptr, "each further ring step"},
      {"nccl_rank_bandwidth", "nccl", Kind::Bandwidth, OSIM_REF(nccl, nccl_rank_bandwidth), 4, 0, 1e5, true, "330 GB/s",
       OSIM_LIMITED(nccl, nccl_rank_bandwidth), "ceiling of one rank's collective traffic (absent: none)"},
      {"nccl_host_rank_bandwidth", "nccl", Kind::Bandwidth, OSIM_REF(nccl, nccl_host_rank_bandwidth), 4, 0, 1e5, true, "24 GB/s",
       OSIM_LIMITED(nccl, nccl_host_rank_bandwidth), "the same through host memory (NCCL_P2P_DISABLE=1)"},
      {"nccl_tables", "nccl", Kind::Custom, {}, 4, 0, 0, false, "[{collective: all_to_all, ranks: 4, transport: p2p, points: [[1048576, 20.5]]}]",
       [](const ModelParams& p) { return !p.nccl.nccl_tables.empty(); },
       "collectives measured at NCCL's channels or the given count: [bytes per rank, time in us]; used inside one host, nearest rank count",
       read_nccl_tables,
       [](const ModelParams& p) {
         std::string out = "\n";
         for (const auto& tab : p.nccl.nccl_tables) {
           out += fmt::format("    - {{collective: {}, ranks: {}, transport: {}, {}points: [", table_coll_name(tab.coll), tab.ranks,
                              tab.via_host ? "host" : "p2p", tab.channels > 0 ? fmt::format("channels: {}, ", tab.channels) : std::string());
           for (size_t i = 0; i < tab.points.size(); ++i)
             out += fmt::format("{}[{:.0f}, {:.2f}]", i ? ", " : "", tab.points[i].first, tab.points[i].second * 1e6);
           out += "]}\n";
         }
         return out;
       }},
      // sustained load (power)
      {"sustained_slowdown", "power", Kind::Number, OSIM_REF(power, sustained_slowdown), 4, 0, 2, false, "0.15", OSIM_POS(power, sustained_slowdown),
       "how much longer compute-bound kernels take at full duty (0: off)"},
      {"sustained_duty", "power", Kind::Number, OSIM_REF(power, sustained_duty), 4, 0, 0.999, false, "0.7", OSIM_POS(power, sustained_slowdown),
       "the duty cycle above which the clock drops"},
      {"sustained_time_constant", "power", Kind::TimeMs, OSIM_REF(power, sustained_time_constant), 3, 0, 1e6, true, "50 ms",
       OSIM_POS(power, sustained_slowdown), "the duty cycle's averaging time"},
      {"sustained_slow_slowdown", "power", Kind::Number, OSIM_REF(power, sustained_slow_slowdown), 4, 0, 2, false, "0.03",
       OSIM_POS(power, sustained_slow_slowdown), "a second, slower term at full duty (0: off)"},
      {"sustained_slow_time_constant", "power", Kind::TimeMs, OSIM_REF(power, sustained_slow_time_constant), 3, 0, 1e6, true, "1000 ms",
       OSIM_POS(power, sustained_slow_slowdown), "the slow term's averaging time"},
      {"comm_clock_share", "power", Kind::Number, OSIM_REF(power, comm_clock_share), 4, 0, 1, false, "0.57",
       [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
       "the share of the compute slowdown a collective takes (its SM code)"},
      {"comm_clock_share_host", "power", Kind::Number, OSIM_REF(power, comm_clock_share_host), 4, 0, 1, false, "0.48",
       [](const ModelParams& p) { return p.power.comm_clock_share > 0 || p.power.comm_clock_share_host > 0; },
       "the same through host memory"},
      {"straggler_share", "power", Kind::Number, OSIM_REF(power, straggler_share), 4, 0, 1, false, "0.02", OSIM_POS(power, straggler_share),
       "a collective waits this share of the time since the ranks' last one, times how far the clock is down"},
      // NVLink
      {"nvlink_wake_latency", "nvlink", Kind::TimeUs, OSIM_REF(nvlink, nvlink_wake_latency), 1, 0, 1e6, false, "100 us",
       OSIM_POS(nvlink, nvlink_wake_latency), "an NVLink collective after nvlink_wake_after without one pays this first (0: off)"},
      {"nvlink_wake_after", "nvlink", Kind::TimeMs, OSIM_REF(nvlink, nvlink_wake_after), 1, 0, 1e6, true, "40 ms",
       OSIM_POS(nvlink, nvlink_wake_latency), "how long NVLink stays awake after a collective"},
      {"nvlink_wake_min_bytes", "nvlink", Kind::Bytes, OSIM_REF(nvlink, nvlink_wake_min_bytes), 0, 0, 1e15, false, "1 MiB",
       OSIM_NOTDEF(nvlink, nvlink_wake_min_bytes), "collectives below this neither wake NVLink nor keep it awake"},
      {"nvlink_copy_latency", "nvlink", Kind::TimeUs, OSIM_REF(nvlink, nvlink_copy_latency), 1, 0, 1e6, false, "12 us",
       OSIM_POS(nvlink, nvlink_copy_latency), "an NVLink collective starting beside a host copy of one of its ranks waits this first"},
      {"nvlink_awake_slowdown", "nvlink", Kind::Number, OSIM_REF(nvlink, nvlink_awake_slowdown), 4, 0, 1, false, "0.02",
       OSIM_POS(nvlink, nvlink_awake_slowdown), "compute-bound kernels take (1 + this) times longer while the rank's NVLink is awake"},
      // interference
      {"gemm_slowdown_base", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_base), 4, 0, 0.95, false, "0.04", nullptr,
       "a compute kernel beside a collective is slower by base + per_channel x channels"},
      {"gemm_slowdown_per_channel", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_per_channel), 5, 0, 0.1, false, "0.0025",
       nullptr, "see gemm_slowdown_base"},
      {"gemm_slowdown_per_copy", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_per_copy), 4, 0, 0.5, false, "0.035", nullptr,
       "a compute kernel is slower by this per busy copy engine (HBM)"},
      {"comm_slowdown_base", "interference", Kind::Number, OSIM_REF(interference, comm_slowdown_base), 4, 0, 100, false, "0.9", nullptr,
       "a collective beside compute runs at its rate / max(1, base + per_channel x channels)"},
      {"comm_slowdown_per_channel", "interference", Kind::Number, OSIM_REF(interference, comm_slowdown_per_channel), 5, 0, 10, false, "0.045",
       nullptr, "see comm_slowdown_base"},
      {"copy_weight", "interference", Kind::Number, OSIM_REF(interference, copy_weight), 4, 0.01, 100, false, "2.7", nullptr,
       "a copy's max-min weight against collective flows on a shared link"},
      {"copy_weight_d2h", "interference", Kind::Number, OSIM_REF(interference, copy_weight_d2h), 4, 0.01, 100, false, "1.8",
       OSIM_POS(interference, copy_weight_d2h), "the same for D2H copies (absent: copy_weight)"},
      {"host_transport_cost_h2d", "interference", Kind::Number, OSIM_REF(interference, host_transport_cost_h2d), 4, 0.1, 10, false, "1.1",
       [](const ModelParams& p) { return p.interference.host_transport_cost_h2d != 1.0 || p.interference.host_transport_cost_d2h != 1.0; },
       "what a byte of a collective through host memory costs the receiver's way down, in copy bytes"},
      {"host_transport_cost_d2h", "interference", Kind::Number, OSIM_REF(interference, host_transport_cost_d2h), 4, 0.1, 10, false, "1.3",
       [](const ModelParams& p) { return p.interference.host_transport_cost_h2d != 1.0 || p.interference.host_transport_cost_d2h != 1.0; },
       "the same for the sender's way up"},
  };
  return table;
}

const char* unit_of(Kind k) {
  switch (k) {
    case Kind::TimeUs: return "us";
    case Kind::TimeMs: return "ms";
    case Kind::Bandwidth: return "GB/s";
    case Kind::Bytes: return "bytes";
    default: return "";
  }
}

// A field's value in the unit it is written in.
double value_of(const Field& f, ModelParams& p) {
  return std::visit(
      [&](auto get) -> double {
        auto* v = get(p);
        using T = std::decay_t<decltype(*v)>;
        if constexpr (std::is_same_v<T, Time>) return f.kind == Kind::TimeMs ? v->ms() : v->us();
        else if constexpr (std::is_same_v<T, Bandwidth>) return v->GBps();
        else return static_cast<double>(*v);
      },
      f.ref);
}

std::string format_value(const Field& f, const ModelParams& params) {
  ModelParams& p = const_cast<ModelParams&>(params);  // value_of only reads
  const double v = value_of(f, p);
  switch (f.kind) {
    case Kind::TimeUs: return fmt::format("{:.{}f} us", v, f.precision);
    case Kind::TimeMs: return fmt::format("{:.{}f} ms", v, f.precision);
    case Kind::Bandwidth: return fmt::format("{:.{}f} GB/s", v, f.precision);
    case Kind::Number: return fmt::format("{:.{}f}", v, f.precision);
    case Kind::Count: case Kind::Bytes: return fmt::format("{}", static_cast<int64_t>(v));
    case Kind::Custom: break;
  }
  return "";
}

std::string range_text(const Field& f) {
  if (f.kind == Kind::Custom) return "";
  const auto num = [](double x) { return x >= 1e5 ? fmt::format("{:g}", x) : fmt::format("{}", x); };
  return fmt::format("{}{}, {}]", f.lo_open ? "(" : "[", num(f.lo), num(f.hi));
}

void read_field(const Field& f, const MapReader& m, const std::string& file, ModelParams& p) {
  const std::string key = f.name;
  if (!m.has(key)) return;
  if (f.kind == Kind::Custom) {
    f.read(m, file, p);
    return;
  }
  std::visit(
      [&](auto get) {
        auto* v = get(p);
        using T = std::decay_t<decltype(*v)>;
        double x = 0;
        if constexpr (std::is_same_v<T, Time>) {
          *v = m.duration(key);
          x = f.kind == Kind::TimeMs ? v->ms() : v->us();
        } else if constexpr (std::is_same_v<T, Bandwidth>) {
          *v = m.bandwidth(key);
          x = v->is_unlimited() ? HUGE_VAL : v->GBps();
        } else if constexpr (std::is_same_v<T, int>) {
          const int64_t i = m.integer(key);
          x = static_cast<double>(i);
          if (x >= f.lo && x <= f.hi) *v = static_cast<int>(i);
        } else if constexpr (std::is_same_v<T, Bytes>) {
          *v = m.bytes(key);
          x = static_cast<double>(*v);
        } else {
          *v = m.num(key);
          x = *v;
        }
        if (!(f.lo_open ? x > f.lo : x >= f.lo) || !(x <= f.hi))
          m.fail(key, fmt::format("must be in {} {}, e.g. {}", range_text(f), unit_of(f.kind), f.example));
      },
      f.ref);
}

std::vector<std::string> known_keys() {
  std::vector<std::string> out;
  for (const Field& f : fields()) out.emplace_back(f.name);
  return out;
}

std::string default_text(const Field& f) {
  if (f.kind == Kind::Custom) return "none";
  ModelParams d;
  if (const auto* bw = std::get_if<Bandwidth* (*)(ModelParams&)>(&f.ref); bw && (*bw)(d)->is_unlimited()) return "unlimited";
  if (const auto* t = std::get_if<Time* (*)(ModelParams&)>(&f.ref); t && *(*t)(d) < Time::zero()) return "unset";
  const double v = value_of(f, d);
  if (f.kind == Kind::Count || f.kind == Kind::Bytes) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:g}{}{}", v, unit_of(f.kind)[0] ? " " : "", unit_of(f.kind));
}

}  // namespace

std::vector<ModelFieldDoc> model_field_docs() {
  std::vector<ModelFieldDoc> out;
  for (const Field& f : fields())
    out.push_back({f.name, f.family, unit_of(f.kind), range_text(f), default_text(f), f.doc});
  return out;
}

std::string model_fields_markdown() {
  std::string out, family;
  for (const ModelFieldDoc& d : model_field_docs()) {
    if (d.family != family) {
      family = d.family;
      out += fmt::format("{}### {}\n\n| field | unit | range | default | what it is |\n| --- | --- | --- | --- | --- |\n", out.empty() ? "" : "\n", family);
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", d.name, d.unit, d.range, d.default_value, d.doc);
  }
  return out;
}

std::string model_yaml(const ModelParams& p) {
  std::string out = "schema: overlapsim.calibration/v1\nmodel:\n";
  std::string family;
  for (const Field& f : fields()) {
    if (f.written && !f.written(p)) continue;
    if (f.family != family) {
      family = f.family;
      out += fmt::format("  # {}\n", family);
    }
    out += fmt::format("  {}:", f.name);
    out += f.kind == Kind::Custom ? f.write(p) : " " + format_value(f, p) + "\n";
  }
  return out;
}

ModelParams load_calibration(const std::string& path, const ModelParams& base) {
  const YAML::Node root = load_yaml_file(path);
  MapReader top(path, root, "calibration", {"schema", "model"});
  if (top.str("schema") != "overlapsim.calibration/v1") top.fail("schema", "expected overlapsim.calibration/v1");
  // Keys of terms the model no longer has (their effects are held by others
  // since): named, so an old file's reader knows what to do.
  if (const YAML::Node model = top.get("model"); model.IsMap())
    for (const auto& kv : model)
      if (const std::string k = kv.first.as<std::string>(); k.rfind("copy_step_", 0) == 0 || k.rfind("copy_bidir_small", 0) == 0 ||
                                                             k.rfind("copy_bidir_mid", 0) == 0 || k.rfind("copy_bidir_factor_small", 0) == 0 ||
                                                             k.rfind("copy_bidir_factor_mid", 0) == 0)
        throw InputError(location_of(path, kv.first), fmt::format("'{}' is a retired term (the hand-off latencies and copy_bidir_table hold its effect "
                                                                  "now): re-run overlapsim calibrate on the bench files this calibration came from",
                                                                  k));
  MapReader m(path, top.get("model"), "calibration model", known_keys());
  ModelParams p = base;
  for (const Field& f : fields()) read_field(f, m, path, p);
  if (m.has("handoff_phase_min") != m.has("handoff_phase_max"))
    m.fail(m.has("handoff_phase_min") ? "handoff_phase_min" : "handoff_phase_max",
           "give handoff_phase_min and handoff_phase_max together, e.g. 0.3 us and 7.4 us");
  if (m.has("handoff_phase_min") && !(p.handoff.handoff_phase_max >= p.handoff.handoff_phase_min))
    m.fail("handoff_phase_max", "must be >= handoff_phase_min >= 0, e.g. 0.3 us and 7.4 us");
  return p;
}

}  // namespace osim
