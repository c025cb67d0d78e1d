// libFuzzer target for the .thin archive reader (Archive::validate_image) and the spec stored in it
// (spec_from_json). Any byte string must be accepted with every table entry inside the data
// section, or rejected with tt::Error.
//
// note: the metadata is protected by an xxh3 checksum and the header records the file size, so
// almost every mutation of the JSON would stop at those two checks. Each input is therefore also
// tried "re-sealed": with the header's meta_xxh3 and file_size rewritten to match, which lets the
// fuzzer reach the table and spec validation behind them.
#include "core/error.h"
#include "core/json.h"
#include "format/archive.h"
#include "model/model_spec.h"

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(const uint8_t* data, size_t size) {
    try {
        tt::Archive::validate_image(data, size, "fuzz.thin");
    } catch (const tt::Error&) {
        return;
    }
    // Accepted: the metadata parses (validate_image checked it) and the spec must either load or
    // be rejected with tt::Error.
    tt::ThinHeader h;
    std::memcpy(&h, data, sizeof h);
    const nlohmann::json meta = tt::parse_json(
        std::string_view(reinterpret_cast<const char*>(data) + h.meta_offset, h.meta_size), "fuzz.thin metadata");
    try {
        const tt::ModelSpec spec = tt::spec_from_json(meta["spec"]);
        if (tt::spec_from_json(tt::spec_to_json(spec)) != spec) std::abort();
    } catch (const tt::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check(data, size);
    if (size < tt::k_thin_header_size) return 0;
    tt::ThinHeader h;
    std::memcpy(&h, data, sizeof h);
    if (h.meta_offset > size || h.meta_size > size - h.meta_offset) return 0;
    std::vector<uint8_t> sealed(data, data + size);
    h.meta_xxh3 = XXH3_64bits(data + h.meta_offset, h.meta_size);
    h.file_size = size;
    std::memcpy(sealed.data(), &h, sizeof h);
    check(sealed.data(), sealed.size());
    return 0;
}
