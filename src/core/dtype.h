// Element types of tensors in safetensors files and .thin archives, and the conversions between
// the float types. All casts to narrower floats round to nearest, ties to even, as PyTorch does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace tt {

enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// Names as in docs/FORMAT.md ("f32", "bf16", ...).
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Names as safetensors writes them ("F32", "BF16", ...).
std::string_view dtype_safetensors_name(DType t);
std::optional<DType> dtype_from_safetensors(std::string_view name);

inline float bf16_to_f32(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                         // round to nearest even
    return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Converts n elements between float dtypes (f32, f16, bf16). src and dst must not overlap.
void convert_floats(const void* src, DType src_type, void* dst, DType dst_type, size_t n);

// Widens n elements of a float dtype to f32 (the CPU backend's way to read weights).
void to_f32(const void* src, DType src_type, float* dst, size_t n);

}  // namespace tt
