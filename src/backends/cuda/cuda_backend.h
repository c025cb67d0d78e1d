// The CUDA backend: weights resident in VRAM, decode as a captured CUDA graph of fused kernels,
// prefill through cuBLAS. Host-only header.
#pragma once

namespace tt::cuda {

// Adds "cuda" to the backend registry (runtime/backend.h). Called once by the CLI at start.
void register_backend();

}  // namespace tt::cuda
