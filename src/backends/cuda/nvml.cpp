// NVML through dlopen: the few entry points the doctor reads, declared here with the types of the
// stable NVML C ABI (every function returns an int status, 0 = success; a device is an opaque
// pointer), so that neither nvml.h nor libnvidia-ml is needed at build time. Versioned names
// (nvmlInit_v2, ..._v2) are the ones nvml.h maps the plain names to.
#include "backends/cuda/nvml.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <mutex>
#include <vector>

namespace tt::cuda {

namespace {

using nvml_device_t = struct nvml_device_st*;
constexpr int k_nvml_success = 0;
constexpr int k_nvml_temperature_gpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int k_nvml_clock_sm = 1;         // NVML_CLOCK_SM
constexpr int k_nvml_clock_mem = 2;        // NVML_CLOCK_MEM
constexpr int k_nvml_insufficient_size = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
// nvmlProcessInfo_v1_t, the layout of the unversioned nvmlDeviceGetComputeRunningProcesses (later
// versions append fields, and their struct changed size between driver releases).
struct NvmlProcess {
    unsigned pid;
    unsigned long long used;  // bytes; ~0ull when the driver cannot say
};

struct Nvml {
    void* lib = nullptr;
    bool ok = false;
    std::string why;
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    const char* (*error_string)(int) = nullptr;
    int (*driver_version)(char*, unsigned) = nullptr;
    int (*nvml_version)(char*, unsigned) = nullptr;
    int (*by_pci)(const char*, nvml_device_t*) = nullptr;
    int (*name)(nvml_device_t, char*, unsigned) = nullptr;
    int (*uuid)(nvml_device_t, char*, unsigned) = nullptr;
    int (*curr_gen)(nvml_device_t, unsigned*) = nullptr;
    int (*curr_width)(nvml_device_t, unsigned*) = nullptr;
    int (*max_gen)(nvml_device_t, unsigned*) = nullptr;
    int (*max_width)(nvml_device_t, unsigned*) = nullptr;
    int (*temperature)(nvml_device_t, int, unsigned*) = nullptr;
    int (*power)(nvml_device_t, unsigned*) = nullptr;
    int (*power_limit)(nvml_device_t, unsigned*) = nullptr;
    int (*max_clock)(nvml_device_t, int, unsigned*) = nullptr;
    int (*ecc_mode)(nvml_device_t, int*, int*) = nullptr;
    int (*processes)(nvml_device_t, unsigned*, NvmlProcess*) = nullptr;

    template <typename F>
    void bind(F& f, const char* sym) {
        f = reinterpret_cast<F>(dlsym(lib, sym));
    }

    std::string err(int rc) const {
        const char* s = error_string ? error_string(rc) : nullptr;
        return s ? std::string(s) : "NVML error " + std::to_string(rc);
    }

    Nvml() {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = dlerror();
            why = std::string("cannot load libnvidia-ml.so.1 (the NVIDIA driver's NVML): ") + (e ? e : "unknown");
            return;
        }
        bind(init, "nvmlInit_v2");
        bind(shutdown, "nvmlShutdown");
        bind(error_string, "nvmlErrorString");
        bind(driver_version, "nvmlSystemGetDriverVersion");
        bind(nvml_version, "nvmlSystemGetNVMLVersion");
        bind(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
        bind(name, "nvmlDeviceGetName");
        bind(uuid, "nvmlDeviceGetUUID");
        bind(curr_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
        bind(curr_width, "nvmlDeviceGetCurrPcieLinkWidth");
        bind(max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
        bind(max_width, "nvmlDeviceGetMaxPcieLinkWidth");
        bind(temperature, "nvmlDeviceGetTemperature");
        bind(power, "nvmlDeviceGetPowerUsage");
        bind(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
        bind(max_clock, "nvmlDeviceGetMaxClockInfo");
        bind(ecc_mode, "nvmlDeviceGetEccMode");
        bind(processes, "nvmlDeviceGetComputeRunningProcesses");
        if (!init || !shutdown || !by_pci) {
            why = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2 (driver too old?)";
            return;
        }
        const int rc = init();
        if (rc != k_nvml_success) {
            why = "nvmlInit failed: " + err(rc);
            return;
        }
        ok = true;
    }
    ~Nvml() {
        if (ok) shutdown();
        if (lib) dlclose(lib);
    }
};

Nvml& nvml() {
    // note: a function-local static, so the library is loaded on first use: by the doctor, and by
    // a plan on the GPU (nvml_process_memory).
    static Nvml n;
    return n;
}

// NVML's handle of CUDA device `device`, matched through its PCI bus id (NVML numbers devices its
// own way, and CUDA_VISIBLE_DEVICES renumbers CUDA's); nullptr with `why` set when there is none.
nvml_device_t handle_of(int device, std::string& bus_id, std::string& why) {
    Nvml& n = nvml();
    char bus[64] = {};
    if (const cudaError_t e = cudaDeviceGetPCIBusId(bus, sizeof bus, device); e != cudaSuccess) {
        why = std::string("cudaDeviceGetPCIBusId failed: ") + cudaGetErrorString(e);
        cudaGetLastError();
        return nullptr;
    }
    bus_id = bus;
    if (!n.ok) {
        why = n.why;
        return nullptr;
    }
    nvml_device_t h = nullptr;
    if (const int rc = n.by_pci(bus, &h); rc != k_nvml_success) {
        why = "NVML has no device at PCI bus " + bus_id + ": " + n.err(rc);
        return nullptr;
    }
    return h;
}

int query(int (*f)(nvml_device_t, unsigned*), nvml_device_t d) {
    unsigned v = 0;
    return f && f(d, &v) == k_nvml_success ? int(v) : -1;
}

}  // namespace

NvmlSystem nvml_system() {
    Nvml& n = nvml();
    NvmlSystem s;
    s.available = n.ok;
    s.why = n.why;
    if (!n.ok) return s;
    char buf[96] = {};
    if (n.driver_version && n.driver_version(buf, sizeof buf) == k_nvml_success) s.driver_version = buf;
    buf[0] = 0;
    if (n.nvml_version && n.nvml_version(buf, sizeof buf) == k_nvml_success) s.nvml_version = buf;
    return s;
}

NvmlDevice nvml_device(int device) {
    Nvml& n = nvml();
    NvmlDevice d;
    const nvml_device_t h = handle_of(device, d.pci_bus_id, d.why);
    if (!h) return d;
    d.found = true;
    char buf[96] = {};
    if (n.name && n.name(h, buf, sizeof buf) == k_nvml_success) d.name = buf;
    buf[0] = 0;
    if (n.uuid && n.uuid(h, buf, sizeof buf) == k_nvml_success) d.uuid = buf;
    d.pcie_gen = query(n.curr_gen, h);
    d.pcie_width = query(n.curr_width, h);
    d.pcie_gen_max = query(n.max_gen, h);
    d.pcie_width_max = query(n.max_width, h);
    unsigned v = 0;
    if (n.temperature && n.temperature(h, k_nvml_temperature_gpu, &v) == k_nvml_success) d.temperature_c = int(v);
    if (n.power && n.power(h, &v) == k_nvml_success) d.power_w = v / 1000.0;  // milliwatts
    if (n.power_limit && n.power_limit(h, &v) == k_nvml_success) d.power_limit_w = v / 1000.0;
    if (n.max_clock && n.max_clock(h, k_nvml_clock_sm, &v) == k_nvml_success) d.sm_clock_max_mhz = int(v);
    if (n.max_clock && n.max_clock(h, k_nvml_clock_mem, &v) == k_nvml_success) d.mem_clock_max_mhz = int(v);
    int cur = 0, pending = 0;
    if (n.ecc_mode && n.ecc_mode(h, &cur, &pending) == k_nvml_success) d.ecc_enabled = cur ? 1 : 0;
    return d;
}

int64_t nvml_process_memory(int device, std::string* why) {
    std::string bus, reason;
    auto fail = [&](std::string r) -> int64_t {
        if (why) *why = std::move(r);
        return -1;
    };
    const nvml_device_t h = handle_of(device, bus, reason);
    if (!h) return fail(reason);
    Nvml& n = nvml();
    if (!n.processes) return fail("libnvidia-ml.so.1 lacks nvmlDeviceGetComputeRunningProcesses");
    std::vector<NvmlProcess> list(64);
    unsigned count = unsigned(list.size());
    int rc = n.processes(h, &count, list.data());
    if (rc == k_nvml_insufficient_size) {  // count now holds the number listed
        list.resize(size_t(count) + 16);
        count = unsigned(list.size());
        rc = n.processes(h, &count, list.data());
    }
    if (rc != k_nvml_success) return fail("nvmlDeviceGetComputeRunningProcesses: " + n.err(rc));
    const unsigned me = unsigned(getpid());
    for (unsigned i = 0; i < count && i < list.size(); ++i)
        if (list[i].pid == me)
            return list[i].used == ~0ull ? fail("NVML lists this process without its memory") : int64_t(list[i].used);
    return fail("NVML does not list this process on the GPU at " + bus);
}

}  // namespace tt::cuda
