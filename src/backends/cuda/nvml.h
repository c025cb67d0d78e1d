// What the NVIDIA driver's management library (NVML) says about a GPU: PCIe link, clocks, power,
// temperature, ECC, driver version. NVML is loaded at run time with dlopen("libnvidia-ml.so.1"),
// which the driver installs, so the binary neither links nor needs it: without it every query
// answers "unavailable" with the reason. Host-only header.
#pragma once

#include <cstdint>
#include <string>

namespace tt::cuda {

struct NvmlSystem {
    bool available = false;
    std::string why;             // why NVML is unavailable (library missing, init failed)
    std::string driver_version;  // "580.159.03"
    std::string nvml_version;
};

// Fields the driver could not report stay at -1 / empty.
struct NvmlDevice {
    bool found = false;
    std::string why;             // why the device could not be described
    std::string pci_bus_id;      // "0000:19:00.0"
    std::string name, uuid;
    int pcie_gen = -1, pcie_width = -1;          // current link (may idle down to a lower generation)
    int pcie_gen_max = -1, pcie_width_max = -1;  // the most the GPU and its slot support
    int temperature_c = -1;
    double power_w = -1, power_limit_w = -1;
    int sm_clock_max_mhz = -1, mem_clock_max_mhz = -1;
    int ecc_enabled = -1;        // 1 on, 0 off, -1 unknown / not supported
};

NvmlSystem nvml_system();
// The NVML view of CUDA device `device`, matched through its PCI bus id: NVML numbers devices its
// own way, and CUDA_VISIBLE_DEVICES renumbers CUDA's.
NvmlDevice nvml_device(int device);
// The device memory nvidia-smi counts for this process on CUDA device `device` (its context, the
// kernel images loaded, its allocations), or -1 with `why` set when NVML cannot say (no NVML, or
// the process not listed, e.g. from a PID namespace NVML does not see into).
int64_t nvml_process_memory(int device, std::string* why = nullptr);

}  // namespace tt::cuda
