// dtype conversions: round-to-nearest-even casts must agree with PyTorch's on edge cases.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tt;

TEST(DType, Bf16RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even one (1.0).
    EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    // 1 + 3*2^-8 is halfway between 1+2^-7 (odd mantissa) and 1+2^-6: rounds up to even.
    EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST(DType, F16RoundTripsAndRounds) {
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                 // overflows to inf
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);    // smallest subnormal
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);    // halfway to zero: ties to even (0)
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);    // 1.5 ulp: rounds to even 2
    EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);       // tie at 1 + 2^-11 goes to even
    for (uint32_t h = 0; h < 0x7c00; ++h) {                  // every finite positive f16 round-trips
        EXPECT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << h;
    }
    EXPECT_EQ(f16_to_f32(0x8000), -0.0f);
}

TEST(DType, ConvertFloatsAllPairs) {
    const float src[5] = {0.0f, 1.5f, -3.25f, 1e-3f, 1000.0f};
    for (DType a : {DType::f32, DType::f16, DType::bf16}) {
        for (DType b : {DType::f32, DType::f16, DType::bf16}) {
            uint8_t mid[20], out[20];
            float back[5];
            convert_floats(src, DType::f32, mid, a, 5);
            convert_floats(mid, a, out, b, 5);
            to_f32(out, b, back, 5);
            for (int i = 0; i < 5; ++i) EXPECT_NEAR(back[i], src[i], std::abs(src[i]) * 1e-2 + 1e-6);
        }
    }
}
