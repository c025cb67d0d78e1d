// HF checkpoint directory -> .thin archive. Streams tensor by tensor from the mapped safetensors
// (memory stays bounded whatever the model's size), casts as asked, and writes through a temporary
// file that is renamed into place only when everything succeeded.
//
// Before a byte is written it refuses an output path that would replace one of its inputs, and
// checks the config (bounded, typed), every tensor's name, shape and dtype, and the tokenizer (the
// same loader `run` uses, and its ids against the model's vocabulary). While writing, every weight
// is checked to be finite before and after the cast (an error unless allow_nonfinite).
#pragma once

#include "core/dtype.h"
#include "core/quant.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tt {

struct ConvertOptions {
    std::optional<DType> dtype;   // nullopt = "auto": keep each tensor's stored float type
    std::string tokenizer_path;   // attach this tokenizer (tokenizer.json or llama2.c .bin) instead
    bool allow_nonfinite = false; // convert NaN/Inf weights (and f16 overflows) with a warning
    // --quant: store the body's projections in this scheme and the head in INT8 (model/weight_quant.h);
    // the other tensors in `dtype`. The matrices are cast to `dtype` first and quantized from
    // that, exactly as a `dtype` archive is quantized at load.
    QuantScheme quant = QuantScheme::none;
    int32_t group_size = k_int4_default_group;  // --group-size (int4)
};

struct ConvertResult {
    std::string output;           // the archive written
    uint64_t bytes_read = 0;      // tensor bytes read from the source
    uint64_t bytes_written = 0;   // archive file size
    size_t n_tensors = 0;
    std::map<std::string, size_t> dtypes;  // stored dtype name -> tensors
    std::string tokenizer_kind;   // "hf", "llama2c" or "none" (docs/FORMAT.md)
    int tokenizer_vocab = 0;      // the tokenizer's vocab_size(), 0 without one
    std::vector<std::string> nonfinite_tensors;  // converted anyway (allow_nonfinite)
    double seconds = 0;
    bool quantized = false;       // some tensor is stored quantized (a version 2 archive)
};

// Parses "none", "int8", "int4" (throws on anything else, naming --quant).
QuantScheme parse_convert_quant(const std::string& s);

// Parses "auto", "bf16", "f16", "f32" (throws on anything else, naming the flag).
std::optional<DType> parse_convert_dtype(const std::string& s);

ConvertResult convert_hf(const std::string& src_dir, const std::string& out_path, const ConvertOptions& opt);

}  // namespace tt
