#include "convert/finite_check.h"

#include "core/error.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace tt {

namespace {

// Elements are tested as the absolute value's f32 bit pattern: u >= 0x7f800000 is NaN or Inf,
// and a smaller threshold also catches finite values the narrowing cast rounds to Inf.
constexpr uint32_t k_f32_inf = 0x7f800000u;
// Round-to-nearest-even overflow points: 65520 (halfway between f16's max 65504 and 65536) and
// bf16's max 0x7f7f plus half an ulp; both halfway points round up to Inf (odd mantissa).
constexpr uint32_t k_f16_overflow = 0x477ff000u;
constexpr uint32_t k_bf16_overflow = 0x7f7f8000u;

uint32_t abs_bits(const uint8_t* p, DType t, uint64_t i) {
    switch (t) {
    case DType::f32: {
        uint32_t u;
        std::memcpy(&u, p + 4 * i, 4);
        return u & 0x7fffffffu;
    }
    case DType::bf16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        return uint32_t(h & 0x7fffu) << 16;
    }
    case DType::f16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        // Every finite f16 widens to a finite f32, and no float dtype narrows it to Inf; only the
        // exponent matters: all ones -> NaN/Inf.
        return (h & 0x7c00u) == 0x7c00u ? k_f32_inf : 0u;
    }
    default: TT_ASSERT(false);
    }
}

float value_f32(const uint8_t* p, DType t, uint64_t i) {
    float f = 0;
    to_f32(p + i * dtype_size(t), t, &f, 1);
    return f;
}

}  // namespace

FiniteReport check_finite(const void* data, DType src, DType dst, uint64_t n, ThreadPool& pool) {
    TT_ASSERT(dtype_is_float(src) && dtype_is_float(dst));
    const auto* p = static_cast<const uint8_t*>(data);
    const uint32_t threshold = src == DType::f16 || dst == DType::f32 || dst == src ? k_f32_inf
                               : dst == DType::f16                                  ? k_f16_overflow
                                                                                    : k_bf16_overflow;
    // note: blocks of 4096 elements: the counting loop has no branch (vectorizes); a block with a
    // hit is rescanned element by element, which only happens on bad input.
    constexpr uint64_t k_block = 4096;
    const uint64_t n_blocks = (n + k_block - 1) / k_block;
    FiniteReport total;
    std::mutex mu;
    auto scan = [&](size_t b0, size_t b1) {
        FiniteReport part;
        for (uint64_t b = b0; b < b1; ++b) {
            const uint64_t i0 = b * k_block, i1 = std::min(n, i0 + k_block);
            uint64_t hits = 0;
            switch (src) {
            case DType::f32:
                for (uint64_t i = i0; i < i1; ++i) hits += abs_bits(p, DType::f32, i) >= threshold;
                break;
            case DType::bf16:
                for (uint64_t i = i0; i < i1; ++i) hits += abs_bits(p, DType::bf16, i) >= threshold;
                break;
            default:
                for (uint64_t i = i0; i < i1; ++i) hits += abs_bits(p, DType::f16, i) >= threshold;
                break;
            }
            if (hits == 0) continue;
            for (uint64_t i = i0; i < i1; ++i) {
                const uint32_t u = abs_bits(p, src, i);
                if (u < threshold) continue;
                if (u >= k_f32_inf) ++part.n_nonfinite;
                else ++part.n_overflow;
                if (part.first == UINT64_MAX) {
                    part.first = i;
                    part.first_value = value_f32(p, src, i);
                }
            }
        }
        if (part.ok()) return;
        std::lock_guard lock(mu);
        total.n_nonfinite += part.n_nonfinite;
        total.n_overflow += part.n_overflow;
        if (part.first < total.first) {
            total.first = part.first;
            total.first_value = part.first_value;
        }
    };
    // Small tensors (norms, biases) are not worth waking the pool for.
    if (n_blocks < 16) scan(0, n_blocks);
    else pool.parallel_for(n_blocks, scan);
    return total;
}

}  // namespace tt
