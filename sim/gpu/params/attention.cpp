// Calibration fields of the attention: self- and cross-attention efficiency
// of the default kernel and of each measured backend, the slow term's share.
#include "gpu/params/field.hpp"

#include <fmt/format.h>

namespace osim {

namespace params {

namespace {

constexpr double kBig = 1e9;

AttnBackend read_backend(const MapReader& m, const std::string& key, bool allow_default) {
  const std::string name = m.str(key);
  const auto b = attn_backend_of(name);
  if (!b || (!allow_default && *b == AttnBackend::Default)) m.fail(key, "must be one of cudnn, flash2, flash3, efficient, math");
  return *b;
}

void read_backends(const MapReader& m, const std::string& file, ModelParams& p) {
  const YAML::Node list = m.get("attention_backends");
  if (!list.IsSequence() || list.size() == 0)
    m.fail("attention_backends", "must be a list of {backend, efficiency, cross_efficiency, cross_q0}, e.g. [{backend: cudnn, efficiency: 0.7}]");
  auto& out = p.attention.backends;
  out.clear();
  for (const YAML::Node& e : list) {
    MapReader r(file, e, "attention_backends entry",
                {"backend", "efficiency", "cross_efficiency", "cross_q0", "head_dim0", "causal_efficiency", "causal_s0"});
    AttentionBackendRates b;
    b.backend = read_backend(r, "backend", false);
    for (const auto& x : out)
      if (x.backend == b.backend) r.fail("backend", "is listed twice");
    b.rates.efficiency = r.num("efficiency");
    b.rates.cross_efficiency = r.opt_num("cross_efficiency").value_or(0);
    b.rates.cross_q0 = r.opt_num("cross_q0").value_or(0);
    b.rates.head_dim0 = r.opt_num("head_dim0").value_or(0);
    if (!(b.rates.head_dim0 >= 0 && b.rates.head_dim0 <= 1e4)) r.fail("head_dim0", "must be in [0, 10000] (0: one efficiency for every head_dim)");
    if (!(b.rates.efficiency > 0 && b.rates.efficiency <= 1)) r.fail("efficiency", "must be in (0, 1], e.g. 0.7");
    if (!(b.rates.cross_efficiency >= 0 && b.rates.cross_efficiency <= 1)) r.fail("cross_efficiency", "must be in [0, 1] (0: efficiency)");
    if (!(b.rates.cross_q0 >= 0)) r.fail("cross_q0", "must be >= 0");
    b.rates.causal_efficiency = r.opt_num("causal_efficiency").value_or(0);
    if (!(b.rates.causal_efficiency >= 0 && b.rates.causal_efficiency <= 1)) r.fail("causal_efficiency", "must be in [0, 1] (0: efficiency)");
    b.rates.causal_s0 = r.opt_num("causal_s0").value_or(0);
    if (!(b.rates.causal_s0 >= 0 && b.rates.causal_s0 <= kBig)) r.fail("causal_s0", "must be >= 0 (0: one causal efficiency for every length)");
    out.push_back(b);
  }
}

std::string write_backends(const ModelParams& p) {
  std::string out = "\n";
  for (const auto& b : p.attention.backends)
    out += fmt::format(
        "    - {{backend: {}, efficiency: {:.4f}, cross_efficiency: {:.4f}, cross_q0: {:.1f}{}{}}}\n", to_string(b.backend), b.rates.efficiency,
        b.rates.cross_efficiency, b.rates.cross_q0, b.rates.head_dim0 > 0 ? fmt::format(", head_dim0: {:.1f}", b.rates.head_dim0) : "",
        b.rates.causal_efficiency > 0 ? fmt::format(", causal_efficiency: {:.4f}, causal_s0: {:.1f}", b.rates.causal_efficiency, b.rates.causal_s0)
                                      : "");
  return out;
}

}  // namespace

std::vector<Field> attention_fields() {
  return {
      {.name = "attention_efficiency",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, attention_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.6",
       .doc = "share of the GPU's peak self-attention reaches"},
      {.name = "cross_attention_efficiency",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, cross_attention_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.3",
       .written = OSIM_POS(attention, cross_attention_efficiency),
       .doc = "the same for cross-attention, over cross_attention_q0 (absent: attention_efficiency)"},
      {.name = "cross_attention_q0",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, cross_attention_q0),
       .precision = 1,
       .hi = kBig,
       .example = "930",
       .written = OSIM_POS(attention, cross_attention_q0),
       .doc = "cross-attention efficiency / (1 + q0 / seq_q): short query sets lose more"},
      {.name = "attention_head_dim0",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, attention_head_dim0),
       .precision = 1,
       .hi = 1e4,
       .example = "56",
       .written = OSIM_POS(attention, attention_head_dim0),
       .doc = "the efficiencies above are head_dim 128's; at head_dim d x (d / (d + d0)) / (128 / (128 + d0))"},
      {.name = "causal_attention_efficiency",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, causal_attention_efficiency),
       .hi = 1,
       .example = "0.55",
       .written = OSIM_POS(attention, causal_attention_efficiency),
       .doc = "the same for causal attention, on the query-key pairs it computes, over causal_attention_s0 (absent: attention_efficiency)"},
      {.name = "causal_attention_s0",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, causal_attention_s0),
       .precision = 1,
       .hi = kBig,
       .example = "1000",
       .written = OSIM_POS(attention, causal_attention_s0),
       .doc = "causal efficiency / (1 + s0 / seq_q): short sequences lose more on the diagonal's tiles"},
      {.name = "attention_default_backend",
       .family = "attention",
       .kind = Kind::Custom,
       .example = "cudnn",
       .written = [](const ModelParams& p) { return p.attention.default_backend != AttnBackend::Default; },
       .doc = "the SDPA backend the framework picks by default on this GPU: the three fields above are its rates",
       .read = [](const MapReader& m, const std::string&,
                  ModelParams& p) { p.attention.default_backend = read_backend(m, "attention_default_backend", false); },
       .write = [](const ModelParams& p) { return " " + to_string(p.attention.default_backend) + "\n"; }},
      {.name = "attention_backends",
       .family = "attention",
       .kind = Kind::Custom,
       .example = "[{backend: cudnn, efficiency: 0.7, cross_efficiency: 0.5, cross_q0: 300}]",
       .written = [](const ModelParams& p) { return !p.attention.backends.empty(); },
       .doc = "each measured SDPA backend's rates, for attention ops that name their backend",
       .read = read_backends,
       .write = write_backends},
      {.name = "attention_slow_share",
       .family = "attention",
       .kind = Kind::Number,
       .ref = OSIM_REF(attention, attention_slow_share),
       .precision = 2,
       .hi = 1,
       .example = "0",
       .written = [](const ModelParams& p) { return p.attention.attention_slow_share != 1.0; },
       .doc = "the share of the sustained-load slow term attention takes"},
  };
}

}  // namespace params
}  // namespace osim
