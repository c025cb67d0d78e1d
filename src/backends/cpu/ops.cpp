#include "backends/cpu/ops.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tt::cpu {

void read_row(const TensorView& t, int64_t row, float* out) {
    const int64_t cols = t.shape.size() > 1 ? t.shape[1] : t.shape[0];
    // A quantized matrix dequantizes exactly as core/quant.h defines it (q * scale in f32), so
    // linear() on it is the float product with the dequantized weights.
    if (t.quant != QuantScheme::none) {
        dequantize_row(t.quant, t.group_size, t.data + uint64_t(row) * quant_row_bytes(t.quant, cols),
                       t.scales + row * quant_row_scales(t.quant, cols, t.group_size), cols, out);
        return;
    }
    to_f32(t.data + uint64_t(row * cols) * dtype_size(t.dtype), t.dtype, out, size_t(cols));
}

void linear(ThreadPool& pool, const float* x, int n_tokens, const TensorView& w, const TensorView* b, float* y) {
    TT_ASSERT(w.shape.size() == 2);
    const int64_t rows = w.shape[0], cols = w.shape[1];
    std::vector<float> bias;
    if (b) {
        bias.resize(size_t(rows));
        to_f32(b->data, b->dtype, bias.data(), size_t(rows));
    }
    auto body = [&](size_t r0, size_t r1) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (size_t r = r0; r < r1; ++r) {
            // Widen the weight row once, then reuse it for every token (prefill amortizes it).
            const float* wr = row.data();
            if (w.dtype == DType::f32) wr = reinterpret_cast<const float*>(w.data) + r * size_t(cols);
            else read_row(w, int64_t(r), row.data());
            for (int t = 0; t < n_tokens; ++t) {
                const float* xt = x + size_t(t) * size_t(cols);
                float acc = 0.0f;
                for (int64_t c = 0; c < cols; ++c) acc += xt[c] * wr[c];
                y[size_t(t) * size_t(rows) + r] = acc + (b ? bias[r] : 0.0f);
            }
        }
    };
    // note: waking the pool costs tens of microseconds; products smaller than ~256k multiply-adds
    // (tiny models) finish sooner on the calling thread alone.
    if (uint64_t(rows) * uint64_t(cols) * uint64_t(n_tokens) < (uint64_t(1) << 18)) body(0, size_t(rows));
    else pool.parallel_for(size_t(rows), body);
}

void rmsnorm_f32(const float* x, const float* w, float weight_offset, float eps, float* y, int n) {
    float ss = 0.0f;
    for (int i = 0; i < n; ++i) ss += x[i] * x[i];
    // transformers: hidden * torch.rsqrt(variance + eps), then weight * hidden.
    const float inv = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int i = 0; i < n; ++i) y[i] = x[i] * inv * (w[i] + weight_offset);
}

void rmsnorm_unweighted(const float* x, float eps, float* y, int n) {
    float ss = 0.0f;
    for (int i = 0; i < n; ++i) ss += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int i = 0; i < n; ++i) y[i] = x[i] * inv;
}

void rmsnorm(const float* x, const TensorView& w, float weight_offset, float eps, float* y, int n) {
    TT_ASSERT(w.numel() == n, "norm weight {} has {} elements, expected {}", w.name, w.numel(), n);
    std::vector<float> wf(static_cast<size_t>(n));
    to_f32(w.data, w.dtype, wf.data(), size_t(n));
    rmsnorm_f32(x, wf.data(), weight_offset, eps, y, n);
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

float gelu_tanh(float x) {
    // gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    constexpr float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

void attend_head(const float* q, const float* k, const float* v, int kv_stride, int kv_offset, int head_dim,
                 int first, int q_pos, float scale, float softcap, float* scores, float* out) {
    float max_s = -INFINITY;
    for (int j = first; j <= q_pos; ++j) {
        const float* kj = k + size_t(j) * size_t(kv_stride) + size_t(kv_offset);
        float s = 0.0f;
        for (int d = 0; d < head_dim; ++d) s += q[d] * kj[d];
        s *= scale;
        if (softcap > 0) s = softcap * std::tanh(s / softcap);
        scores[j] = s;
        max_s = std::max(max_s, s);
    }
    float sum = 0.0f;
    for (int j = first; j <= q_pos; ++j) {
        scores[j] = std::exp(scores[j] - max_s);
        sum += scores[j];
    }
    std::fill(out, out + head_dim, 0.0f);
    for (int j = first; j <= q_pos; ++j) {
        const float p = scores[j] / sum;
        const float* vj = v + size_t(j) * size_t(kv_stride) + size_t(kv_offset);
        for (int d = 0; d < head_dim; ++d) out[d] += p * vj[d];
    }
}

}  // namespace tt::cpu
