// libFuzzer target for the safetensors reader: any byte string must either parse into views that
// lie inside the input, or throw tt::Error. Anything else (a crash, a sanitizer report, another
// exception type escaping) is a bug. Seeds: the fixtures' model.safetensors (seed_fuzz_safetensors.sh).
#include "core/error.h"
#include "format/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto tensors = tt::SafetensorsFile::parse(data, size, "fuzz.safetensors");
        for (const auto& [name, t] : tensors) {
            // Every view must lie inside the input and hold exactly its shape's bytes.
            if (t.data < data || t.nbytes > size || t.data + t.nbytes > data + size) std::abort();
            if (uint64_t(t.numel()) * tt::dtype_size(t.dtype) != t.nbytes) std::abort();
            // Touch the first and last byte so ASan sees any out-of-range view.
            if (t.nbytes > 0) {
                volatile uint8_t sink = t.data[0];
                sink = t.data[t.nbytes - 1];
                (void)sink;
            }
        }
    } catch (const tt::Error&) {
        // Rejected with a message: the expected outcome for most inputs.
    }
    return 0;
}
