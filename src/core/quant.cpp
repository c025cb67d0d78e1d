#include "core/quant.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tt {

std::string_view quant_scheme_name(QuantScheme s) {
    switch (s) {
    case QuantScheme::none: return "none";
    case QuantScheme::int8: return "int8";
    case QuantScheme::int4: return "int4";
    }
    TT_ASSERT(false);
}

std::string_view quant_scheme_label(QuantScheme s) {
    switch (s) {
    case QuantScheme::none: return "floating-point";
    case QuantScheme::int8: return "INT8";
    case QuantScheme::int4: return "INT4";
    }
    TT_ASSERT(false);
}

std::optional<QuantScheme> quant_scheme_from_name(std::string_view name) {
    if (name == "none") return QuantScheme::none;
    if (name == "int8") return QuantScheme::int8;
    if (name == "int4") return QuantScheme::int4;
    return std::nullopt;
}

bool int4_group_size_allowed(int64_t g) { return g == 32 || g == 64 || g == 128; }

std::string quant_layout_error(QuantScheme scheme, int64_t cols, int64_t group_size) {
    if (cols <= 0) return fmt::format("the row length {} is not positive", cols);
    if (scheme != QuantScheme::int4) return {};
    if (!int4_group_size_allowed(group_size)) return fmt::format("INT4 group size {} is not 32, 64 or 128", group_size);
    if (cols % group_size != 0) return fmt::format("INT4 group size {} does not divide the row length {}", group_size, cols);
    return {};
}

uint64_t quant_row_bytes(QuantScheme scheme, int64_t cols) {
    TT_ASSERT(scheme != QuantScheme::none);
    return scheme == QuantScheme::int8 ? uint64_t(cols) : uint64_t(cols) / 2;
}

int64_t quant_row_scales(QuantScheme scheme, int64_t cols, int64_t group_size) {
    TT_ASSERT(scheme != QuantScheme::none);
    return scheme == QuantScheme::int8 ? 1 : cols / group_size;
}

namespace {

// INT8's scale: max|w| / 127 over the row.
float int8_row_scale(const float* w, int64_t n) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(w[i]));
    return amax / 127.0f;
}

// q = round_half_even(w / scale) clamped to [lo, hi] (0 where scale is 0): INT8 [-127, 127], INT4 [-8, 7].
int quantize_value(float w, float scale, float lo, float hi) {
    if (scale == 0.0f) return 0;
    const float r = std::nearbyint(w / scale);  // note: the division, not w * (1 / scale): see quant.h
    return int(std::clamp(r, lo, hi));
}

// INT4 uses all 16 codes: scale = m / -8, m the group's weight of largest magnitude (the first in
// column order on a tie), so m is q = -8 exactly and the step is max|w| / 8; the other side reaches
// 7 steps, and a weight beyond them (at most max|w|) is clamped to q = 7. Symmetric [-7, 7] steps
// of max|w| / 7 cost a quarter more KL on TinyStories-656K (docs/QUANTIZATION.md); llama.cpp's
// Q4_0 rounds this way too.
float int4_group_scale(const float* w, int64_t n) {
    // Two reductions the compiler vectorizes (a scan for the largest |w| with its sign did not:
    // quantization ran at 0.6x); column order matters only when max == -min.
    float hi = 0.0f, lo = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        hi = std::max(hi, w[i]);
        lo = std::min(lo, w[i]);
    }
    float m = hi > -lo ? hi : lo;
    if (hi == -lo)
        for (int64_t i = 0; i < n; ++i)
            if (std::fabs(w[i]) == hi) {
                m = w[i];
                break;
            }
    return m == 0.0f ? 0.0f : m / -8.0f;  // (an all-zero group: +0, not -0)
}

}  // namespace

void quantize_row(QuantScheme scheme, int64_t group_size, const float* w, int64_t cols, uint8_t* q, float* scales) {
    TT_ASSERT(quant_layout_error(scheme, cols, group_size).empty());
    if (scheme == QuantScheme::int8) {
        const float s = int8_row_scale(w, cols);
        scales[0] = s;
        for (int64_t c = 0; c < cols; ++c) q[c] = uint8_t(int8_t(quantize_value(w[c], s, -127.0f, 127.0f)));
        return;
    }
    TT_ASSERT(scheme == QuantScheme::int4);
    for (int64_t g = 0; g < cols / group_size; ++g) {
        const float* wg = w + g * group_size;
        const float s = int4_group_scale(wg, group_size);
        scales[g] = s;
        uint8_t* qg = q + g * group_size / 2;
        for (int64_t j = 0; j < group_size / 2; ++j) {
            const int lo = quantize_value(wg[2 * j], s, -8.0f, 7.0f) + 8, hi = quantize_value(wg[2 * j + 1], s, -8.0f, 7.0f) + 8;
            qg[j] = uint8_t(lo | hi << 4);
        }
    }
}

void dequantize_row(QuantScheme scheme, int64_t group_size, const uint8_t* q, const float* scales, int64_t cols, float* out) {
    if (scheme == QuantScheme::int8) {
        const float s = scales[0];
        for (int64_t c = 0; c < cols; ++c) out[c] = float(int8_t(q[c])) * s;
        return;
    }
    TT_ASSERT(scheme == QuantScheme::int4);
    for (int64_t g = 0; g < cols / group_size; ++g) {
        const float s = scales[g];
        const uint8_t* qg = q + g * group_size / 2;
        float* og = out + g * group_size;
        for (int64_t j = 0; j < group_size / 2; ++j) {
            og[2 * j] = float(int(qg[j] & 15) - 8) * s;
            og[2 * j + 1] = float(int(qg[j] >> 4) - 8) * s;
        }
    }
}

}  // namespace tt

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace tt {

QuantizedMatrix quantize_matrix(ThreadPool& pool, const void* src, DType src_dtype, int64_t rows, int64_t cols,
                                QuantScheme scheme, int64_t group_size, const std::string& what) {
    if (const std::string e = quant_layout_error(scheme, cols, group_size); !e.empty())
        fail("{}: cannot be stored as {}: {}", what, quant_scheme_label(scheme), e);
    const uint64_t row_bytes = quant_row_bytes(scheme, cols);
    const int64_t row_scales = quant_row_scales(scheme, cols, group_size);
    QuantizedMatrix m;
    m.q.resize(size_t(rows) * row_bytes);
    m.scales.resize(size_t(rows * row_scales));
    const auto* s = static_cast<const uint8_t*>(src);
    const size_t elem = dtype_size(src_dtype);
    auto body = [&](size_t r0, size_t r1) {
        std::vector<float> w(static_cast<size_t>(cols));
        for (size_t r = r0; r < r1; ++r) {
            to_f32(s + r * size_t(cols) * elem, src_dtype, w.data(), size_t(cols));
            for (int64_t c = 0; c < cols; ++c)
                if (!std::isfinite(w[size_t(c)]))
                    fail("{}: cannot quantize the non-finite weight {} at row {}, column {}", what, w[size_t(c)], r, c);
            quantize_row(scheme, group_size, w.data(), cols, &m.q[r * row_bytes], &m.scales[r * size_t(row_scales)]);
        }
    };
    // note: as in cpu::linear, small matrices stay on the calling thread (waking the pool costs more).
    if (uint64_t(rows) * uint64_t(cols) < (uint64_t(1) << 16)) body(0, size_t(rows));
    else pool.parallel_for(size_t(rows), body);
    return m;
}

}  // namespace tt
