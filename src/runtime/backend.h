// The interface between the generation loop (model logic) and a compute backend (CPU, CUDA).
// Model logic never sees CUDA: it drives a Backend. A backend owns the weights' placement and the
// KV cache; positions are implicit: tokens fed are appended after the n_past already cached.
// A backend may hold several sequences (the server's slots) over one copy of the weights: each has
// its own KV cache / recurrent state, select_sequence() picks the one the single-sequence calls act
// on, and decode_batch() advances several by one token in one pass over the weights.
#pragma once

#include "runtime/kv_cache_type.h"
#include "runtime/profile.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tt {

class Archive;
class Sampler;

// Weight streaming figures of a backend that streams layers over PCIe (docs/STREAMING.md).
struct StreamStats {
    bool streaming = false;
    std::string plan;              // the plan's one-line summary ("plan: 12 of 32 layers resident, ...")
    uint64_t bytes_per_pass = 0;   // bytes copied host -> device per decode token (and per prefill chunk)
    uint64_t passes = 0;           // decode tokens + prefill chunks run since load
    uint64_t bytes_streamed = 0;   // total copied since load
    double copy_s_per_pass = 0;    // one pass of copies alone, timed at load: the copy engine's busy time per token
    double predicted_tokens_per_s = 0;
    // Mixture of experts larger than VRAM: the VRAM expert cache (0 slots: none).
    int expert_slots = 0;
    int n_experts = 0;               // expert blocks in the model
    uint64_t expert_block_bytes = 0; // bytes one miss copies
    uint64_t expert_hits = 0;        // decode lookups since load
    uint64_t expert_misses = 0;
    // Layers computed on the CPU in decode (issue #16): the split in use, which decode may have
    // moved from the plan's count by its own token times (runtime/split_tuner.h).
    int cpu_layers = 0;
    int planned_cpu_layers = 0;
    bool split_tuning = false;  // still timing counts: the split may move at the next token
    std::string split;          // what the tuner kept and tried ("" while tuning, or with no tuner)
    int cpu_threads = 0;
    uint64_t cpu_bytes_per_token = 0;
    double combined_bound_tokens_per_s = 0;  // non-resident bytes / (PCIe + host read bandwidth)
};

class Backend {
public:
    virtual ~Backend() = default;

    // "cpu (2 threads)", "host (16 threads, avx512-vnni)", "cuda:0 NVIDIA H200".
    virtual std::string describe() const = 0;
    // Maximum positions the KV cache holds.
    virtual int context_size() const = 0;
    // Tokens currently in the KV cache.
    virtual int n_past() const = 0;
    // Drops cache entries from position n on (n <= n_past): /reset, or a chat turn that reuses a
    // prefix. n must be restorable(n); anything else throws tt::Error.
    virtual void rewind(int n) = 0;
    // The largest position <= n (and <= n_past) rewind() can return to. A KV cache keeps every
    // position; a recurrent state (Qwen3.5's linear-attention layers) cannot be undone, only
    // restored: such a backend returns to 0, to n_past, and to the positions of its checkpoints.
    virtual int restorable(int n) const { return n < n_past() ? n : n_past(); }
    // Whether every position <= n_past is restorable (no recurrent state).
    virtual bool keeps_every_position() const { return true; }
    // Keeps the state at n_past as a checkpoint rewind() can return to (a chat session takes one
    // after each turn's prompt). A no-op where every position is restorable.
    virtual void checkpoint() {}

    // Runs tokens at positions [n_past, n_past + tokens.size()), appends them to the cache, and
    // returns logits: [tokens.size(), vocab] when all_logits, else [vocab] for the last token.
    // The span stays valid until the next call. Throws tt::Error if the context would overflow.
    virtual std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits) = 0;

    // Feeds tokens as forward() does and chooses the next token with `sampler` (history: the
    // context so far, for the repetition penalty). The default samples forward()'s logits on the
    // host; a GPU backend overrides it so that only the chosen id crosses to the host.
    virtual int32_t forward_sample(std::span<const int32_t> tokens, Sampler& sampler, std::span<const int32_t> history);

    // Sequence slots: how many independent sequences (each its own KV cache / state, the weights
    // shared) this backend holds. One unless the backend was created with BackendOptions::n_sequences
    // and can hold more (the CPU backend); a backend that keeps one serves one sequence at a time.
    virtual int max_sequences() const { return 1; }
    // Makes sequence seq (0 <= seq < max_sequences()) the one that n_past, rewind, restorable,
    // keeps_every_position, checkpoint, forward and forward_sample act on. Throws tt::Error when out
    // of range.
    virtual void select_sequence(int seq);
    // One decode step of several sequences: tokens[i] is appended to sequence seqs[i] (distinct)
    // and the logits come back as [seqs.size(), vocab], row i for seqs[i]. The span stays valid until
    // the next call; the selected sequence is unchanged. The default runs them one after another
    // through select_sequence + forward; the CPU backend runs them as one batch (every weight row
    // read once for all of them). Throws tt::Error when a sequence's context is full.
    virtual std::span<const float> decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens);
    // decode_batch for rows that only want their argmax (plain greedy, no logprobs): ids[i] gets row
    // i's first largest logit (Sampler::argmax). The default takes decode_batch's rows; a GPU backend
    // chooses on the device, so that only the ids cross to the host.
    virtual void decode_batch_greedy(std::span<const int> seqs, std::span<const int32_t> tokens, std::span<int32_t> ids);

    // The KV cache this backend stores (BackendOptions::kv_cache resolved): bench and validate
    // report it, and validate's bounds follow it (runtime/parity.h, with_kv_cache).
    virtual KvCacheType kv_cache() const = 0;

    // Streaming figures; the default (CPU) streams nothing.
    virtual StreamStats stream_stats() const { return {}; }
    // Seconds per decode step with the weight copies left out (kernels only, reading whatever the
    // ring holds), the mean of n steps: bench's overlap figure. The cache and n_past are unchanged.
    // 0 when the backend streams nothing.
    virtual double measure_decode_without_copies(int n) { return 0; }

private:
    std::vector<float> batch_logits_;  // decode_batch's default: the rows gathered
};

struct BackendOptions {
    std::string device = "cpu";  // "cpu" (the reference), "host" (the host decode path), "cuda", "cuda:N"
    int context = 0;             // KV cache length; 0 = the model's max_context
    int n_threads = 0;           // CPU threads; 0 = all cores
    Profile profile = Profile::balanced;
    // --kv-cache: auto is the profile's cache (profile_kv_cache); which one a backend stores is
    // kv_cache_choice.h's rule (CUDA's 8-bit cache needs head_dim a multiple of 16), said by kv_cache().
    KvCacheRequest kv_cache = KvCacheRequest::automatic;
    uint64_t vram_budget = 0;    // bytes of VRAM the backend may use; 0 = free VRAM minus a margin
    uint64_t ram_budget = 0;     // bytes of host RAM for streamed weights; 0 = what the system has free
    int expert_slots = 0;        // MoE: > 0 caps the VRAM expert cache at this many (experts in host memory)
    int cpu_layers = -1;         // larger than VRAM: layers computed on the CPU in decode; -1 = the planner's choice
    int ring_slots = 0;          // larger than VRAM: the streaming ring's slots (1 or 2); 0 = the planner's choice
    bool tune_split = false;     // and from there, moved by decode's token times (runtime/split_tuner.h)
    int n_sequences = 1;         // sequence slots, each with its own cache of `context` positions (serve --parallel);
                                 // backends that hold one ignore it (see Backend::max_sequences)
};

// Creates the backend named by opt.device for the opened archive (kept alive by the caller).
std::unique_ptr<Backend> make_backend(const Archive& archive, const BackendOptions& opt);
// "cuda" when this build has the CUDA backend and a GPU is visible, else "cpu".
std::string default_device();
struct ModelSpec;
// The same for a model: "cpu" also when the CUDA backend cannot run it (cuda_unsupported_reason),
// with the reason in *why.
std::string default_device(const ModelSpec& spec, std::string* why);
// Why the CUDA backend / the host decode path (--device host) cannot run `spec` in this build, or
// "" when it can.
std::string cuda_unsupported_reason(const ModelSpec& spec);
std::string host_unsupported_reason(const ModelSpec& spec);

}  // namespace tt

namespace tt {

// Backends other than the CPU register themselves here (the CUDA library does so from
// tt::cuda::register_backend(), called by the CLI when it is linked in).
struct BackendFactory {
    std::string name;                                     // "cuda"
    std::function<bool(std::string* why)> available;      // a usable device exists
    std::function<std::unique_ptr<Backend>(const Archive&, const BackendOptions&)> create;
};
void register_backend(BackendFactory f);

}  // namespace tt
