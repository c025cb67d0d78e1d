// A reference-logits file (safetensors) as ../shared and `validate --hf-model` write them:
// input_ids int64 [T], logits_f32 / logits_bf16 float32 [T, V], greedy_ids int64 [G] (optional).
#pragma once

#include "format/safetensors.h"

#include <string>
#include <vector>

namespace tt {

struct ReferenceCase {
    std::vector<int32_t> input_ids;
    std::vector<float> logits;  // [input_ids.size(), vocab]
    int vocab = 0;
    std::vector<int32_t> greedy_ids;  // empty when the file has none
};

// Throws tt::Error naming the file and the missing/misshapen tensor.
ReferenceCase load_reference(const std::string& path, const std::string& logits_key);
// Reads an integer tensor (i64 or i32) as int32 ids.
std::vector<int32_t> read_ids(const SafetensorsFile& f, const std::string& name);

}  // namespace tt
