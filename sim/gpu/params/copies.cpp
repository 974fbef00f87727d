// Calibration fields of the copies: set-up, engine and pageable rates, both
// ways at once, the host side (and the struct's methods).
#include "core/interp.hpp"
#include "gpu/params/field.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace osim {

double CopyParams::copy_bidir_share(Direction d, Bytes bytes) const {
  if (!copy_bidir_tabled()) return copy_bidir_factor[d];
  return log_interpolate(copy_bidir_table, static_cast<double>(bytes), d == Direction::D2H ? 2 : 1);
}

namespace params {

namespace {

std::string format_bandwidth_list(const std::vector<Bandwidth>& table) {
  std::string out = " [";
  for (size_t i = 0; i < table.size(); ++i) out += (i ? ", " : "") + fmt::format("{:.4f} GB/s", table[i].GBps());
  return out + "]\n";
}

void read_bandwidth_list(const MapReader& m, const std::string& file, const std::string& key, std::vector<Bandwidth>& table) {
  const YAML::Node list = m.get(key);
  if (!list.IsSequence() || list.size() == 0)
    m.fail(key, fmt::format("must be a list of bandwidths: {} with 1, 2, ... GPUs copying {} at once, e.g. [55 GB/s, 106 GB/s]",
                            key.starts_with("pageable") ? "the host's limit" : "the host bridge's limit",
                            key.find("bidir") != std::string::npos ? "either way"
                            : key.find("h2d") != std::string::npos ? (key.starts_with("pageable") ? "pageable H2D" : "H2D")
                                                                   : (key.starts_with("pageable") ? "pageable D2H" : "D2H")));
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

void read_bidir_table(const MapReader& m, const std::string&, ModelParams& p) {
  p.copies.copy_bidir_table = read_share_table(
      m, "copy_bidir_table", "must be a list of [bytes, H2D share, D2H share] by bytes, shares in (0, 1], e.g. [[4096, 0.7, 0.7], [1048576, 0.9, 0.9]]");
}

}  // namespace

std::vector<Field> copies_fields() {
  return {
    {"copy_engine_bandwidth", "copies", Kind::Bandwidth, OSIM_REF_DIR(copies, copy_engine_bandwidth, h2d), 4, 0, 1e5, true, "54 GB/s",
     OSIM_LIMITED_DIR(copies, copy_engine_bandwidth, h2d), "one copy engine's ceiling for copies to and from host memory (absent: none)"},
    {"copy_engine_bandwidth_d2h", "copies", Kind::Bandwidth, OSIM_REF_DIR(copies, copy_engine_bandwidth, d2h), 4, 0, 1e5, true, "55 GB/s",
     OSIM_LIMITED_DIR(copies, copy_engine_bandwidth, d2h), "the D2H engine's own ceiling (absent: copy_engine_bandwidth)"},
    {"copy_latency", "copies", Kind::TimeUs, OSIM_REF_DIR(copies, copy_latency, h2d), 4, 0, 1e6, false, "2.4 us", nullptr,
     "DMA set-up before a copy's first byte, beyond its route's latency"},
    {"copy_latency_d2h", "copies", Kind::TimeUs, OSIM_REF_DIR(copies, copy_latency, d2h), 4, 0, 1e6, false, "1.4 us", OSIM_NONNEG_DIR(copies, copy_latency, d2h),
     "the same for D2H copies (absent: copy_latency)"},
    {"pageable_bandwidth", "copies", Kind::Bandwidth, OSIM_REF_DIR(copies, pageable_bandwidth, h2d), 4, 0, 1e5, true, "6.6 GB/s", nullptr,
     "a pageable copy's rate (the driver stages it through pinned memory)"},
    {"pageable_bandwidth_d2h", "copies", Kind::Bandwidth, OSIM_REF_DIR(copies, pageable_bandwidth, d2h), 4, 0, 1e5, true, "10.8 GB/s",
     OSIM_LIMITED_DIR(copies, pageable_bandwidth, d2h), "the same for D2H (absent: pageable_bandwidth)"},
    {"pageable_latency", "copies", Kind::TimeUs, OSIM_REF_DIR(copies, pageable_latency, h2d), 4, 0, 1e6, false, "30 us", OSIM_NONNEG_DIR(copies, pageable_latency, h2d),
     "a pageable copy's set-up (absent: the pinned one's)"},
    {"pageable_latency_d2h", "copies", Kind::TimeUs, OSIM_REF_DIR(copies, pageable_latency, d2h), 4, 0, 1e6, false, "45 us",
     OSIM_NONNEG_DIR(copies, pageable_latency, d2h), "the same for D2H (absent: pageable_latency)"},
    {"copy_bidir_factor", "copies", Kind::Number, OSIM_REF_DIR(copies, copy_bidir_factor, h2d), 4, 0.05, 1, false, "0.95",
     [](const ModelParams& p) { return p.copies.copy_bidir_factor.h2d < 1 || p.copies.copy_bidir_factor.d2h < 1; },
     "share of its engine's rate an H2D copy keeps while the GPU copies D2H too"},
    {"copy_bidir_factor_d2h", "copies", Kind::Number, OSIM_REF_DIR(copies, copy_bidir_factor, d2h), 4, 0.05, 1, false, "0.92",
     [](const ModelParams& p) { return p.copies.copy_bidir_factor.h2d < 1 || p.copies.copy_bidir_factor.d2h < 1; },
     "the same for a D2H copy beside an H2D one"},
    {"copy_bidir_table", "copies", Kind::Custom, {}, 4, 0, 0, false, "[[65536, 0.7, 0.7], [268435456, 0.9, 0.9]]",
     [](const ModelParams& p) { return p.copies.copy_bidir_tabled(); },
     "[bytes, H2D share, D2H share] by size: both ways at once per size, interpolated in log(bytes); replaces the factors",
     read_bidir_table,
     [](const ModelParams& p) { return format_share_table(p.copies.copy_bidir_table); }},
    {"host_h2d_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[55 GB/s, 106 GB/s]",
     [](const ModelParams& p) { return !p.copies.host_h2d_aggregate.empty(); },
     "a host bridge's limit on H2D copies with 1, 2, ... GPUs copying at once (never above the topology's)",
     [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "host_h2d_aggregate", p.copies.host_h2d_aggregate); },
     [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_h2d_aggregate); }},
    {"host_d2h_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[55 GB/s, 108 GB/s]",
     [](const ModelParams& p) { return !p.copies.host_d2h_aggregate.empty(); }, "the same for D2H copies",
     [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "host_d2h_aggregate", p.copies.host_d2h_aggregate); },
     [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_d2h_aggregate); }},
    {"host_bidir_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[100 GB/s, 146 GB/s]",
     [](const ModelParams& p) { return !p.copies.host_bidir_aggregate.empty(); },
     "a host bridge's limit on H2D and D2H together with 1, 2, ... GPUs copying either way at once (from two GPUs on)",
     [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "host_bidir_aggregate", p.copies.host_bidir_aggregate); },
     [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_bidir_aggregate); }},
    {"pageable_h2d_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[7.5 GB/s, 14 GB/s]",
     [](const ModelParams& p) { return !p.copies.pageable_h2d_aggregate.empty(); },
     "the host's limit on pageable H2D copies with 1, 2, ... GPUs copying at once, one process each (from two GPUs on)",
     [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "pageable_h2d_aggregate", p.copies.pageable_h2d_aggregate); },
     [](const ModelParams& p) { return format_bandwidth_list(p.copies.pageable_h2d_aggregate); }},
    {"pageable_d2h_aggregate", "copies", Kind::Custom, {}, 4, 0, 0, false, "[13.5 GB/s, 25 GB/s]",
     [](const ModelParams& p) { return !p.copies.pageable_d2h_aggregate.empty(); }, "the same for pageable D2H copies",
     [](const MapReader& m, const std::string& f, ModelParams& p) { read_bandwidth_list(m, f, "pageable_d2h_aggregate", p.copies.pageable_d2h_aggregate); },
     [](const ModelParams& p) { return format_bandwidth_list(p.copies.pageable_d2h_aggregate); }},
  };
}

}  // namespace params
}  // namespace osim
