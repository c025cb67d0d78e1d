#include "cli/model_args.h"

#include "cli/flag_checks.h"
#include "core/byte_size.h"
#include "core/error.h"
#include "core/log.h"
#include "model/archive_spec.h"
#include "runtime/gpu_split.h"
#include "runtime/model_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

namespace tt::cli {

namespace {

// A byte size for a budget flag: parse_byte_size's rules, and 0 refused (an empty budget would
// otherwise quietly mean "automatic", which is what leaving the flag out says).
CLI::Validator byte_budget(const std::string& flag) {
    return CLI::Validator(
        [flag](std::string& s) -> std::string {
            uint64_t n = 0;
            try {
                n = parse_byte_size(s, flag);
            } catch (const Error& e) {
                // parse_byte_size names the flag itself; CLI11 adds it again in front.
                std::string msg = e.what();
                const std::string prefix = flag + " ";
                if (msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
                return msg;
            }
            if (n == 0) return fmt::format("must be more than 0 bytes, got '{}' (leave the flag out for the automatic budget)", s);
            return {};
        },
        "");
}

uint64_t parse_seed(const std::string& v) {
    // strtoull would take "-2" as 2^64-2; only digits are a seed.
    const bool digits = !v.empty() && v.size() <= 20 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    errno = 0;
    const unsigned long long n = digits ? std::strtoull(v.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE)
        throw CLI::ValidationError("--seed", fmt::format("must be a whole number from 0 to 2^64-1, or -1 for random; got '{}'", v));
    return uint64_t(n);
}

}  // namespace

void add_model_args(CLI::App& sub, ModelArgs& a) {
    sub.add_option("MODEL", a.model,
                   ".thin archive, Hugging Face model directory, or Hub id ORG/NAME[:REV] (default: the embedded TinyStories-656K)");
    sub.add_option("--device", a.device,
                   "cpu (the reference), host (the fast host decode path), cuda or cuda:N (default: cuda when a GPU is "
                   "available, else cpu)");
    // -c/--ctx-size: llama.cpp's spelling of the same flag.
    sub.add_option("-c,--context,--ctx-size", a.context, "KV cache length in tokens, at least 1 (default: what the run needs)")
        ->check(int_at_least(1));
    const int cap = max_threads();
    sub.add_option("--threads", a.threads, fmt::format("CPU threads, 1 to {} (default: all cores)", cap))
        ->check(int_in(1, cap, fmt::format("between 1 and {} (4 x the {} hardware threads)", cap, cap / 4)));
    sub.add_option("--profile", a.profile,
                   "Numerical profile: balanced (fast, default), safe (f32 activations everywhere), max-performance (INT8 "
                   "weights) or max-max-perf (INT4 weights); docs/QUANTIZATION.md")
        ->check(CLI::IsMember({"safe", "balanced", "max-performance", "max-max-perf"}));
    sub.add_option("--kv-cache", a.kv_cache,
                   "KV cache storage: auto (the profile's: int8 under max-max-perf, else float; default), float (f32 on the "
                   "CPU, the weights' float dtype on host and CUDA) or int8 (a scale per head and position; on CUDA "
                   "head_dim a multiple of 16); docs/QUANTIZATION.md")
        ->check(CLI::IsMember({"auto", "float", "int8"}));
    sub.add_option("--vram-budget", a.vram_budget, "GPU memory the model may use, e.g. 8GiB (default: free VRAM minus a margin)")
        ->check(byte_budget("--vram-budget"));
    sub.add_option("--ram-budget", a.ram_budget, "Host memory for weights streamed to the GPU, e.g. 32GiB (default: free RAM)")
        ->check(byte_budget("--ram-budget"));
    sub.add_option("--expert-slots", a.expert_slots,
                   "Mixture of experts: keep the experts in host memory and cache at most N of them in VRAM, at least 1 "
                   "(default: every expert resident when they fit, else as many as the budget holds)")
        ->check(int_at_least(1));
    sub.add_option("--gpus", a.gpus,
                   "GPUs by index, e.g. 0,1: one is --device cuda:N; several: `plan` predicts a layer split and tensor "
                   "parallelism across them (running across several is not built yet)");
    sub.add_option("--cpu-layers", a.cpu_layers,
                   "Larger than VRAM: compute exactly N of the layers outside VRAM on the CPU during decode, 0 = none "
                   "(default: as many as the planner predicts fastest)")
        ->check(int_at_least(0));
    sub.add_option("--ring-slots", a.ring_slots,
                   "Larger than VRAM: stream the layers outside VRAM through a ring of N slots of one layer each, 1 or 2 "
                   "(default: 1, whose saved slot keeps one more layer resident; 2 lets prefill's GEMMs overlap the copies)")
        ->check(CLI::Range(1, 2));
    sub.add_flag("--tune-split", a.tune_split,
                 "Larger than VRAM, CUDA: start decode at the planner's CPU layer count and move it by decode's own token "
                 "times, keeping the fastest (the host rates the planner measures can move 30-50% within seconds). "
                 "Outputs then depend on timing: CPU and GPU layers round differently");
}

void add_sampling_args(CLI::App& sub, SamplingArgs& a) {
    const double inf = std::numeric_limits<double>::infinity();
    sub.add_option("-t,--temperature", a.temperature, "Sampling temperature, >= 0; 0 = greedy")
        ->check(finite_number(0, inf, false, true, ">= 0"));
    sub.add_option("--top-k", a.top_k, "Keep the k most likely tokens, >= 0 (0 = off)")->check(int_at_least(0));
    sub.add_option("--top-p", a.top_p, "Keep the smallest set with this probability mass, in (0, 1] (1 = off)")
        ->check(finite_number(0, 1, true, false, "in (0, 1]"));
    sub.add_option("--min-p", a.min_p, "Drop tokens below min-p times the top probability, in [0, 1] (0 = off)")
        ->check(finite_number(0, 1, false, false, "in [0, 1]"));
    sub.add_option("--repeat-penalty", a.repeat_penalty, "Penalty for tokens already in the context, > 0 (1 = off)")
        ->check(positive_number());
    // -1 is random, as in llama.cpp; any other value is a fixed seed in [0, 2^64).
    sub.add_option_function<std::string>(
           "--seed",
           [&a](const std::string& v) {
               if (v == "-1") {
                   a.seed.reset();
                   return;
               }
               a.seed = parse_seed(v);
           },
           "Random seed, 0 to 2^64-1; -1 = random (the default; the seed used is printed)")
        ->type_name("INT");
}

void add_stop_arg(CLI::App& sub, std::vector<std::string>& stop) {
    sub.add_option("--stop", stop, "Stop when this text is generated (repeatable; not printed)")
        ->check(CLI::Validator(
            [](std::string& s) -> std::string { return stop_string_error(s).value_or(""); }, ""))
        ->allow_extra_args(false);
}

std::string device_of(const ModelArgs& a) {
    if (a.gpus.empty()) return a.device;
    const std::vector<int> gpus = parse_gpu_list(a.gpus);
    if (!a.device.empty() && a.device.rfind("cuda", 0) != 0)
        fail("--gpus {} with --device {}: --gpus picks CUDA devices", a.gpus, a.device);
    if (gpus.size() > 1)
        fail("--gpus {}: running across several GPUs is not built yet (issue #22); `thintensor plan MODEL --gpus {}` predicts the "
             "layer split and tensor parallelism, and --gpus N runs on GPU N alone",
             a.gpus, a.gpus);
    const std::string dev = fmt::format("cuda:{}", gpus[0]);
    if (!a.device.empty() && a.device != "cuda" && a.device != dev) fail("--gpus {} with --device {}: two different GPUs", a.gpus, a.device);
    return dev;
}

LoadedModel load_model(const ModelArgs& a, int needed_context) {
    (void)device_of(a);  // --gpus / --device mistakes before anything loads
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

void LoadedModel::create_backend(const ModelArgs& a, int needed_context, int n_sequences) {
    BackendOptions bo;
    bo.n_sequences = n_sequences;
    std::string why;
    const std::string asked = device_of(a);
    bo.device = asked.empty() ? default_device(spec, &why) : asked;
    bo.profile = parse_profile(a.profile);
    bo.kv_cache = parse_kv_cache_request(a.kv_cache);
    if (asked.empty())
        log::info("device: {} ({})", bo.device, !why.empty() ? why : bo.device == "cpu" ? "no usable GPU found" : "GPU found");
    bo.context = a.context > 0 ? a.context : std::min(needed_context, spec.max_context);
    if (a.context > spec.max_context) fail("--context {} exceeds the model's maximum of {}", a.context, spec.max_context);
    bo.n_threads = a.threads;
    if (!a.vram_budget.empty()) bo.vram_budget = parse_byte_size(a.vram_budget, "--vram-budget");
    if (!a.ram_budget.empty()) bo.ram_budget = parse_byte_size(a.ram_budget, "--ram-budget");
    bo.expert_slots = a.expert_slots;
    bo.cpu_layers = a.cpu_layers;
    bo.ring_slots = a.ring_slots;
    if (a.tune_split && a.cpu_layers >= 0)
        fail("--tune-split moves the count of CPU layers that --cpu-layers {} pins; give one of them", a.cpu_layers);
    bo.tune_split = a.tune_split;
    if (a.tune_split && (bo.device == "cpu" || bo.device == "host"))
        log::warn("--tune-split does not apply to the {} backend (no layers outside VRAM); ignored", bo.device == "cpu" ? "CPU" : "host");
    if (a.expert_slots > 0 && !spec.has_moe()) fail("--expert-slots: {} has no mixture-of-experts layers", a.model);
    // The CUDA backend plans with these budgets and prints its plan; the CPU and host backends have
    // no VRAM to budget and read the weights from the mapping in place.
    if ((bo.device == "cpu" || bo.device == "host") && (!a.vram_budget.empty() || !a.ram_budget.empty()))
        log::warn("{} does not apply to the {} backend (it reads the weights in place from the mapped archive); ignored",
                  !a.vram_budget.empty() ? "--vram-budget" : "--ram-budget", bo.device == "cpu" ? "CPU" : "host");
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
    // A number field of the generation config, or `dflt` when absent or null.
    const auto num = [&](const char* key, double dflt) {
        return gen.contains(key) && gen[key].is_number() ? gen[key].get<double>() : dflt;
    };
    if (gen.is_object() && gen.contains("do_sample") && gen["do_sample"].is_boolean()) {
        if (!gen["do_sample"].get<bool>()) {
            c.temperature = 0;
        } else {
            c.temperature = float(num("temperature", 1.0));
            c.top_k = int(std::clamp(num("top_k", 50), -1.0, 1e9));
            c.top_p = float(num("top_p", 1.0));
            c.min_p = float(num("min_p", 0.0));
        }
        c.repeat_penalty = float(num("repetition_penalty", c.repeat_penalty));
    }
    if (c.top_k < 0) c.top_k = 0;  // transformers: a top_k of 0 or less is off
    // The generation config's values that no flag replaces must obey the flags' rules (the flags
    // were checked when parsed). Written as !(ok) so that NaN fails.
    const auto bad = [&](const char* field, double v, const char* rule) {
        fail("{}: the archive's generation config has {} {}, which must be {} (or pass the flag)", m.archive_path, field,
             v, rule);
    };
    if (!a.temperature && !(std::isfinite(c.temperature) && c.temperature >= 0)) bad("temperature", c.temperature, ">= 0");
    if (!a.top_p && !(c.top_p > 0 && c.top_p <= 1)) bad("top_p", c.top_p, "in (0, 1]");
    if (!a.min_p && !(c.min_p >= 0 && c.min_p <= 1)) bad("min_p", c.min_p, "in [0, 1]");
    if (!a.repeat_penalty && !(std::isfinite(c.repeat_penalty) && c.repeat_penalty > 0))
        bad("repetition_penalty", c.repeat_penalty, "> 0");
    if (a.temperature) c.temperature = *a.temperature;
    if (a.top_k) c.top_k = *a.top_k;
    if (a.top_p) c.top_p = *a.top_p;
    if (a.min_p) c.min_p = *a.min_p;
    if (a.repeat_penalty) c.repeat_penalty = *a.repeat_penalty;
    if (a.seed) {
        c.seed = *a.seed;
    } else {
        c.seed = std::random_device{}();
        if (c.temperature > 0) log::info("seed: {} (random; pass --seed {} to repeat this output)", c.seed, c.seed);
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
