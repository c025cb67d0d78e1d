// thintensor convert SRC --out FILE.thin [--dtype auto|bf16|f16|f32] [--tokenizer FILE]
#include "cli/command.h"
#include "convert/convert.h"
#include "core/log.h"
#include "core/progress.h"

#include <memory>

namespace {
struct Opts {
    std::string src, out, dtype = "auto", tokenizer;
};
}  // namespace

static tt::cli::Registration reg(
    "convert", "Convert a Hugging Face safetensors model directory into a .thin archive", 20,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_option("SRC", o->src, "Hugging Face model directory (config.json + *.safetensors)")->required();
        sub.add_option("-o,--out", o->out, "Output archive (.thin)")->required();
        sub.add_option("--dtype", o->dtype, "Weight dtype: auto (keep), bf16, f16, f32")->capture_default_str();
        sub.add_option("--tokenizer", o->tokenizer,
                       "Attach this tokenizer (tokenizer.json or a llama2.c tokenizer .bin) instead of the model's");
        return [o]() -> int {
            tt::ConvertOptions opt;
            opt.dtype = tt::parse_convert_dtype(o->dtype);
            opt.tokenizer_path = o->tokenizer;
            const tt::ConvertResult r = tt::convert_hf(o->src, o->out, opt);
            tt::log::info("wrote {}: {} tensors, {} in {} ({}/s)", o->out, r.n_tensors,
                          tt::format_bytes(double(r.bytes_written)), tt::format_duration(r.seconds),
                          tt::format_bytes(double(r.bytes_read) / std::max(r.seconds, 1e-9)));
            return 0;
        };
    });
