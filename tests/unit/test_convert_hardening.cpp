// convert against hostile or mistaken input (issue 14): an output path that would replace its own
// source, configs whose sizes would exhaust memory, NaN/Inf weights, and tokenizers that would
// only fail at `run`. Each case copies a fixture into a temp dir and breaks one thing.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "convert/finite_check.h"
#include "format/archive.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sys/stat.h>

using namespace tt;
using namespace tt::test;

namespace {

const char* k_llama = "fixtures/hf-tiny/llama";

std::string convert_error(const fs::path& src, const std::string& out, const ConvertOptions& opt = {}) {
    try {
        convert_hf(src.string(), out, opt);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

bool has(const std::string& msg, const std::string& needle) { return msg.find(needle) != std::string::npos; }

// ---- the output path ---------------------------------------------------------------------------

// `convert DIR -o DIR/model.safetensors` renamed the archive over the checkpoint, read-only or not.
TEST(ConvertOutputPath, RefusesToReplaceTheSourceCheckpoint) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    const std::string weights = read_file((src / "model.safetensors").string());
    fs::permissions(src / "model.safetensors", fs::perms::owner_read | fs::perms::group_read, fs::perm_options::replace);

    const std::vector<fs::path> outs = {
        src / "model.safetensors",                   // the weights, read-only
        src / "config.json",                         // the config
        src / "." / "generation_config.json",        // through "./"
        tmp / "model" / ".." / "model" / "config.json",  // through "../"
    };
    for (const auto& out : outs) {
        const std::string e = convert_error(src, out.string());
        EXPECT_TRUE(has(e, "--out")) << e;
        EXPECT_TRUE(has(e, "source checkpoint") || has(e, "an input of the conversion")) << e;
    }
    // A symlinked folder and a symlink to a source file are the same files.
    fs::create_directory_symlink(src, tmp / "alias");
    EXPECT_TRUE(has(convert_error(src, (tmp / "alias" / "model.safetensors").string()), "--out"));
    fs::create_directories(tmp / "elsewhere");
    fs::create_symlink(src / "model.safetensors", tmp / "elsewhere" / "link.thin");
    EXPECT_TRUE(has(convert_error(src, (tmp / "elsewhere" / "link.thin").string()), "is a file of the source checkpoint"));
    // A hard link to the --tokenizer file.
    fs::create_directories(tmp / "tok");
    copy_checkpoint(shared_dir() / "models/tinystories-656k", tmp / "ts");
    fs::create_hard_link(tmp / "ts" / "tokenizer.json", tmp / "tok" / "out.thin");
    ConvertOptions opt;
    opt.tokenizer_path = (tmp / "ts" / "tokenizer.json").string();
    EXPECT_TRUE(has(convert_error(src, (tmp / "tok" / "out.thin").string(), opt), "an input of the conversion"));

    EXPECT_EQ(read_file((src / "model.safetensors").string()), weights);
    EXPECT_TRUE(fs::exists(src / "config.json"));
    // A new file inside the source folder replaces nothing and is allowed.
    fs::permissions(src / "model.safetensors", fs::perms::owner_write, fs::perm_options::add);
    EXPECT_NO_THROW(convert_hf(src.string(), (src / "model.thin").string(), {}));
    EXPECT_NO_THROW(Archive::open((src / "model.thin").string()).verify());
}

// `-o ""` and `-o .` failed only after the whole conversion; now before any work: the checkpoint
// here has no weights, yet the error is about the flag.
TEST(ConvertOutputPath, EmptyOrDirectoryOutputFailsFirstNamingTheFlag) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    fs::remove(src / "model.safetensors");
    std::string e = convert_error(src, "");
    EXPECT_TRUE(has(e, "--out: the output path is empty")) << e;
    for (const std::string& out : {std::string("."), tmp.path().string(), (tmp / "").string(), (tmp / "x" / "..").string()}) {
        e = convert_error(src, out);
        EXPECT_TRUE(has(e, "--out " + out + ": is a directory")) << e;
    }
    e = convert_error(src, (tmp / "no" / "such" / "m.thin").string());
    EXPECT_TRUE(has(e, "--out") && has(e, "does not exist")) << e;
    EXPECT_EQ(tmp.entries().size(), 1u);
}

// ---- config sizes against the tensors present ---------------------------------------------------

void set_config(const fs::path& dir, const std::string& key, const nlohmann::json& v) {
    nlohmann::json c = read_json(dir / "config.json");
    c[key] = v;
    std::ofstream(dir / "config.json", std::ios::trunc) << c.dump(2);
}

TEST(ConvertConfig, LayerCountIsCheckedAgainstTheCheckpoint) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    set_config(src, "num_hidden_layers", 1000);  // within the bound, far more than the 2 stored
    std::string e = convert_error(src, (tmp / "m.thin").string());
    EXPECT_TRUE(has(e, (src / "config.json").string() + ": num_hidden_layers is 1000 but the checkpoint has tensors for 2 layer(s)")) << e;
    set_config(src, "num_hidden_layers", 1000000000);  // grew memory without bound before
    e = convert_error(src, (tmp / "m.thin").string());
    EXPECT_TRUE(has(e, "'num_hidden_layers' is 1000000000, outside")) << e;
    set_config(src, "num_hidden_layers", 4294967298ll);  // read as 2 before, and converted
    e = convert_error(src, (tmp / "m.thin").string());
    EXPECT_TRUE(has(e, "'num_hidden_layers' is 4294967298")) << e;
    nlohmann::json gen = read_json(src / "generation_config.json");
    set_config(src, "num_hidden_layers", 2);
    gen["eos_token_id"] = "2";
    std::ofstream(src / "generation_config.json", std::ios::trunc) << gen.dump();
    e = convert_error(src, (tmp / "m.thin").string());
    EXPECT_TRUE(has(e, (src / "generation_config.json").string() + ": 'eos_token_id' must be an integer")) << e;
    EXPECT_FALSE(fs::exists(tmp / "m.thin"));
}

// ---- non-finite weights -------------------------------------------------------------------------

// The fixture with element `index` of `tensor` (an f32 tensor) set to `value`.
void poke(const fs::path& dir, const std::string& tensor, size_t index, float value) {
    auto ts = read_safetensors(dir / "model.safetensors");
    bool found = false;
    for (auto& t : ts)
        if (t.name == tensor) {
            ASSERT_EQ(t.dtype, DType::f32);
            std::memcpy(t.bytes.data() + 4 * index, &value, 4);
            found = true;
        }
    ASSERT_TRUE(found) << tensor;
    write_safetensors(dir / "model.safetensors", ts);
}

TEST(ConvertNonFinite, NaNAndInfFailByDefaultNamingTensorAndIndex) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    poke(src, "model.layers.1.mlp.up_proj.weight", 1234, std::numeric_limits<float>::quiet_NaN());
    poke(src, "model.layers.1.mlp.up_proj.weight", 2000, std::numeric_limits<float>::infinity());
    const fs::path out = tmp / "m.thin";
    std::string e = convert_error(src, out.string());
    EXPECT_TRUE(has(e, "tensor 'model.layers.1.mlp.up_proj.weight' has 2 non-finite value(s) (first bad value: NaN at index 1234)")) << e;
    EXPECT_TRUE(has(e, "--allow-nonfinite")) << e;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(tmp.entries(), std::vector<std::string>{"model"});  // no temp file either

    ConvertOptions opt;
    opt.allow_nonfinite = true;
    opt.dtype = DType::bf16;
    const ConvertResult r = convert_hf(src.string(), out.string(), opt);
    EXPECT_EQ(r.nonfinite_tensors, std::vector<std::string>{"model.layers.1.mlp.up_proj.weight"});
    EXPECT_NO_THROW(Archive::open(out.string()).verify());
}

// A finite f32 weight above 65504 becomes Inf when cast to f16: refused for --dtype f16 only.
TEST(ConvertNonFinite, F16OverflowOfTheCastIsRefused) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    poke(src, "model.norm.weight", 3, 1e5f);
    ConvertOptions opt;
    opt.dtype = DType::f16;
    const std::string e = convert_error(src, (tmp / "a.thin").string(), opt);
    EXPECT_TRUE(has(e, "tensor 'model.norm.weight' has 1 value(s) too large for f16")) << e;
    EXPECT_TRUE(has(e, "100000 at index 3")) << e;
    opt.dtype = DType::bf16;
    EXPECT_NO_THROW(convert_hf(src.string(), (tmp / "b.thin").string(), opt));
    EXPECT_NO_THROW(convert_hf(src.string(), (tmp / "c.thin").string(), {}));
}

// The bit tests agree with the cast itself at the rounding edges, for every source/target pair,
// and the pooled scan finds the first bad element of a large tensor.
TEST(ConvertNonFinite, CheckAgreesWithTheCast) {
    ThreadPool pool(4);
    const float probes[] = {0.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 3.3895e38f, 3.3961e38f,
                            std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    for (DType from : {DType::f32, DType::bf16, DType::f16})
        for (DType to : {DType::f32, DType::bf16, DType::f16})
            for (float f : probes) {
                // The probe in the source dtype, then cast as the writer does.
                uint8_t src[4], dst[4];
                convert_floats(&f, DType::f32, src, from, 1);
                if (!std::isfinite(element_f32(src, from, 0))) {
                    EXPECT_EQ(check_finite(src, from, to, 1, pool).n_nonfinite, 1u);
                    continue;
                }
                convert_floats(src, from, dst, to, 1);
                const bool becomes_inf = !std::isfinite(element_f32(dst, to, 0));
                EXPECT_EQ(check_finite(src, from, to, 1, pool).n_overflow, becomes_inf ? 1u : 0u)
                    << dtype_name(from) << "->" << dtype_name(to) << " " << f;
            }
    std::vector<float> big(1 << 20, 1.0f);
    big[700001] = -std::numeric_limits<float>::infinity();
    big[900000] = std::numeric_limits<float>::quiet_NaN();
    const FiniteReport r = check_finite(big.data(), DType::f32, DType::f32, big.size(), pool);
    EXPECT_EQ(r.n_nonfinite, 2u);
    EXPECT_EQ(r.first, 700001u);
    EXPECT_TRUE(std::isinf(r.first_value) && r.first_value < 0);
}

// ---- the tokenizer ------------------------------------------------------------------------------

TEST(ConvertTokenizerCheck, WrongFilesAreRefusedAtConvert) {
    TempDir tmp;
    const fs::path src = tmp / "model";
    copy_checkpoint(shared_dir() / k_llama, src);
    const fs::path out = tmp / "m.thin";
    ConvertOptions opt;
    auto error_with = [&](const fs::path& tok) {
        opt.tokenizer_path = tok.string();
        return convert_error(src, out.string(), opt);
    };
    std::string e = error_with(shared_dir() / k_llama / "config.json");
    EXPECT_TRUE(has(e, "not a tokenizer.json") && has(e, "looks like a model's config.json")) << e;
    e = error_with(shared_dir() / "models/stories260K/stories260K.gguf");
    EXPECT_TRUE(has(e, "--tokenizer") && has(e, "is a GGUF file")) << e;
    std::ofstream(tmp / "wordpiece.json") << R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}})";
    e = error_with(tmp / "wordpiece.json");
    EXPECT_TRUE(has(e, (tmp / "wordpiece.json").string()) && has(e, "WordPiece")) << e;
    // The fixture's vocabulary has 256 rows; these tokenizers have 512 and 2048 ids.
    e = error_with(shared_dir() / "models/stories260K/tok512.bin");
    EXPECT_TRUE(has(e, "the tokenizer's vocabulary has 512 tokens but the model's has 256 rows")) << e;
    e = error_with(shared_dir() / "models/tinystories-656k/tokenizer.json");
    EXPECT_TRUE(has(e, "vocabulary has 2048 tokens")) << e;
    e = error_with(tmp.path());
    EXPECT_TRUE(has(e, "--tokenizer") && has(e, "is a directory")) << e;
    // The model's own tokenizer.json is checked the same way.
    fs::copy_file(shared_dir() / "models/tinystories-656k/tokenizer.json", src / "tokenizer.json");
    opt.tokenizer_path.clear();
    e = convert_error(src, out.string(), opt);
    EXPECT_TRUE(has(e, (src / "tokenizer.json").string()) && has(e, "vocabulary has 2048 tokens")) << e;
    EXPECT_FALSE(fs::exists(out));
}

TEST(ConvertTokenizerCheck, ResultReportsTheTokenizer) {
    TempDir tmp;
    ConvertOptions opt;
    opt.tokenizer_path = (shared_dir() / "models/stories260K/tok512.bin").string();
    const ConvertResult r = convert_hf((shared_dir() / "models/stories260K/hf").string(), (tmp / "s.thin").string(), opt);
    EXPECT_EQ(r.tokenizer_kind, "llama2c");
    EXPECT_EQ(r.tokenizer_vocab, 512);
    EXPECT_EQ(r.output, (tmp / "s.thin").string());
    EXPECT_EQ(r.bytes_written, fs::file_size(tmp / "s.thin"));
}

}  // namespace
