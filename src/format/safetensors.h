// Reader for Hugging Face safetensors files: 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and [begin, end) byte range in the data that follows.
// Every range is checked against the file before a view is handed out.
#pragma once

#include "core/mapped_file.h"
#include "format/tensor.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace tt {

class SafetensorsFile {
public:
    // Maps and validates the file; throws tt::Error naming the path and the problem.
    explicit SafetensorsFile(const std::string& path);
    // Validates a safetensors image already in memory (used by the fuzz target and tests); the
    // header's "__metadata__" object, when it has one, goes to *metadata.
    static std::map<std::string, TensorView> parse(const uint8_t* data, size_t size, const std::string& path,
                                                   nlohmann::json* metadata = nullptr);

    const std::string& path() const { return file_.path(); }
    const std::map<std::string, TensorView>& tensors() const { return tensors_; }
    const TensorView* find(const std::string& name) const;
    // Throws tt::Error "<path>: no tensor '<name>'" when missing.
    const TensorView& get(const std::string& name) const;
    size_t file_size() const { return file_.size(); }
    // The header's "__metadata__" (string -> string annotations), or null.
    const nlohmann::json& metadata() const { return metadata_; }

private:
    MappedFile file_;
    std::map<std::string, TensorView> tensors_;
    nlohmann::json metadata_;
};

}  // namespace tt
