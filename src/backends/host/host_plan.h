// The CPU side of the fit planner's bandwidths (issue #16): the host's memory read bandwidth and
// the host GEMV's rate with the threads in use, from doctor.json's host part when it describes
// this CPU, else measured now, else plan.h's assumed figures. Shared by the CUDA backend's plan
// input (cuda/cuda_plan.cpp) and `thintensor plan`, so both plan with the same figures.
#pragma once

#include "runtime/doctor.h"
#include "runtime/plan.h"

#include <string>

namespace tt::host {

enum class RatesFrom { record, measured, assumed };

struct HostRatesSource {
    RatesFrom from = RatesFrom::assumed;
    // For Bandwidths::source: "CPU from doctor.json of DATE", "CPU measured now", "CPU assumed (why)".
    std::string text;
};

// Sets bw.host_read_gbs, bw.cpu_gemv_gbs and bw.cpu_threads for n_threads threads (<= 0: every
// hardware thread), the GEMV rate over the rows `weights` names (none: bf16; INT8 / INT4 rows
// with their scales for a quantized profile), and bw.cpu_gemv_weights. From `record`'s host part
// when it names this CPU and holds that rate (interpolated between the measured thread counts);
// else, when `measure`, measured now (256 MiB or twice the last-level cache: well under a second
// per kind of rows); else the assumed defaults stay. Never throws: a failed measurement leaves
// the defaults and says why.
HostRatesSource fill_host_bandwidths(Bandwidths& bw, const DoctorRecord* record, int n_threads, bool measure,
                                     QuantScheme weights = QuantScheme::none);

}  // namespace tt::host
