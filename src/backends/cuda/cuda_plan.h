// The hardware side of the fit planner for a CUDA device: its memory now and the link speeds (and
// the host's, for layers on the CPU), from doctor.json when it has a record of this GPU, else
// measured now (a second or so). Shared by the CUDA backend and `thintensor plan`, so both print
// the same plan. Host-only header.
#pragma once

#include "runtime/backend.h"
#include "runtime/gpu_split.h"
#include "runtime/plan.h"

namespace tt::cuda {

// Bandwidths of CUDA device `device`: doctor.json's record when it names this GPU, else measured
// now (h2d pinned, device copy, bf16 GEMM; about a second) when `measure`, else plan.h's assumed
// defaults. The CPU side (host read, host GEMV over `cpu_weights` rows with n_threads threads,
// 0 = every hardware thread) the same way on its own (host/host_plan.h): a record may hold one
// part and not the other. Disk and host-copy speeds are always assumed (see plan.h); bw.source
// says which part came from where.
Bandwidths device_bandwidths(int device, bool measure, int n_threads, QuantScheme cpu_weights = QuantScheme::none);
// True when `bw` came from neither doctor.json nor a measurement.
bool bandwidths_assumed(const Bandwidths& bw);

// What nvidia-smi counts for this process on CUDA device `device` beside the model: its context,
// and cuBLAS's handle and kernel images when already loaded (NVML's per-process figure), or 0 when
// NVML cannot say (the plan then assumes k_cuda_context). Read once, at the first call, which
// creates the context: every plan of the process counts the same bytes. So the callers that load
// kernels or create cuBLAS before planning (bench's ceilings, the backend) call it first, and a
// `plan` and a run of the same model agree on the minimum budget.
uint64_t process_context_bytes(int device);

// The plan input for `archive` on CUDA device `device` with `context` KV positions and the budgets
// of `opt`; `can_register`: whether the archive's mapping can be registered with the driver.
PlanInput device_plan_input(const Archive& archive, const ModelSpec& spec, const BackendOptions& opt, int device, int context,
                            bool can_register, bool measure);

// Whether this device can register read-only host memory (cudaHostRegisterReadOnly).
bool can_register_read_only(int device);

// Several GPUs (issue #22, runtime/gpu_split.h): `devices` (in order) with their memory now and
// doctor.json's copy bandwidth where it has a record of the GPU, and the link figures: the slowest
// link doctor.json recorded between consecutive devices (the layer split crosses those) and, when
// some pair has none, the assumed ones; in->link_source says which.
void fill_split_gpus(SplitInput& in, const std::vector<int>& devices);

}  // namespace tt::cuda
