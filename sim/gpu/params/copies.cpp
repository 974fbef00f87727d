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
  p.copies.copy_bidir_table =
      read_share_table(m, "copy_bidir_table",
                       "must be a list of [bytes, H2D share, D2H share] by bytes, shares in (0, 1], e.g. [[4096, 0.7, 0.7], [1048576, 0.9, 0.9]]");
}

}  // namespace

std::vector<Field> copies_fields() {
  return {
      {.name = "copy_engine_bandwidth",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, copy_engine_bandwidth, h2d),
       .hi = 1e5,
       .lo_open = true,
       .example = "54 GB/s",
       .written = OSIM_LIMITED_DIR(copies, copy_engine_bandwidth, h2d),
       .doc = "one copy engine's ceiling for copies to and from host memory over PCIe (absent: none)"},
      {.name = "copy_engine_bandwidth_d2h",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, copy_engine_bandwidth, d2h),
       .hi = 1e5,
       .lo_open = true,
       .example = "55 GB/s",
       .written = OSIM_LIMITED_DIR(copies, copy_engine_bandwidth, d2h),
       .doc = "the D2H engine's own ceiling (absent: copy_engine_bandwidth)"},
      {.name = "copy_engine_bandwidth_c2c",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, copy_engine_bandwidth_c2c, h2d),
       .hi = 1e5,
       .lo_open = true,
       .example = "346 GB/s",
       .written = [](const ModelParams& p) { return p.copies.copy_engine_bandwidth_c2c.h2d != CopyParams{}.copy_engine_bandwidth_c2c.h2d; },
       .doc = "the same over NVLink-C2C (a GH200's host link); the default is a public GH200 figure, not our measurement: "
              "nvbandwidth host_to_device_memcpy_ce, NVIDIA/nvbandwidth issue 23"},
      {.name = "copy_engine_bandwidth_c2c_d2h",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, copy_engine_bandwidth_c2c, d2h),
       .hi = 1e5,
       .lo_open = true,
       .example = "300 GB/s",
       .written = [](const ModelParams& p) { return p.copies.copy_engine_bandwidth_c2c.d2h != CopyParams{}.copy_engine_bandwidth_c2c.d2h; },
       .doc = "the D2H engine's over NVLink-C2C; the default is public too: about 15 % below H2D in that report "
              "(Schieffer et al. 2024, arXiv 2407.07850: 375 and 297 GB/s)"},
      {.name = "copy_latency",
       .family = "copies",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(copies, copy_latency, h2d),
       .hi = 1e6,
       .example = "2.4 us",
       .doc = "DMA set-up before a copy's first byte, beyond its route's latency"},
      {.name = "copy_latency_d2h",
       .family = "copies",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(copies, copy_latency, d2h),
       .hi = 1e6,
       .example = "1.4 us",
       .written = OSIM_NONNEG_DIR(copies, copy_latency, d2h),
       .doc = "the same for D2H copies (absent: copy_latency)"},
      {.name = "pageable_bandwidth",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, pageable_bandwidth, h2d),
       .hi = 1e5,
       .lo_open = true,
       .example = "6.6 GB/s",
       .doc = "a pageable copy's rate (the driver stages it through pinned memory)"},
      {.name = "pageable_bandwidth_d2h",
       .family = "copies",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF_DIR(copies, pageable_bandwidth, d2h),
       .hi = 1e5,
       .lo_open = true,
       .example = "10.8 GB/s",
       .written = OSIM_LIMITED_DIR(copies, pageable_bandwidth, d2h),
       .doc = "the same for D2H (absent: pageable_bandwidth)"},
      {.name = "pageable_latency",
       .family = "copies",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(copies, pageable_latency, h2d),
       .hi = 1e6,
       .example = "30 us",
       .written = OSIM_NONNEG_DIR(copies, pageable_latency, h2d),
       .doc = "a pageable copy's set-up (absent: the pinned one's)"},
      {.name = "pageable_latency_d2h",
       .family = "copies",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF_DIR(copies, pageable_latency, d2h),
       .hi = 1e6,
       .example = "45 us",
       .written = OSIM_NONNEG_DIR(copies, pageable_latency, d2h),
       .doc = "the same for D2H (absent: pageable_latency)"},
      {.name = "copy_bidir_factor",
       .family = "copies",
       .kind = Kind::Number,
       .ref = OSIM_REF_DIR(copies, copy_bidir_factor, h2d),
       .lo = 0.05,
       .hi = 1,
       .example = "0.95",
       .written = [](const ModelParams& p) { return p.copies.copy_bidir_factor.h2d < 1 || p.copies.copy_bidir_factor.d2h < 1; },
       .doc = "share of its engine's rate an H2D copy keeps while the GPU copies D2H too"},
      {.name = "copy_bidir_factor_d2h",
       .family = "copies",
       .kind = Kind::Number,
       .ref = OSIM_REF_DIR(copies, copy_bidir_factor, d2h),
       .lo = 0.05,
       .hi = 1,
       .example = "0.92",
       .written = [](const ModelParams& p) { return p.copies.copy_bidir_factor.h2d < 1 || p.copies.copy_bidir_factor.d2h < 1; },
       .doc = "the same for a D2H copy beside an H2D one"},
      {.name = "copy_bidir_table",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[[65536, 0.7, 0.7], [268435456, 0.9, 0.9]]",
       .written = [](const ModelParams& p) { return p.copies.copy_bidir_tabled(); },
       .doc = "[bytes, H2D share, D2H share] by size: both ways at once per size, interpolated in log(bytes); replaces the factors",
       .read = read_bidir_table,
       .write = [](const ModelParams& p) { return format_share_table(p.copies.copy_bidir_table); }},
      {.name = "host_h2d_aggregate",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[55 GB/s, 106 GB/s]",
       .written = [](const ModelParams& p) { return !p.copies.host_h2d_aggregate.empty(); },
       .doc = "a host bridge's limit on H2D copies with 1, 2, ... GPUs copying at once (never above the topology's)",
       .read = [](const MapReader& m, const std::string& f,
                  ModelParams& p) { read_bandwidth_list(m, f, "host_h2d_aggregate", p.copies.host_h2d_aggregate); },
       .write = [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_h2d_aggregate); }},
      {.name = "host_d2h_aggregate",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[55 GB/s, 108 GB/s]",
       .written = [](const ModelParams& p) { return !p.copies.host_d2h_aggregate.empty(); },
       .doc = "the same for D2H copies",
       .read = [](const MapReader& m, const std::string& f,
                  ModelParams& p) { read_bandwidth_list(m, f, "host_d2h_aggregate", p.copies.host_d2h_aggregate); },
       .write = [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_d2h_aggregate); }},
      {.name = "host_bidir_aggregate",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[100 GB/s, 146 GB/s]",
       .written = [](const ModelParams& p) { return !p.copies.host_bidir_aggregate.empty(); },
       .doc = "a host bridge's limit on H2D and D2H together with 1, 2, ... GPUs copying either way at once (from two GPUs on)",
       .read = [](const MapReader& m, const std::string& f,
                  ModelParams& p) { read_bandwidth_list(m, f, "host_bidir_aggregate", p.copies.host_bidir_aggregate); },
       .write = [](const ModelParams& p) { return format_bandwidth_list(p.copies.host_bidir_aggregate); }},
      {.name = "pageable_h2d_aggregate",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[7.5 GB/s, 14 GB/s]",
       .written = [](const ModelParams& p) { return !p.copies.pageable_h2d_aggregate.empty(); },
       .doc = "the host's limit on pageable H2D copies with 1, 2, ... GPUs copying at once, one process each (from two GPUs on; a 1-GPU box "
               "fits it from its CPU's side: processes_host_to_pinned)",
       .read = [](const MapReader& m, const std::string& f,
                  ModelParams& p) { read_bandwidth_list(m, f, "pageable_h2d_aggregate", p.copies.pageable_h2d_aggregate); },
       .write = [](const ModelParams& p) { return format_bandwidth_list(p.copies.pageable_h2d_aggregate); }},
      {.name = "pageable_d2h_aggregate",
       .family = "copies",
       .kind = Kind::Custom,
       .example = "[13.5 GB/s, 25 GB/s]",
       .written = [](const ModelParams& p) { return !p.copies.pageable_d2h_aggregate.empty(); },
       .doc = "the same for pageable D2H copies",
       .read = [](const MapReader& m, const std::string& f,
                  ModelParams& p) { read_bandwidth_list(m, f, "pageable_d2h_aggregate", p.copies.pageable_d2h_aggregate); },
       .write = [](const ModelParams& p) { return format_bandwidth_list(p.copies.pageable_d2h_aggregate); }},
  };
}

}  // namespace params
}  // namespace osim
