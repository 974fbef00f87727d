// One calibration field at a time, by its name in the file: its value as
// written, whether it holds the model's default, and taking fields from one
// set of parameters into another (calib/family_fill.hpp). The field table
// itself is params_io.cpp's.
#pragma once

#include <string>
#include <vector>

#include "gpu/params.hpp"

namespace osim {

/// A field's value as a calibration file writes it (what follows "  name:",
/// its newline included), by its name, bare or "family.name"; "" where no
/// field has that name.
std::string model_field_text(const ModelParams& p, const std::string& name);
/// Whether `p` holds the model's default for the field (its text is the default's).
bool model_field_is_default(const ModelParams& p, const std::string& name);
/// `to` with these fields (bare or "family.name") as `from` writes them, read
/// back as a calibration file's would be (the file's precision); a field
/// `from` would not write (it says nothing) stays as in `to`.
ModelParams with_model_fields(const ModelParams& to, const ModelParams& from, const std::vector<std::string>& names);

}  // namespace osim
