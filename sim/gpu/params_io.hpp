// The `model:` section of a calibration file (schema
// overlapsim.calibration/v1): read, written and documented from one table
// of fields (params_io.cpp), so the three never disagree. A field's name is
// its key in the file and its member in its family's params struct.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/params.hpp"

namespace osim {

/// One field of the table, as documentation sees it.
struct ModelFieldDoc {
  std::string name, family, unit, range, default_value, doc;
};

/// Every field, family by family, in the order the file writes them.
std::vector<ModelFieldDoc> model_field_docs();
/// The fields as a Markdown table per family (docs/formats/calibration.md).
std::string model_fields_markdown();

/// What a calibration file says beside the values: per family, where its
/// fields came from; with notes, a field holding the model's default value
/// is marked `# default`.
struct ModelYamlNotes {
  std::map<std::string, std::string> family_notes;
  std::string provenance;  // YAML lines (a `provenance:` mapping) written before `model:`
};

/// "schema: ...\nmodel:\n  key: value\n...": the parameters a run loads.
std::string model_yaml(const ModelParams& p, const ModelYamlNotes* notes = nullptr);

/// The last line `overlapsim calibrate` writes: a file with `provenance:`
/// (one it wrote) but without this line was cut short, and is refused.
inline constexpr const char* kCalibrationEnd = "# end of calibration";

/// A calibration's `provenance:` block as written: its line and the indented
/// lines under it, up to the next top-level key, after as many blank lines as
/// precede it (empty where it has none).
std::string provenance_block(const std::string& text);
CalibrationOrigin calibration_origin_string(const std::string& yaml, const std::string& name);
/// The same checks as load_calibration on a calibration's text.
ModelParams parse_calibration_string(const std::string& yaml, const std::string& name, const ModelParams& base = {});

/// Reads a calibration file's `model:` section over `base`. Throws
/// InputError naming the file, line and key on an unknown key, a value out
/// of its range, or fields that must come together given apart.
ModelParams load_calibration(const std::string& path, const ModelParams& base = {});
/// load_calibration's parameters with the file's origin, the file read once.
struct CalibrationFile {
  ModelParams params;
  CalibrationOrigin origin;
};
CalibrationFile read_calibration_file(const std::string& path, const ModelParams& base = {});

}  // namespace osim
