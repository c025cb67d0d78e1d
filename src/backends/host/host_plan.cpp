#include "backends/host/host_plan.h"

#include "backends/host/measure.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace tt::host {

HostRatesSource fill_host_bandwidths(Bandwidths& bw, const DoctorRecord* record, int n_threads, bool measure,
                                     QuantScheme weights) {
    const int n_hw = int(std::max(1u, std::thread::hardware_concurrency()));
    const int n = n_threads > 0 ? n_threads : n_hw;
    bw.cpu_threads = n;
    bw.cpu_gemv_weights = weights;
    std::string why = "no host part in doctor.json: `thintensor doctor` stores one";
    if (!record) why = "no doctor.json: `thintensor doctor` stores one";
    if (record && record->host) {
        const HostCeilings& h = *record->host;
        if (h.cpu != cpu_model_name()) {
            why = fmt::format("doctor.json's host part is of another CPU, {}", h.cpu);
        } else if (h.read_gbs > 0 && h.gemv_gbs_at(n, weights) > 0) {
            bw.host_read_gbs = h.read_gbs;
            bw.cpu_gemv_gbs = h.gemv_gbs_at(n, weights);
            return {RatesFrom::record, fmt::format("CPU from doctor.json of {}", h.date)};
        } else if (h.read_gbs > 0 && h.gemv_gbs_at(n) > 0) {
            why = fmt::format("doctor.json of {} has no {} GEMV rate: `thintensor doctor` measures it", h.date,
                              quant_scheme_label(weights));
        } else {
            why = "doctor.json's host part has no rates";
        }
    }
    if (!measure) return {RatesFrom::assumed, fmt::format("CPU assumed ({})", why)};
    try {
        const size_t bytes = dram_test_bytes(size_t(256) << 20);
        ThreadPool all(n_hw);
        std::unique_ptr<ThreadPool> own;
        if (n != n_hw) own = std::make_unique<ThreadPool>(n);
        {
            GemvBench bench(all, DType::bf16, bytes);
            bw.host_read_gbs = measure_read_gbs(all, bench.matrix());
            if (weights == QuantScheme::none) bw.cpu_gemv_gbs = bench.gbs(own ? *own : all);
        }
        if (weights != QuantScheme::none) {
            GemvBench bench(all, weights, bytes);
            bw.cpu_gemv_gbs = bench.gbs(own ? *own : all);
        }
        return {RatesFrom::measured, "CPU measured now"};
    } catch (const Error& e) {
        const Bandwidths defaults;
        bw.host_read_gbs = defaults.host_read_gbs;
        bw.cpu_gemv_gbs = defaults.cpu_gemv_gbs;
        return {RatesFrom::assumed, fmt::format("CPU assumed (measuring failed: {})", e.what())};
    }
}

}  // namespace tt::host
