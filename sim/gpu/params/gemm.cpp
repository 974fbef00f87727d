// Calibration fields of the GEMMs: the measured shapes, the shape model, the
// fallback efficiency, fp8's against bf16's.
#include "gpu/params/field.hpp"

#include <fmt/format.h>

namespace osim {

namespace params {

namespace {

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

}  // namespace

std::vector<Field> gemm_fields() {
  return {
      {.name = "gemm_efficiency",
       .family = "gemm",
       .kind = Kind::Number,
       .ref = OSIM_REF(gemm, gemm_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.75",
       .doc = "share of the GPU's peak a GEMM reaches where neither table nor model covers its shape"},
      {.name = "gemm_model",
       .family = "gemm",
       .kind = Kind::Custom,
       .example = "{efficiency: 0.88, m0: 77, n0: 0, k0: 160, pow2_m: 0.025}",
       .written = [](const ModelParams& p) { return p.gemm.gemm_model.efficiency > 0; },
       .doc = "efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power of two]) for shapes not in gemm_shapes",
       .read = read_gemm_model,
       .write =
           [](const ModelParams& p) {
             const auto& g = p.gemm.gemm_model;
             return fmt::format(" {{efficiency: {:.4f}, m0: {:.2f}, n0: {:.2f}, k0: {:.2f}, pow2_m: {:.4f}}}\n", g.efficiency, g.m0, g.n0, g.k0,
                                g.pow2_m);
           }},
      {.name = "gemm_shapes",
       .family = "gemm",
       .kind = Kind::Custom,
       .example = "[[16384, 5120, 5120, 0.82]]",
       .written = [](const ModelParams& p) { return !p.gemm.gemm_shapes.empty(); },
       .doc = "[m, n, k, efficiency] per measured shape (the last entry of a shape wins)",
       .read = read_gemm_shapes,
       .write =
           [](const ModelParams& p) {
             std::string out = "\n";
             for (const auto& g : p.gemm.gemm_shapes) out += fmt::format("    - [{}, {}, {}, {:.4f}]\n", g.m, g.n, g.k, g.efficiency);
             return out;
           }},
      {.name = "gemm_fp8_ratio",
       .family = "gemm",
       .kind = Kind::Number,
       .ref = OSIM_REF(gemm, fp8_efficiency_ratio),
       .lo = 0.05,
       .hi = 2,
       .example = "0.90",
       .written = OSIM_NOTDEF(gemm, fp8_efficiency_ratio),
       .doc = "an fp8 GEMM's share of the fp8 peak over a bf16 GEMM's share of the bf16 peak at the same shape (1: alike)"},
      {.name = "flops_efficiency",
       .family = "gemm",
       .kind = Kind::Number,
       .ref = OSIM_REF(gemm, flops_efficiency),
       .lo = 1e-3,
       .hi = 1,
       .example = "0.6",
       .written = OSIM_NOTDEF(gemm, flops_efficiency),
       .doc = "share of the peak a kernel given as FLOPs reaches"},
  };
}

}  // namespace params
}  // namespace osim
