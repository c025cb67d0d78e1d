// The .thin reader's validation: opening an archive checks the header, the metadata checksum and
// every offset/size against the file before anything is used; verify() finds flipped data bytes.
// Each test damages a freshly converted archive in one way and expects a tt::Error naming the file
// and the cause. Metadata edits re-seal the checksum so the table checks themselves are reached.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "core/hash.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/model_spec.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tt;
using namespace tt::test;

namespace {

class ArchiveDamage : public ::testing::Test {
protected:
    void SetUp() override {
        convert_hf((shared_dir() / "fixtures/hf-tiny/qwen2").string(), good_.string(), {});
        bytes_ = read_file(good_.string());
    }
    ThinHeader header() const {
        ThinHeader h;
        std::memcpy(&h, bytes_.data(), sizeof h);
        return h;
    }
    // Writes `bytes` as bad.thin and expects Archive::open to fail mentioning every needle.
    void expect_open_error(const std::string& bytes, std::initializer_list<std::string> needles) {
        std::ofstream(bad_, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
        try {
            Archive::open(bad_.string());
            ADD_FAILURE() << "opened a damaged archive";
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(bad_.string()), std::string::npos) << msg;
            for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
        }
        // The in-memory validator (the fuzz target's entry point) agrees.
        EXPECT_THROW(Archive::validate_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "img"), Error);
    }
    // The archive with its metadata JSON edited, the header's size/checksum/file size updated.
    std::string with_meta(const std::function<void(nlohmann::json&)>& edit) const {
        const ThinHeader h = header();
        nlohmann::json meta = nlohmann::json::parse(bytes_.substr(h.meta_offset, h.meta_size));
        edit(meta);
        return with_meta_text(meta.dump());
    }
    // The archive with `text` as its metadata (any bytes), the header resealed likewise.
    std::string with_meta_text(const std::string& text) const {
        const ThinHeader h = header();
        std::string out = bytes_.substr(0, h.meta_offset) + text;
        ThinHeader nh = h;
        nh.meta_size = text.size();
        nh.meta_xxh3 = xxh3_64(text.data(), text.size());
        nh.file_size = out.size();
        std::memcpy(out.data(), &nh, sizeof nh);
        return out;
    }
    TempDir tmp_;
    fs::path good_ = tmp_ / "good.thin";
    fs::path bad_ = tmp_ / "bad.thin";
    std::string bytes_;
};

TEST_F(ArchiveDamage, IntactArchiveOpensAndVerifies) {
    const Archive a = Archive::open(good_.string());
    EXPECT_NO_THROW(a.verify());
    // A float archive is written as version 1, which builds before quantization read too.
    EXPECT_EQ(a.header().version, k_thin_min_version);
    EXPECT_EQ(std::memcmp(a.header().magic, "THINTNSR", 8), 0);
    // Zero-copy: tensor views point into the mapping.
    for (const auto& t : a.tensors()) {
        EXPECT_EQ(t.view.data, a.base() + t.offset);
        EXPECT_EQ(t.offset % k_thin_align, 0u);
    }
    // The same bytes re-sealed through the test's metadata writer still open: the helper is sound.
    const std::string same = with_meta([](nlohmann::json&) {});
    EXPECT_NO_THROW(Archive::validate_image(reinterpret_cast<const uint8_t*>(same.data()), same.size(), "img"));
}

TEST_F(ArchiveDamage, TruncatedArchive) {
    expect_open_error(bytes_.substr(0, bytes_.size() - 1), {"truncated"});
    expect_open_error(bytes_.substr(0, bytes_.size() / 2), {"truncated"});
    expect_open_error(bytes_.substr(0, 100), {"truncated", "header"});
    expect_open_error("", {"truncated"});
}

TEST_F(ArchiveDamage, ExtendedArchive) { expect_open_error(bytes_ + "x", {"header records"}); }

TEST_F(ArchiveDamage, BadMagic) {
    std::string b = bytes_;
    b[0] = 'X';
    expect_open_error(b, {"not a .thin archive", "bad magic"});
    expect_open_error(read_file((shared_dir() / "fixtures/hf-tiny/llama/model.safetensors").string()), {"bad magic"});
}

TEST_F(ArchiveDamage, NewerFormatVersion) {
    std::string b = bytes_;
    ThinHeader h = header();
    h.version = k_thin_version + 1;
    std::memcpy(b.data(), &h, sizeof h);
    expect_open_error(b, {"version 3 is not supported", "re-convert"});
}

TEST_F(ArchiveDamage, HeaderSectionsOverrunFile) {
    ThinHeader h = header();
    std::string b = bytes_;
    h.meta_offset = bytes_.size() - 10;
    std::memcpy(b.data(), &h, sizeof h);
    expect_open_error(b, {"sections overrun the file"});
    h = header();
    h.data_size = ~uint64_t(0) - 100;  // offset + size would wrap around
    std::memcpy(b.data(), &h, sizeof h);
    expect_open_error(b, {"sections overrun the file"});
}

TEST_F(ArchiveDamage, FlippedMetadataByte) {
    std::string b = bytes_;
    b[header().meta_offset + 10] ^= 0x01;
    expect_open_error(b, {"metadata checksum mismatch"});
}

TEST_F(ArchiveDamage, FlippedTensorByteIsCaughtByVerify) {
    const Archive good = Archive::open(good_.string());
    const ArchiveTensor& victim = good.tensor("blk.1.ffn_up.weight");
    std::string b = bytes_;
    b[victim.offset + victim.view.nbytes / 2] ^= 0x10;
    std::ofstream(bad_, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
    const Archive a = Archive::open(bad_.string());  // data is not read on open
    try {
        a.verify();
        ADD_FAILURE() << "verify passed a flipped byte";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(bad_.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find("tensor 'blk.1.ffn_up.weight' is corrupt"), std::string::npos) << msg;
    }
}

TEST_F(ArchiveDamage, FlippedEmbeddedFileByteIsCaughtByVerify) {
    TempDir tmp;
    const fs::path path = tmp / "t.thin";
    convert_hf((shared_dir() / "models/tinystories-656k").string(), path.string(), {});
    std::string b = read_file(path.string());
    const Archive good = Archive::open(path.string());
    const ArchiveFile* f = nullptr;
    for (const auto& x : good.files())
        if (x.name == "tokenizer.json") f = &x;
    ASSERT_NE(f, nullptr);
    b[f->offset + 100] ^= 0x01;
    std::ofstream(bad_, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
    const Archive a = Archive::open(bad_.string());
    try {
        a.verify();
        ADD_FAILURE() << "verify passed a flipped byte";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'tokenizer.json' is corrupt"), std::string::npos) << e.what();
    }
}

// Metadata tables whose entries point outside the data section, or disagree with themselves.
TEST_F(ArchiveDamage, TensorOutsideDataSection) {
    expect_open_error(with_meta([&](nlohmann::json& m) { m["tensors"][3]["offset"] = header().meta_offset; }),
                      {"outside the data section"});
    expect_open_error(with_meta([&](nlohmann::json& m) { m["tensors"][3]["offset"] = ~uint64_t(0) - 4095; }),
                      {"outside the data section"});
}

TEST_F(ArchiveDamage, TensorMisaligned) {
    expect_open_error(with_meta([](nlohmann::json& m) {
                          m["tensors"][0]["offset"] = m["tensors"][0]["offset"].get<uint64_t>() + 4;
                      }),
                      {"tensor 'token_embd.weight'"});
}

TEST_F(ArchiveDamage, TensorSizeDisagreesWithShape) {
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][1]["shape"] = {63}; }),
                      {"do not match dtype", "[63]"});
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][1]["shape"] = {-1}; }), {"bad shape"});
    expect_open_error(with_meta([](nlohmann::json& m) {
                          m["tensors"][1]["shape"] = {uint64_t(1) << 40, uint64_t(1) << 40};
                      }),
                      {"do not match"});
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][1]["dtype"] = "q4"; }), {"unknown dtype"});
}

TEST_F(ArchiveDamage, MalformedTableEntries) {
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][2].erase("offset"); }), {"'offset'"});
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][2]["xxh3"] = "xyz"; }), {"checksum"});
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][2]["block"] = 7; }), {"bad block"});
    expect_open_error(with_meta([](nlohmann::json& m) { m["tensors"][2] = "x"; }), {"corrupt metadata"});
    expect_open_error(with_meta([](nlohmann::json& m) { m.erase("blocks"); }), {"'blocks'"});
    expect_open_error(with_meta([](nlohmann::json& m) { m.erase("spec"); }), {"no model spec"});
    expect_open_error(with_meta([](nlohmann::json& m) { m = nlohmann::json::array(); }), {"not an object"});
}

TEST_F(ArchiveDamage, DuplicateTensorName) {
    const std::string b = with_meta([](nlohmann::json& m) { m["tensors"][2]["name"] = m["tensors"][1]["name"]; });
    std::ofstream(bad_, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
    try {
        Archive::open(bad_.string());
        ADD_FAILURE() << "opened an archive listing a tensor twice";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("listed twice"), std::string::npos) << e.what();
    }
}

TEST_F(ArchiveDamage, BlockOrFileOutsideDataSection) {
    expect_open_error(with_meta([](nlohmann::json& m) { m["blocks"][1]["nbytes"] = uint64_t(1) << 40; }),
                      {"block 'layer.0' lies outside"});
    expect_open_error(with_meta([&](nlohmann::json& m) {
                          m["files"] = {{{"name", "tokenizer.json"}, {"offset", header().meta_offset}, {"nbytes", 10},
                                         {"xxh3", "0000000000000000"}}};
                      }),
                      {"embedded file 'tokenizer.json' lies outside"});
}

// The stored spec is validated when it is read (inspect, the runtime): unknown names and
// inconsistent dimensions are errors, not crashes.
TEST_F(ArchiveDamage, BadSpecIsRejectedOnRead) {
    const Archive a = Archive::open(good_.string());
    nlohmann::json spec = a.metadata()["spec"];
    EXPECT_NO_THROW(spec_from_json(spec));
    auto expect_spec_error = [](nlohmann::json j, const std::string& needle) {
        try {
            spec_from_json(j);
            ADD_FAILURE() << "accepted " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    nlohmann::json j = spec;
    j["arch"] = "mamba";
    expect_spec_error(j, "unknown architecture 'mamba'");
    j = spec;
    j["n_kv_heads"] = 3;
    expect_spec_error(j, "not a multiple");
    j = spec;
    j["layers"] = {{{"mixer", "attention"}, {"attn", "full"}, {"ffn", "dense"}}};
    expect_spec_error(j, "layer types");
    j = spec;
    j.erase("rope");
    expect_spec_error(j, "archive spec");
    j = spec;
    j["hidden_dim"] = "64";
    expect_spec_error(j, "archive spec");
    j = spec;
    j["rope"]["rotary_dim"] = 1000;
    expect_spec_error(j, "rotary dimension");
}


// Errors in the stored spec name the archive (they said "archive spec: ..." without a path), and
// the tokenizer kind is checked against FORMAT.md's three names and the embedded files.
TEST_F(ArchiveDamage, SpecAndTokenizerKindErrorsNameTheArchive) {
    auto open_error = [&](const std::function<void(nlohmann::json&)>& edit,
                          const std::function<void(const Archive&)>& read) -> std::string {
        const std::string bytes = with_meta(edit);
        std::ofstream(bad_, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
        const Archive a = Archive::open(bad_.string());
        try {
            read(a);
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    auto spec = [](const Archive& a) { (void)spec_from_archive(a); };
    auto kind = [](const Archive& a) { (void)tokenizer_kind_of(a); };
    std::string e = open_error([](nlohmann::json& m) { m["spec"]["arch"] = "mamba"; }, spec);
    EXPECT_EQ(e.rfind(bad_.string() + ": spec: unknown architecture 'mamba'", 0), 0u) << e;
    e = open_error([](nlohmann::json& m) { m["spec"]["n_heads"] = "4"; }, spec);
    EXPECT_EQ(e.rfind(bad_.string() + ": spec: 'n_heads' must be an integer", 0), 0u) << e;
    e = open_error([](nlohmann::json& m) { m["spec"].erase("rope"); }, spec);
    EXPECT_EQ(e.rfind(bad_.string() + ": spec: missing 'rope'", 0), 0u) << e;

    e = open_error([](nlohmann::json&) {}, kind);
    EXPECT_EQ(e, "(no error)");  // the qwen2 fixture has no tokenizer: kind "none"
    e = open_error([](nlohmann::json& m) { m["tokenizer"]["kind"] = "sentencepiece"; }, kind);
    EXPECT_NE(e.find(bad_.string() + ": unknown tokenizer kind 'sentencepiece'"), std::string::npos) << e;
    e = open_error([](nlohmann::json& m) { m["tokenizer"]["kind"] = "hf"; }, kind);
    EXPECT_NE(e.find("tokenizer kind 'hf' but no embedded tokenizer.json"), std::string::npos) << e;
    e = open_error([](nlohmann::json& m) { m.erase("tokenizer"); }, kind);
    EXPECT_NE(e.find("no tokenizer kind"), std::string::npos) << e;
    e = open_error([](nlohmann::json& m) { m["tokenizer"]["kind"] = 1; }, kind);
    EXPECT_NE(e.find("no tokenizer kind"), std::string::npos) << e;
}


// The metadata is parsed with the depth-bounded parser: 100,000 nested arrays (which a recursive
// walk of the tree would overflow the stack on) are refused naming the archive.
TEST_F(ArchiveDamage, DeeplyNestedMetadataIsRefused) {
    const std::string text = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
    expect_open_error(with_meta_text(text), {"corrupt metadata: JSON nested deeper than"});
}

}  // namespace
