// Hugging Face config.json (+ generation_config.json) -> ModelSpec. This file and the tensor-name
// table (tensor_names.cpp) are the one place an architecture is described.
#pragma once

#include "model/model_spec.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tt {

// The architectures ("LlamaForCausalLM", ...) ThinTensor converts and runs.
std::vector<std::string> supported_architectures();

// `context` and `generation_context` name the two files in errors; generation may be null (no
// generation_config.json). Every field is read through ConfigFields (type- and range-checked,
// integers as 64-bit), and the dimensions are bounded before any per-layer table is built.
ModelSpec spec_from_hf_config(const nlohmann::json& config, const nlohmann::json& generation, const std::string& context,
                              const std::string& generation_context = "generation_config.json");

}  // namespace tt
