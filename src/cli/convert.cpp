// thintensor convert SRC --out FILE.thin [--dtype auto|bf16|f16|f32] [--quant none|int8|int4 [--group-size G]]
//                    [--tokenizer FILE]
//                    [--allow-nonfinite] [--json]
#include "cli/command.h"
#include "convert/convert.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace {
struct Opts {
    std::string src, out, dtype = "auto", tokenizer, quant = "none";
    int group_size = tt::k_int4_default_group;
    bool allow_nonfinite = false, json = false;
};
}  // namespace

static tt::cli::Registration reg(
    "convert", "Convert a Hugging Face safetensors model directory into a .thin archive", 20,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_option("SRC", o->src, "Hugging Face model directory (config.json + *.safetensors)")->required();
        sub.add_option("-o,--out", o->out, "Output archive (.thin); must not be a file of SRC")->required();
        sub.add_option("--dtype", o->dtype, "Weight dtype: auto (keep), bf16, f16, f32")->capture_default_str();
        sub.add_option("--quant", o->quant,
                       "Store the body's projection matrices as int8 (per-channel scales) or int4 (per-group scales) and "
                       "the head as int8; none keeps every tensor in --dtype (docs/QUANTIZATION.md)")
            ->capture_default_str();
        CLI::Option* group_opt = sub.add_option("--group-size", o->group_size, "With --quant int4: weights per scale along a row, 32, 64 or 128")
            ->capture_default_str();
        sub.add_option("--tokenizer", o->tokenizer,
                       "Attach this tokenizer (tokenizer.json or a llama2.c tokenizer .bin) instead of the model's");
        sub.add_flag("--allow-nonfinite", o->allow_nonfinite,
                     "Convert weights holding NaN/Inf (or too large for --dtype) with a warning instead of failing");
        sub.add_flag("--json", o->json, "Print a JSON summary on stdout (errors still go to stderr)");
        return [o, group_opt]() -> int {
            tt::ConvertOptions opt;
            opt.dtype = tt::parse_convert_dtype(o->dtype);
            opt.tokenizer_path = o->tokenizer;
            opt.quant = tt::parse_convert_quant(o->quant);
            if (group_opt->count() > 0 && opt.quant != tt::QuantScheme::int4)
                tt::fail("--group-size goes with --quant int4");
            opt.group_size = o->group_size;
            opt.allow_nonfinite = o->allow_nonfinite;
            const tt::ConvertResult r = tt::convert_hf(o->src, o->out, opt);
            tt::log::info("wrote {}: {} tensors, {} in {} ({}/s)", o->out, r.n_tensors,
                          tt::format_bytes(double(r.bytes_written)), tt::format_duration(r.seconds),
                          tt::format_bytes(double(r.bytes_read) / std::max(r.seconds, 1e-9)));
            if (o->json) {
                const nlohmann::json j = {{"output", r.output},
                                          {"bytes", r.bytes_written},
                                          {"bytes_read", r.bytes_read},
                                          {"tensors", r.n_tensors},
                                          {"dtype", o->dtype},
                                          {"dtypes", r.dtypes},
                                          {"tokenizer", {{"kind", r.tokenizer_kind}, {"vocab_size", r.tokenizer_vocab}}},
                                          {"nonfinite_tensors", r.nonfinite_tensors},
                                          {"seconds", r.seconds}};
                fmt::print("{}\n", j.dump(2));
            }
            return 0;
        };
    });
