// Reference-logits files (safetensors). A single case, as ../shared writes them: input_ids int64
// [T], logits_f32 / logits_bf16 float32 [T, V], greedy_ids int64 [G] (optional), greedy_margins
// float32 [G] (optional, the reference's top-1 minus top-2 logit at each greedy step), and in the
// header's __metadata__ an optional "greedy_prefix": "N" (greedy_ids continue input_ids[:N]; the
// hf-tiny fixtures continue input_ids[:8], TinyStories-656K's the whole prompt). A set of cases,
// as `validate --hf-model`'s helper writes them: the same names prefixed "p0.", "p1.", ..., where
// the logits may cover only the last L <= T positions and greedy_margins float32 [G] holds the
// reference's top-1 minus top-2 logit at each greedy step.
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
    std::vector<float> greedy_margins;  // [greedy_ids.size()] when the file has them, else empty
    int greedy_prefix = 0;              // from the metadata; 0 when the file does not say
    // Where the file does not say: every N in 1..T whose reference logits at position N-1 pick
    // greedy_ids[0] (logits_f32 when the file has them: greedy_ids are the float32 model's), in
    // increasing order. Only these prefixes are consistent with the reference's own logits.
    std::vector<int> greedy_prefix_candidates;
};

struct ReferencePrompt {
    std::vector<int32_t> input_ids;         // [T]
    std::vector<float> logits;              // [T - logits_offset, vocab]: the last positions
    int logits_offset = 0;                  // the position of the first logits row
    int vocab = 0;
    std::vector<int32_t> greedy_ids;        // greedy continuation of the whole prompt
    std::vector<float> greedy_margins;      // [greedy_ids.size()]
    // With a bf16 reference, when the file also holds it: the same weights computed in float32
    // (same positions as `logits`). Empty otherwise.
    std::vector<float> baseline_f32;
};

// Reads prompts p0 .. p{n_prompts-1} with logits tensor `logits_key` (logits_f32 / logits_bf16).
// Throws tt::Error naming the file and the missing/misshapen tensor.
std::vector<ReferencePrompt> load_reference_set(const std::string& path, int n_prompts, const std::string& logits_key);

// Throws tt::Error naming the file and the missing/misshapen tensor.
ReferenceCase load_reference(const std::string& path, const std::string& logits_key);
// Reads an integer tensor (i64 or i32) as int32 ids.
std::vector<int32_t> read_ids(const SafetensorsFile& f, const std::string& name);

}  // namespace tt
