// Options and loading shared by the commands that run a model (run, chat, bench, validate):
// MODEL resolution (archive, HF directory, Hub id), device choice, tokenizer, sampling defaults.
#pragma once

#include "format/archive.h"
#include "model/model_spec.h"
#include "runtime/backend.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tt::cli {

struct ModelArgs {
    std::string model;
    std::string device;  // "" = cuda when available, else cpu
    int context = 0;     // 0 (flag not given) = what the command needs, up to the model's maximum; the flag is >= 1
    int threads = 0;     // 0 (flag not given) = all cores; the flag is 1..max_threads()
    std::string profile = "balanced";
    std::string vram_budget, ram_budget;  // "" = automatic; else sizes such as 8GiB
    int expert_slots = 0;  // 0 = automatic; else at most this many experts cached in VRAM (MoE)
    int cpu_layers = -1;   // -1 = automatic; else exactly this many layers computed on the CPU in decode
    int ring_slots = 0;    // 0 = automatic; else the streaming ring's slots, 1 or 2
    bool tune_split = false;  // --tune-split: decode moves the CPU layer count by its own token times
    std::string kv_cache = "auto";  // runtime/kv_cache_type.h
    std::string gpus;               // --gpus 0,1: "" = the --device one (runtime/gpu_split.h)
};
// The CUDA device --gpus names when it names one (checked against --device), else --device as
// given; throws tt::Error naming --gpus for several (plan predicts them; running is not built).
std::string device_of(const ModelArgs& a);
void add_model_args(CLI::App& sub, ModelArgs& a);

struct SamplingArgs {
    std::optional<float> temperature, top_p, min_p, repeat_penalty;
    std::optional<int> top_k;
    std::optional<uint64_t> seed;  // none: random (also --seed -1, as in llama.cpp)
};
// The flags are checked as they are parsed (usage errors naming the flag): NaN and infinities are
// refused, and each value must be in the range its help text gives.
void add_sampling_args(CLI::App& sub, SamplingArgs& a);
// --stop TEXT (repeatable); an empty TEXT is refused (stop_string_error, the rule generate() applies).
void add_stop_arg(CLI::App& sub, std::vector<std::string>& stop);

struct LoadedModel {
    std::string archive_path;
    std::unique_ptr<Archive> archive;
    ModelSpec spec;
    std::unique_ptr<Tokenizer> tokenizer;  // null when the archive has none
    std::unique_ptr<Backend> backend;

    // Creates the backend with a KV cache for at least `needed_context` positions (capped by the
    // model), on the device the arguments ask for; says on stderr which device it uses.
    // n_sequences: sequence slots (serve --parallel; BackendOptions::n_sequences).
    void create_backend(const ModelArgs& a, int needed_context, int n_sequences = 1);
    // End-of-sequence ids: the generation config's and the tokenizer's.
    std::vector<int32_t> eos_ids() const;
};

LoadedModel load_model(const ModelArgs& a, int needed_context);
// Encodes the prompt; with add_special, an empty encoding starts from the model's BOS token.
std::vector<int32_t> encode_prompt(const LoadedModel& m, const std::string& prompt, bool add_special);
// The archive's generation defaults, overridden by the flags.
SamplerConfig sampling_config(const SamplingArgs& a, const LoadedModel& m);
// "prompt 12 tokens, prefill 850.2 tok/s | generated 64 tokens, decode 410.7 tok/s | first token 14 ms"
void print_stats(const GenerateStats& st);

}  // namespace tt::cli
