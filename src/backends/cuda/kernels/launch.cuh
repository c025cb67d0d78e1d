// Kernel launch with programmatic dependent launch when the scope asks for it (see launch.h), the
// two device-side halves of the protocol, and a kernel's opt-in to more than 48 KiB of shared memory.
#pragma once

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/launch.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

namespace tt::cuda {

// Waits until the previous kernel in the stream has finished and its writes are visible. A no-op
// when the kernel was launched without PDL, and before sm_90.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream be scheduled now (its blocks take SM slots as ours free up).
// Called right after pdl_wait(): the next kernel can then only run ahead of this one, never ahead
// of the one before, so pdl_wait() keeps ordering every kernel after all earlier ones.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// Lets `kernel` take `smem` bytes of dynamic shared memory. CUDA's default limit, 48 KiB, counts
// the kernel's static shared memory too, so a launch whose dynamic bytes alone stay under it can
// still be refused (cudaErrorInvalidValue): the INT4 GEMV with 16 warps on rows of 11008 columns
// (Qwen2.5-3B's down) asks 43 KiB of digits beside 8 KiB of partial sums. Past that limit the
// kernel must opt in, up to the device's per-block maximum less the static bytes. The limit is only
// ever raised: one kernel serves shapes of different sizes, and lowering it for a smaller one
// would refuse the larger one's next launch. The bytes known to launch are kept per kernel, so the
// launches outside the decode graph (prefill's attention and norms, every layer and chunk) ask the
// driver only when they need more than before.
template <typename K>
void allow_dynamic_smem(K kernel, size_t smem) {
    static std::mutex mu;
    static std::map<const void*, size_t> known;  // dynamic bytes each kernel is known to launch with
    const std::lock_guard<std::mutex> lock(mu);
    size_t& ok = known[reinterpret_cast<const void*>(kernel)];
    if (smem <= ok) return;
    cudaFuncAttributes fa{};
    TT_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    const size_t cur = size_t(fa.maxDynamicSharedSizeBytes);
    if (smem > cur || smem + fa.sharedSizeBytes > 48 * 1024) {
        TT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(std::max(smem, cur))));
        ok = std::max(smem, cur);
    } else {
        ok = smem;
    }
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[1]{};
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent_launch_flag() ? 1 : 0;
    TT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace tt::cuda
