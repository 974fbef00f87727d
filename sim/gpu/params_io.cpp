#include "gpu/params_io.hpp"
#include "gpu/model_fields.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <variant>

#include <fmt/format.h>

#include "gpu/params/field.hpp"
#include "io/yaml_reader.hpp"

namespace osim {

namespace {

using namespace params;

// The table: families in the order the file writes them.
const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> all;
    for (auto family : {overheads_fields, handoff_fields, copies_fields, gemm_fields, conv_fields, attention_fields, memory_fields, nccl_fields,
                        power_fields, nvlink_fields, interference_fields, vram_fields})
      for (Field& f : family()) all.push_back(std::move(f));
    return all;
  }();
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
        if constexpr (std::is_same_v<T, Time>)
          return f.kind == Kind::TimeMs ? v->ms() : v->us();
        else if constexpr (std::is_same_v<T, Bandwidth>)
          return v->GBps();
        else
          return static_cast<double>(*v);
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
    case Kind::Count:
    case Kind::Bytes: return fmt::format("{}", static_cast<int64_t>(v));
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
  for (const Field& f : fields()) out.push_back({f.name, f.family, unit_of(f.kind), range_text(f), default_text(f), f.doc});
  return out;
}

std::string model_fields_markdown() {
  std::string out, family;
  for (const ModelFieldDoc& d : model_field_docs()) {
    if (d.family != family) {
      family = d.family;
      out += fmt::format("{}### {}\n\n| field | unit | range | default | what it is |\n| --- | --- | --- | --- | --- |\n", out.empty() ? "" : "\n",
                         family);
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", d.name, d.unit, d.range, d.default_value, d.doc);
  }
  return out;
}

std::string model_yaml(const ModelParams& p, const ModelYamlNotes* notes) {
  std::string out = "schema: overlapsim.calibration/v1\n" + (notes ? notes->provenance : std::string()) + "model:\n";
  std::string family;
  static const ModelParams defaults;
  for (const Field& f : fields()) {
    if (f.written && !f.written(p)) continue;
    if (f.family != family) {
      family = f.family;
      const auto it = notes ? notes->family_notes.find(family) : decltype(notes->family_notes.end()){};
      out += notes && it != notes->family_notes.end() ? fmt::format("  # {}: {}\n", family, it->second) : fmt::format("  # {}\n", family);
    }
    out += fmt::format("  {}:", f.name);
    if (f.kind == Kind::Custom) {
      out += f.write(p);
    } else {
      const std::string v = format_value(f, p);
      out += " " + v + (notes && v == format_value(f, defaults) ? "  # default" : "") + "\n";
    }
  }
  return out;
}

namespace {

const Field* find_field(const std::string& name) {
  const size_t dot = name.find('.');
  const std::string bare = dot == std::string::npos ? name : name.substr(dot + 1);
  for (const Field& f : fields())
    if (bare == f.name && (dot == std::string::npos || name.compare(0, dot, f.family) == 0)) return &f;
  return nullptr;
}

std::string field_text(const Field& f, const ModelParams& p) { return f.kind == Kind::Custom ? f.write(p) : " " + format_value(f, p) + "\n"; }

}  // namespace

std::string model_field_text(const ModelParams& p, const std::string& name) {
  const Field* f = find_field(name);
  return f ? field_text(*f, p) : "";
}

bool model_field_is_default(const ModelParams& p, const std::string& name) {
  static const ModelParams defaults;
  const Field* f = find_field(name);
  return !f || field_text(*f, p) == field_text(*f, defaults);
}

ModelParams with_model_fields(const ModelParams& to, const ModelParams& from, const std::vector<std::string>& names) {
  std::string yaml = "schema: overlapsim.calibration/v1\nmodel:\n";
  for (const std::string& n : names)
    if (const Field* f = find_field(n); f && (!f->written || f->written(from))) yaml += fmt::format("  {}:{}", f->name, field_text(*f, from));
  return parse_calibration_string(yaml, "the fields taken", to);
}

namespace {

ModelParams parse_calibration(const YAML::Node& root, const std::string& path, const ModelParams& base) {
  MapReader top(path, root, "calibration", {"schema", "provenance", "model"});
  if (top.str("schema") != "overlapsim.calibration/v1") top.fail("schema", "expected overlapsim.calibration/v1");
  // Keys of terms the model no longer has (their effects are held by others
  // since): named, so an old file's reader knows what to do.
  if (const YAML::Node model = top.get("model"); model.IsMap())
    for (const auto& kv : model)
      if (const std::string k = kv.first.as<std::string>(); k.rfind("copy_step_", 0) == 0 || k.rfind("copy_bidir_small", 0) == 0 ||
                                                            k.rfind("copy_bidir_mid", 0) == 0 || k.rfind("copy_bidir_factor_small", 0) == 0 ||
                                                            k.rfind("copy_bidir_factor_mid", 0) == 0)
        throw InputError(location_of(path, kv.first),
                         fmt::format("'{}' is a retired term (the hand-off latencies and copy_bidir_table hold its effect "
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

CalibrationOrigin origin_of(const YAML::Node& root) {
  CalibrationOrigin o;
  if (!root.IsMap() || !root["provenance"] || !root["provenance"].IsMap()) return o;
  const YAML::Node pv = root["provenance"];
  if (pv["gpu"] && pv["gpu"].IsScalar()) o.gpu = pv["gpu"].as<std::string>();
  if (pv["gpus"] && pv["gpus"].IsScalar()) o.gpus = pv["gpus"].as<int>(0);
  return o;
}

}  // namespace

// A calibration `overlapsim calibrate` wrote (it has `provenance:`) ends with kCalibrationEnd.
void check_complete(const std::string& text, const std::string& name) {
  if (text.find("\nprovenance:") == std::string::npos) return;
  const std::string body = text.substr(0, text.find_last_not_of(" \t\r\n") + 1);
  const std::string end = std::string("\n") + kCalibrationEnd;
  if (body.size() < end.size() || body.compare(body.size() - end.size(), end.size(), end) != 0)
    throw InputError(SourceLocation{name, 0, 0}, fmt::format("does not end with '{}': the file was cut short; write it again (overlapsim calibrate, "
                                                             "or overlapsim reference --write-calibration)",
                                                             kCalibrationEnd));
}

CalibrationFile read_calibration_file(const std::string& path, const ModelParams& base) {
  const std::string text = read_yaml_text(path);
  const YAML::Node root = load_yaml_mapping(text, path);
  check_complete(text, path);
  return {parse_calibration(root, path, base), origin_of(root)};
}

ModelParams load_calibration(const std::string& path, const ModelParams& base) { return read_calibration_file(path, base).params; }

ModelParams parse_calibration_string(const std::string& yaml, const std::string& name, const ModelParams& base) {
  check_complete(yaml, name);
  return parse_calibration(load_yaml_string(yaml, name), name, base);
}

std::string provenance_block(const std::string& text) {
  size_t at = text.rfind("provenance:", 0) == 0 ? 0 : text.find("\nprovenance:");
  if (at == std::string::npos) return "";
  if (text[at] == '\n') ++at;
  size_t end = text.find('\n', at);
  while (end != std::string::npos && end + 1 < text.size()) {  // its lines run to the next line that starts a top-level key
    const char next = text[end + 1];
    if (next != ' ' && next != '\t' && next != '#' && next != '\n' && next != '\r') break;
    end = text.find('\n', end + 1);
  }
  // Blank lines before it keep the file's line numbers in errors.
  return std::string(static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')), '\n') +
         text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Only the provenance block is loaded: choosing the built-in calibration
// reads every shipped one's origin.
CalibrationOrigin calibration_origin_string(const std::string& yaml, const std::string& name) {
  return origin_of(load_yaml_string(provenance_block(yaml), name));
}

namespace params {

std::vector<std::array<double, 3>> read_share_table(const MapReader& m, const char* key, const std::string& usage) {
  const YAML::Node list = m.get(key);
  const auto bad = [&] { m.fail(key, usage); };
  if (!list.IsSequence() || list.size() == 0) bad();
  std::vector<std::array<double, 3>> table;
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
  return table;
}

std::string format_share_table(const std::vector<std::array<double, 3>>& table) {
  std::string out = "\n";
  for (const auto& e : table) out += fmt::format("    - [{:.0f}, {:.4f}, {:.4f}]\n", e[0], e[1], e[2]);
  return out;
}

}  // namespace params
}  // namespace osim
