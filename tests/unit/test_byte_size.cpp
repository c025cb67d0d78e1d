#include "core/byte_size.h"
#include "core/error.h"
#include "runtime/profile.h"

#include <gtest/gtest.h>

namespace tt {

TEST(ByteSize, UnitsAndErrors) {
    EXPECT_EQ(parse_byte_size("4096", "--x"), 4096u);
    EXPECT_EQ(parse_byte_size("8GiB", "--x"), 8ull << 30);
    EXPECT_EQ(parse_byte_size("8g", "--x"), 8ull << 30);
    EXPECT_EQ(parse_byte_size("512MiB", "--x"), 512ull << 20);
    EXPECT_EQ(parse_byte_size("1.5GB", "--x"), 1500000000ull);
    EXPECT_EQ(parse_byte_size("2 TB", "--x"), 2000000000000ull);
    EXPECT_EQ(parse_byte_size("0", "--x"), 0u);
    EXPECT_THROW(parse_byte_size("", "--x"), Error);
    EXPECT_THROW(parse_byte_size("GiB", "--x"), Error);
    EXPECT_THROW(parse_byte_size("-1GiB", "--x"), Error);
    EXPECT_THROW(parse_byte_size("8 parsecs", "--x"), Error);
    try {
        parse_byte_size("8XB", "--vram-budget");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--vram-budget"), std::string::npos);
    }
}

TEST(Profile, Names) {
    EXPECT_EQ(parse_profile("safe"), Profile::safe);
    EXPECT_EQ(parse_profile("balanced"), Profile::balanced);
    EXPECT_STREQ(profile_name(Profile::safe), "safe");
    EXPECT_THROW(parse_profile("fast"), Error);
}

}  // namespace tt
