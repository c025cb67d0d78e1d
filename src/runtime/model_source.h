// Turns the MODEL argument of run/bench/validate/plan into a .thin archive path: an archive is used
// as is; a Hugging Face model directory is converted once into the cache and reused while its files
// are unchanged; a Hub id ORG/NAME[:REV] is pulled first (src/hub) and then converted.
#pragma once

#include <string>

namespace tt {

// $THINTENSOR_HOME, else $XDG_CACHE_HOME/thintensor, else ~/.cache/thintensor.
std::string thintensor_home();

// Returns the path of a .thin archive for `model`, converting (with progress, saying so) when needed.
// Throws tt::Error when `model` is neither an archive nor a model directory.
std::string resolve_model(const std::string& model);

}  // namespace tt
