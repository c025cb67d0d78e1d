#include "cli/model_args.h"

#include "core/byte_size.h"
#include "core/error.h"
#include "core/log.h"
#include "model/archive_spec.h"
#include "runtime/model_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace tt::cli {

void add_model_args(CLI::App& sub, ModelArgs& a) {
    sub.add_option("MODEL", a.model, ".thin archive, Hugging Face model directory, or Hub id ORG/NAME[:REV]")->required();
    sub.add_option("--device", a.device, "cpu, cuda or cuda:N (default: cuda when a GPU is available, else cpu)");
    sub.add_option("--context", a.context, "KV cache length in tokens (default: what the run needs)");
    sub.add_option("--threads", a.threads, "CPU threads (default: all cores)");
    sub.add_option("--profile", a.profile, "Numerical profile: balanced (fast, default) or safe (f32 activations everywhere)")
        ->check(CLI::IsMember({"safe", "balanced"}));
    sub.add_option("--vram-budget", a.vram_budget, "GPU memory the model may use, e.g. 8GiB (default: free VRAM minus a margin)");
    sub.add_option("--ram-budget", a.ram_budget, "Host memory for weights streamed to the GPU, e.g. 32GiB (default: free RAM)");
}

void add_sampling_args(CLI::App& sub, SamplingArgs& a) {
    sub.add_option("-t,--temperature", a.temperature, "Sampling temperature; 0 = greedy");
    sub.add_option("--top-k", a.top_k, "Keep the k most likely tokens (0 = off)");
    sub.add_option("--top-p", a.top_p, "Keep the smallest set with this probability mass (1 = off)");
    sub.add_option("--min-p", a.min_p, "Drop tokens below min-p times the top probability (0 = off)");
    sub.add_option("--repeat-penalty", a.repeat_penalty, "Penalty for tokens already in the context (1 = off)");
    sub.add_option("--seed", a.seed, "Random seed (default: random, printed)");
}

LoadedModel load_model(const ModelArgs& a, int needed_context) {
    LoadedModel m;
    m.archive_path = resolve_model(a.model);
    m.archive = std::make_unique<Archive>(Archive::open(m.archive_path));
    m.spec = spec_from_archive(*m.archive);
    const bool has_tokenizer = tokenizer_kind_of(*m.archive) != TokenizerKind::none;
    if (has_tokenizer) m.tokenizer = Tokenizer::from_archive(*m.archive);
    else log::warn("{}: the archive has no tokenizer; prompts and output are token ids", m.archive_path);
    if (needed_context > 0) m.create_backend(a, needed_context);
    return m;
}

void LoadedModel::create_backend(const ModelArgs& a, int needed_context) {
    BackendOptions bo;
    bo.device = a.device.empty() ? default_device() : a.device;
    if (a.device.empty()) log::info("device: {} ({})", bo.device, bo.device == "cpu" ? "no usable GPU found" : "GPU found");
    bo.context = a.context > 0 ? a.context : std::min(needed_context, spec.max_context);
    if (a.context > spec.max_context) fail("--context {} exceeds the model's maximum of {}", a.context, spec.max_context);
    bo.n_threads = a.threads;
    bo.profile = parse_profile(a.profile);
    if (!a.vram_budget.empty()) bo.vram_budget = parse_byte_size(a.vram_budget, "--vram-budget");
    if (!a.ram_budget.empty()) bo.ram_budget = parse_byte_size(a.ram_budget, "--ram-budget");
    // The CUDA backend plans with these budgets and prints its plan; the CPU backend has no VRAM to
    // budget and reads the weights from the mapping in place.
    if (bo.device == "cpu" && (!a.vram_budget.empty() || !a.ram_budget.empty()))
        log::warn("{} does not apply to the CPU backend (it reads the weights in place from the mapped archive); ignored",
                  !a.vram_budget.empty() ? "--vram-budget" : "--ram-budget");
    const auto t0 = std::chrono::steady_clock::now();
    backend = make_backend(*archive, bo);
    log::debug("backend {} ready in {:.3f} s", backend->describe(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

std::vector<int32_t> LoadedModel::eos_ids() const {
    std::vector<int32_t> out(spec.eos_token_ids.begin(), spec.eos_token_ids.end());
    if (tokenizer)
        for (auto id : tokenizer->eos_ids())
            if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    return out;
}

std::vector<int32_t> encode_prompt(const LoadedModel& m, const std::string& prompt, bool add_special) {
    std::vector<int32_t> ids;
    if (m.tokenizer) {
        ids = m.tokenizer->encode(prompt, add_special);
    } else if (!prompt.empty()) {
        // No tokenizer: the prompt is a list of token ids.
        size_t pos = 0;
        while (pos < prompt.size()) {
            const size_t end = prompt.find_first_of(" ,\n\t", pos);
            const std::string tokstr = prompt.substr(pos, end - pos);
            if (!tokstr.empty()) {
                try {
                    ids.push_back(std::stoi(tokstr));
                } catch (const std::exception&) {
                    fail("the model has no tokenizer, so the prompt must be token ids; '{}' is not one", tokstr);
                }
            }
            if (end == std::string::npos) break;
            pos = end + 1;
        }
    }
    if (ids.empty() && add_special && m.spec.bos_token_id >= 0) ids.push_back(m.spec.bos_token_id);
    return ids;
}

SamplerConfig sampling_config(const SamplingArgs& a, const LoadedModel& m) {
    SamplerConfig c;
    // Defaults: the model's generation_config.json when it asks for sampling, greedy when it says
    // do_sample=false, else llama.cpp's defaults (the struct's initial values).
    const auto& gen = m.archive->metadata().value("generation", nlohmann::json::object());
    if (gen.is_object() && gen.contains("do_sample") && gen["do_sample"].is_boolean()) {
        if (!gen["do_sample"].get<bool>()) {
            c.temperature = 0;
        } else {
            c.temperature = gen.value("temperature", 1.0f);
            c.top_k = gen.value("top_k", 50);
            c.top_p = gen.value("top_p", 1.0f);
            c.min_p = gen.contains("min_p") && gen["min_p"].is_number() ? gen["min_p"].get<float>() : 0.0f;
        }
        if (gen.contains("repetition_penalty") && gen["repetition_penalty"].is_number())
            c.repeat_penalty = gen["repetition_penalty"].get<float>();
    }
    if (a.temperature) c.temperature = *a.temperature;
    if (a.top_k) c.top_k = *a.top_k;
    if (a.top_p) c.top_p = *a.top_p;
    if (a.min_p) c.min_p = *a.min_p;
    if (a.repeat_penalty) c.repeat_penalty = *a.repeat_penalty;
    if (c.temperature < 0) fail("--temperature must be >= 0, got {}", c.temperature);
    if (c.top_p <= 0 || c.top_p > 1) fail("--top-p must be in (0, 1], got {}", c.top_p);
    if (c.min_p < 0 || c.min_p > 1) fail("--min-p must be in [0, 1], got {}", c.min_p);
    if (c.repeat_penalty <= 0) fail("--repeat-penalty must be positive, got {}", c.repeat_penalty);
    if (a.seed) {
        c.seed = *a.seed;
    } else {
        c.seed = std::random_device{}();
        if (c.temperature > 0) log::info("seed: {} (pass --seed to repeat this output)", c.seed);
    }
    if (c.temperature == 0) log::debug("sampling: greedy");
    else log::debug("sampling: temperature {} top-k {} top-p {} min-p {} repeat-penalty {}", c.temperature, c.top_k, c.top_p, c.min_p, c.repeat_penalty);
    return c;
}

void print_stats(const GenerateStats& st) {
    const double prefill_rate = st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0;
    const double decode_rate = st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0;
    log::info("prompt {} tokens, prefill {:.1f} tok/s | generated {} tokens, decode {:.1f} tok/s | first token {:.0f} ms | stop: {}",
              st.prompt_tokens, prefill_rate, st.generated_tokens, decode_rate, st.time_to_first_token * 1e3, st.stop_reason);
}

}  // namespace tt::cli
