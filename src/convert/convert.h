// HF checkpoint directory -> .thin archive. Streams tensor by tensor from the mapped safetensors
// (memory stays bounded whatever the model's size), casts as asked, and writes through a temporary
// file that is renamed into place only when everything succeeded.
#pragma once

#include "core/dtype.h"

#include <optional>
#include <string>

namespace tt {

struct ConvertOptions {
    std::optional<DType> dtype;   // nullopt = "auto": keep each tensor's stored float type
    std::string tokenizer_path;   // attach this tokenizer (tokenizer.json or llama2.c .bin) instead
};

struct ConvertResult {
    uint64_t bytes_read = 0;      // tensor bytes read from the source
    uint64_t bytes_written = 0;   // archive file size
    size_t n_tensors = 0;
    double seconds = 0;
};

// Parses "auto", "bf16", "f16", "f32" (throws on anything else, naming the flag).
std::optional<DType> parse_convert_dtype(const std::string& s);

ConvertResult convert_hf(const std::string& src_dir, const std::string& out_path, const ConvertOptions& opt);

}  // namespace tt
