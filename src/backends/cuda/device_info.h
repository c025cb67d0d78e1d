// What CUDA devices this process can use. Host-only header: no CUDA types leak out of
// src/backends/cuda, so the rest of the engine compiles without the toolkit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    uint64_t total_memory = 0;
    uint64_t free_memory = 0;
    int multiprocessors = 0;
};

// The devices the CUDA runtime sees. Empty (with `why` set) when there is no driver or no GPU.
std::vector<DeviceInfo> list_devices(std::string* why = nullptr);
// CUDA runtime and driver versions as "13.0".
std::string runtime_version();
std::string driver_version();

}  // namespace tt::cuda
