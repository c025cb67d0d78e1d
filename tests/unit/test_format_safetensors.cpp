// The safetensors reader against the real fixtures and against hand-made malformed headers: every
// way a header can lie about the data must be an error naming the file, never an out-of-range view.
#include "test_convert_util.h"

#include "format/safetensors.h"

#include <gtest/gtest.h>

using namespace tt;
using namespace tt::test;

namespace {

// A safetensors image: u64 length + header text + data.
std::string image(const std::string& header, const std::string& data = std::string(64, '\0')) {
    const uint64_t n = header.size();
    return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

std::string parse_error(const std::string& img) {
    try {
        SafetensorsFile::parse(reinterpret_cast<const uint8_t*>(img.data()), img.size(), "x.safetensors");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Safetensors, ReadsFixtureTensors) {
    SafetensorsFile st((shared_dir() / "fixtures/hf-tiny/llama/model.safetensors").string());
    EXPECT_EQ(st.tensors().size(), 21u);
    const TensorView& e = st.get("model.embed_tokens.weight");
    EXPECT_EQ(e.dtype, DType::f32);
    EXPECT_EQ(e.shape, (Shape{256, 64}));
    EXPECT_EQ(e.nbytes, 256u * 64 * 4);
    EXPECT_EQ(st.find("nope"), nullptr);
    try {
        st.get("nope");
        ADD_FAILURE();
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("model.safetensors: no tensor 'nope'"), std::string::npos) << err.what();
    }
    // Views lie inside the file, and the writer in test_convert_util.h round-trips the file exactly.
    TempDir tmp;
    const auto ts = read_safetensors(shared_dir() / "fixtures/hf-tiny/llama/model.safetensors");
    write_safetensors(tmp / "copy.safetensors", ts);
    SafetensorsFile copy((tmp / "copy.safetensors").string());
    ASSERT_EQ(copy.tensors().size(), st.tensors().size());
    for (const auto& [name, v] : st.tensors()) {
        const TensorView& c = copy.get(name);
        EXPECT_EQ(c.shape, v.shape);
        EXPECT_EQ(0, std::memcmp(c.data, v.data, v.nbytes)) << name;
    }
}

TEST(Safetensors, AcceptsEmptyAndScalarTensors) {
    const std::string img = image(
        R"({"__metadata__":{"a":"b"},"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
        R"("z":{"dtype":"BF16","shape":[0,5],"data_offsets":[4,4]}})",
        std::string(4, '\0'));
    const auto m = SafetensorsFile::parse(reinterpret_cast<const uint8_t*>(img.data()), img.size(), "x");
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m.at("s").nbytes, 4u);
    EXPECT_EQ(m.at("z").nbytes, 0u);
}

TEST(Safetensors, RejectsMalformedHeaders) {
    struct Case {
        std::string img, needle;
    };
    const std::string ok_tail = R"(,"data_offsets":[0,64]}})";
    const Case cases[] = {
        {"", "truncated safetensors file"},
        {std::string("\x10\x00\x00", 3), "truncated safetensors file"},
        {image("{}").substr(0, 9), "truncated safetensors file"},
        {std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}", "header claims"},
        {image("{\"a\": "), "safetensors header: invalid JSON"},
        {image("[1, 2]"), "not a JSON object"},
        {image(R"({"a":{"dtype":"F32","shape":[16]}})"), "lacks dtype, shape or data_offsets"},
        {image(R"({"a":5})"), "lacks dtype"},
        {image(R"({"a":{"dtype":"F8_E4M3","shape":[64])" + ok_tail), "unsupported dtype"},
        {image(R"({"a":{"dtype":7,"shape":[16])" + ok_tail), "dtype is not a string"},
        {image(R"({"a":{"dtype":"F32","shape":16)" + ok_tail), "shape is not an array"},
        {image(R"({"a":{"dtype":"F32","shape":[-16])" + ok_tail), "bad shape"},
        {image(R"({"a":{"dtype":"F32","shape":[1.5])" + ok_tail), "bad shape"},
        {image(R"({"a":{"dtype":"F32","shape":[16],"data_offsets":[0]}})"), "two unsigned integers"},
        {image(R"({"a":{"dtype":"F32","shape":[16],"data_offsets":[-4,60]}})"), "two unsigned integers"},
        {image(R"({"a":{"dtype":"F32","shape":[16],"data_offsets":[32,0]}})"), "overrun"},
        {image(R"({"a":{"dtype":"F32","shape":[16],"data_offsets":[0,65]}})"), "overrun"},
        {image(R"({"a":{"dtype":"F32","shape":[16],"data_offsets":[0,18446744073709551615]}})"), "overrun"},
        {image(R"({"a":{"dtype":"F32","shape":[15])" + ok_tail), "need 60"},
        {image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296])" + ok_tail), "overflows"},
        {image(R"({"a":{"dtype":"F64","shape":[2305843009213693952])" + ok_tail), "overflows"},
    };
    for (const auto& c : cases) {
        const std::string msg = parse_error(c.img);
        EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << "no error or no path for: " << c.needle << ": " << msg;
        EXPECT_NE(msg.find(c.needle), std::string::npos) << "expected '" << c.needle << "', got: " << msg;
    }
}

TEST(Safetensors, MissingFileNamesThePath) {
    try {
        SafetensorsFile st("/nonexistent/model.safetensors");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.safetensors"), std::string::npos);
    }
}

}  // namespace
