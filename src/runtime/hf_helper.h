// Running tools/thintensor_hf.py, the Python helper that drives Hugging Face transformers for
// `validate --hf-model` (reference logits) and for `run`'s transformers fallback (generation).
// The helper is a subprocess: ThinTensor never links Python. It is found without configuration:
// $THINTENSOR_HF_HELPER, else beside the executable, else <exe dir>/../share/thintensor; the
// interpreter is $THINTENSOR_PYTHON, else python3 on PATH. Protocol: docs/VALIDATION.md.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tt {

constexpr int k_hf_protocol = 1;
constexpr const char* k_hf_helper_name = "thintensor_hf.py";

// The helper's path; throws tt::Error listing where it looked.
std::string find_hf_helper();

enum class HelperOutput { to_stderr, inherit };  // where the helper's stdout goes

// Runs `python helper MODE REQUEST` with `request` (the "protocol" field is added) written to a
// temporary file. Throws tt::Error with a clear message when python or the helper is missing, or
// when the helper exits non-zero (torch / transformers not installed, model not loadable, ...).
void run_hf_helper(const std::string& mode, nlohmann::json request, HelperOutput out);

}  // namespace tt
