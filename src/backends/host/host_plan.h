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
// hardware thread). From `record`'s host part when it names this CPU (the GEMV rate interpolated
// between the measured thread counts); else, when `measure`, measured now (256 MiB or twice the
// last-level cache: well under a second); else the assumed defaults stay. Never throws: a
// failed measurement leaves the defaults and says why.
HostRatesSource fill_host_bandwidths(Bandwidths& bw, const DoctorRecord* record, int n_threads, bool measure);

}  // namespace tt::host
