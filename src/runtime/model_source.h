// Turns the MODEL argument of run/bench/validate/plan into a .thin archive path: an archive is used
// as is; a Hugging Face model directory is converted once into the cache and reused while its files
// are unchanged; a Hub id ORG/NAME[:REV] is pulled first (src/hub) and then converted.
#pragma once

#include <string>

namespace tt {

// $THINTENSOR_HOME, else $XDG_CACHE_HOME/thintensor, else ~/.cache/thintensor (hub::thintensor_home()).
std::string thintensor_home();
// thintensor_home()/archives: archives converted from model directories on first use.
std::string archive_cache_dir();
// Creates `dir` (a cache folder) if needed and checks it is writable; throws tt::Error naming it.
void ensure_cache_dir(const std::string& dir);

// True for a MODEL argument that can only mean a local path: an existing file or folder, a name
// ending in .thin/.safetensors/.json/.gguf/.bin, one starting with ./ ../ / or ~, or one with more
// than one '/' (a Hub id has exactly one).
bool looks_like_path(const std::string& s);

// A key (16 hex digits) that changes when any file of the model directory changes: the absolute
// path and each file's name, size and modification time.
std::string model_directory_key(const std::string& dir);

// MODEL as a local path: a path-like MODEL that does not exist fails at once ("no such file or
// directory"); a Hub id ORG/NAME[:REV] is pulled (or found complete in the cache) first; anything
// else is returned as is.
std::string fetch_model(const std::string& model);

// For a Hugging Face model directory whose config.json names an architecture ThinTensor does not
// convert: that architecture ("Qwen3MoeForCausalLM"); "" otherwise (supported, or not a model
// directory at all: resolve_model then says what is wrong).
std::string unsupported_architecture(const std::string& path);

// Returns the path of a .thin archive for `model`, converting (with progress, saying so) when needed.
// Throws tt::Error when `model` is neither an archive nor a model directory.
std::string resolve_model(const std::string& model);

}  // namespace tt
