// Numerical profiles: what a backend may trade for speed. `safe` keeps f32 activations, f32
// accumulation and f32 softmax everywhere (weights and KV cache stay as stored) and takes no
// risky fusions; `balanced` is the fast default (e.g. the CUDA prefill feeds bf16 activations to
// tensor-core GEMMs, as transformers' bf16 run does). Quantized profiles come later.
#pragma once

#include <string>

namespace tt {

enum class Profile { safe, balanced };

// "safe" / "balanced"; throws tt::Error listing the profiles for anything else.
Profile parse_profile(const std::string& name);
const char* profile_name(Profile p);

}  // namespace tt
