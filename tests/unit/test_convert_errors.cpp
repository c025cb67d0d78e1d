// Bad input to `convert`: each broken checkpoint (built by copying a fixture into a temp dir and
// breaking one thing) must fail with a tt::Error whose message names the file at fault and the
// cause, and must leave neither the output archive nor a temporary file in the output directory.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "model/hf_config.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tt;
using namespace tt::test;

namespace {

struct Broken {
    TempDir tmp;
    fs::path model = tmp / "model";  // the checkpoint to break
    fs::path out_dir = tmp / "out";  // must stay empty
    explicit Broken(const char* fixture = "fixtures/hf-tiny/llama") {
        copy_checkpoint(shared_dir() / fixture, model);
        fs::create_directories(out_dir);
    }
};

// Converts, expects a tt::Error containing every one of `needles`, and an empty output dir.
void expect_convert_error(const Broken& b, std::initializer_list<std::string> needles, const ConvertOptions& opt = {}) {
    const fs::path out = b.out_dir / "model.thin";
    try {
        convert_hf(b.model.string(), out.string(), opt);
        ADD_FAILURE() << "convert succeeded";
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(b.out_dir)) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
}

// Rewrites model.safetensors with a hand-edited JSON header and the original data bytes.
void rewrite_header(const fs::path& path, const std::function<void(nlohmann::json&)>& edit, int64_t data_delta = 0) {
    const std::string bytes = read_file(path.string());
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    nlohmann::json h = nlohmann::json::parse(bytes.substr(8, n));
    std::string data = bytes.substr(8 + n);
    edit(h);
    if (data_delta < 0) data.resize(data.size() - size_t(-data_delta));
    std::string text = h.dump();
    const uint64_t len = text.size();
    std::string out(reinterpret_cast<const char*>(&len), 8);
    out += text;
    out += data;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(out.data(), std::streamsize(out.size()));
}

TEST(ConvertErrors, MissingConfig) {
    Broken b;
    fs::remove(b.model / "config.json");
    expect_convert_error(b, {b.model.string(), "missing config.json"});
}

TEST(ConvertErrors, NotADirectory) {
    Broken b;
    const fs::path file = b.model / "config.json";
    const fs::path out = b.out_dir / "x.thin";
    EXPECT_THROW(convert_hf(file.string(), out.string(), {}), Error);
    EXPECT_FALSE(fs::exists(out));
}

TEST(ConvertErrors, InvalidConfigJson) {
    Broken b;
    std::ofstream(b.model / "config.json") << "{\"architectures\": [\"LlamaForCausalLM\"], ";
    expect_convert_error(b, {(b.model / "config.json").string(), "invalid JSON"});
}

TEST(ConvertErrors, UnsupportedArchitectureIsNamedWithTheSupportedOnes) {
    Broken b;
    nlohmann::json foo = read_json(b.model / "config.json");
    foo["architectures"] = {"FooForCausalLM"};
    std::ofstream(b.model / "config.json") << foo.dump();
    std::vector<std::string> needles = {(b.model / "config.json").string(), "unsupported architecture",
                                        "'FooForCausalLM'"};
    for (const auto& a : supported_architectures()) needles.push_back(a);
    EXPECT_EQ(supported_architectures().size(), 14u);
    const fs::path out = b.out_dir / "model.thin";
    try {
        convert_hf(b.model.string(), out.string(), {});
        ADD_FAILURE() << "FooForCausalLM converted";
    } catch (const Error& e) {
        for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << " in " << e.what();
    }
    EXPECT_TRUE(fs::is_empty(b.out_dir));

    Broken made_up;
    nlohmann::json cfg = read_json(made_up.model / "config.json");
    cfg["architectures"] = {"FrobnicatorForCausalLM"};
    std::ofstream(made_up.model / "config.json") << cfg.dump();
    expect_convert_error(made_up, {"'FrobnicatorForCausalLM'", "LlamaForCausalLM", "Gemma3ForCausalLM"});
}

TEST(ConvertErrors, MissingArchitecturesEntry) {
    Broken b;
    nlohmann::json cfg = read_json(b.model / "config.json");
    cfg.erase("architectures");
    std::ofstream(b.model / "config.json") << cfg.dump();
    expect_convert_error(b, {(b.model / "config.json").string(), "architectures"});
}

TEST(ConvertErrors, MissingRequiredConfigField) {
    Broken b;
    nlohmann::json cfg = read_json(b.model / "config.json");
    cfg.erase("hidden_size");
    std::ofstream(b.model / "config.json") << cfg.dump();
    expect_convert_error(b, {(b.model / "config.json").string(), "'hidden_size'"});
}

TEST(ConvertErrors, TruncatedSafetensorsData) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    fs::resize_file(st, fs::file_size(st) / 2);
    expect_convert_error(b, {st.string(), "overrun", "truncated"});
}

TEST(ConvertErrors, TruncatedSafetensorsHeader) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    fs::resize_file(st, 100);  // inside the JSON header
    expect_convert_error(b, {st.string(), "truncated safetensors file"});
    fs::resize_file(st, 5);  // inside the length prefix
    expect_convert_error(b, {st.string(), "truncated safetensors file"});
}

TEST(ConvertErrors, SafetensorsOffsetsOverrunTheFile) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    // The file keeps its full size; one tensor's end offset points past the data.
    rewrite_header(st, [](nlohmann::json& h) {
        auto& o = h["model.norm.weight"]["data_offsets"];
        o[1] = o[1].get<uint64_t>() + (1u << 20);
    });
    expect_convert_error(b, {st.string(), "'model.norm.weight'", "overrun"});
}

TEST(ConvertErrors, SafetensorsByteCountDisagreesWithShape) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    rewrite_header(st, [](nlohmann::json& h) { h["model.norm.weight"]["shape"] = {65}; });
    expect_convert_error(b, {st.string(), "'model.norm.weight'", "[65]"});
}

TEST(ConvertErrors, SafetensorsHeaderNotJson) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::string bytes = read_file(st.string());
    bytes[8] = '[';
    bytes[9] = '!';
    std::ofstream(st, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
    expect_convert_error(b, {st.string(), "safetensors header: invalid JSON"});
}

TEST(ConvertErrors, MissingTensor) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    std::erase_if(ts, [](const StTensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
    write_safetensors(st, ts);
    expect_convert_error(b, {st.string(), "missing tensor 'model.layers.1.mlp.up_proj.weight'"});
}

TEST(ConvertErrors, MissingOutputHeadOfUntiedModel) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    std::erase_if(ts, [](const StTensor& t) { return t.name == "lm_head.weight"; });
    write_safetensors(st, ts);
    expect_convert_error(b, {st.string(), "missing tensor 'lm_head.weight'"});
}

TEST(ConvertErrors, TensorWithWrongShape) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    for (auto& t : ts)
        if (t.name == "model.layers.0.mlp.gate_proj.weight") t.shape = {64, 160};  // transposed: same bytes
    write_safetensors(st, ts);
    expect_convert_error(b, {st.string(), "'model.layers.0.mlp.gate_proj.weight'", "[64, 160]", "[160, 64]"});
}

TEST(ConvertErrors, NonFloatTensor) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    for (auto& t : ts)
        if (t.name == "model.norm.weight") t.dtype = DType::i32;  // same 4-byte elements
    write_safetensors(st, ts);
    expect_convert_error(b, {st.string(), "'model.norm.weight'", "i32"});
}

// Sharded checkpoints: an index naming a shard that is not there.
TEST(ConvertErrors, IndexNamesMissingShard) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    fs::remove(st);
    const std::vector<StTensor> first(ts.begin(), ts.begin() + 5);
    write_safetensors(b.model / "model-00001-of-00002.safetensors", first);
    nlohmann::json index = {{"weight_map", nlohmann::json::object()}};
    for (size_t i = 0; i < ts.size(); ++i)
        index["weight_map"][ts[i].name] = i < 5 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    std::ofstream(b.model / "model.safetensors.index.json") << index.dump();
    expect_convert_error(b, {(b.model / "model.safetensors.index.json").string(), "'model-00002-of-00002.safetensors'",
                             "does not exist"});
}

TEST(ConvertErrors, IndexShardOutsideTheModelDirectory) {
    Broken b;
    nlohmann::json index = {{"weight_map", {{"model.norm.weight", "../../etc/passwd"}}}};
    std::ofstream(b.model / "model.safetensors.index.json") << index.dump();
    expect_convert_error(b, {(b.model / "model.safetensors.index.json").string(), "must be a file in the model directory"});
}

TEST(ConvertErrors, TensorInTwoShards) {
    Broken b;
    const fs::path st = b.model / "model.safetensors";
    std::vector<StTensor> ts = read_safetensors(st);
    fs::remove(st);
    write_safetensors(b.model / "a.safetensors", ts);
    write_safetensors(b.model / "b.safetensors", {ts.front()});
    nlohmann::json index = {{"weight_map", nlohmann::json::object()}};
    for (const auto& t : ts) index["weight_map"][t.name] = "a.safetensors";
    index["weight_map"]["extra"] = "b.safetensors";
    std::ofstream(b.model / "model.safetensors.index.json") << index.dump();
    expect_convert_error(b, {"b.safetensors", "'" + ts.front().name + "'", "also appears in"});
}

TEST(ConvertErrors, NoWeights) {
    Broken b;
    fs::remove(b.model / "model.safetensors");
    expect_convert_error(b, {b.model.string(), "no model.safetensors"});
}

TEST(ConvertErrors, BadTokenizerFlag) {
    Broken b;
    ConvertOptions opt;
    opt.tokenizer_path = (b.model / "nope.json").string();
    expect_convert_error(b, {"--tokenizer", opt.tokenizer_path}, opt);
    std::ofstream(b.model / "bad.json") << "{not json";
    opt.tokenizer_path = (b.model / "bad.json").string();
    expect_convert_error(b, {opt.tokenizer_path, "invalid JSON"}, opt);
}

// A failed conversion must not clobber an archive already at the output path.
TEST(ConvertErrors, FailureKeepsExistingOutput) {
    Broken b;
    const fs::path out = b.out_dir / "model.thin";
    std::ofstream(out) << "previous archive";
    fs::remove(b.model / "model.safetensors");
    EXPECT_THROW(convert_hf(b.model.string(), out.string(), {}), Error);
    EXPECT_EQ(read_file(out.string()), "previous archive");
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(b.out_dir)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"model.thin"});
}

}  // namespace

// An MoE config that does not match its checkpoint fails naming the tensor, before a byte is written.
TEST(ConvertErrors, MoeExpertsMissingOrMisshapen) {
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        nlohmann::json cfg = read_json(b.model / "config.json");
        cfg["num_local_experts"] = 9;  // the checkpoint holds 8
        std::ofstream(b.model / "config.json") << cfg.dump();
        expect_convert_error(b, {"'model.layers.0.mlp.gate.weight' has shape [8, 64] but config.json implies [9, 64]"});
    }
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        rewrite_header(b.model / "model.safetensors", [](nlohmann::json& h) { h.erase("model.layers.1.mlp.experts.7.up_proj.weight"); });
        expect_convert_error(b, {"missing tensor 'model.layers.1.mlp.experts.7.up_proj.weight'", "blk.1.expert.7.ffn_up.weight"});
    }
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        nlohmann::json cfg = read_json(b.model / "config.json");
        cfg["moe_intermediate_size"] = 16;  // the experts are 32 wide
        std::ofstream(b.model / "config.json") << cfg.dump();
        expect_convert_error(b, {"'model.layers.0.mlp.experts.0.gate_proj.weight' has shape [32, 64] but config.json implies [16, 64]"});
    }
    {
        Broken b("fixtures/hf-tiny/mixtral");
        nlohmann::json cfg = read_json(b.model / "config.json");
        cfg["num_experts_per_tok"] = 5;  // of 4
        std::ofstream(b.model / "config.json") << cfg.dump();
        expect_convert_error(b, {(b.model / "config.json").string(), "'num_experts_per_tok' 5 is more than 'num_local_experts' 4"});
    }
}

// Experts stored fused (transformers v5's [n_experts, 2 * ffn, hidden] gate_up_proj and
// [n_experts, hidden, ffn] down_proj): a wrong shape fails naming the tensor, the shape expected
// and the layout; a layer with both layouts or neither fails naming a tensor of each.
TEST(ConvertErrors, MoeFusedExpertsMisshapenOrAmbiguous) {
    const fs::path qwen = shared_dir() / "fixtures/hf-tiny/qwen3_moe";
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        write_fused_experts_checkpoint(qwen, b.model);
        nlohmann::json cfg = read_json(b.model / "config.json");
        cfg["moe_intermediate_size"] = 16;  // the experts are 32 wide
        std::ofstream(b.model / "config.json") << cfg.dump();
        expect_convert_error(b, {(b.model / "model.safetensors").string(),
                                 "tensor 'model.layers.0.mlp.experts.gate_up_proj' has shape [8, 64, 64] but config.json "
                                 "implies [8, 32, 64] ([n_experts, 2 * expert_ffn, hidden]: per expert its gate_proj rows, "
                                 "then its up_proj rows)"});
    }
    {
        // The same bytes under a transposed down_proj's shape, [n_experts, ffn, hidden].
        Broken b("fixtures/hf-tiny/qwen3_moe");
        write_fused_experts_checkpoint(qwen, b.model);
        rewrite_header(b.model / "model.safetensors",
                       [](nlohmann::json& h) { h["model.layers.1.mlp.experts.down_proj"]["shape"] = {8, 32, 64}; });
        expect_convert_error(b, {"tensor 'model.layers.1.mlp.experts.down_proj' has shape [8, 32, 64] but config.json "
                                 "implies [8, 64, 32] ([n_experts, hidden, expert_ffn]: per expert its down_proj)"});
    }
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        write_fused_experts_checkpoint(qwen, b.model);
        std::vector<StTensor> both = read_safetensors(b.model / "model.safetensors");
        for (const auto& t : read_safetensors(qwen / "model.safetensors"))
            if (t.name == "model.layers.1.mlp.experts.3.down_proj.weight") both.push_back(t);
        write_safetensors(b.model / "model.safetensors", both);
        expect_convert_error(b, {"layer 1 stores its experts both one tensor per expert "
                                 "('model.layers.1.mlp.experts.3.down_proj.weight') and fused "
                                 "('model.layers.1.mlp.experts.gate_up_proj')"});
    }
    {
        Broken b("fixtures/hf-tiny/qwen3_moe");
        write_fused_experts_checkpoint(qwen, b.model);
        rewrite_header(b.model / "model.safetensors", [](nlohmann::json& h) {
            h.erase("model.layers.1.mlp.experts.gate_up_proj");
            h.erase("model.layers.1.mlp.experts.down_proj");
        });
        expect_convert_error(b, {"layer 1 has no routed experts: neither 'model.layers.1.mlp.experts.0.gate_proj.weight' "
                                 "(one tensor per expert) nor 'model.layers.1.mlp.experts.gate_up_proj' (fused)"});
    }
    {
        // One of the two fused tensors missing: the other layout is not looked for.
        Broken b("fixtures/hf-tiny/qwen3_moe");
        write_fused_experts_checkpoint(qwen, b.model);
        rewrite_header(b.model / "model.safetensors", [](nlohmann::json& h) { h.erase("model.layers.0.mlp.experts.down_proj"); });
        expect_convert_error(b, {"missing tensor 'model.layers.0.mlp.experts.down_proj'", "blk.0.expert.0.ffn_down.weight"});
    }
    {
        // Mixtral's fused layout names its router mlp.gate (conversion_mapping.py renames
        // block_sparse_moe to mlp); the old name beside fused experts is not taken.
        Broken b("fixtures/hf-tiny/mixtral");
        write_fused_experts_checkpoint(shared_dir() / "fixtures/hf-tiny/mixtral", b.model);
        rewrite_header(b.model / "model.safetensors", [](nlohmann::json& h) {
            h["model.layers.0.block_sparse_moe.gate.weight"] = h["model.layers.0.mlp.gate.weight"];
            h.erase("model.layers.0.mlp.gate.weight");
        });
        expect_convert_error(b, {"missing tensor 'model.layers.0.mlp.gate.weight'", "blk.0.ffn_gate_inp.weight"});
    }
}
