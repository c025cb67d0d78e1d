// The .thin archive (docs/FORMAT.md): one versioned file that the runtime maps and uses in place.
//
//   [header: 4 KiB]  magic "THINTNSR", version, offsets/sizes of the data and metadata sections
//   [data]           tensors and embedded files, each aligned to 4 KiB; the tensors of one layer
//                    (one "block") are contiguous, so streaming a layer is one copy
//   [metadata]       JSON: spec, tokenizer, generation defaults, provenance, tensor/file/block tables
//
// Opening validates the header, the metadata checksum and every offset/size against the file size
// before anything is handed out; tensor data checksums are checked by verify() (thintensor verify).
#pragma once

#include "core/mapped_file.h"
#include "core/output_file.h"
#include "format/tensor.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

inline constexpr char k_thin_magic[8] = {'T', 'H', 'I', 'N', 'T', 'N', 'S', 'R'};
// Version 2 adds quantized tensors (docs/FORMAT.md); an archive without any is still written as
// version 1, so builds before quantization keep reading float archives.
inline constexpr uint32_t k_thin_version = 2;
inline constexpr uint32_t k_thin_min_version = 1;
inline constexpr uint64_t k_thin_align = 4096;
// n rounded up to a multiple of a: a block's bytes as the archive lays them out are
// round_up(bytes, k_thin_align).
inline constexpr uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }
inline constexpr uint64_t k_thin_header_size = 4096;

// Fixed header at offset 0, little-endian. The remaining bytes up to 4 KiB are zero.
struct ThinHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint64_t data_offset;
    uint64_t data_size;
    uint64_t meta_offset;
    uint64_t meta_size;
    uint64_t meta_xxh3;
    uint64_t file_size;
};
static_assert(sizeof(ThinHeader) == 64);

struct ArchiveTensor {
    TensorView view;
    uint64_t offset = 0;  // absolute file offset
    uint64_t xxh3 = 0;
    std::string block;    // the block ("embed", "layer.3", "output") it belongs to
};

struct ArchiveBlock {
    std::string name;
    uint64_t offset = 0;  // absolute, 4 KiB aligned
    uint64_t nbytes = 0;  // up to the end of its last tensor
};

struct ArchiveFile {
    std::string name;
    uint64_t offset = 0;
    uint64_t nbytes = 0;
    uint64_t xxh3 = 0;
};

class Archive {
public:
    // Maps and validates; throws tt::Error naming the path and what is wrong.
    static Archive open(const std::string& path);
    // Validates an archive image in memory without a file (fuzz target, tests).
    static void validate_image(const uint8_t* data, size_t size, const std::string& path);

    const std::string& path() const { return file_.path(); }
    uint64_t file_size() const { return file_.size(); }
    const uint8_t* base() const { return file_.data(); }
    const MappedFile& mapped() const { return file_; }
    const ThinHeader& header() const { return header_; }
    const nlohmann::json& metadata() const { return meta_; }

    const std::vector<ArchiveTensor>& tensors() const { return tensors_; }
    const std::vector<ArchiveBlock>& blocks() const { return blocks_; }
    const std::vector<ArchiveFile>& files() const { return files_; }

    const ArchiveTensor* find(std::string_view name) const;
    // Throws tt::Error "<path>: missing tensor '<name>'".
    const ArchiveTensor& tensor(std::string_view name) const;
    // An embedded file ("tokenizer.json", "tokenizer_config.json", "tok512.bin"), if present.
    std::optional<std::string_view> file(std::string_view name) const;

    // Recomputes every tensor and file checksum; on_progress gets bytes checked so far.
    // Throws tt::Error naming the first bad tensor.
    void verify(const std::function<void(uint64_t)>& on_progress = {}) const;

private:
    MappedFile file_;
    ThinHeader header_{};
    nlohmann::json meta_;
    std::vector<ArchiveTensor> tensors_;
    std::vector<ArchiveBlock> blocks_;
    std::vector<ArchiveFile> files_;
    std::map<std::string, size_t, std::less<>> by_name_;
};

// Streams tensors into a new archive. Blocks are written in call order; every tensor and file is
// 4 KiB aligned. Memory stays bounded: tensors are cast and hashed chunk by chunk from the source.
class ArchiveWriter {
public:
    explicit ArchiveWriter(const std::string& path);

    void begin_block(const std::string& name);
    // Writes n_elems elements from src (src_dtype) as dtype; both must be float types unless equal.
    // Returns the bytes written.
    uint64_t add_tensor(const std::string& name, DType dtype, const Shape& shape, const void* src, DType src_dtype,
                        const std::function<void(uint64_t)>& on_progress = {});
    // Writes a quantized matrix of logical shape [rows, cols] (core/quant.h): its values q as tensor
    // `name` and its f32 scales as tensor `scales_name`, in the current block. Returns the bytes.
    uint64_t add_quantized(const std::string& name, const std::string& scales_name, QuantScheme scheme, int32_t group_size,
                           const Shape& shape, const uint8_t* q, const float* scales);
    void add_file(const std::string& name, std::string_view bytes);
    // Writes the metadata (meta + the tensor/file/block tables), the header, and renames into place.
    void finish(nlohmann::json meta);

private:
    void align();
    void end_block();
    OutputFile out_;
    nlohmann::json tensors_ = nlohmann::json::array();
    nlohmann::json files_ = nlohmann::json::array();
    nlohmann::json blocks_ = nlohmann::json::array();
    std::string block_;
    uint64_t block_start_ = 0;
    uint64_t block_end_ = 0;
    std::map<std::string, bool> names_;
    bool quantized_ = false;  // any quantized tensor: the header says version 2
};

}  // namespace tt
