// Host orchestration of the CUDA backend. The layer loop mirrors the CPU reference
// (src/backends/cpu/cpu_backend.cpp) step for step; tests/gpu/ holds it to that reference.
//
// Decode (one token): per layer, one GEMV launch for q/k/v with the attention RMSNorm fused in, one
// attention launch (q/k norm + RoPE + KV-cache write of the new token, flash-decoding, the merge),
// the output projection with the residual add fused, one gated GEMV (gate and up with the MLP norm
// fused), and the down projection with the residual add fused. The whole step, token in to token
// id out, is captured once in a CUDA graph and replayed; positions are read from device memory.
// On sm_90 the step's kernels are captured with programmatic dependent launch (kernels/launch.h):
// each starts while the previous drains and waits for it only where it reads its output.
// The safe profile feeds prompts through this step one token at a time (f32 activations).
//
// Layers the plan computes on the CPU (Placement::cpu, issue #16) run inside the same graph: the
// hidden state goes down to pinned memory, a host node runs the group of consecutive CPU layers on
// the host decode path (host/host_layers.h) and the state comes back up, while the copy stream
// goes on streaming the next layers into the ring. Their KV cache lives in host memory for decode;
// prefill computes them on the GPU like any streamed layer, so the rows the other side wrote are
// copied across first (sync_cpu_kv_*). With --tune-split, how many decode on the CPU starts at the
// plan's count and moves with decode's own token times (runtime/split_tuner.h): between tokens the
// rows decode wrote go back to VRAM, the layers move (set_cpu_split), and the graph is captured
// again.
//
// Prefill (many tokens): cuBLAS GEMMs on the normalized activations (stored in the weights' dtype),
// the residual adds in the GEMM epilogue; attention by the flash kernel (flash_attention.cu) for
// bf16/f16 caches with head_dim 64/128/256, otherwise as two batched GEMMs around a masked
// softmax, processed in query chunks whose key range stops at the chunk's last position (the
// causal mask makes later keys useless). The choice is made per layer (Gemma 4's full-attention
// layers have head_dim 512, its sliding ones 256).
//
// Sequence slots (serve --parallel): every layer's KV cache holds n_seq_ sequences back to back;
// the selected one's n_past, cache addresses and decode graph (one per slot, captured on its first
// decode) serve the single-sequence calls. decode_batch() advances several sequences in one pass:
// the prefill path with one row per sequence (each weight matrix read once for all of them, by
// cuBLAS), its attention the decode kernel with a row dimension (each row its own position and
// cache). Its activations are the prefill's (bf16 GEMM inputs), so its logits match a sequence's
// own decode step to the GPU tests' tolerances, not bit for bit.
//
// Every size is the layer's own (ModelSpec::layer_*; the buffers hold the largest). Gemma 4's
// KV-shared layers project only queries and attend over their source layer's cache, which that
// layer wrote earlier in the same step or chunk; its per-layer inputs are computed once per token
// (the table's row read from registered host memory) and added after each layer's MLP.
#include "backends/cuda/cuda_backend.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/expert_cache.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/weight_stream.h"
#include "backends/host/host_layers.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "format/archive.h"
#include "convert/quantize_archive.h"
#include "model/weight_quant.h"
#include "model/weights.h"
#include "runtime/backend.h"
#include "runtime/device_buffers.h"
#include "runtime/kv_cache_choice.h"
#include "runtime/plan.h"
#include "runtime/rope.h"
#include "runtime/sampler.h"
#include "runtime/split_tuner.h"
#include "runtime/state_checkpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tt::cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
    switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: fail("CUDA backend: unsupported dtype {}", dtype_name(t));
    }
}

// A device allocation freed with the backend.
struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t n) : bytes(n) {
        if (n) TT_CUDA_CHECK(cudaMalloc(&ptr, n));
    }
    ~DeviceBuffer() {
        if (ptr) cudaFree(ptr);
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)), bytes(o.bytes) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        std::swap(ptr, o.ptr);
        std::swap(bytes, o.bytes);
        return *this;
    }
    template <typename T> T* as() const { return static_cast<T*>(ptr); }
};

// A projection matrix on the device: its values, and when quantized (core/quant.h) the device
// address of its f32 scales, its scheme and group size. Norms, biases and the other float tensors
// stay plain pointers.
struct DevWeight {
    const void* w = nullptr;
    const float* scales = nullptr;
    QuantScheme quant = QuantScheme::none;
    int group = 0;
    explicit operator bool() const { return w != nullptr; }
    bool quantized() const { return quant != QuantScheme::none; }
};

struct DevLayer {
    const void *attn_norm, *bq, *bk, *bv, *bo, *q_norm, *k_norm, *attn_post_norm;
    const void *ffn_norm, *ffn_post_norm, *b_gate, *b_up, *b_down;
    DevWeight wq, wk, wv, wo, w_gate, w_up, w_down;
    DeviceBuffer k_cache, v_cache;
    DeviceBuffer k_scale, v_scale;  // --kv-cache int8: [n_ctx, n_kv_heads] f32 row scales per slot
    bool qkv_adjacent = false;      // wq, wk, wv back to back in VRAM: one prefill GEMM for all three
    bool gate_up_adjacent = false;  // likewise w_gate, w_up
    // Mixture-of-experts layers: the router, and each expert's block base (gate at the base, up,
    // down and any scales at the offsets every expert shares: CudaBackend::expert_). With the
    // expert cache the bases are the device pointers of the experts' registered host copies.
    const void* router = nullptr;
    std::vector<const void*> experts;
    DeviceBuffer expert_table;      // resident experts: the bases on the device, for the decode routing kernel
    // A shared expert (Qwen2-MoE / Qwen3.5-MoE), every token's: a gated MLP in the layer's block
    // (resident or streamed with it), and its sigmoid gate's [1, hidden] row (null: no gate).
    DevWeight shexp_gate, shexp_up, shexp_down;
    const void* shexp_gate_inp = nullptr;
    bool shexp_gate_up_adjacent = false;  // shexp_gate, shexp_up back to back: one prefill GEMM for both
    // Gated DeltaNet layers (Qwen3.5): the weights, and the recurrent state that stands in for a
    // KV cache (S [Hv, dk, dv] and the conv's last inputs, f32, resident).
    DevWeight ssm_in_qkv, ssm_in_z, ssm_out;
    const void *ssm_in_b = nullptr, *ssm_in_a, *ssm_conv, *ssm_dt_bias, *ssm_a_log, *ssm_norm;
    DeviceBuffer state, conv_state;
    // Gemma 4: the per-layer input's gate, projection and post-norm, and the layer's scalar (null: none).
    const void *per_layer_gate = nullptr, *per_layer_proj = nullptr, *per_layer_post_norm = nullptr, *layer_scalar = nullptr;
};

// The archive a quantized profile runs when `a` stores float weights: a copy quantized here
// (convert/quantize_archive.h) into a file in /dev/shm (else the temporary directory), mapped and
// unlinked at once, so nothing is left behind; null when `a` serves as it is. The CUDA backend
// uploads and streams archive blocks as stored, so quantized weights must be blocks too.
std::unique_ptr<Archive> quantized_at_load(const Archive& a, const BackendOptions& opt) {
    const QuantScheme asked = profile_weight_scheme(opt.profile), stored = archive_quant_scheme(a);
    if (asked == QuantScheme::none || asked == stored) return nullptr;
    if (stored != QuantScheme::none)
        fail("{}: --profile {} needs {} weights, but the archive stores {}; run it with the profile of its scheme "
             "(max-performance for INT8, max-max-perf for INT4) or convert the model again from its bf16/f16/f32 checkpoint",
             a.path(), profile_name(opt.profile), quant_scheme_label(asked), quant_scheme_label(stored));
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = "/dev/shm";
    const fs::space_info sp = fs::space(dir, ec);
    if (ec || sp.available < a.file_size()) dir = fs::temp_directory_path();
    const fs::path path = dir / fmt::format("thintensor-{}-{}.thin", ::getpid(), fs::path(a.path()).stem().string());
    log::info("--profile {}: quantizing {} to {} for the GPU (in {}, removed once mapped; `thintensor convert --quant {}` "
              "stores it once)", profile_name(opt.profile), a.path(), quant_scheme_label(asked), dir.string(),
              quant_scheme_name(asked));
    ThreadPool pool(opt.n_threads);
    quantize_archive(a, asked, k_int4_default_group, path.string(), pool);  // (a failure leaves no file: ArchiveWriter)
    std::unique_ptr<Archive> out;
    try {
        out = std::make_unique<Archive>(Archive::open(path.string()));
    } catch (...) {
        fs::remove(path, ec);
        throw;
    }
    fs::remove(path, ec);
    return out;
}

class CudaBackend final : public Backend {
public:
    CudaBackend(const Archive& a, const BackendOptions& opt);
    ~CudaBackend() override;

    std::string describe() const override {
        // The 8-bit KV cache is named as the CPU and host backends name it (validate's reports, bench).
        const char* kv = kv_type_ == KvCacheType::int8 ? ", 8-bit KV cache" : "";
        if (!host_layers_) return fmt::format("cuda:{} {}{}", device_, device_name_, kv);
        return fmt::format("cuda:{} {} + {} layers on the CPU ({} threads){}", device_, device_name_, plan_.n_cpu_layers,
                           host_pool_->size(), kv);
    }
    KvCacheType kv_cache() const override { return kv_type_; }
    int context_size() const override { return n_ctx_; }
    int n_past() const override { return n_past_; }
    void rewind(int n) override;
    // A KV cache keeps every position; DeltaNet states only those of their checkpoints (host copies).
    int restorable(int n) const override {
        return spec_.has_delta_net() ? checkpoints_.restorable(n, n_past_) : std::min(n, n_past_);
    }
    bool keeps_every_position() const override { return !spec_.has_delta_net(); }
    void checkpoint() override;
    int max_sequences() const override { return n_seq_; }
    void select_sequence(int seq) override;
    std::span<const float> decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens) override;
    void decode_batch_greedy(std::span<const int> seqs, std::span<const int32_t> tokens, std::span<int32_t> ids) override;
    std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits) override;
    int32_t forward_sample(std::span<const int32_t> tokens, Sampler& sampler, std::span<const int32_t> history) override;
    StreamStats stream_stats() const override;
    double measure_decode_without_copies(int n) override;

private:
    void upload(const Archive& a, const ModelWeights& w, const BackendOptions& opt);
    // The CPU layers (plan_.n_cpu_layers > 0, or a split the tuner may move): their host decode
    // path, grouped in runs of consecutive layers (place_cpu_layers, from plan_'s placements).
    void setup_cpu_layers(const ModelWeights& w, const BackendOptions& opt);
    // The host decode path of these layers, with their KV caches in host memory (null for none).
    std::unique_ptr<host::HostLayers> host_layers_for(const std::vector<int>& cpu);
    // cpu: the layers plan_ puts on the CPU, in order; layers: their host decode path (null: none).
    void place_cpu_layers(const std::vector<int>& cpu, std::unique_ptr<host::HostLayers> layers, bool moved = false);
    // Moves decode's split to n_cpu layers on the CPU before the decode step at position pos: the
    // rows decode wrote in host memory go to VRAM first, the new CPU layers read theirs from there.
    // False (and nothing moved, said in a warning) when the new host caches cannot be allocated.
    bool set_cpu_split(int n_cpu, int pos);
    static void CUDART_CB run_cpu_group(void* group);
    // The CPU layers' KV rows [valid, upto) copied from the side that wrote them: the device's
    // (prefill) into host memory before a decode step, the host's (decode) into VRAM before a prefill.
    void sync_cpu_kv_to_host(int upto);
    void sync_cpu_kv_to_device(int upto);
    void copy_cpu_kv(int from, int upto, cudaMemcpyKind kind);  // rows [from, upto) of every CPU layer's k and v
    void decode_step();  // kernels for one token at position *d_pos_, token *d_token_
    cudaGraphExec_t capture_decode_graph();
    void run_decode_graph();
    void wait_step();  // until the stream is idle: sleeping on step_done_ when CPU layers run, else spinning
    // Decode: x += W in (+ b), through post_norm first when non-null (Gemma's sandwich norms), then
    // x *= *row_scale when non-null (Gemma 4's layer_scalar). A post-norm is fused into this GEMV
    // (its last block) when the stream's next reader is the gated MLP GEMV; else it is left pending
    // (GemvArgs::pending) for the next GEMV.
    enum class Reader { mlp, gemv };
    void add_projection(const DevWeight& w, const void* b, const void* post_norm, int cols, const float* in,
                        const void* row_scale = nullptr, Reader next = Reader::gemv);
    // Gemma 4's per-layer inputs: computed for the step's token (decode) or the chunk's n tokens
    // (prefill) from the scaled token embeddings in x; and, after layer il's MLP, x +=
    // post_norm(proj(act(gate(x)) * input_il)), then x *= the layer scalar (prefill: then ph_ =
    // next_norm(x)).
    void per_layer_inputs_decode();
    void per_layer_decode(int il, const DevLayer& L);
    void per_layer_inputs_prefill(int n);
    void per_layer_prefill(int il, const DevLayer& L, int n, const void* next_norm);
    PerLayerInputArgs per_layer_input_args(float* proj, const int32_t* ids, int n) const;  // the table's row of ids[t] into proj
    // The MLPs' activation (and Gemma 4's per-layer gate's), as the kernels name it.
    GateAct gate_act() const { return spec_.activation == Activation::silu ? GateAct::silu : GateAct::gelu_tanh; }
    // Attention layers: the flash kernel serves this layer's head_dim (else scores are materialized).
    bool flash(int il) const { return prefill_attention_supported(adt_, spec_.layer_head_dim(il)); }
    // A decode step of several sequences through prefill(): row i's position and slot on the device.
    struct BatchRows {
        const int32_t* d_pos;
        const int32_t* d_slot;
    };
    // n tokens after the selected sequence's n_past; or, with batch, one token per row of batch's
    // sequences (logits of every row, n_past left to the caller).
    void prefill(std::span<const int32_t> tokens, bool all_logits, const BatchRows* batch = nullptr);
    // Decode: x += the mixture-of-experts FFN of layer L on ffn_norm(x), experts picked on the
    // device (and its shared expert, scaled by its sigmoid gate, when the model has one).
    void moe_decode(int il, const DevLayer& L);
    // A Gated DeltaNet mixer: decode (one token, from x_) and prefill (n tokens, from ph_), its
    // out_proj added to the residual stream.
    void delta_net_decode_layer(const DevLayer& L);
    void delta_net_prefill_layer(const DevLayer& L, int n);
    DeltaNetArgs delta_net_args(const DevLayer& L) const;
    // The DeltaNet layers' state and conv_state, layer by layer, as host copies (StateCheckpoints' buffers).
    StateCheckpoints checkpoints_;
    StateCheckpoints::States save_states();
    void load_states(const StateCheckpoints::States* states);  // null: the zero state of position 0
    // Prefill: x += the MoE FFN of layer L for n tokens, whose normalized inputs are in ph_ (tokens
    // grouped by expert on the host, one GEMM pair per expert used, a weighted fixed-order sum;
    // a shared expert runs on all n tokens as a dense MLP and joins that sum).
    void moe_prefill(int il, const DevLayer& L, int n);
    // Prefill: pact_ = act(gate ph_ + b_gate) * (up ph_ + b_up) over n rows of width f (a dense
    // layer's MLP, or a shared expert's); gate and up back to back (adjacent) run as one GEMM.
    // Gate and up come out in the weights' dtype, as in transformers: half the bytes of f32 for
    // the largest activation of the layer (f32 models keep f32).
    void gated_mlp_prefill(const DevWeight& gate, const DevWeight& up, bool adjacent, const void* b_gate, const void* b_up, int f,
                           int n);
    // Prefill: x += in W^T (+ b) over n rows, through post_norm first when non-null, x *= *row_scale
    // when non-null, then ph_ = norm(x) with next_norm (the next matrix product's input; null: none).
    void project_residual(const DevWeight& w, const void* b, const void* post_norm, int rows, int cols, const void* in, int n,
                          const void* next_norm, const void* row_scale = nullptr);
    // Safe profile: every token through the decode step (f32 activations end to end).
    void prefill_by_decode(std::span<const int32_t> tokens, bool all_logits);
    // The prompt in chunks of plan_.prefill_chunk tokens (by prefill(), or prefill_by_decode() in
    // the safe profile); with all_logits, into host_logits_.
    void prefill_chunked(std::span<const int32_t> tokens, bool all_logits);
    // The q/k/v post-processing arguments of layer il for n tokens (rows contiguous, its q_dim and
    // kv_dim floats apart; k null for a KV-shared layer, v == k for attention_k_eq_v); positions,
    // strides and the q output are the caller's to adjust.
    RopeArgs rope_args(int il, float* q, float* k, const float* v, int n) const;
    // y[t, 0:rows] (+)= x[t, 0:cols] W^T for t < n; rows of y are ldy elements apart, y in ydt
    // (f32 or the weights' dtype). accumulate: y += (the residual add rides in the GEMM epilogue).
    void gemm(const void* w, int rows, int cols, const void* x, int n, void* y, DType ydt, int ldy, bool accumulate = false);
    // The same with a projection matrix that may be quantized: its rows are dequantized into
    // dequant_ (as many as fit at once, docs/QUANTIZATION.md) and multiplied from there.
    void gemm(const DevWeight& w, int rows, int cols, const void* x, int n, void* y, DType ydt, int ldy, bool accumulate = false);
    // The decode GEMV arguments' weight fields: the segments' scales are set by the caller.
    static void set_quant(GemvArgs& g, const DevWeight& w) {
        g.quant = w.quant;
        g.group_size = w.group;
    }

    // The archive run when the profile quantizes at load (quantized_at_load); null: the given one.
    std::unique_ptr<Archive> quantized_;
    ModelSpec spec_;
    int device_ = 0;
    std::string device_name_;
    int n_sms_ = 0;
    DType wdt_ = DType::bf16, kvdt_ = DType::bf16;
    // kv_type_ int8: kvdt_ is i8 (values) and attention computes in adt_, the weights' dtype; else
    // adt_ == kvdt_.
    KvCacheType kv_type_ = KvCacheType::floating;
    DType adt_ = DType::bf16;
    float* slot_scales(const DeviceBuffer& b) const { return b.ptr ? static_cast<float*>(slot_ptr(b)) : nullptr; }
    int n_ctx_ = 0, n_past_ = 0;
    // Sequence slots: n_past_ is the selected slot's (cur_); slot_past_ keeps the others'.
    int n_seq_ = 1, cur_ = 0;
    std::vector<int> slot_past_;
    int& past_of(int seq) { return seq == cur_ ? n_past_ : slot_past_[size_t(seq)]; }
    void check_sequence(int seq) const {
        if (seq < 0 || seq >= n_seq_) fail("{}: holds {} sequences, so sequence {} does not exist", describe(), n_seq_, seq);
    }
    // The selected slot's part of a per-layer cache (all slots alike, back to back).
    void* slot_ptr(const DeviceBuffer& b) const { return static_cast<uint8_t*>(b.ptr) + b.bytes / size_t(n_seq_) * size_t(cur_); }
    // One decode step of the selected sequence through its graph; the argmax comes back.
    int32_t decode_argmax(int32_t token);
    // decode_batch's pass over several sequences (B >= 2, not safe): the rows' logits into
    // host_batch_logits_, or (argmax_only) their argmax ids into host_batch_[2B, 3B).
    void batch_step(std::span<const int> seqs, std::span<const int32_t> tokens, bool argmax_only);
    // decode_batch's rows: {pos, slot} per row on the device (and pinned), then the rows' argmax
    // ids, and the attention scratch of every row.
    int batch_cap_ = 0;
    DeviceBuffer batch_io_, batch_partial_, batch_arrivals_;
    int32_t* host_batch_ = nullptr;
    float* host_batch_logits_ = nullptr;  // pinned [batch_cap_, vocab]: a step's logits come down at full PCIe speed
    bool batch_timing_ = std::getenv("TT_BATCH_TIMING") != nullptr;
    bool decode_attn_cuda_cores_ = false;
    int64_t batch_steps_ = 0, batch_rows_ = 0;
    double batch_issue_s_ = 0, batch_total_s_ = 0;
    float* host_row_ = nullptr;           // pinned [vocab]: forward()'s last logits (a copy to pageable memory is staged, slower)
    float embed_scale_ = 1.0f;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    Plan plan_;                         // where each block lives (src/runtime/plan.h)
    std::unique_ptr<WeightStream> ws_;  // resident weights and the streaming ring
    std::unique_ptr<ExpertCache> cache_; // MoE larger than VRAM: experts cached in VRAM slots (plan_.expert_slots)
    std::map<const TensorView*, const void*> dev_ptr_;
    const void *token_embd_ = nullptr, *output_norm_ = nullptr;
    DevWeight output_;
    // Quantized weights: the prefill's dequantization scratch (k_dequant_scratch), and a tied
    // head's INT8 copy (the archive stores the embedding once, in float, as the CPU reference
    // quantizes it at load).
    DeviceBuffer dequant_, head_q_, head_scales_;
    // Gemma 4's per-layer inputs: the table (registered host memory, rows read by the kernel), the
    // projection of the token embedding and its norm; the table's scale sqrt(P) in its dtype.
    const void *ple_table_ = nullptr, *ple_proj_ = nullptr, *ple_norm_ = nullptr;
    float ple_table_scale_ = 1.0f;
    std::vector<DevLayer> layers_;
    DeviceBuffer inv_freq_, inv_freq_local_;
    RopeTable rope_, rope_local_;
    // Decode state (fixed addresses: the graph refers to them), allocated from decode_buffers()
    // (runtime/device_buffers.h, the list the planner sums); the names below are its entries.
    std::array<DeviceBuffer, size_t(DecodeBuf::count)> decode_bufs_;
    DeviceBuffer& dbuf(DecodeBuf b) { return decode_bufs_[size_t(b)]; }
    DeviceBuffer &x_ = dbuf(DecodeBuf::x), &q_ = dbuf(DecodeBuf::q), &k_ = dbuf(DecodeBuf::k), &v_ = dbuf(DecodeBuf::v);
    DeviceBuffer &att_ = dbuf(DecodeBuf::att), &tmp_ = dbuf(DecodeBuf::tmp), &ffn_ = dbuf(DecodeBuf::ffn);
    DeviceBuffer &logits_ = dbuf(DecodeBuf::logits), &partial_ = dbuf(DecodeBuf::partial);
    DeviceBuffer &arrivals_ = dbuf(DecodeBuf::arrivals), &io_ = dbuf(DecodeBuf::io);  // io_: {token, pos, result, argmax}
    // The decode residual stream: x_, or x_alt when the last deferred post-norm wrote it there.
    // While pending_.y is set, a projection's post-norm is still to join it (GemvArgs::pending):
    // the next GEMV that reads the stream adds it, or settle_residual() for other readers.
    float* resid_ = nullptr;
    PendingResidual pending_{};
    // The stream as the next GEMV's input: returns the buffer and clears p when nothing is pending;
    // else fills p from pending_ (its result into the other buffer, which becomes the stream) and
    // returns null.
    const float* take_residual(PendingResidual& p);
    // Adds the pending post-norm in place (the readers that do not take it: MoE, DeltaNet, CPU
    // layers, the gated MLP GEMV).
    float* settle_residual();
    Profile profile_ = Profile::balanced;
    int n_splits_ = 1;
    bool dependent_launch_ = false;  // decode kernels under programmatic dependent launch (launch.h)
    int32_t* host_io_ = nullptr;  // pinned {token, pos, result}
    std::vector<cudaGraphExec_t> graphs_;  // the decode step per slot (its cache addresses), null until first used
    cudaGraphExec_t graph_no_copies_ = nullptr;  // measure_decode_without_copies
    // Prefill workspace, grown on demand from prefill_buffers() (the list the planner sums).
    int prefill_cap_ = 0, keys_cap_ = 0;
    std::array<DeviceBuffer, size_t(PrefillBuf::count)> prefill_bufs_;
    DeviceBuffer& pbuf(PrefillBuf b) { return prefill_bufs_[size_t(b)]; }
    // Grows every buffer of `list` that is smaller than listed (the rest keep their contents).
    void grow_prefill_buffers(const PrefillBuffers& list);
    DeviceBuffer &px_ = pbuf(PrefillBuf::x), &ph_ = pbuf(PrefillBuf::h), &pqkv_ = pbuf(PrefillBuf::qkv);
    DeviceBuffer &pqb_ = pbuf(PrefillBuf::q_roped), &pscores_ = pbuf(PrefillBuf::scores), &pprobs_ = pbuf(PrefillBuf::probs);
    DeviceBuffer &patt_ = pbuf(PrefillBuf::att), &ptmp_ = pbuf(PrefillBuf::proj), &pgu_ = pbuf(PrefillBuf::gate_up);
    DeviceBuffer &pact_ = pbuf(PrefillBuf::act), &pids_ = pbuf(PrefillBuf::ids), &plogits_ = pbuf(PrefillBuf::logits);
    std::vector<float> host_logits_;
    // MoE: byte offsets of up and down (and, quantized, of the three matrices' scales) in every
    // expert block, and whether gate and up form one [2 expert_ffn, hidden] matrix (up right after
    // gate).
    struct ExpertLayout {
        size_t up = 0, down = 0, gate_scales = 0, up_scales = 0, down_scales = 0;
        QuantScheme quant = QuantScheme::none;
        int group = 0;
        bool operator==(const ExpertLayout&) const = default;
        // An expert matrix of the block at base: at offset w, its scales at offset s.
        DevWeight at(const uint8_t* base, size_t w, size_t s) const {
            if (quant == QuantScheme::none) return DevWeight{base + w};
            return DevWeight{base + w, reinterpret_cast<const float*>(base + s), quant, group};
        }
    };
    ExpertLayout expert_;
    bool expert_gate_up_adjacent_ = false;
    std::vector<int32_t> host_moe_ids_;    // prefill: the routing read back to group tokens by expert
    int32_t* host_moe_rows_ = nullptr;     // pinned: moe_rows then moe_tokens, uploaded per layer
    size_t host_moe_rows_cap_ = 0;
    // CPU layers (issue #16).
    struct CpuGroup {
        CudaBackend* self;
        int first, end;  // layers [first, end)
    };
    ModelWeights host_weights_;                  // views into the mapping the host decode path reads
    std::unique_ptr<ThreadPool> host_pool_;
    std::unique_ptr<host::HostLayers> host_layers_;
    std::vector<CpuGroup> cpu_groups_;
    std::vector<int> cpu_group_at_;              // per layer: index into cpu_groups_ of the group it starts, or -1
    float* host_x_ = nullptr;                    // pinned: the hidden state while the CPU has it
    // The end of a decode step, waited on by sleeping: a spinning wait would take one of the cores
    // the CPU layers split their rows over, and the slowest share sets each product's time.
    cudaEvent_t step_done_ = nullptr;
    int host_kv_valid_ = 0, dev_kv_valid_ = 0;   // positions of the CPU layers' cache valid on each side
    std::unique_ptr<SplitTuner> tuner_;          // null: the count is pinned (--cpu-layers) or cannot move
    int next_split_ = -1;                        // the count the next decode step moves to (-1: stays)
    std::mutex cpu_error_mu_;
    std::string cpu_error_;
    std::atomic<bool> cpu_failed_{false};
    void check_cpu();  // throws the error a host node caught
};

CudaBackend::CudaBackend(const Archive& given, const BackendOptions& opt)
    : quantized_(quantized_at_load(given, opt)), spec_(spec_from_json(given.metadata()["spec"])) {
    const Archive& a = quantized_ ? *quantized_ : given;
    if (opt.device.size() > 5 && opt.device.rfind("cuda:", 0) == 0) device_ = std::stoi(opt.device.substr(5));
    std::string why;
    const auto devices = list_devices(&why);
    if (device_ < 0 || device_ >= int(devices.size())) fail("--device {}: no such GPU ({} visible)", opt.device, devices.size());
    TT_CUDA_CHECK(cudaSetDevice(device_));
    device_name_ = devices[size_t(device_)].name;
    n_sms_ = devices[size_t(device_)].multiprocessors;
    const ModelWeights w = bind_weights(a, spec_);
    wdt_ = w.token_embd->dtype;
    // Quantized matrices (and their f32 scales) are the exception to one float dtype for all.
    std::set<const void*> scales;
    for (const auto& t : a.tensors())
        if (t.view.quant != QuantScheme::none) scales.insert(t.view.scales);
    for (const auto& t : a.tensors())
        if (t.view.dtype != wdt_ && t.view.quant == QuantScheme::none && !scales.count(t.view.data))
            fail("{}: the CUDA backend needs every weight in one dtype, but '{}' is {} and token_embd is {}; "
                 "re-convert with --dtype bf16 (or f16/f32)", a.path(), t.view.name, dtype_name(t.view.dtype), dtype_name(wdt_));
    // --kv-cache int8 on a head_dim the kernels cannot read is refused here; the profile's 8-bit
    // cache falls back to the float one, said once (device_plan_input takes the same choice quietly).
    // given: the archive the user named (a is a load-time quantized copy under a quantized profile).
    const KvCacheChoice kv_choice = cuda_kv_cache(spec_, opt.kv_cache, opt.profile, given.path());
    if (!kv_choice.warning.empty()) log::warn("{}", kv_choice.warning);
    kv_type_ = kv_choice.type;
    kvdt_ = kv_cache_dtype(wdt_, kv_type_);  // the planner's rule too (runtime/device_buffers.h)
    adt_ = kv_cache_dtype(wdt_);
    if (const std::string limit = cuda_unsupported_reason(spec_); !limit.empty()) fail("{}: {}; use --device cpu", a.path(), limit);
    n_ctx_ = opt.context > 0 ? std::min(opt.context, spec_.max_context) : spec_.max_context;
    n_seq_ = std::max(1, opt.n_sequences);
    if (n_seq_ > 1 && spec_.has_delta_net())
        fail("{}: {} sequence slots: the CUDA backend keeps one linear-attention state (Qwen3.5's DeltaNet layers), so it "
             "holds one sequence of this model; use --parallel 1, or --device cpu for several", a.path(), n_seq_);
    slot_past_.assign(size_t(n_seq_), 0);
    graphs_.assign(size_t(n_seq_), nullptr);
    embed_scale_ = spec_.embed_scale;
    if (wdt_ == DType::bf16) embed_scale_ = bf16_to_f32(f32_to_bf16(embed_scale_));
    if (wdt_ == DType::f16) embed_scale_ = f16_to_f32(f32_to_f16(embed_scale_));

    process_context_bytes(device_);  // read before cuBLAS's handle: the plan `plan` prints
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TT_CUBLAS_CHECK(cublasCreate(&cublas_));
    TT_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Keep f32 GEMMs in true f32 (no TF32) so f32 models match the reference to rounding.
    TT_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
    if (wdt_ != DType::f32) TT_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));

    upload(a, w, opt);
    // --tune-split: the tuner moves the split only where it can: a pass that streams, layers the
    // host path can compute, one sequence (--cpu-layers, which it would move, is refused with it).
    if (opt.tune_split) {
        const char* none = !ws_->streaming()           ? "every layer is resident"
                           : plan_.max_cpu_layers == 0 ? "no layer outside VRAM can run on the CPU (see `thintensor plan`)"
                                                       : nullptr;
        if (none) log::warn("--tune-split: nothing to tune ({}); the plan's split stays", none);
        else if (n_seq_ == 1) tuner_ = std::make_unique<SplitTuner>(plan_.n_cpu_layers, plan_.max_cpu_layers);
        // (several sequence slots and a streaming plan are refused just below)
    }
    if (plan_.n_cpu_layers > 0 || tuner_) setup_cpu_layers(w, opt);
    if (n_seq_ > 1 && (ws_->streaming() || plan_.n_cpu_layers > 0 || plan_.expert_slots > 0))
        fail("{}: {} sequence slots need the weights resident in VRAM, but the plan {} ({}); use --parallel 1, a smaller "
             "--ctx-size (each slot keeps its own KV cache), or a GPU with more memory", a.path(), n_seq_,
             plan_.n_cpu_layers > 0 ? "computes layers on the CPU" : plan_.expert_slots > 0 ? "keeps experts in host memory" : "streams layers",
             plan_.summary());
    if (n_seq_ > 1 && opt.profile == Profile::safe)
        log::info("--profile safe: the {} sequence slots' decode steps run one sequence at a time (f32 from end to end; "
                  "batched steps would multiply bf16 activations)", n_seq_);
    // PDL needs sm_90. Streamed weights change under the kernels (the ring's copies are ordered by
    // events, not by the kernels' own waits), so a streaming plan keeps plain launches.
    // TT_PDL=0 turns it off (an A/B knob for bench/quick_bench.sh).
    const char* pdl_env = std::getenv("TT_PDL");
    dependent_launch_ = devices[size_t(device_)].cc_major >= 9 && !ws_->streaming() && !(pdl_env && std::string(pdl_env) == "0");
    // TT_DECODE_ATTN=cuda-cores keeps decode attention off the tensor cores (an A/B knob for
    // bench/depth_bench.sh; kernels.h, decode_attention_tensor_cores).
    const char* attn_env = std::getenv("TT_DECODE_ATTN");
    decode_attn_cuda_cores_ = attn_env && std::string(attn_env) == "cuda-cores";
    if (decode_attn_cuda_cores_) log::info("TT_DECODE_ATTN=cuda-cores: decode attention runs on the CUDA cores");
    // prefill_buffers() allocates the score buffers exactly when some layer lacks the flash kernel
    // (prefill_needs_scores, the same predicate).
    std::vector<int> no_flash;
    for (int il = 0; il < spec_.n_layers; ++il) {
        const int hd = spec_.layer_head_dim(il);
        if (spec_.is_attention(il) && !flash(il) && std::find(no_flash.begin(), no_flash.end(), hd) == no_flash.end()) {
            no_flash.push_back(hd);
            log::info("prefill attention: no flash kernel for {} with head_dim {}; those layers materialize their scores in "
                      "chunks of {} queries (more memory traffic, slower prefill)", dtype_name(adt_), hd, k_attn_query_chunk);
        }
    }

    rope_ = make_rope_table(spec_.rope);
    rope_local_ = make_rope_table(spec_.rope_local);
    inv_freq_ = DeviceBuffer(rope_.inv_freq.size() * sizeof(float));
    inv_freq_local_ = DeviceBuffer(rope_local_.inv_freq.size() * sizeof(float));
    TT_CUDA_CHECK(cudaMemcpy(inv_freq_.ptr, rope_.inv_freq.data(), inv_freq_.bytes, cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaMemcpy(inv_freq_local_.ptr, rope_local_.inv_freq.data(), inv_freq_local_.bytes, cudaMemcpyHostToDevice));

    const DeltaNetSpec& dn = spec_.delta_net;
    for (int il = 0; il < spec_.n_layers; ++il) {
        DevLayer& l = layers_[size_t(il)];
        if (spec_.has_kv(il)) {
            const KvCacheParts kv = kv_cache_layer_parts(spec_, il, n_ctx_, wdt_, kv_type_);  // the planner's bytes
            l.k_cache = DeviceBuffer(kv.values * size_t(n_seq_));
            l.v_cache = DeviceBuffer(kv.values * size_t(n_seq_));
            if (kv.scales) {  // the 8-bit cache's row scales
                l.k_scale = DeviceBuffer(kv.scales * size_t(n_seq_));
                l.v_scale = DeviceBuffer(kv.scales * size_t(n_seq_));
            }
        } else if (spec_.is_delta_net(il)) {
            l.state = DeviceBuffer(dn.state_floats() * 4);
            l.conv_state = DeviceBuffer(dn.conv_state_floats() * 4);
            TT_CUDA_CHECK(cudaMemset(l.state.ptr, 0, l.state.bytes));
            TT_CUDA_CHECK(cudaMemset(l.conv_state.ptr, 0, l.conv_state.bytes));
        }
    }
    n_splits_ = decode_attention_splits(min_kv_heads(spec_), n_sms_);
    const DecodeBuffers decode_list = decode_buffers(spec_, n_splits_);
    for (size_t i = 0; i < decode_list.size(); ++i) decode_bufs_[i] = DeviceBuffer(decode_list[i].bytes);
    TT_CUDA_CHECK(cudaMemset(arrivals_.ptr, 0, arrivals_.bytes));
    for (DecodeBuf b : {DecodeBuf::dn_arrivals, DecodeBuf::post_arrivals})
        if (dbuf(b).bytes) TT_CUDA_CHECK(cudaMemset(dbuf(b).ptr, 0, dbuf(b).bytes));
    if (spec_.sandwich_norm) {
        // The weights a pending post-norm reads (GemvArgs::pending) get a VRAM copy of their own:
        // its reader can be the next layer's first GEMV, which under streaming runs after this
        // layer's slot was handed back for refilling. Every kernel then reads these copies.
        uint8_t* dst = static_cast<uint8_t*>(dbuf(DecodeBuf::post_norms).ptr);
        size_t off = 0;
        auto copy = [&](const TensorView* v) -> const void* {
            if (!v) return nullptr;
            TT_ASSERT(off + v->nbytes <= dbuf(DecodeBuf::post_norms).bytes);
            TT_CUDA_CHECK(cudaMemcpy(dst + off, v->data, v->nbytes, cudaMemcpyHostToDevice));
            const void* p = dst + off;
            off += (v->nbytes + 15) / 16 * 16;
            return p;
        };
        for (size_t i = 0; i < w.layers.size(); ++i) {
            DevLayer& D = layers_[i];
            D.ffn_post_norm = copy(w.layers[i].ffn_post_norm);
            D.per_layer_post_norm = copy(w.layers[i].per_layer_post_norm);
            D.layer_scalar = copy(w.layers[i].layer_scalar);
        }
    }
    profile_ = opt.profile;
    TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_io_), 4 * sizeof(int32_t), cudaHostAllocDefault));
    TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_row_), size_t(spec_.vocab_size) * 4, cudaHostAllocDefault));
}

CudaBackend::~CudaBackend() {
    cache_.reset();
    ws_.reset();  // before the compute stream it orders its copies against
    for (cudaGraphExec_t g : graphs_)
        if (g) cudaGraphExecDestroy(g);
    if (graph_no_copies_) cudaGraphExecDestroy(graph_no_copies_);
    if (host_io_) cudaFreeHost(host_io_);
    if (host_batch_) cudaFreeHost(host_batch_);
    if (host_batch_logits_) cudaFreeHost(host_batch_logits_);
    if (host_row_) cudaFreeHost(host_row_);
    if (host_moe_rows_) cudaFreeHost(host_moe_rows_);
    if (host_x_) cudaFreeHost(host_x_);
    if (step_done_) cudaEventDestroy(step_done_);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::upload(const Archive& a, const ModelWeights& w, const BackendOptions& opt) {
    // The fit planner decides which blocks are resident and which stream through a ring of VRAM
    // slots; the WeightStream uploads the former and gives every tensor a fixed device address
    // (resident, or its slot + its offset in the block, so alignment and adjacency are kept).
    bool can_register = true;
    for (;;) {
        // Measured link speeds matter only for a plan that streams: measure (about a second) only then.
        plan_ = make_plan(device_plan_input(a, spec_, opt, device_, n_ctx_, can_register, false));
        if ((plan_.streaming() || plan_.embed_host_mapped) && bandwidths_assumed(plan_.bw))
            plan_ = make_plan(device_plan_input(a, spec_, opt, device_, n_ctx_, can_register, true));
        for (const auto& msg : plan_.warnings) log::warn("{}", msg);
        log::info("{}", plan_.summary());
        try {
            ws_ = std::make_unique<WeightStream>(a, plan_, stream_);
            break;
        } catch (const WeightStream::RegistrationRefused& e) {
            TT_ASSERT(can_register);  // nothing is registered once it is off
            log::warn("cannot register the archive's mapping with the driver ({}); planning again without registration: "
                      "streamed blocks go through a pinned bounce buffer filled by host threads (slower), and what would "
                      "have been read from host memory stays in VRAM", e.what());
            can_register = false;
        }
    }
    std::map<const void*, const TensorView*> by_data;  // a quantized matrix's scales, by their host address
    for (const auto& t : a.tensors()) {
        dev_ptr_[&t.view] = ws_->address(t);
        by_data[t.view.data] = &t.view;
    }
    auto d = [&](const TensorView* v) -> const void* { return v ? dev_ptr_.at(v) : nullptr; };
    auto dw = [&](const TensorView* v) {
        DevWeight r;
        if (!v) return r;
        r.w = dev_ptr_.at(v);
        if (v->quant == QuantScheme::none) return r;
        r.scales = static_cast<const float*>(dev_ptr_.at(by_data.at(v->scales)));
        r.quant = v->quant;
        r.group = v->group_size;
        return r;
    };
    token_embd_ = ws_->lookup_address(a.tensor(w.token_embd->name));  // may be registered host memory
    output_norm_ = d(w.output_norm);
    output_ = dw(w.output);
    if (w.output == w.token_embd && profile_weight_scheme(opt.profile) != QuantScheme::none) {
        // A tied head of a quantized archive: INT8 (model/weight_quant.h), quantized here as the CPU
        // reference does at load (the archive keeps the embedding once, in float).
        const TensorView& e = *w.token_embd;
        ThreadPool pool(opt.n_threads);
        const QuantizedMatrix m = quantize_matrix(pool, e.data, e.dtype, e.shape[0], e.shape[1], QuantScheme::int8, 0,
                                                  fmt::format("{}: tensor '{}'", a.path(), e.name));
        head_q_ = DeviceBuffer(m.q.size());
        head_scales_ = DeviceBuffer(m.scales.size() * 4);
        TT_CUDA_CHECK(cudaMemcpy(head_q_.ptr, m.q.data(), m.q.size(), cudaMemcpyHostToDevice));
        TT_CUDA_CHECK(cudaMemcpy(head_scales_.ptr, m.scales.data(), head_scales_.bytes, cudaMemcpyHostToDevice));
        output_ = {head_q_.ptr, head_scales_.as<float>(), QuantScheme::int8, 0};
    }
    if (archive_quant_scheme(a) != QuantScheme::none) dequant_ = DeviceBuffer(k_dequant_scratch);
    if (spec_.per_layer_dim > 0) {
        ple_table_ = d(w.per_layer_token_embd);
        ple_proj_ = d(w.per_layer_model_proj);
        ple_norm_ = d(w.per_layer_proj_norm);
        // note: transformers scales the table's rows by sqrt(P) held in the table's dtype (as embed_scale).
        ple_table_scale_ = float(std::sqrt(double(spec_.per_layer_dim)));
        if (wdt_ == DType::bf16) ple_table_scale_ = bf16_to_f32(f32_to_bf16(ple_table_scale_));
        if (wdt_ == DType::f16) ple_table_scale_ = f16_to_f32(f32_to_f16(ple_table_scale_));
    }
    layers_.resize(w.layers.size());
    bool have_offsets = false;  // expert_, from the first expert seen
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const LayerWeights& L = w.layers[i];
        DevLayer& D = layers_[i];
        D.attn_norm = d(L.attn_norm); D.wq = dw(L.wq); D.wk = dw(L.wk); D.wv = dw(L.wv); D.wo = dw(L.wo);
        D.bq = d(L.bq); D.bk = d(L.bk); D.bv = d(L.bv); D.bo = d(L.bo); D.q_norm = d(L.q_norm); D.k_norm = d(L.k_norm);
        D.attn_post_norm = d(L.attn_post_norm); D.ffn_norm = d(L.ffn_norm); D.ffn_post_norm = d(L.ffn_post_norm);
        D.w_gate = dw(L.w_gate); D.w_up = dw(L.w_up); D.w_down = dw(L.w_down);
        D.b_gate = d(L.b_gate); D.b_up = d(L.b_up); D.b_down = d(L.b_down);
        D.per_layer_gate = d(L.per_layer_gate); D.per_layer_proj = d(L.per_layer_proj);
        D.per_layer_post_norm = d(L.per_layer_post_norm); D.layer_scalar = d(L.layer_scalar);
        // The converter writes q, k, v (and gate, up) back to back; when their bytes touch, the
        // matrices form one [q+k+v, hidden] matrix and prefill runs one larger GEMM.
        auto follows = [](const void* first, const TensorView* tf, const void* second) {
            return static_cast<const uint8_t*>(first) + tf->nbytes == static_cast<const uint8_t*>(second);
        };
        // (A quantized matrix is followed by its scales: never adjacent.)
        D.qkv_adjacent = L.wq && !D.wq.quantized() && follows(D.wq.w, L.wq, D.wk.w) && follows(D.wk.w, L.wk, D.wv.w);  // DeltaNet layers have no q/k/v
        D.gate_up_adjacent = L.w_gate && !D.w_gate.quantized() && follows(D.w_gate.w, L.w_gate, D.w_up.w);  // MoE layers have no dense MLP
        if (spec_.is_delta_net(int(i))) {
            D.ssm_in_qkv = dw(L.ssm_in_qkv); D.ssm_in_z = dw(L.ssm_in_z); D.ssm_in_b = d(L.ssm_in_b); D.ssm_in_a = d(L.ssm_in_a);
            D.ssm_conv = d(L.ssm_conv); D.ssm_dt_bias = d(L.ssm_dt_bias); D.ssm_a_log = d(L.ssm_a_log);
            D.ssm_norm = d(L.ssm_norm); D.ssm_out = dw(L.ssm_out);
        }
        if (!spec_.is_moe(int(i))) continue;  // (mlp_only_layers: dense layers among the sparse ones)
        D.router = d(L.router);
        D.shexp_gate = dw(L.shexp_gate); D.shexp_up = dw(L.shexp_up); D.shexp_down = dw(L.shexp_down);
        D.shexp_gate_inp = d(L.shexp_gate_inp);
        D.shexp_gate_up_adjacent = L.shexp_gate && !D.shexp_gate.quantized() && follows(D.shexp_gate.w, L.shexp_gate, D.shexp_up.w);
        for (const ExpertWeights& e : L.experts) {
            const uint8_t* base = static_cast<const uint8_t*>(d(e.gate));
            auto off = [&](const void* p) { return p ? size_t(static_cast<const uint8_t*>(p) - base) : size_t(0); };
            const DevWeight g = dw(e.gate), u = dw(e.up), dn = dw(e.down);
            if (u.quant != g.quant || dn.quant != g.quant || u.group != g.group || dn.group != g.group)
                fail("{}: the experts' gate, up and down of layer {} are stored in different schemes; re-convert the model", a.path(), i);
            // The expert kernels address up, down and the scales from the gate by one offset each
            // for all experts.
            ExpertLayout l{off(u.w), off(dn.w), off(g.scales), off(u.scales), off(dn.scales), g.quant, g.group};
            if (!have_offsets) {
                have_offsets = true;
                expert_ = l;
                expert_gate_up_adjacent_ = !g.quantized() && l.up == e.gate->nbytes;
            } else if (!(l == expert_)) {
                fail("{}: expert blocks are laid out differently ({} is at +{} and +{} from its gate, expected +{} and +{}); "
                     "re-convert the model", a.path(), e.up->name, l.up, l.down, expert_.up, expert_.down);
            }
            D.experts.push_back(base);
        }
        if (plan_.expert_slots > 0) continue;  // the cache picks the experts' addresses instead
        D.expert_table = DeviceBuffer(D.experts.size() * sizeof(void*));
        TT_CUDA_CHECK(cudaMemcpy(D.expert_table.ptr, D.experts.data(), D.expert_table.bytes, cudaMemcpyHostToDevice));
    }
    if (plan_.expert_slots == 0) return;
    // Experts left in host memory: the cache fetches them by their registered device pointers
    // (decode, from a kernel: the bases above) and by their host addresses (prefill, by the copy engine).
    const size_t keys = size_t(spec_.n_layers) * size_t(spec_.moe.n_experts);
    std::vector<const void*> host_device(keys, nullptr), host_ptr(keys, nullptr);
    uint64_t block_bytes = 0;
    for (const auto& b : plan_.blocks)
        if (b.expert >= 0) block_bytes = std::max(block_bytes, b.bytes);
    for (size_t i = 0; i < w.layers.size(); ++i)
        for (size_t e = 0; e < w.layers[i].experts.size(); ++e) {
            host_device[i * size_t(spec_.moe.n_experts) + e] = layers_[i].experts[e];
            host_ptr[i * size_t(spec_.moe.n_experts) + e] = ws_->host_address(*a.find(w.layers[i].experts[e].gate->name));
        }
    cache_ = std::make_unique<ExpertCache>(spec_.n_layers, spec_.moe.n_experts, plan_.expert_slots, plan_.expert_slot_bytes,
                                           block_bytes, std::move(host_device), std::move(host_ptr), 2 * n_sms_);
}

namespace {

std::vector<int> cpu_layer_list(const Plan& p) {
    std::vector<int> cpu;
    for (const auto& b : p.blocks)
        if (b.place == Placement::cpu) cpu.push_back(b.layer);
    std::sort(cpu.begin(), cpu.end());
    return cpu;
}

}  // namespace

void CudaBackend::setup_cpu_layers(const ModelWeights& w, const BackendOptions& opt) {
    host_weights_ = w;
    host_pool_ = std::make_unique<ThreadPool>(opt.n_threads);
    TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_x_), size_t(spec_.hidden_dim) * 4, cudaHostAllocDefault));
    TT_CUDA_CHECK(cudaEventCreateWithFlags(&step_done_, cudaEventBlockingSync | cudaEventDisableTiming));
    const std::vector<int> cpu = cpu_layer_list(plan_);
    place_cpu_layers(cpu, host_layers_for(cpu));
}

std::unique_ptr<host::HostLayers> CudaBackend::host_layers_for(const std::vector<int>& cpu) {
    if (cpu.empty()) return nullptr;
    return std::make_unique<host::HostLayers>(spec_, host_weights_, cpu, n_ctx_, kvdt_, *host_pool_);
}

void CudaBackend::place_cpu_layers(const std::vector<int>& cpu, std::unique_ptr<host::HostLayers> layers, bool moved) {
    cpu_group_at_.assign(size_t(spec_.n_layers), -1);
    cpu_groups_.clear();
    cpu_groups_.reserve(cpu.size());  // host nodes keep pointers to the groups
    for (size_t i = 0; i < cpu.size(); ++i) {
        if (i > 0 && cpu[i] == cpu[i - 1] + 1) {
            ++cpu_groups_.back().end;
            continue;
        }
        cpu_group_at_[size_t(cpu[i])] = int(cpu_groups_.size());
        cpu_groups_.push_back({this, cpu[i], cpu[i] + 1});
    }
    host_layers_ = std::move(layers);
    if (cpu.empty()) return;
    const std::string what = fmt::format("decode computes {} layers on the CPU ({} threads, {} runs of consecutive layers) beside {} "
                                         "streamed over PCIe", cpu.size(), host_pool_->size(), cpu_groups_.size(),
                                         plan_.decode_stream_order.size());
    if (moved) log::debug("{}", what);  // the tuner's moves: its report says where it settled
    else log::info("{}", what);
}

bool CudaBackend::set_cpu_split(int n_cpu, int pos) {
    Plan next = plan_;
    set_decode_split(next, n_cpu);
    // The new layers' host caches first: if they cannot be allocated, nothing has moved.
    const std::vector<int> cpu = cpu_layer_list(next);
    std::unique_ptr<host::HostLayers> layers;
    try {
        layers = host_layers_for(cpu);
    } catch (const std::exception& e) {
        log::warn("--tune-split: {} CPU layers need their KV caches in host memory, which failed ({}); the split stays at {} and "
                  "tuning stops", n_cpu, e.what(), plan_.n_cpu_layers);
        return false;
    }
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    sync_cpu_kv_to_device(pos);  // every layer's rows [0, pos) in VRAM: the layers leaving the CPU need theirs
    for (cudaGraphExec_t& g : graphs_)  // they hold the old groups' host nodes and the old copy order
        if (g) TT_CUDA_CHECK(cudaGraphExecDestroy(std::exchange(g, nullptr)));
    if (graph_no_copies_) TT_CUDA_CHECK(cudaGraphExecDestroy(std::exchange(graph_no_copies_, nullptr)));
    plan_ = std::move(next);
    ws_->set_decode_split(plan_);
    place_cpu_layers(cpu, std::move(layers), true);
    host_kv_valid_ = 0;  // new host caches: the next step copies rows [0, pos) down (sync_cpu_kv_to_host)
    dev_kv_valid_ = pos;
    return true;
}

void CUDART_CB CudaBackend::run_cpu_group(void* group) {
    // Runs on the driver's callback thread: no CUDA calls, no exceptions out. The position is the
    // step's input, already in pinned memory.
    auto* g = static_cast<CpuGroup*>(group);
    CudaBackend* self = g->self;
    if (self->cpu_failed_) return;
    try {
        const int pos = self->host_io_[1];
        for (int il = g->first; il < g->end; ++il) self->host_layers_->forward(il, self->host_x_, pos);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(self->cpu_error_mu_);
        self->cpu_error_ = e.what();
        self->cpu_failed_ = true;
    }
}

void CudaBackend::check_cpu() {
    if (!cpu_failed_) return;
    std::lock_guard<std::mutex> lock(cpu_error_mu_);
    fail("a layer on the CPU failed: {}", cpu_error_);
}

void CudaBackend::copy_cpu_kv(int from, int upto, cudaMemcpyKind kind) {
    // The 8-bit cache's rows are only half of it: each row's scale ([n_ctx, n_kv_heads] f32 on both
    // sides, HostLayers laid out like the device's) crosses with it, else the side that reads them
    // would scale the new rows by stale or unset scales.
    const size_t row = host_layers_->kv_row_bytes(), srow = host_layers_->kv_scale_row_bytes();
    const size_t off = size_t(from) * row, n = size_t(upto - from) * row;
    const size_t soff = size_t(from) * srow, sn = size_t(upto - from) * srow;
    const bool down = kind == cudaMemcpyDeviceToHost;
    const auto copy = [&](void* host, void* dev, size_t at, size_t bytes) {
        uint8_t* h = static_cast<uint8_t*>(host) + at;
        uint8_t* d = static_cast<uint8_t*>(dev) + at;
        TT_CUDA_CHECK(cudaMemcpy(down ? h : d, down ? d : h, bytes, kind));
    };
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the steps that wrote the rows are done
    for (const CpuGroup& g : cpu_groups_)
        for (int il = g.first; il < g.end; ++il) {
            DevLayer& L = layers_[size_t(il)];
            copy(host_layers_->k_cache(il), slot_ptr(L.k_cache), off, n);
            copy(host_layers_->v_cache(il), slot_ptr(L.v_cache), off, n);
            if (srow == 0) continue;
            TT_ASSERT(L.k_scale.ptr && L.v_scale.ptr && host_layers_->k_scale(il) && host_layers_->v_scale(il));
            TT_ASSERT(L.k_scale.bytes == size_t(n_seq_) * size_t(n_ctx_) * srow, "layer {}: the device's scales are not the host's layout", il);
            copy(host_layers_->k_scale(il), slot_ptr(L.k_scale), soff, sn);
            copy(host_layers_->v_scale(il), slot_ptr(L.v_scale), soff, sn);
        }
}

void CudaBackend::sync_cpu_kv_to_host(int upto) {
    if (!host_layers_ || host_kv_valid_ >= upto) return;
    TT_ASSERT(dev_kv_valid_ >= upto);
    copy_cpu_kv(host_kv_valid_, upto, cudaMemcpyDeviceToHost);  // rows a prefill wrote
    host_kv_valid_ = upto;
}

void CudaBackend::sync_cpu_kv_to_device(int upto) {
    if (!host_layers_ || dev_kv_valid_ >= upto) return;
    TT_ASSERT(host_kv_valid_ >= upto);
    copy_cpu_kv(dev_kv_valid_, upto, cudaMemcpyHostToDevice);  // rows decode steps wrote
    dev_kv_valid_ = upto;
}

StreamStats CudaBackend::stream_stats() const {
    StreamStats st = ws_->stats();  // the plan's summary and prediction included, the split in use
    if (tuner_) {
        st.planned_cpu_layers = tuner_->planned();
        st.split_tuning = !tuner_->settled() || next_split_ >= 0;  // settling may leave one move to make
        st.split = tuner_->report();
    }
    if (cache_) {
        st.streaming = true;
        st.expert_slots = cache_->slots();
        st.n_experts = plan_.n_experts_total;
        st.expert_block_bytes = cache_->block_bytes();
        const ExpertCache::Counts c = cache_->counts();
        st.expert_hits = c.hits;
        st.expert_misses = c.misses;
    }
    return st;
}

void CudaBackend::decode_step() {
    const ModelSpec& s = spec_;
    const int H = s.hidden_dim;
    int32_t* d_io = io_.as<int32_t>();
    const GateAct act = gate_act();
    resid_ = x_.as<float>();
    pending_ = {};
    embedding(token_embd_, wdt_, d_io, 1, H, embed_scale_, resid_, stream_);
    if (s.per_layer_dim > 0) per_layer_inputs_decode();
    for (int il = 0; il < s.n_layers; ++il) {
        if (!cpu_group_at_.empty() && cpu_group_at_[size_t(il)] >= 0) {
            // A run of CPU layers: the state down, the host node, the state back up. The copy
            // stream, not ordered after this, keeps filling the ring meanwhile.
            CpuGroup& g = cpu_groups_[size_t(cpu_group_at_[size_t(il)])];
            float* x = settle_residual();
            TT_CUDA_CHECK(cudaMemcpyAsync(host_x_, x, size_t(H) * 4, cudaMemcpyDeviceToHost, stream_));
            TT_CUDA_CHECK(cudaLaunchHostFunc(stream_, run_cpu_group, &g));
            TT_CUDA_CHECK(cudaMemcpyAsync(x, host_x_, size_t(H) * 4, cudaMemcpyHostToDevice, stream_));
            il = g.end - 1;
            continue;
        }
        ws_->need(ws_->layer_block(il));  // streamed: wait until its slot holds layer il
        DevLayer& L = layers_[size_t(il)];
        const bool sliding = s.sliding(il);
        if (s.is_delta_net(il)) {
            delta_net_decode_layer(L);
        } else {
            const int Q = s.layer_q_dim(il), KV = s.layer_kv_dim(il);
            const bool own_kv = s.has_kv(il), k_eq_v = s.layers[size_t(il)].k_eq_v;
            const DevLayer& C = layers_[size_t(s.kv_layer(il))];  // the layer whose cache it attends over
            GemvArgs qkv{};
            // Qwen3.5: q_proj's rows are [q_h | gate_h] per head; split after the GEMV. Gemma 4: a
            // KV-shared layer projects q alone; attention_k_eq_v has no v_proj (v is the raw k).
            qkv.seg[0] = {L.wq.w, nullptr, s.attn_output_gate ? dbuf(DecodeBuf::qg).as<float>() : q_.as<float>(),
                          s.layer_q_proj_rows(il), L.wq.scales};
            qkv.n_seg = 1;
            if (own_kv) qkv.seg[qkv.n_seg++] = {L.wk.w, nullptr, k_.as<float>(), KV, L.wk.scales};
            if (own_kv && !k_eq_v) qkv.seg[qkv.n_seg++] = {L.wv.w, nullptr, v_.as<float>(), KV, L.wv.scales};
            qkv.cols = H;
            qkv.wdt = wdt_;
            set_quant(qkv, L.wq);
            // (the quantized GEMV takes no pending post-norm: it is settled first)
            qkv.x = L.wq.quantized() ? settle_residual() : take_residual(qkv.pending);
            qkv.norm_w = L.attn_norm;
            qkv.norm_offset = s.norm_weight_offset;
            qkv.norm_eps = s.norm_eps;
            gemv(qkv, stream_);
            if (s.attn_output_gate)
                split_query_gate(dbuf(DecodeBuf::qg).as<float>(), 2 * Q, 1, s.layer_n_heads(il), s.layer_head_dim(il),
                                 q_.as<float>(), Q, dbuf(DecodeBuf::gate).as<float>(), stream_);

            DecodeAttnArgs at{};
            at.k_cache = slot_ptr(C.k_cache); at.v_cache = slot_ptr(C.v_cache); at.kv_dt = kvdt_;
            at.k_scale = slot_scales(C.k_scale); at.v_scale = slot_scales(C.v_scale);
            at.out = att_.as<float>(); at.partial = partial_.as<float>(); at.arrivals = arrivals_.as<int>(); at.d_pos = d_io + 1;
            at.n_heads = s.layer_n_heads(il); at.n_kv_heads = s.layer_n_kv_heads(il); at.head_dim = s.layer_head_dim(il);
            at.n_ctx = n_ctx_; at.n_splits = n_splits_; at.window = sliding ? s.sliding_window : 0;
            at.scale = s.attn_scale; at.softcap = s.attn_softcap; at.cuda_cores_only = decode_attn_cuda_cores_;
            // q/k norm, RoPE and the cache write of the new k and v happen inside the attention launch.
            at.rope_fused = true;
            at.rope = rope_args(il, q_.as<float>(), own_kv ? k_.as<float>() : nullptr, k_eq_v ? k_.as<float>() : v_.as<float>(), 1);
            at.rope.d_pos0 = d_io + 1;
            decode_attention(at, stream_);
            if (s.attn_output_gate) sigmoid_gate(att_.ptr, DType::f32, Q, dbuf(DecodeBuf::gate).as<float>(), 1, Q, stream_);

            add_projection(L.wo, L.bo, s.sandwich_norm ? L.attn_post_norm : nullptr, Q, att_.as<float>(), nullptr, Reader::mlp);
        }
        // Gemma 4: the per-layer input joins after the MLP, and the layer scalar multiplies the result.
        const void* scalar = s.layer_scalar ? L.layer_scalar : nullptr;
        if (s.is_moe(il)) {
            moe_decode(il, L);
        } else {
            const int F = s.layer_ffn_dim(il);
            gemv_gated(L.w_gate.w, L.w_up.w, L.b_gate, L.b_up, wdt_, F, H, settle_residual(), L.ffn_norm, s.norm_weight_offset,
                       s.norm_eps, act, ffn_.as<float>(), stream_, L.w_gate.quant, L.w_gate.scales, L.w_up.scales, L.w_gate.group);
            add_projection(L.w_down, L.b_down, s.sandwich_norm ? L.ffn_post_norm : nullptr, F, ffn_.as<float>(),
                           s.per_layer_dim > 0 ? nullptr : scalar);
            if (s.per_layer_dim > 0) per_layer_decode(il, L);
        }
        ws_->done(ws_->layer_block(il));  // its slot may be refilled once these kernels ran
    }
    ws_->need_head();
    GemvArgs head{};
    head.seg[0] = {output_.w, nullptr, logits_.as<float>(), s.vocab_size, output_.scales};
    head.n_seg = 1; head.cols = H; head.wdt = wdt_;
    set_quant(head, output_);
    head.x = output_.quantized() ? settle_residual() : take_residual(head.pending);
    head.norm_w = output_norm_; head.norm_offset = s.norm_weight_offset; head.norm_eps = s.norm_eps;
    gemv(head, stream_);
    if (s.final_softcap > 0) softcap(logits_.as<float>(), s.vocab_size, s.final_softcap, stream_);
    argmax(logits_.as<float>(), s.vocab_size, d_io + 2, stream_);
    ws_->done_head();
}

void CudaBackend::moe_decode(int il, const DevLayer& L) {
    const ModelSpec& s = spec_;
    const MoeSpec& m = s.moe;
    const GateAct act = gate_act();
    float* x = settle_residual();
    // router_logits = self.gate(norm(x)): the pre-FFN norm fused into the GEMV; the shared
    // expert's gate logit, self.shared_expert_gate(norm(x)), is one more row of the same launch.
    GemvArgs r{};
    r.seg[0] = {L.router, nullptr, dbuf(DecodeBuf::moe_logits).as<float>(), m.n_experts};
    r.n_seg = 1; r.cols = s.hidden_dim; r.wdt = wdt_; r.x = x;
    r.norm_w = L.ffn_norm; r.norm_offset = s.norm_weight_offset; r.norm_eps = s.norm_eps;
    if (L.shexp_gate_inp) r.seg[r.n_seg++] = {L.shexp_gate_inp, nullptr, dbuf(DecodeBuf::shexp_logit).as<float>(), 1};
    gemv(r, stream_);
    // shared_expert_output = self.shared_expert(norm(x)): a dense gated MLP, its output kept apart
    // until the combine below scales it by its gate (x must stay unchanged until then: every
    // GEMV of this layer normalizes it again).
    if (L.shexp_gate) {
        gemv_gated(L.shexp_gate.w, L.shexp_up.w, nullptr, nullptr, wdt_, m.shared_ffn_dim, s.hidden_dim, x, L.ffn_norm,
                   s.norm_weight_offset, s.norm_eps, act, dbuf(DecodeBuf::shexp_act).as<float>(), stream_, L.shexp_gate.quant,
                   L.shexp_gate.scales, L.shexp_up.scales, L.shexp_gate.group);
        GemvArgs d{};
        d.seg[0] = {L.shexp_down.w, nullptr, dbuf(DecodeBuf::shexp_out).as<float>(), s.hidden_dim, L.shexp_down.scales};
        d.n_seg = 1; d.cols = m.shared_ffn_dim; d.wdt = wdt_; d.x = dbuf(DecodeBuf::shexp_act).as<float>();
        set_quant(d, L.shexp_down);
        gemv(d, stream_);
    }
    // softmax, top-k, renormalisation, and the chosen experts' addresses, all on the device
    const void** ptrs = static_cast<const void**>(dbuf(DecodeBuf::moe_ptrs).ptr);
    moe_route(dbuf(DecodeBuf::moe_logits).as<float>(), 1, m.n_experts, m.top_k, m.norm_topk,
              dbuf(DecodeBuf::moe_ids).as<int32_t>(), dbuf(DecodeBuf::moe_weights).as<float>(),
              cache_ ? nullptr : static_cast<const void* const*>(L.expert_table.ptr), cache_ ? nullptr : ptrs, stream_);
    // Larger than VRAM: the chosen experts' slots, misses fetched over PCIe, still on the device.
    if (cache_) cache_->lookup(il, dbuf(DecodeBuf::moe_ids).as<int32_t>(), m.top_k, ptrs, stream_);
    MoeGemvArgs g{};
    g.experts = ptrs; g.up_offset = expert_.up; g.down_offset = expert_.down;
    g.quant = expert_.quant; g.group_size = expert_.group;
    g.gate_scales = expert_.gate_scales; g.up_scales = expert_.up_scales; g.down_scales = expert_.down_scales;
    g.wdt = wdt_; g.top_k = m.top_k; g.ffn = m.expert_ffn_dim; g.hidden = s.hidden_dim;
    g.x = x; g.norm_w = L.ffn_norm; g.norm_offset = s.norm_weight_offset; g.norm_eps = s.norm_eps;
    g.act = act;
    g.act_out = dbuf(DecodeBuf::moe_act).as<float>(); g.partial = dbuf(DecodeBuf::moe_partial).as<float>();
    moe_gemv_gated(g, stream_);
    moe_gemv_down(g, stream_);
    // final_hidden_states = sum over the chosen experts of routing_weight * expert(x)
    // (+ sigmoid(gate logit) * shared_expert_output); residual add
    moe_combine(x, g.partial, nullptr, dbuf(DecodeBuf::moe_weights).as<float>(), 1, m.top_k, s.hidden_dim,
                L.shexp_gate ? dbuf(DecodeBuf::shexp_out).as<float>() : nullptr,
                L.shexp_gate_inp ? dbuf(DecodeBuf::shexp_logit).as<float>() : nullptr, stream_);
}

void CudaBackend::moe_prefill(int il, const DevLayer& L, int n) {
    const ModelSpec& s = spec_;
    const MoeSpec& m = s.moe;
    const int H = s.hidden_dim, E = m.n_experts, K = m.top_k, EF = m.expert_ffn_dim;
    const size_t A = size_t(n) * size_t(K), we = dtype_size(wdt_);
    float* logits = pbuf(PrefillBuf::moe_logits).as<float>();
    int32_t* ids = pbuf(PrefillBuf::moe_ids).as<int32_t>();
    float* weights = pbuf(PrefillBuf::moe_weights).as<float>();
    // router_logits = self.gate(hidden_states); routing as in decode
    gemm(L.router, E, H, ph_.ptr, n, logits, DType::f32, E);
    moe_route(logits, n, E, K, m.norm_topk, ids, weights, nullptr, nullptr, stream_);
    // Group the assignments by expert on the host (one read-back per layer): grouped row r of
    // expert e holds token tokens[r]; rows[t*K + j] is where assignment (t, j) went.
    host_moe_ids_.resize(A);
    TT_CUDA_CHECK(cudaMemcpyAsync(host_moe_ids_.data(), ids, A * 4, cudaMemcpyDeviceToHost, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (host_moe_rows_cap_ < 2 * A) {
        if (host_moe_rows_) TT_CUDA_CHECK(cudaFreeHost(host_moe_rows_));
        TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_moe_rows_), 2 * A * 4, cudaHostAllocDefault));
        host_moe_rows_cap_ = 2 * A;
    }
    int32_t* rows = host_moe_rows_;
    int32_t* tokens = host_moe_rows_ + A;
    std::vector<int> count(size_t(E), 0), first(size_t(E) + 1, 0);
    for (size_t i = 0; i < A; ++i) {
        const int32_t e = host_moe_ids_[i];
        if (e < 0 || e >= E) fail("MoE routing chose expert {} of {} (a kernel fault)", e, E);
        ++count[size_t(e)];
    }
    for (int e = 0; e < E; ++e) first[size_t(e) + 1] = first[size_t(e)] + count[size_t(e)];
    std::vector<int> next(first.begin(), first.end() - 1);
    for (size_t i = 0; i < A; ++i) {
        const int r = next[size_t(host_moe_ids_[i])]++;
        rows[i] = r;
        tokens[r] = int32_t(i / size_t(K));
    }
    // note: the stream is idle here (synchronized above), so the pinned rows are free to rewrite.
    const int32_t* d_rows = pbuf(PrefillBuf::moe_rows).as<int32_t>();
    const int32_t* d_tokens = pbuf(PrefillBuf::moe_tokens).as<int32_t>();
    TT_CUDA_CHECK(cudaMemcpyAsync(pbuf(PrefillBuf::moe_rows).ptr, rows, A * 4, cudaMemcpyHostToDevice, stream_));
    TT_CUDA_CHECK(cudaMemcpyAsync(pbuf(PrefillBuf::moe_tokens).ptr, tokens, A * 4, cudaMemcpyHostToDevice, stream_));
    uint8_t* xg = static_cast<uint8_t*>(pbuf(PrefillBuf::moe_x).ptr);
    gather_rows(ph_.ptr, d_tokens, int(A), H, wdt_, xg, stream_);
    const GateAct act = gate_act();
    // The shared expert on every token, as a dense MLP (its products in the dense MLP's buffers,
    // its output apart until the combine scales it by sigmoid(self.shared_expert_gate(x))).
    float* shared = L.shexp_gate ? pbuf(PrefillBuf::shexp_y).as<float>() : nullptr;
    float* shared_logit = L.shexp_gate_inp ? pbuf(PrefillBuf::shexp_logit).as<float>() : nullptr;
    if (L.shexp_gate) {
        const int SF = m.shared_ffn_dim;
        gated_mlp_prefill(L.shexp_gate, L.shexp_up, L.shexp_gate_up_adjacent, nullptr, nullptr, SF, n);
        gemm(L.shexp_down, H, SF, pact_.ptr, n, shared, DType::f32, H);  // (the DevWeight gemm: quantized or not)
        if (shared_logit) gemm(L.shexp_gate_inp, 1, H, ph_.ptr, n, shared_logit, DType::f32, 1);
    }
    // Per expert with tokens: [gate; up] x, the gated activation, then down.
    uint8_t* gu = static_cast<uint8_t*>(pbuf(PrefillBuf::moe_gate_up).ptr);
    uint8_t* actb = static_cast<uint8_t*>(pbuf(PrefillBuf::moe_act).ptr);
    float* y = pbuf(PrefillBuf::moe_y).as<float>();
    // (Quantized experts: each matrix's rows dequantized into dequant_ by the DevWeight gemm.)
    auto gate_up = [&](const uint8_t* base, int e) {
        const size_t r0 = size_t(first[size_t(e)]);
        const void* xe = xg + r0 * size_t(H) * we;
        void* out = gu + r0 * 2 * size_t(EF) * we;
        if (expert_gate_up_adjacent_) {
            gemm(base, 2 * EF, H, xe, count[size_t(e)], out, wdt_, 2 * EF);
        } else {
            gemm(expert_.at(base, 0, expert_.gate_scales), EF, H, xe, count[size_t(e)], out, wdt_, 2 * EF);
            gemm(expert_.at(base, expert_.up, expert_.up_scales), EF, H, xe, count[size_t(e)],
                 static_cast<uint8_t*>(out) + size_t(EF) * we, wdt_, 2 * EF);
        }
    };
    auto down = [&](const uint8_t* base, int e) {
        const size_t r0 = size_t(first[size_t(e)]);
        gemm(expert_.at(base, expert_.down, expert_.down_scales), H, EF, actb + r0 * size_t(EF) * we, count[size_t(e)],
             y + r0 * size_t(H), DType::f32, H);
    };
    if (cache_) {
        // Larger than VRAM: each expert used streams into a cache slot (the copy engine, ordered by
        // events), runs its three products, and frees the slot for the next.
        for (int e = 0; e < E; ++e) {
            if (!count[size_t(e)]) continue;
            const uint8_t* base = static_cast<const uint8_t*>(cache_->stage(il, e, stream_));
            const size_t r0 = size_t(first[size_t(e)]);
            gate_up(base, e);
            gated_act(gu + r0 * 2 * size_t(EF) * we, gu + (r0 * 2 + 1) * size_t(EF) * we, wdt_, 2 * EF, nullptr, nullptr, wdt_,
                      count[size_t(e)], EF, act, actb + r0 * size_t(EF) * we, wdt_, stream_);
            down(base, e);
            cache_->release(stream_);
        }
    } else {
        for (int e = 0; e < E; ++e)
            if (count[size_t(e)]) gate_up(static_cast<const uint8_t*>(L.experts[size_t(e)]), e);
        gated_act(gu, gu + size_t(EF) * we, wdt_, 2 * EF, nullptr, nullptr, wdt_, int(A), EF, act, actb, wdt_, stream_);
        for (int e = 0; e < E; ++e)
            if (count[size_t(e)]) down(static_cast<const uint8_t*>(L.experts[size_t(e)]), e);
    }
    // hidden_states += sum_j routing_weight[t, j] * expert_out[rows[t, j]] (+ the gated shared
    // expert's output), in a fixed order
    moe_combine(px_.as<float>(), y, d_rows, weights, n, K, H, shared, shared_logit, stream_);
}

RopeArgs CudaBackend::rope_args(int il, float* q, float* k, const float* v, int n) const {
    const ModelSpec& s = spec_;
    const DevLayer& L = layers_[size_t(il)];
    const bool sliding = s.sliding(il);
    const RopeTable& rt = sliding ? rope_local_ : rope_;
    RopeArgs r{};
    r.q = q; r.k = k; r.v = v;
    r.q_stride = s.layer_q_dim(il); r.k_stride = s.layer_kv_dim(il); r.v_stride = s.layer_kv_dim(il);
    r.bq = L.bq; r.bk = L.bk; r.bv = L.bv; r.q_norm = L.q_norm; r.k_norm = L.k_norm;
    r.wdt = wdt_; r.norm_offset = s.norm_weight_offset; r.norm_eps = s.norm_eps;
    r.inv_freq = (sliding ? inv_freq_local_ : inv_freq_).as<float>();
    r.attention_factor = rt.attention_factor; r.rotary_dim = rt.rotary_dim;
    r.n_heads = s.layer_n_heads(il); r.n_kv_heads = s.layer_n_kv_heads(il); r.head_dim = s.layer_head_dim(il); r.n = n;
    // A KV-shared layer (k null) writes no cache; its attention reads its source layer's.
    r.k_cache = slot_ptr(L.k_cache); r.v_cache = slot_ptr(L.v_cache); r.kv_dt = kvdt_;
    r.k_scale = slot_scales(L.k_scale); r.v_scale = slot_scales(L.v_scale);
    r.v_norm = s.v_norm;
    return r;
}

void CudaBackend::add_projection(const DevWeight& w, const void* b, const void* post_norm, int cols, const float* in,
                                 const void* row_scale, Reader next) {
    const int H = spec_.hidden_dim;
    float* x = settle_residual();  // a no-op in practice: the reader before this took the pending norm
    GemvArgs g{};
    g.n_seg = 1;
    g.cols = cols;
    g.wdt = wdt_;
    g.x = in;
    set_quant(g, w);
    if (post_norm) {
        // Gemma: the projection is normalized before it joins the residual (and Gemma 4 scales
        // the result).
        g.seg[0] = {w.w, b, tmp_.as<float>(), H, w.scales};
        if (w.quantized()) {  // the quantized GEMV fuses neither: one residual_rmsnorm after it
            gemv(g, stream_);
            residual_rmsnorm(x, tmp_.as<float>(), post_norm, nullptr, wdt_, spec_.norm_weight_offset, spec_.norm_eps, 1, H,
                             nullptr, DType::f32, stream_, row_scale);
        } else if (next == Reader::mlp) {  // by the GEMV's last block
            g.norm_offset = spec_.norm_weight_offset;
            g.norm_eps = spec_.norm_eps;
            g.post_norm = post_norm;
            g.residual = x;
            g.row_scale = row_scale;
            g.post_arrivals = dbuf(DecodeBuf::post_arrivals).as<int>();
            gemv(g, stream_);
        } else {  // by the next GEMV that reads the stream
            gemv(g, stream_);
            pending_ = {tmp_.as<float>(), x, post_norm, row_scale, nullptr, spec_.norm_weight_offset, spec_.norm_eps};
        }
    } else {  // the residual add rides in the GEMV's epilogue
        g.seg[0] = {w.w, b, x, H, w.scales};
        g.accumulate = true;
        gemv(g, stream_);
        if (row_scale)
            residual_rmsnorm(x, nullptr, nullptr, nullptr, wdt_, spec_.norm_weight_offset, spec_.norm_eps, 1, H, nullptr,
                             DType::f32, stream_, row_scale);
    }
}

const float* CudaBackend::take_residual(PendingResidual& p) {
    p = {};
    if (!pending_.y) return resid_;
    p = pending_;
    p.out = resid_ == x_.as<float>() ? dbuf(DecodeBuf::x_alt).as<float>() : x_.as<float>();
    resid_ = p.out;
    pending_ = {};
    return nullptr;
}

float* CudaBackend::settle_residual() {
    if (pending_.y)
        residual_rmsnorm(resid_, pending_.y, pending_.norm, nullptr, wdt_, spec_.norm_weight_offset, spec_.norm_eps, 1,
                         spec_.hidden_dim, nullptr, DType::f32, stream_, pending_.row_scale);
    pending_ = {};
    return resid_;
}

// ---- Gemma 4's per-layer inputs ----

void CudaBackend::per_layer_inputs_decode() {
    const ModelSpec& s = spec_;
    const int P = s.per_layer_dim, LP = s.n_layers * P;
    // per_layer_projection = self.per_layer_model_projection(inputs_embeds): x holds the scaled embedding
    GemvArgs g{};
    g.seg[0] = {ple_proj_, nullptr, dbuf(DecodeBuf::ple).as<float>(), LP};
    g.n_seg = 1; g.cols = s.hidden_dim; g.wdt = wdt_; g.x = settle_residual();
    gemv(g, stream_);
    per_layer_inputs(per_layer_input_args(dbuf(DecodeBuf::ple).as<float>(), io_.as<int32_t>(), 1), stream_);
}

PerLayerInputArgs CudaBackend::per_layer_input_args(float* proj, const int32_t* ids, int n) const {
    const ModelSpec& s = spec_;
    PerLayerInputArgs a{};
    a.proj = proj; a.table = ple_table_; a.ids = ids; a.norm_w = ple_norm_;
    a.wdt = wdt_; a.norm_offset = s.norm_weight_offset; a.norm_eps = s.norm_eps;
    // per_layer_projection * hidden_size ** -0.5; embed_tokens_per_layer * sqrt(P); the sum * 2 ** -0.5
    a.proj_scale = float(1.0 / std::sqrt(double(s.hidden_dim))); a.table_scale = ple_table_scale_;
    a.input_scale = float(1.0 / std::sqrt(2.0));
    a.n = n; a.n_layers = s.n_layers; a.per_layer_dim = s.per_layer_dim;
    return a;
}

void CudaBackend::per_layer_decode(int il, const DevLayer& L) {
    const ModelSpec& s = spec_;
    const int P = s.per_layer_dim, H = s.hidden_dim;
    const GateAct act = gate_act();
    float* g = dbuf(DecodeBuf::ple_gate).as<float>();
    // hidden_states = self.act_fn(self.per_layer_input_gate(hidden_states)) * per_layer_input, the
    // product in the GEMV's epilogue
    GemvArgs a{};
    a.seg[0] = {L.per_layer_gate, nullptr, g, P};
    a.n_seg = 1; a.cols = H; a.wdt = wdt_; a.x = take_residual(a.pending);
    a.y_mul = dbuf(DecodeBuf::ple).as<float>() + size_t(il) * size_t(P);
    a.y_act = act;
    gemv(a, stream_);
    // residual + self.post_per_layer_input_norm(self.per_layer_projection(hidden_states)); *= layer_scalar
    add_projection(DevWeight{L.per_layer_proj}, nullptr, L.per_layer_post_norm, P, g, s.layer_scalar ? L.layer_scalar : nullptr);
}

void CudaBackend::per_layer_inputs_prefill(int n) {
    const ModelSpec& s = spec_;
    const int P = s.per_layer_dim, LP = s.n_layers * P, H = s.hidden_dim;
    float* ple = pbuf(PrefillBuf::ple).as<float>();
    // The scaled embeddings as the projection's operand (transformers holds them in the weights' dtype).
    to_dtype(px_.as<float>(), int64_t(n) * H, ph_.ptr, wdt_, stream_);
    gemm(ple_proj_, LP, H, ph_.ptr, n, ple, DType::f32, LP);
    per_layer_inputs(per_layer_input_args(ple, pids_.as<int32_t>(), n), stream_);
}

void CudaBackend::per_layer_prefill(int il, const DevLayer& L, int n, const void* next_norm) {
    const ModelSpec& s = spec_;
    const int P = s.per_layer_dim, LP = s.n_layers * P, H = s.hidden_dim;
    const GateAct act = gate_act();
    float* x = px_.as<float>();
    float* g = pbuf(PrefillBuf::ple_gate).as<float>();
    // ph_ is free until the next norm below writes it: x as the gate's operand.
    to_dtype(x, int64_t(n) * H, ph_.ptr, wdt_, stream_);
    gemm(L.per_layer_gate, P, H, ph_.ptr, n, g, DType::f32, P);
    per_layer_gate_act(g, pbuf(PrefillBuf::ple).as<float>() + size_t(il) * size_t(P), LP, n, P, act, pact_.ptr, wdt_, stream_);
    float* y = ptmp_.as<float>();
    gemm(L.per_layer_proj, H, P, pact_.ptr, n, y, DType::f32, H);
    residual_rmsnorm(x, y, L.per_layer_post_norm, next_norm, wdt_, s.norm_weight_offset, s.norm_eps, n, H, next_norm ? ph_.ptr : nullptr,
                     wdt_, stream_, s.layer_scalar ? L.layer_scalar : nullptr);
}

cudaGraphExec_t CudaBackend::capture_decode_graph() {
    // Inputs {token, pos} go up and the argmax comes down inside the graph, from pinned memory.
    // The weight copies of streamed layers are captured too, on the copy stream forked from here.
    cudaGraph_t g;
    cudaGraphExec_t exec = nullptr;
    TT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    TT_CUDA_CHECK(cudaMemcpyAsync(io_.ptr, host_io_, 2 * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    ws_->begin_pass(WeightStream::Pass::decode);
    {
        DependentLaunchScope pdl(dependent_launch_);
        decode_step();
    }
    ws_->end_pass();
    TT_CUDA_CHECK(cudaMemcpyAsync(host_io_ + 2, io_.as<int32_t>() + 2, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
    TT_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    TT_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    TT_CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
}

void CudaBackend::wait_step() {
    if (!step_done_) {
        TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        return;
    }
    TT_CUDA_CHECK(cudaEventRecord(step_done_, stream_));
    TT_CUDA_CHECK(cudaEventSynchronize(step_done_));
}

void CudaBackend::run_decode_graph() {
    const auto t0 = std::chrono::steady_clock::now();
    const int pos = host_io_[1];
    if (next_split_ >= 0 && !set_cpu_split(std::exchange(next_split_, -1), pos)) tuner_.reset();
    cudaGraphExec_t& graph = graphs_[size_t(cur_)];
    if (!graph) graph = capture_decode_graph();
    sync_cpu_kv_to_host(pos);  // the CPU layers attend over rows a prefill wrote on the GPU
    TT_CUDA_CHECK(cudaGraphLaunch(graph, stream_));
    ws_->count_pass();
    wait_step();
    ws_->check();
    check_cpu();
    if (host_layers_) {
        host_kv_valid_ = pos + 1;
        dev_kv_valid_ = std::min(dev_kv_valid_, pos);  // row pos now differs between the two sides
    }
    if (tuner_ && !tuner_->settled()) {
        const int next = tuner_->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (next != plan_.n_cpu_layers) next_split_ = next;  // moved before the next step, at its position
        if (tuner_->settled()) log::info("decode split from token times: {}", tuner_->report());
    }
}

double CudaBackend::measure_decode_without_copies(int n) {
    if (!ws_->streaming() || n < 1 || n_past_ >= n_ctx_) return 0;
    if (!graph_no_copies_) {
        ws_->set_copies(false);
        graph_no_copies_ = capture_decode_graph();
        ws_->set_copies(true);
    }
    // Position n_past_ is not cached yet: the KV row these steps write is overwritten by the next token.
    // A recurrent state has no such slack: it is kept aside and put back.
    StateCheckpoints::States kept;
    if (spec_.has_delta_net()) kept = save_states();
    host_io_[0] = 0;
    host_io_[1] = n_past_;
    sync_cpu_kv_to_host(n_past_);
    double total = 0;
    for (int i = 0; i <= n; ++i) {  // the first run warms up
        const auto t0 = std::chrono::steady_clock::now();
        TT_CUDA_CHECK(cudaGraphLaunch(graph_no_copies_, stream_));
        wait_step();
        if (i > 0) total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    check_cpu();
    dev_kv_valid_ = std::min(dev_kv_valid_, n_past_);
    if (spec_.has_delta_net()) load_states(&kept);
    return total / n;
}

// ---- Gated DeltaNet layers (Qwen3.5) ----

DeltaNetArgs CudaBackend::delta_net_args(const DevLayer& L) const {
    const DeltaNetSpec& d = spec_.delta_net;
    DeltaNetArgs a{};
    a.conv_w = L.ssm_conv; a.a_log = L.ssm_a_log; a.dt_bias = L.ssm_dt_bias; a.norm_w = L.ssm_norm;
    a.wdt = wdt_; a.norm_eps = spec_.norm_eps;
    a.state = L.state.as<float>(); a.conv_state = L.conv_state.as<float>();
    a.n_k_heads = d.n_k_heads; a.n_v_heads = d.n_v_heads; a.k_head_dim = d.k_head_dim; a.v_head_dim = d.v_head_dim;
    a.conv_kernel = d.conv_kernel;
    return a;
}

void CudaBackend::delta_net_decode_layer(const DevLayer& L) {
    const ModelSpec& s = spec_;
    const DeltaNetSpec& d = s.delta_net;
    const int cd = d.conv_dim(), vd = d.value_dim(), hv = d.n_v_heads;
    // in_proj_qkv, in_proj_z, in_proj_b and in_proj_a of the normalized x: qkv | z | b | a.
    float* qkv = dbuf(DecodeBuf::dn_in).as<float>();
    float *z = qkv + cd, *b = z + vd, *a = b + hv;
    GemvArgs g{};
    g.seg[0] = {L.ssm_in_qkv.w, nullptr, qkv, cd, L.ssm_in_qkv.scales};
    g.seg[1] = {L.ssm_in_z.w, nullptr, z, vd, L.ssm_in_z.scales};
    g.n_seg = 2; g.cols = s.hidden_dim; g.wdt = wdt_; g.x = settle_residual();
    g.norm_w = L.attn_norm; g.norm_offset = s.norm_weight_offset; g.norm_eps = s.norm_eps;
    set_quant(g, L.ssm_in_qkv);
    // in_proj_b stays in floating point in every profile: with quantized qkv and z, a launch of its own.
    if (!L.ssm_in_qkv.quantized()) g.seg[g.n_seg++] = {L.ssm_in_b, nullptr, b, hv};
    gemv(g, stream_);
    set_quant(g, DevWeight{});
    g.seg[0] = {L.ssm_in_a, nullptr, a, hv};
    g.n_seg = 1;
    if (L.ssm_in_qkv.quantized()) g.seg[g.n_seg++] = {L.ssm_in_b, nullptr, b, hv};
    gemv(g, stream_);
    // The conv step, the gates, the state update and the gated norm: one launch.
    DeltaNetArgs A = delta_net_args(L);
    A.qkv = qkv; A.z = z; A.a = a; A.b = b;
    A.out = dbuf(DecodeBuf::dn_out).ptr; A.out_dt = DType::f32; A.n = 1;
    A.scratch = dbuf(DecodeBuf::dn_scratch).as<float>(); A.arrivals = dbuf(DecodeBuf::dn_arrivals).as<int>();
    delta_net_decode(A, stream_);
    add_projection(L.ssm_out, nullptr, nullptr, vd, dbuf(DecodeBuf::dn_out).as<float>());
}

void CudaBackend::delta_net_prefill_layer(const DevLayer& L, int n) {
    const ModelSpec& s = spec_;
    const DeltaNetSpec& d = s.delta_net;
    const int H = s.hidden_dim, cd = d.conv_dim(), vd = d.value_dim(), hv = d.n_v_heads;
    // The four projections of ph_ (normalized x), each its own [n, rows] array in dn_in.
    float* qkv = pbuf(PrefillBuf::dn_in).as<float>();
    const size_t cap = size_t(prefill_cap_);
    float *z = qkv + cap * size_t(cd), *b = z + cap * size_t(vd), *a = b + cap * size_t(hv);
    gemm(L.ssm_in_qkv, cd, H, ph_.ptr, n, qkv, DType::f32, cd);
    gemm(L.ssm_in_z, vd, H, ph_.ptr, n, z, DType::f32, vd);
    gemm(L.ssm_in_b, hv, H, ph_.ptr, n, b, DType::f32, hv);
    gemm(L.ssm_in_a, hv, H, ph_.ptr, n, a, DType::f32, hv);
    DeltaNetArgs A = delta_net_args(L);
    A.qkv = qkv; A.z = z; A.a = a; A.b = b;
    A.out = patt_.ptr; A.out_dt = wdt_; A.n = n;
    A.scratch = pbuf(PrefillBuf::dn_scratch).as<float>();
    delta_net_prefill(A, stream_);
    project_residual(L.ssm_out, nullptr, nullptr, H, vd, patt_.ptr, n, L.ffn_norm);
}

StateCheckpoints::States CudaBackend::save_states() {
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    StateCheckpoints::States out;
    for (const DevLayer& L : layers_) {
        if (!L.state.bytes) continue;
        for (const DeviceBuffer* b : {&L.state, &L.conv_state}) {
            out.emplace_back(b->bytes / 4);
            TT_CUDA_CHECK(cudaMemcpy(out.back().data(), b->ptr, b->bytes, cudaMemcpyDeviceToHost));
        }
    }
    return out;
}

void CudaBackend::load_states(const StateCheckpoints::States* states) {
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    size_t i = 0;
    for (DevLayer& L : layers_) {
        if (!L.state.bytes) continue;
        for (DeviceBuffer* b : {&L.state, &L.conv_state}) {
            if (states) TT_CUDA_CHECK(cudaMemcpy(b->ptr, (*states)[i].data(), b->bytes, cudaMemcpyHostToDevice));
            else TT_CUDA_CHECK(cudaMemset(b->ptr, 0, b->bytes));
            ++i;
        }
    }
}

void CudaBackend::checkpoint() {
    if (spec_.has_delta_net()) checkpoints_.keep(n_past_, save_states());
}

void CudaBackend::rewind(int n) {
    TT_ASSERT(n >= 0 && n <= n_past_);
    if (spec_.has_delta_net() && n != n_past_) load_states(checkpoints_.rewind_to(n, n_past_));
    n_past_ = n;
    host_kv_valid_ = std::min(host_kv_valid_, n);
    dev_kv_valid_ = std::min(dev_kv_valid_, n);
}

void CudaBackend::gemm(const void* w, int rows, int cols, const void* x, int n, void* y, DType ydt, int ldy, bool accumulate) {
    // Row-major y[n, rows] = x[n, cols] W[rows, cols]^T is column-major y^T = W^T(op T) x^T.
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    TT_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, cols, &alpha, w, cuda_type(wdt_), cols, x,
                                 cuda_type(wdt_), cols, &beta, y, cuda_type(ydt), ldy, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::gemm(const DevWeight& w, int rows, int cols, const void* x, int n, void* y, DType ydt, int ldy,
                       bool accumulate) {
    if (!w.quantized()) return gemm(w.w, rows, cols, x, n, y, ydt, ldy, accumulate);
    // Rows [r0, r0 + m) dequantized into the scratch, then their slice of y's columns. The scratch
    // is reused by the next slice only after this GEMM (one stream orders them).
    const size_t we = dtype_size(wdt_), row_q = quant_row_bytes(w.quant, cols);
    const size_t row_s = size_t(quant_row_scales(w.quant, cols, w.group));
    const int slice = int(std::max<size_t>(1, dequant_.bytes / (size_t(cols) * we)));
    for (int r0 = 0; r0 < rows; r0 += slice) {
        const int m = std::min(slice, rows - r0);
        dequantize(static_cast<const uint8_t*>(w.w) + size_t(r0) * row_q, w.scales + size_t(r0) * row_s, w.quant, w.group, m, cols,
                   dequant_.ptr, wdt_, stream_);
        gemm(dequant_.ptr, m, cols, x, n, static_cast<uint8_t*>(y) + size_t(r0) * dtype_size(ydt), ydt, ldy, accumulate);
    }
}

void CudaBackend::prefill(std::span<const int32_t> tokens, bool all_logits, const BatchRows* batch) {
    const ModelSpec& s = spec_;
    const int n = int(tokens.size());
    const int H = s.hidden_dim;
    const int n_keys = batch ? 1 : n_past_ + n;  // (a batched step's attention needs no score buffer)
    // ke: the cache's bytes a value; ae: attention's (q, the probabilities, the 8-bit cache's rows dequantized).
    const size_t we = dtype_size(wdt_), ke = dtype_size(kvdt_), ae = dtype_size(adt_);
    TT_ASSERT(!batch || (all_logits && !s.has_delta_net() && !host_layers_));
    prefill_cap_ = std::max(n, prefill_cap_);
    keys_cap_ = std::max(n_keys, keys_cap_);
    grow_prefill_buffers(prefill_buffers(s, prefill_cap_, keys_cap_, wdt_, all_logits ? n : 1, kv_type_));
    float* x = px_.as<float>();
    sync_cpu_kv_to_device(n_past_);  // the GPU computes the CPU layers too: it needs their decoded rows
    ws_->begin_pass(WeightStream::Pass::prefill);  // each streamed layer (CPU layers too) crosses the bus once per chunk
    if (cache_) cache_->begin_prefill();
    TT_CUDA_CHECK(cudaMemcpyAsync(pids_.ptr, tokens.data(), size_t(n) * 4, cudaMemcpyHostToDevice, stream_));
    embedding(token_embd_, wdt_, pids_.as<int32_t>(), n, H, embed_scale_, x, stream_);
    if (s.per_layer_dim > 0) per_layer_inputs_prefill(n);
    // ph_ holds the normalized input of the next matrix product, in the weights' dtype. The last
    // product of a layer normalizes the next layer's input with the next block's norm weights, so
    // the two blocks are in VRAM at once; a ring of one slot holds one streamed block at a time, and
    // there each layer normalizes its own input after its block arrived (the same values, one
    // more kernel a layer).
    const bool own_norm = plan_.ring_slots == 1;
    for (int il = 0; il < s.n_layers; ++il) {
        ws_->need(ws_->layer_block(il));
        if (il == 0 || own_norm)
            residual_rmsnorm(x, nullptr, nullptr, layers_[size_t(il)].attn_norm, wdt_, s.norm_weight_offset, s.norm_eps, n, H,
                             ph_.ptr, wdt_, stream_);
        DevLayer& L = layers_[size_t(il)];
        const bool sliding = s.sliding(il);
        if (s.is_delta_net(il)) {
            delta_net_prefill_layer(L, n);
        } else {
            const int Q = s.layer_q_dim(il), KV = s.layer_kv_dim(il), HD = s.layer_head_dim(il);
            const int NH = s.layer_n_heads(il), NKV = s.layer_n_kv_heads(il), group = NH / NKV;
            const bool own_kv = s.has_kv(il), k_eq_v = s.layers[size_t(il)].k_eq_v;
            const DevLayer& C = layers_[size_t(s.kv_layer(il))];  // the layer whose cache it attends over
            // Qwen3.5: q_proj's rows are [q_h | gate_h] per head (QP = 2 Q), split after the GEMM.
            // Gemma 4: a KV-shared layer projects q alone; attention_k_eq_v has no v_proj (v is the raw k).
            const int QP = s.layer_q_proj_rows(il), QKV = QP + 2 * KV;
            float* qkv = pqkv_.as<float>();
            if (own_kv && L.qkv_adjacent) {
                gemm(L.wq, QKV, H, ph_.ptr, n, qkv, DType::f32, QKV);
            } else {
                gemm(L.wq, QP, H, ph_.ptr, n, qkv, DType::f32, QKV);
                if (own_kv) gemm(L.wk, KV, H, ph_.ptr, n, qkv + QP, DType::f32, QKV);
                if (own_kv && !k_eq_v) gemm(L.wv, KV, H, ph_.ptr, n, qkv + QP + KV, DType::f32, QKV);
            }
            float* q_split = pbuf(PrefillBuf::q_gate).as<float>();
            float* gate = q_split ? q_split + size_t(prefill_cap_) * Q : nullptr;
            if (s.attn_output_gate) split_query_gate(qkv, QKV, n, NH, HD, q_split, Q, gate, stream_);
            RopeArgs r = rope_args(il, s.attn_output_gate ? q_split : qkv, own_kv ? qkv + QP : nullptr,
                                   k_eq_v ? qkv + QP : qkv + QP + KV, n);
            r.q_stride = s.attn_output_gate ? Q : QKV;
            r.k_stride = r.v_stride = QKV;
            if (batch) {
                // One decode step per row, each over its own sequence's cache: the decode kernel
                // with a row dimension (RoPE, q/k norm and the cache write inside, as in decode).
                DecodeAttnArgs at{};
                at.k_cache = C.k_cache.ptr; at.v_cache = C.v_cache.ptr; at.kv_dt = kvdt_;
                at.k_scale = C.k_scale.as<float>(); at.v_scale = C.v_scale.as<float>();
                at.partial = batch_partial_.as<float>(); at.arrivals = batch_arrivals_.as<int>(); at.d_pos = batch->d_pos;
                at.n_heads = NH; at.n_kv_heads = NKV; at.head_dim = HD;
                at.n_ctx = n_ctx_; at.n_splits = n_splits_; at.window = sliding ? s.sliding_window : 0;
                at.scale = s.attn_scale; at.softcap = s.attn_softcap; at.cuda_cores_only = decode_attn_cuda_cores_;
                at.rope_fused = true;
                at.rope = r;
                at.rope.k_cache = L.k_cache.ptr; at.rope.v_cache = L.v_cache.ptr;  // the kernel adds each row's slot
                at.rope.k_scale = L.k_scale.as<float>(); at.rope.v_scale = L.v_scale.as<float>();
                at.rope.d_pos0 = batch->d_pos;
                at.n_rows = n; at.d_slot = batch->d_slot; at.slot_stride = C.k_cache.bytes / size_t(n_seq_) / ke;
                at.out_w = patt_.ptr; at.out_stride = Q; at.partial_stride = partial_.bytes / sizeof(float);
                decode_attention(at, stream_);
            } else {
                r.pos0 = n_past_;
                r.q_out = pqb_.ptr; r.q_out_dt = adt_;
                rope_qkv(r, stream_);
                // The keys attention reads: the cache, or the 8-bit cache's rows so far dequantized
                // (the values the decode kernel's products see; rounded to adt_).
                const void* kcache = slot_ptr(C.k_cache);
                const void* vcache = slot_ptr(C.v_cache);
                if (kv_type_ == KvCacheType::int8) {
                    const int rows = (n_past_ + n) * NKV;
                    void* kd = pbuf(PrefillBuf::kv_rows).ptr;
                    void* vd = static_cast<uint8_t*>(kd) + size_t(keys_cap_) * KV * ae;
                    dequantize(kcache, slot_scales(C.k_scale), QuantScheme::int8, 0, rows, HD, kd, adt_, stream_);
                    dequantize(vcache, slot_scales(C.v_scale), QuantScheme::int8, 0, rows, HD, vd, adt_, stream_);
                    kcache = kd;
                    vcache = vd;
                }
                if (flash(il)) {
                    PrefillAttnArgs fa{};
                    fa.q = pqb_.ptr; fa.q_stride = Q;
                    fa.k_cache = kcache; fa.v_cache = vcache;
                    fa.out = patt_.ptr; fa.out_stride = Q;
                    fa.dt = adt_; fa.n_q = n; fa.n_heads = NH; fa.n_kv_heads = NKV; fa.head_dim = HD;
                    fa.q_pos0 = n_past_; fa.window = sliding ? s.sliding_window : 0;
                    fa.scale = s.attn_scale; fa.softcap = s.attn_softcap;
                    prefill_attention(fa, stream_);
                } else {
                    // Attention per query chunk: scores = Q K^T over the keys the chunk can see, masked softmax,
                    // out = P V. Heads that share a KV head are batched with a stride over the group.
                    const cudaDataType_t kt = cuda_type(adt_);
                    for (int c0 = 0; c0 < n; c0 += k_attn_query_chunk) {
                        const int nq = std::min(k_attn_query_chunk, n - c0);
                        const int nk = n_past_ + c0 + nq;  // keys visible to the chunk's last query
                        const int k_lo = sliding ? std::max(0, n_past_ + c0 - s.sliding_window + 1) : 0;
                        const int nk_used = nk - k_lo;
                        const float one = 1.0f, zero = 0.0f;
                        for (int j = 0; j < group; ++j) {
                            // For kv head g: q head = g*group + j. Batch over g.
                            const void* qb = static_cast<const uint8_t*>(pqb_.ptr) + (size_t(c0) * Q + size_t(j) * HD) * ae;
                            const void* kb = static_cast<const uint8_t*>(kcache) + size_t(k_lo) * KV * ae;
                            float* sc = pscores_.as<float>() + size_t(j) * NKV * size_t(nq) * nk_used;
                            // scores^T[nk, nq] (col-major) = K_g[nk, HD] · Q_h^T
                            TT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                                cublas_, CUBLAS_OP_T, CUBLAS_OP_N, nk_used, nq, HD, &one, kb, kt, KV, HD, qb, kt, Q,
                                (long long)group * HD, &zero, sc, CUDA_R_32F, nk_used, (long long)nq * nk_used, NKV,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                        }
                        // Scores are laid out [j][g][q][k] = head order (j, g); the softmax is per row, so the
                        // head order does not matter there, only in the P V product below.
                        masked_softmax(pscores_.as<float>(), pprobs_.ptr, adt_, NH, nq, nk_used, n_past_ + c0 - k_lo,
                                       sliding ? s.sliding_window : 0, s.attn_scale, s.attn_softcap, stream_);
                        for (int j = 0; j < group; ++j) {
                            const void* pb = static_cast<const uint8_t*>(pprobs_.ptr) + size_t(j) * NKV * size_t(nq) * nk_used * ae;
                            const void* vb = static_cast<const uint8_t*>(vcache) + size_t(k_lo) * KV * ae;
                            void* ob = static_cast<uint8_t*>(patt_.ptr) + (size_t(c0) * Q + size_t(j) * HD) * we;
                            // out^T[HD, nq] (col-major, ld Q) = V_g^T[HD, nk] · P^T[nk, nq]
                            TT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                                cublas_, CUBLAS_OP_N, CUBLAS_OP_N, HD, nq, nk_used, &one, vb, kt, KV, HD, pb, kt, nk_used,
                                (long long)nq * nk_used, &zero, ob, cuda_type(wdt_), Q, (long long)group * HD, NKV,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                        }
                    }
                }
            }
            if (s.attn_output_gate) sigmoid_gate(patt_.ptr, wdt_, Q, gate, n, Q, stream_);
            // The projections back into the residual stream: added by the GEMM itself (beta = 1 on
            // the f32 residual), unless Gemma's post-norm must see the projection alone first.
            project_residual(L.wo, L.bo, s.sandwich_norm ? L.attn_post_norm : nullptr, H, Q, patt_.ptr, n, L.ffn_norm);
        }
        const void* next_norm = own_norm ? nullptr : il + 1 < s.n_layers ? layers_[size_t(il + 1)].attn_norm : output_norm_;
        if (s.is_moe(il)) {
            moe_prefill(il, L, n);
            if (next_norm) {
                ws_->need(il + 1 < s.n_layers ? ws_->layer_block(il + 1) : ws_->output_block());
                residual_rmsnorm(x, nullptr, nullptr, next_norm, wdt_, s.norm_weight_offset, s.norm_eps, n, H, ph_.ptr, wdt_, stream_);
            }
            ws_->done(ws_->layer_block(il));
            continue;
        }
        const int F = s.layer_ffn_dim(il);
        gated_mlp_prefill(L.w_gate, L.w_up, L.gate_up_adjacent, L.b_gate, L.b_up, F, n);
        // The residual add of the MLP output (with Gemma's post-norm) is fused with the next
        // layer's input norm, or with the final norm after the last layer.
        // next_norm lives in the next block, or in the output block after the last layer. Not the
        // whole head yet: a tied head is one more streamed block, and with a ring of two slots it
        // is only enqueued once this layer's slot is released below.
        if (next_norm) ws_->need(il + 1 < s.n_layers ? ws_->layer_block(il + 1) : ws_->output_block());
        // Gemma 4: the per-layer input joins after the MLP and the layer scalar follows; the next
        // norm then comes after both.
        const void* scalar = s.layer_scalar ? L.layer_scalar : nullptr;
        if (s.per_layer_dim > 0) {
            project_residual(L.w_down, L.b_down, s.sandwich_norm ? L.ffn_post_norm : nullptr, H, F, pact_.ptr, n, nullptr);
            per_layer_prefill(il, L, n, next_norm);
        } else {
            project_residual(L.w_down, L.b_down, s.sandwich_norm ? L.ffn_post_norm : nullptr, H, F, pact_.ptr, n, next_norm, scalar);
        }
        ws_->done(ws_->layer_block(il));
    }
    if (!batch) n_past_ += n;
    if (!batch && host_layers_ && dev_kv_valid_ == n_past_ - n) dev_kv_valid_ = n_past_;
    // ph_ holds output_norm(x) for every row, in the weights' dtype.
    const int first = all_logits ? 0 : n - 1, n_out = n - first;
    ws_->need_head();
    if (own_norm)
        residual_rmsnorm(x, nullptr, nullptr, output_norm_, wdt_, s.norm_weight_offset, s.norm_eps, n, H, ph_.ptr, wdt_, stream_);
    gemm(output_, s.vocab_size, H, static_cast<const uint8_t*>(ph_.ptr) + size_t(first) * H * we, n_out, plogits_.ptr,
         DType::f32, s.vocab_size);
    if (s.final_softcap > 0) softcap(plogits_.as<float>(), n_out * s.vocab_size, s.final_softcap, stream_);
    ws_->done_head();
    ws_->end_pass();
    if (cache_) cache_->end_prefill(stream_);
}

void CudaBackend::gated_mlp_prefill(const DevWeight& gate, const DevWeight& up, bool adjacent, const void* b_gate,
                                    const void* b_up, int f, int n) {
    const int H = spec_.hidden_dim;
    const GateAct act = gate_act();
    void* g = pgu_.ptr;
    void* u = static_cast<uint8_t*>(g) + size_t(f) * dtype_size(wdt_);
    if (adjacent) {
        gemm(gate, 2 * f, H, ph_.ptr, n, g, wdt_, 2 * f);
    } else {
        gemm(gate, f, H, ph_.ptr, n, g, wdt_, 2 * f);
        gemm(up, f, H, ph_.ptr, n, u, wdt_, 2 * f);
    }
    gated_act(g, u, wdt_, 2 * f, b_gate, b_up, wdt_, n, f, act, pact_.ptr, wdt_, stream_);
}

void CudaBackend::grow_prefill_buffers(const PrefillBuffers& list) {
    for (size_t i = 0; i < list.size(); ++i)
        if (prefill_bufs_[i].bytes < list[i].bytes) prefill_bufs_[i] = DeviceBuffer(list[i].bytes);
}

void CudaBackend::project_residual(const DevWeight& w, const void* b, const void* post_norm, int rows, int cols, const void* in,
                                   int n, const void* next_norm, const void* row_scale) {
    const ModelSpec& s = spec_;
    float* x = px_.as<float>();
    void* out = next_norm ? ph_.ptr : nullptr;
    if (post_norm) {
        float* y = ptmp_.as<float>();
        gemm(w, rows, cols, in, n, y, DType::f32, rows);
        if (b) add_bias(y, b, wdt_, n, rows, stream_);
        residual_rmsnorm(x, y, post_norm, next_norm, wdt_, s.norm_weight_offset, s.norm_eps, n, rows, out, wdt_, stream_, row_scale);
    } else {
        gemm(w, rows, cols, in, n, x, DType::f32, rows, true);
        if (b) add_bias(x, b, wdt_, n, rows, stream_);
        if (next_norm || row_scale)
            residual_rmsnorm(x, nullptr, nullptr, next_norm, wdt_, s.norm_weight_offset, s.norm_eps, n, rows, out, wdt_, stream_,
                             row_scale);
    }
}

void CudaBackend::prefill_chunked(std::span<const int32_t> tokens, bool all_logits) {
    const int n = int(tokens.size()), chunk = plan_.prefill_chunk;
    const size_t V = size_t(spec_.vocab_size);
    if (all_logits) host_logits_.resize(size_t(n) * V);
    for (int c0 = 0; c0 < n; c0 += chunk) {
        const int m = std::min(chunk, n - c0);
        if (profile_ == Profile::safe) prefill_by_decode(tokens.subspan(size_t(c0), size_t(m)), all_logits);
        else prefill(tokens.subspan(size_t(c0), size_t(m)), all_logits);
        if (all_logits)
            TT_CUDA_CHECK(cudaMemcpyAsync(host_logits_.data() + size_t(c0) * V, plogits_.ptr, size_t(m) * V * 4,
                                          cudaMemcpyDeviceToHost, stream_));
    }
}

void CudaBackend::prefill_by_decode(std::span<const int32_t> tokens, bool all_logits) {
    // The safe profile keeps activations in f32 from end to end: no bf16 operands for tensor-core
    // GEMMs, f32 softmax. The decode step already computes that way, so prompts run through it one
    // token at a time (slower: every token reads all weights), logits gathered into plogits_.
    const int n = int(tokens.size());
    const size_t V = size_t(spec_.vocab_size);
    PrefillBuffers only_logits{};  // every other prefill buffer stays as it is
    only_logits[size_t(PrefillBuf::logits)] = prefill_buffers(spec_, 0, 0, wdt_, all_logits ? n : 1)[size_t(PrefillBuf::logits)];
    grow_prefill_buffers(only_logits);
    for (int t = 0; t < n; ++t) {
        host_io_[0] = tokens[size_t(t)];
        host_io_[1] = n_past_;
        run_decode_graph();
        ++n_past_;
        if (all_logits || t == n - 1)
            TT_CUDA_CHECK(cudaMemcpyAsync(plogits_.as<float>() + (all_logits ? size_t(t) * V : 0), logits_.ptr, V * 4,
                                          cudaMemcpyDeviceToDevice, stream_));
    }
}

std::span<const float> CudaBackend::forward(std::span<const int32_t> tokens, bool all_logits) {
    const int n = int(tokens.size());
    if (n == 0) fail("forward: no tokens");
    if (n_past_ + n > n_ctx_) fail("context overflow: {} tokens cached + {} new exceed the context of {}", n_past_, n, n_ctx_);
    for (int32_t id : tokens)
        if (id < 0 || id >= spec_.vocab_size) fail("token id {} is outside the vocabulary of {}", id, spec_.vocab_size);
    const float* dev_logits;
    size_t count;
    if (n == 1 && !all_logits) {
        host_io_[0] = tokens[0];
        host_io_[1] = n_past_;
        run_decode_graph();
        ++n_past_;
        dev_logits = logits_.as<float>();
        count = size_t(spec_.vocab_size);
    } else {
        prefill_chunked(tokens, all_logits);
        if (all_logits) {  // already copied chunk by chunk
            TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
            ws_->check();
            return host_logits_;
        }
        dev_logits = plogits_.as<float>();
        count = size_t(spec_.vocab_size);
    }
    TT_CUDA_CHECK(cudaMemcpyAsync(host_row_, dev_logits, count * 4, cudaMemcpyDeviceToHost, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ws_->check();
    return {host_row_, count};
}

int32_t CudaBackend::decode_argmax(int32_t token) {
    if (n_past_ + 1 > n_ctx_) fail("context overflow: {} tokens cached + 1 new exceed the context of {}", n_past_, n_ctx_);
    if (token < 0 || token >= spec_.vocab_size) fail("token id {} is outside the vocabulary of {}", token, spec_.vocab_size);
    host_io_[0] = token;
    host_io_[1] = n_past_;
    run_decode_graph();  // ends with the argmax copied to host_io_[2]
    ++n_past_;
    return host_io_[2];
}

int32_t CudaBackend::forward_sample(std::span<const int32_t> tokens, Sampler& sampler, std::span<const int32_t> history) {
    // Sampling and the penalties (repeat, presence, frequency) run on the host over copied logits.
    if (!sampler.config().plain_greedy()) return Backend::forward_sample(tokens, sampler, history);
    const int n = int(tokens.size());
    if (n == 1) return decode_argmax(tokens[0]);
    if (n_past_ + n > n_ctx_) fail("context overflow: {} tokens cached + {} new exceed the context of {}", n_past_, n, n_ctx_);
    for (int32_t id : tokens)
        if (id < 0 || id >= spec_.vocab_size) fail("token id {} is outside the vocabulary of {}", id, spec_.vocab_size);
    prefill_chunked(tokens, false);
    argmax(plogits_.as<float>(), spec_.vocab_size, io_.as<int32_t>() + 3, stream_);
    int32_t id = 0;
    TT_CUDA_CHECK(cudaMemcpyAsync(&id, io_.as<int32_t>() + 3, 4, cudaMemcpyDeviceToHost, stream_));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ws_->check();
    return id;
}

void CudaBackend::select_sequence(int seq) {
    check_sequence(seq);
    slot_past_[size_t(cur_)] = n_past_;
    cur_ = seq;
    n_past_ = slot_past_[size_t(seq)];
}

std::span<const float> CudaBackend::decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens) {
    TT_ASSERT(seqs.size() == tokens.size() && !seqs.empty());
    const int selected = cur_;
    // One sequence: its own decode graph (the single-stream speed of run). The safe profile keeps
    // every step in f32: one sequence at a time (said at load).
    if (seqs.size() == 1) {
        select_sequence(seqs[0]);
        const auto row = forward(tokens, false);  // (its span stays valid: nothing below writes host_row_)
        select_sequence(selected);
        return row;
    }
    if (profile_ == Profile::safe) {
        const auto rows = Backend::decode_batch(seqs, tokens);
        select_sequence(selected);
        return rows;
    }
    batch_step(seqs, tokens, false);
    return {host_batch_logits_, seqs.size() * size_t(spec_.vocab_size)};
}

void CudaBackend::decode_batch_greedy(std::span<const int> seqs, std::span<const int32_t> tokens, std::span<int32_t> ids) {
    TT_ASSERT(seqs.size() == tokens.size() && ids.size() == seqs.size() && !seqs.empty());
    const int selected = cur_;
    if (seqs.size() == 1) {  // the decode graph, which ends with the argmax: run's step exactly
        select_sequence(seqs[0]);
        ids[0] = decode_argmax(tokens[0]);
        select_sequence(selected);
        return;
    }
    if (profile_ == Profile::safe) {
        Backend::decode_batch_greedy(seqs, tokens, ids);
        select_sequence(selected);
        return;
    }
    batch_step(seqs, tokens, true);
    std::copy_n(host_batch_ + 2 * seqs.size(), seqs.size(), ids.begin());
}

void CudaBackend::batch_step(std::span<const int> seqs, std::span<const int32_t> tokens, bool argmax_only) {
    const int B = int(seqs.size());
    std::vector<bool> seen(size_t(n_seq_), false);
    for (int i = 0; i < B; ++i) {
        const int q = seqs[size_t(i)];
        check_sequence(q);
        if (seen[size_t(q)]) fail("decode_batch: sequence {} appears twice in one step", q);
        seen[size_t(q)] = true;
        if (past_of(q) + 1 > n_ctx_) fail("context overflow: sequence {} holds {} tokens, its context is {}", q, past_of(q), n_ctx_);
        if (tokens[size_t(i)] < 0 || tokens[size_t(i)] >= spec_.vocab_size)
            fail("token id {} is outside the vocabulary of {}", tokens[size_t(i)], spec_.vocab_size);
    }
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the pinned rows are free to rewrite (or to free)
    if (B > batch_cap_) {
        if (host_batch_) TT_CUDA_CHECK(cudaFreeHost(host_batch_));
        if (host_batch_logits_) TT_CUDA_CHECK(cudaFreeHost(host_batch_logits_));
        host_batch_ = nullptr;
        host_batch_logits_ = nullptr;
        TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_batch_), size_t(3 * B) * 4, cudaHostAllocDefault));
        TT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_batch_logits_), size_t(B) * size_t(spec_.vocab_size) * 4,
                                    cudaHostAllocDefault));
        batch_io_ = DeviceBuffer(size_t(3 * B) * 4);
        batch_partial_ = DeviceBuffer(partial_.bytes * size_t(B));
        batch_arrivals_ = DeviceBuffer(arrivals_.bytes * size_t(B));
        TT_CUDA_CHECK(cudaMemset(batch_arrivals_.ptr, 0, batch_arrivals_.bytes));  // self-resetting from here on
        batch_cap_ = B;
    }
    for (int i = 0; i < B; ++i) {
        host_batch_[i] = past_of(seqs[size_t(i)]);
        host_batch_[B + i] = seqs[size_t(i)];
    }
    TT_CUDA_CHECK(cudaMemcpyAsync(batch_io_.ptr, host_batch_, size_t(2 * B) * 4, cudaMemcpyHostToDevice, stream_));
    const BatchRows rows{batch_io_.as<int32_t>(), batch_io_.as<int32_t>() + B};
    const auto t0 = std::chrono::steady_clock::now();
    prefill(tokens, true, &rows);
    const int V = spec_.vocab_size;
    if (argmax_only) {
        // Only the ids come down: B x 4 bytes instead of B x vocab x 4 (32 MB at 64 rows of 128K).
        argmax_rows(plogits_.as<float>(), B, V, batch_io_.as<int32_t>() + 2 * B, stream_);
        TT_CUDA_CHECK(cudaMemcpyAsync(host_batch_ + 2 * B, batch_io_.as<int32_t>() + 2 * B, size_t(B) * 4, cudaMemcpyDeviceToHost, stream_));
    } else {
        TT_CUDA_CHECK(cudaMemcpyAsync(host_batch_logits_, plogits_.ptr, size_t(B) * size_t(V) * 4, cudaMemcpyDeviceToHost, stream_));
    }
    const auto t1 = std::chrono::steady_clock::now();
    TT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (batch_timing_) {
        // TT_BATCH_TIMING=1 (a diagnostic for bench/serve_bench.sh): the host's time to issue the
        // step's launches against the step's whole time, every 200 steps.
        const auto t2 = std::chrono::steady_clock::now();
        batch_issue_s_ += std::chrono::duration<double>(t1 - t0).count();
        batch_total_s_ += std::chrono::duration<double>(t2 - t0).count();
        batch_rows_ += B;
        if (++batch_steps_ % 200 == 0) {
            log::info("batched decode: {} steps, mean {:.1f} rows, {:.3f} ms per step of which {:.3f} ms issuing launches",
                      batch_steps_, double(batch_rows_) / batch_steps_, 1e3 * batch_total_s_ / batch_steps_, 1e3 * batch_issue_s_ / batch_steps_);
            batch_steps_ = batch_rows_ = 0;
            batch_issue_s_ = batch_total_s_ = 0;
        }
    }
    ws_->check();
    for (int q : seqs) ++past_of(q);
}

}  // namespace

void register_backend() {
    tt::register_backend(BackendFactory{
        "cuda",
        [](std::string* why) { return !list_devices(why).empty(); },
        [](const Archive& a, const BackendOptions& o) -> std::unique_ptr<Backend> { return std::make_unique<CudaBackend>(a, o); }});
}

}  // namespace tt::cuda
