#include "core/dtype.h"

#include "core/error.h"

namespace tt {

namespace {
struct DTypeInfo {
    DType type;
    size_t size;
    std::string_view name;
    std::string_view st_name;
};
constexpr DTypeInfo k_dtypes[] = {
    {DType::f32, 4, "f32", "F32"},  {DType::f16, 2, "f16", "F16"}, {DType::bf16, 2, "bf16", "BF16"},
    {DType::f64, 8, "f64", "F64"},  {DType::i64, 8, "i64", "I64"}, {DType::i32, 4, "i32", "I32"},
    {DType::i16, 2, "i16", "I16"},  {DType::i8, 1, "i8", "I8"},    {DType::u8, 1, "u8", "U8"},
    {DType::boolean, 1, "bool", "BOOL"},
};
const DTypeInfo& info(DType t) {
    for (const auto& d : k_dtypes)
        if (d.type == t) return d;
    TT_ASSERT(false, "unknown dtype {}", int(t));
}
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view dtype_safetensors_name(DType t) { return info(t).st_name; }

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const auto& d : k_dtypes)
        if (d.name == name) return d.type;
    return std::nullopt;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
    for (const auto& d : k_dtypes)
        if (d.st_name == name) return d.type;
    return std::nullopt;
}

float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (mant << 13);  // inf / NaN
    } else if (exp == 0) {
        if (mant == 0) {
            u = sign;  // signed zero
        } else {  // subnormal: normalize
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while ((mant & 0x400u) == 0);
            u = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {
        // Result is subnormal (or zero) in f16: value / 2^-24, rounded to nearest even.
        if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to zero
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;  // bits to drop so that the unit is 2^-24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);  // round to nearest even on the 13 dropped bits
    return uint16_t(sign | (r >> 13));
}

void to_f32(const void* src, DType src_type, float* dst, size_t n) {
    switch (src_type) {
    case DType::f32: std::memcpy(dst, src, n * 4); return;
    case DType::bf16: {
        const auto* s = static_cast<const uint16_t*>(src);
        for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
        return;
    }
    case DType::f16: {
        const auto* s = static_cast<const uint16_t*>(src);
        for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
        return;
    }
    default: TT_ASSERT(false, "to_f32 from non-float dtype {}", dtype_name(src_type));
    }
}

void convert_floats(const void* src, DType src_type, void* dst, DType dst_type, size_t n) {
    TT_ASSERT(dtype_is_float(src_type) && dtype_is_float(dst_type));
    if (src_type == dst_type) {
        std::memcpy(dst, src, n * dtype_size(src_type));
        return;
    }
    // Widen through f32 in chunks that stay in L1, then narrow: one path for all six pairs.
    constexpr size_t k_chunk = 2048;
    float tmp[k_chunk];
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
    const size_t ss = dtype_size(src_type), ds = dtype_size(dst_type);
    for (size_t i = 0; i < n; i += k_chunk) {
        const size_t m = std::min(k_chunk, n - i);
        to_f32(s + i * ss, src_type, tmp, m);
        switch (dst_type) {
        case DType::f32: std::memcpy(d + i * ds, tmp, m * 4); break;
        case DType::bf16: {
            auto* o = reinterpret_cast<uint16_t*>(d + i * ds);
            for (size_t j = 0; j < m; ++j) o[j] = f32_to_bf16(tmp[j]);
            break;
        }
        case DType::f16: {
            auto* o = reinterpret_cast<uint16_t*>(d + i * ds);
            for (size_t j = 0; j < m; ++j) o[j] = f32_to_f16(tmp[j]);
            break;
        }
        default: TT_ASSERT(false);
        }
    }
}

}  // namespace tt
