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

// `context` names the file in errors. generation may be null (no generation_config.json).
ModelSpec spec_from_hf_config(const nlohmann::json& config, const nlohmann::json& generation, const std::string& context);

}  // namespace tt
