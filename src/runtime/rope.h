// Rotary position embedding tables, computed once per model the way transformers computes them
// (float32 inverse frequencies, then the scaling variant), so every backend rotates identically.
#pragma once

#include "model/model_spec.h"

#include <vector>

namespace tt {

struct RopeTable {
    std::vector<float> inv_freq;   // [rotary_dim / 2]
    float attention_factor = 1.0f; // multiplies cos and sin (yarn)
    int rotary_dim = 0;
};

RopeTable make_rope_table(const RopeSpec& r);

// Rotates one head vector x[head_dim] in place at position pos, HF "rotate_half" layout: pairs are
// (x[i], x[i + rotary_dim/2]) for i < rotary_dim/2; dims >= rotary_dim are left alone.
void apply_rope(float* x, int pos, const RopeTable& t);

}  // namespace tt
