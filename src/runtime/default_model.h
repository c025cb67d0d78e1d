// The embedded default model: TinyStories-656K (models/tinystories-656k in the repository), which
// the build copies beside the binary, so that `thintensor run` with no MODEL works from a fresh
// clone with nothing downloaded.
#pragma once

#include <string>

namespace tt {

constexpr const char* k_default_model_name = "TinyStories-656K";

// Its Hugging Face folder beside the binary; throws tt::Error naming the places looked in when the
// binary was moved without it.
std::string default_model_dir();

}  // namespace tt
