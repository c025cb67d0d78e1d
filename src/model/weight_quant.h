// Which weights are quantized (docs/QUANTIZATION.md), by role, and the load-time quantizer that
// turns a float archive's matrices into INT8/INT4 copies for a quantized profile. `convert
// --quant` stores the same blocks with the same policy and rounding, so an archive converted with
// --quant and a float archive quantized at load give the same weights, bit for bit.
//
// The policy: every projection matrix of the body (attention q/k/v/o, the MLP's and the experts'
// gate/up/down, the shared expert's, DeltaNet's in_proj_qkv, in_proj_z and out_proj) takes the
// profile's scheme; the output head takes INT8 under both quantized profiles (the logits are the
// most sensitive product, and INT8 keeps them close); the token embedding stays in its stored float
// dtype (a lookup reads one row per token, so its bytes do not bound decode). Norms, biases, the
// MoE router and shared-expert gate, DeltaNet's small b/a gates and conv, and Gemma 4's per-layer
// input path stay in floating point.
#pragma once

#include "core/quant.h"
#include "model/weights.h"

#include <memory>
#include <string>
#include <vector>

namespace tt {

class ThreadPool;

// Whether a tensor of this role may be stored quantized at all.
bool role_quantizable(Role role);
// The scheme a tensor of this role takes when the body's projections take `body` (none: none).
QuantScheme role_quant_scheme(Role role, QuantScheme body);

// Quantized copies made at load time; the views in ModelWeights point into them.
class QuantizedWeights {
public:
    int n_matrices() const { return int(owned_.size()); }
    uint64_t n_weights = 0;  // weights quantized at load
    double seconds = 0;      // the time it took

    const TensorView* add(const std::string& name, const Shape& shape, QuantScheme scheme, int32_t group_size, QuantizedMatrix m);

private:
    struct Owned {
        QuantizedMatrix m;
        TensorView view;
    };
    std::vector<std::unique_ptr<Owned>> owned_;
};

// Makes `w` (bound from the archive at archive_path) run with the body scheme `body` (int4: in
// groups of group_size) and the head as role_quant_scheme says: float matrices are quantized here
// (multi-threaded over the pool); matrices stored in that scheme already are used as stored.
// `profile` names the choice in messages. body none leaves `w` as it is. Throws tt::Error naming
// the archive, the tensor and the profile when a matrix is stored in another scheme (INT4 asked of
// an INT8 archive) or the group size does not divide a row.
QuantizedWeights quantize_weights(const std::string& archive_path, const ModelSpec& spec, QuantScheme body,
                                  int32_t group_size, const std::string& profile, ModelWeights& w, ThreadPool& pool);

// Bytes a tensor of this role occupies when it runs with body scheme `body`: its stored bytes, or
// for a float matrix that a quantized profile quantizes at load, those of its values and scales
// (what a decode step then reads; bench's roofline counts these).
uint64_t run_nbytes(const TensorView& t, Role role, QuantScheme body, int32_t group_size);

// The scheme an archive's body is stored in: int4 when any tensor is INT4, else int8 when any is
// INT8 (the head of an INT4 archive is), else none.
QuantScheme archive_quant_scheme(const Archive& a);

}  // namespace tt
