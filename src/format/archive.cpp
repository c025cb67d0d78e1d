#include "format/archive.h"

#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"

#include <xxhash.h>

#include <cstring>
#include <map>
#include <memory>

namespace tt {

namespace {

struct Parsed {
    ThinHeader header{};
    nlohmann::json meta;
    std::vector<ArchiveTensor> tensors;
    std::vector<ArchiveBlock> blocks;
    std::vector<ArchiveFile> files;
};

// Checked "offset + n <= limit" without overflow.
bool in_range(uint64_t offset, uint64_t n, uint64_t begin, uint64_t end) {
    return offset >= begin && offset <= end && n <= end - offset;
}

uint64_t parse_hex(const nlohmann::json& j, const std::string& path, const std::string& what) {
    if (!j.is_string() || j.get<std::string>().size() != 16) fail("{}: {}: checksum is not 16 hex digits", path, what);
    const std::string s = j.get<std::string>();
    uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else fail("{}: {}: checksum is not 16 hex digits", path, what);
        v = v << 4 | uint64_t(d);
    }
    return v;
}

uint64_t get_u64(const nlohmann::json& j, const char* key, const std::string& path, const std::string& what) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_unsigned())
        fail("{}: corrupt metadata: {} lacks an unsigned '{}'", path, what, key);
    return j[key].get<uint64_t>();
}

std::string get_str(const nlohmann::json& j, const char* key, const std::string& path, const std::string& what) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
        fail("{}: corrupt metadata: {} lacks a string '{}'", path, what, key);
    return j[key].get<std::string>();
}

// A quantized tensor's "quant" object (docs/FORMAT.md, version 2): its scheme and group size; the
// name of its scales tensor is resolved by link_scales() once every tensor is read.
void parse_quant(const nlohmann::json& jq, uint32_t version, const std::string& path, const std::string& what, TensorView& v) {
    if (version < 2) fail("{}: corrupt metadata: {} is quantized in a version {} archive", path, what, version);
    const std::string name = get_str(jq, "scheme", path, what + "'s quant");
    const auto scheme = quant_scheme_from_name(name);
    if (!scheme || *scheme == QuantScheme::none)
        fail("{}: {} has unknown quantization scheme '{}' (archive written by a newer ThinTensor?)", path, what, name);
    v.quant = *scheme;
    const DType want = *scheme == QuantScheme::int8 ? DType::i8 : DType::u8;
    if (v.dtype != want)
        fail("{}: {}: {} values are stored as {}, found dtype {}", path, what, quant_scheme_label(*scheme), dtype_name(want),
             dtype_name(v.dtype));
    if (v.shape.size() != 2) fail("{}: {}: a quantized tensor is a matrix, found shape {}", path, what, shape_str(v.shape));
    if (*scheme == QuantScheme::int4) {
        const uint64_t g = get_u64(jq, "group_size", path, what + "'s quant");
        v.group_size = g <= 1024 ? int32_t(g) : 0;
    }
    if (const std::string e = quant_layout_error(*scheme, v.shape[1], v.group_size); !e.empty()) fail("{}: {}: {}", path, what, e);
}

// Points each quantized tensor at its scales tensor: f32, [rows] (int8) or [rows, cols / group] (int4).
void link_scales(Parsed& p, const std::string& path) {
    std::map<std::string, const ArchiveTensor*, std::less<>> by_name;
    for (const auto& t : p.tensors) by_name.emplace(t.view.name, &t);
    size_t i = 0;
    for (const auto& jt : p.meta["tensors"]) {
        ArchiveTensor& t = p.tensors[i++];
        if (t.view.quant == QuantScheme::none) continue;
        const std::string what = fmt::format("tensor '{}'", t.view.name);
        const std::string sname = get_str(jt["quant"], "scales", path, what + "'s quant");
        auto it = by_name.find(sname);
        if (it == by_name.end()) fail("{}: {}: its scales tensor '{}' is missing", path, what, sname);
        const TensorView& sv = it->second->view;
        const Shape want = t.view.quant == QuantScheme::int8
                               ? Shape{t.view.shape[0]}
                               : Shape{t.view.shape[0], quant_row_scales(t.view.quant, t.view.shape[1], t.view.group_size)};
        if (sv.dtype != DType::f32 || sv.shape != want || sv.quant != QuantScheme::none)
            fail("{}: {}: scales tensor '{}' must be f32 {}, found {} {}", path, what, sname, shape_str(want),
                 dtype_name(sv.dtype), shape_str(sv.shape));
        t.view.scales = reinterpret_cast<const float*>(sv.data);
    }
}

Parsed parse_image(const uint8_t* data, size_t size, const std::string& path) {
    Parsed p;
    if (size < k_thin_header_size)
        fail("{}: truncated archive: {} bytes, smaller than the {}-byte header", path, size, k_thin_header_size);
    std::memcpy(&p.header, data, sizeof p.header);
    const ThinHeader& h = p.header;
    if (std::memcmp(h.magic, k_thin_magic, 8) != 0) fail("{}: not a .thin archive (bad magic)", path);
    if (h.version < k_thin_min_version || h.version > k_thin_version)
        fail("{}: archive format version {} is not supported (this build reads versions {} to {}); re-convert the model",
             path, h.version, k_thin_min_version, k_thin_version);
    if (h.header_size != k_thin_header_size) fail("{}: corrupt header: header size {}", path, h.header_size);
    if (h.file_size != size)
        fail("{}: truncated or extended archive: header records {} bytes, file has {}", path, h.file_size, size);
    if (!in_range(h.data_offset, h.data_size, k_thin_header_size, size) ||
        !in_range(h.meta_offset, h.meta_size, k_thin_header_size, size))
        fail("{}: corrupt header: sections overrun the file", path);
    if (h.meta_size == 0) fail("{}: corrupt header: empty metadata", path);
    if (XXH3_64bits(data + h.meta_offset, h.meta_size) != h.meta_xxh3)
        fail("{}: metadata checksum mismatch (corrupt archive)", path);
    // Depth-bounded: the metadata is read (and dumped by inspect) recursively.
    p.meta = parse_json(std::string_view(reinterpret_cast<const char*>(data + h.meta_offset), h.meta_size),
                        path + ": corrupt metadata");
    if (!p.meta.is_object()) fail("{}: corrupt metadata: not an object", path);
    for (const char* key : {"tensors", "blocks", "files"})
        if (!p.meta.contains(key) || !p.meta[key].is_array()) fail("{}: corrupt metadata: no '{}' table", path, key);
    if (!p.meta.contains("spec") || !p.meta["spec"].is_object()) fail("{}: corrupt metadata: no model spec", path);

    const uint64_t d0 = h.data_offset, d1 = h.data_offset + h.data_size;
    for (const auto& jt : p.meta["tensors"]) {
        ArchiveTensor t;
        t.view.name = get_str(jt, "name", path, "a tensor entry");
        const std::string what = fmt::format("tensor '{}'", t.view.name);
        auto dt = dtype_from_name(get_str(jt, "dtype", path, what));
        if (!dt) fail("{}: {} has unknown dtype {}", path, what, jt["dtype"].dump());
        t.view.dtype = *dt;
        if (!jt.contains("shape") || !jt["shape"].is_array()) fail("{}: corrupt metadata: {} has no shape", path, what);
        for (const auto& d : jt["shape"]) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0) fail("{}: {} has a bad shape", path, what);
            t.view.shape.push_back(d.get<int64_t>());
        }
        t.offset = get_u64(jt, "offset", path, what);
        t.view.nbytes = get_u64(jt, "nbytes", path, what);
        t.xxh3 = parse_hex(jt.value("xxh3", nlohmann::json()), path, what);
        if (jt.contains("block") && !jt["block"].is_string()) fail("{}: corrupt metadata: {} has a bad block", path, what);
        t.block = jt.value("block", "");
        uint64_t numel;
        if (jt.contains("quant")) {
            parse_quant(jt["quant"], h.version, path, what, t.view);
            const uint64_t rows = uint64_t(t.view.shape[0]), row_bytes = quant_row_bytes(t.view.quant, t.view.shape[1]);
            if (rows > UINT64_MAX / row_bytes || rows * row_bytes != t.view.nbytes)
                fail("{}: {}: {} bytes do not match {} and shape {}", path, what, t.view.nbytes,
                     quant_scheme_label(t.view.quant), shape_str(t.view.shape));
        } else if (!checked_numel(t.view.shape, numel) || numel > UINT64_MAX / dtype_size(*dt) ||
                   numel * dtype_size(*dt) != t.view.nbytes) {
            fail("{}: {}: {} bytes do not match dtype {} and shape {}", path, what, t.view.nbytes, dtype_name(*dt),
                 shape_str(t.view.shape));
        }
        if (!in_range(t.offset, t.view.nbytes, d0, d1) || t.offset % k_thin_align != 0)
            fail("{}: {} at offset {} (+{} bytes) lies outside the data section (truncated or corrupt archive)", path,
                 what, t.offset, t.view.nbytes);
        t.view.data = data + t.offset;
        p.tensors.push_back(std::move(t));
    }
    link_scales(p, path);
    for (const auto& jb : p.meta["blocks"]) {
        ArchiveBlock b;
        b.name = get_str(jb, "name", path, "a block entry");
        b.offset = get_u64(jb, "offset", path, "block " + b.name);
        b.nbytes = get_u64(jb, "nbytes", path, "block " + b.name);
        if (!in_range(b.offset, b.nbytes, d0, d1) || b.offset % k_thin_align != 0)
            fail("{}: block '{}' lies outside the data section", path, b.name);
        p.blocks.push_back(std::move(b));
    }
    for (const auto& jf : p.meta["files"]) {
        ArchiveFile f;
        f.name = get_str(jf, "name", path, "a file entry");
        f.offset = get_u64(jf, "offset", path, "file " + f.name);
        f.nbytes = get_u64(jf, "nbytes", path, "file " + f.name);
        f.xxh3 = parse_hex(jf.value("xxh3", nlohmann::json()), path, "file " + f.name);
        if (!in_range(f.offset, f.nbytes, d0, d1)) fail("{}: embedded file '{}' lies outside the data section", path, f.name);
        p.files.push_back(std::move(f));
    }
    return p;
}

}  // namespace

void Archive::validate_image(const uint8_t* data, size_t size, const std::string& path) {
    (void)parse_image(data, size, path);
}

Archive Archive::open(const std::string& path) {
    Archive a;
    a.file_ = MappedFile(path);
    Parsed p = parse_image(a.file_.data(), a.file_.size(), path);
    a.header_ = p.header;
    a.meta_ = std::move(p.meta);
    a.tensors_ = std::move(p.tensors);
    a.blocks_ = std::move(p.blocks);
    a.files_ = std::move(p.files);
    for (size_t i = 0; i < a.tensors_.size(); ++i)
        if (!a.by_name_.emplace(a.tensors_[i].view.name, i).second)
            fail("{}: corrupt metadata: tensor '{}' listed twice", path, a.tensors_[i].view.name);
    return a;
}

const ArchiveTensor* Archive::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const ArchiveTensor& Archive::tensor(std::string_view name) const {
    const ArchiveTensor* t = find(name);
    if (!t) fail("{}: missing tensor '{}'", path(), name);
    return *t;
}

std::optional<std::string_view> Archive::file(std::string_view name) const {
    for (const auto& f : files_)
        if (f.name == name) return std::string_view(reinterpret_cast<const char*>(base() + f.offset), f.nbytes);
    return std::nullopt;
}

void Archive::verify(const std::function<void(uint64_t)>& on_progress) const {
    uint64_t done = 0;
    for (const auto& t : tensors_) {
        file_.advise_sequential(t.offset, t.view.nbytes);
        const uint64_t got = XXH3_64bits(t.view.data, t.view.nbytes);
        if (got != t.xxh3)
            fail("{}: tensor '{}' is corrupt: checksum {} but the archive records {}", path(), t.view.name, hex64(got),
                 hex64(t.xxh3));
        done += t.view.nbytes;
        if (on_progress) on_progress(done);
    }
    for (const auto& f : files_) {
        const uint64_t got = XXH3_64bits(base() + f.offset, f.nbytes);
        if (got != f.xxh3) fail("{}: embedded file '{}' is corrupt: checksum mismatch", path(), f.name);
    }
}

// ---------------------------------------------------------------------------------------------

ArchiveWriter::ArchiveWriter(const std::string& path) : out_(path) {
    out_.write_zeros(k_thin_header_size);  // the real header is written by finish()
}

void ArchiveWriter::align() {
    const uint64_t pad = (k_thin_align - out_.offset() % k_thin_align) % k_thin_align;
    out_.write_zeros(pad);
}

void ArchiveWriter::end_block() {
    if (!block_.empty())
        blocks_.push_back({{"name", block_}, {"offset", block_start_}, {"nbytes", block_end_ - block_start_}});
    block_.clear();
}

void ArchiveWriter::begin_block(const std::string& name) {
    end_block();
    align();
    block_ = name;
    block_start_ = block_end_ = out_.offset();
}

uint64_t ArchiveWriter::add_tensor(const std::string& name, DType dtype, const Shape& shape, const void* src,
                                   DType src_dtype, const std::function<void(uint64_t)>& on_progress) {
    TT_ASSERT(!block_.empty(), "tensor {} written outside a block", name);
    TT_ASSERT(names_.emplace(name, true).second, "tensor {} written twice", name);
    TT_ASSERT(dtype == src_dtype || (dtype_is_float(dtype) && dtype_is_float(src_dtype)));
    uint64_t numel;
    TT_ASSERT(checked_numel(shape, numel));
    align();
    const uint64_t offset = out_.offset();
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(st.get());
    const size_t out_size = dtype_size(dtype), in_size = dtype_size(src_dtype);
    // Cast in 4 MiB pieces: bounded memory, and the piece is still hot in cache when hashed.
    constexpr uint64_t k_piece = 1u << 20;
    std::vector<uint8_t> buf(dtype == src_dtype ? 0 : k_piece * out_size);
    const auto* s = static_cast<const uint8_t*>(src);
    for (uint64_t i = 0; i < numel; i += k_piece) {
        const uint64_t m = std::min(k_piece, numel - i);
        const uint8_t* piece = s + i * in_size;
        if (dtype != src_dtype) {
            convert_floats(piece, src_dtype, buf.data(), dtype, m);
            piece = buf.data();
        }
        XXH3_64bits_update(st.get(), piece, m * out_size);
        out_.write(piece, m * out_size);
        if (on_progress) on_progress(m * in_size);
    }
    const uint64_t nbytes = numel * out_size;
    tensors_.push_back({{"name", name},
                        {"dtype", dtype_name(dtype)},
                        {"shape", shape},
                        {"offset", offset},
                        {"nbytes", nbytes},
                        {"xxh3", hex64(XXH3_64bits_digest(st.get()))},
                        {"block", block_}});
    block_end_ = offset + nbytes;
    return nbytes;
}

uint64_t ArchiveWriter::add_quantized(const std::string& name, const std::string& scales_name, QuantScheme scheme,
                                      int32_t group_size, const Shape& shape, const uint8_t* q, const float* scales) {
    TT_ASSERT(scheme != QuantScheme::none && shape.size() == 2);
    TT_ASSERT(quant_layout_error(scheme, shape[1], group_size).empty());
    const int64_t rows = shape[0], cols = shape[1];
    const DType storage = scheme == QuantScheme::int8 ? DType::i8 : DType::u8;
    // The values go in as a flat byte tensor of the storage dtype; the entry then takes the
    // logical shape and the quant object.
    const uint64_t qbytes = uint64_t(rows) * quant_row_bytes(scheme, cols);
    uint64_t n = add_tensor(name, storage, Shape{int64_t(qbytes)}, q, storage);
    nlohmann::json& e = tensors_.back();
    e["shape"] = shape;
    e["quant"] = {{"scheme", quant_scheme_name(scheme)}, {"scales", scales_name}};
    if (scheme == QuantScheme::int4) e["quant"]["group_size"] = group_size;
    const Shape sshape = scheme == QuantScheme::int8 ? Shape{rows} : Shape{rows, quant_row_scales(scheme, cols, group_size)};
    n += add_tensor(scales_name, DType::f32, sshape, scales, DType::f32);
    quantized_ = true;
    return n;
}

void ArchiveWriter::add_file(const std::string& name, std::string_view bytes) {
    end_block();
    align();
    const uint64_t offset = out_.offset();
    out_.write(bytes.data(), bytes.size());
    files_.push_back({{"name", name}, {"offset", offset}, {"nbytes", bytes.size()}, {"xxh3", hex64(xxh3_64(bytes.data(), bytes.size()))}});
}

void ArchiveWriter::finish(nlohmann::json meta) {
    end_block();
    align();
    const uint64_t data_end = out_.offset();
    meta["tensors"] = std::move(tensors_);
    meta["blocks"] = std::move(blocks_);
    meta["files"] = std::move(files_);
    const std::string text = meta.dump();
    ThinHeader h{};
    std::memcpy(h.magic, k_thin_magic, 8);
    h.version = quantized_ ? k_thin_version : k_thin_min_version;
    h.header_size = uint32_t(k_thin_header_size);
    h.data_offset = k_thin_header_size;
    h.data_size = data_end - k_thin_header_size;
    h.meta_offset = data_end;
    h.meta_size = text.size();
    h.meta_xxh3 = xxh3_64(text.data(), text.size());
    h.file_size = data_end + text.size();
    out_.write(text.data(), text.size());
    out_.pwrite(&h, sizeof h, 0);
    out_.commit();
}

}  // namespace tt
