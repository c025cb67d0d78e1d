// The doctor's kernel self-test (see self_test.h): the kernel-check table, filtered.
#include "backends/cuda/self_test.h"

namespace tt::cuda {

std::vector<KernelCheck> self_test_kernels(int device, bool all) {
    std::vector<KernelCheck> out;
    for (const KernelCase& c : kernel_cases())
        if (all || c.quick) out.push_back(run_kernel_case(c, device));
    return out;
}

}  // namespace tt::cuda
