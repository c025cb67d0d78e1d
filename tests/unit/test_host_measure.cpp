// The host's measured ceilings (src/backends/host/measure.h) and the planner's CPU figures from
// them (host_plan.h): the measurements give finite positive rates over the sizes asked for, the
// thread counts the doctor sweeps, and where Bandwidths' CPU side comes from (a record of this CPU,
// one of another CPU, none, measured now) and what bw.source's words say about it.
#include "backends/host/host_plan.h"
#include "backends/host/measure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

using namespace tt;

TEST(HostMeasure, ReadAndGemvRatesArePositive) {
    ThreadPool pool(2);
    const double read = host::measure_read_gbs(pool, size_t(32) << 20);
    EXPECT_TRUE(std::isfinite(read) && read > 0) << read;
    const double one = host::measure_read_gbs(pool, 1000);  // smaller than a line per thread: still one line each
    EXPECT_TRUE(std::isfinite(one) && one > 0) << one;
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
        host::GemvBench b(pool, dt, size_t(16) << 20);
        EXPECT_EQ(b.bytes() % (16 * host::GemvBench::k_cols * dtype_size(dt)), 0u);
        EXPECT_LE(b.bytes(), size_t(16) << 20);
        EXPECT_GT(b.bytes(), size_t(15) << 20);
        const double g = b.gbs(pool);
        EXPECT_TRUE(std::isfinite(g) && g > 0) << dtype_name(dt) << " " << g;
    }
    // INT8 and INT4 rows with their scales after them: 4096 + 4 and 2048 + 128 x 4 bytes a row.
    for (QuantScheme q : {QuantScheme::int8, QuantScheme::int4}) {
        host::GemvBench b(pool, q, size_t(16) << 20);
        const size_t row = q == QuantScheme::int8 ? 4100 : 2560;
        EXPECT_EQ(b.bytes() % (16 * row), 0u) << quant_scheme_name(q);
        EXPECT_LE(b.bytes(), size_t(16) << 20);
        EXPECT_GT(b.bytes(), (size_t(16) << 20) - 16 * row);
        const double g = b.gbs(pool);
        EXPECT_TRUE(std::isfinite(g) && g > 0) << quant_scheme_name(q) << " " << g;
    }
    host::GemvBench tiny(pool, DType::bf16, 1);  // at least 16 rows
    EXPECT_EQ(tiny.bytes(), size_t(16 * host::GemvBench::k_cols * 2));
    EXPECT_GT(host::measure_gemv_gbs(pool, DType::bf16, size_t(8) << 20), 0);
}

TEST(HostMeasure, SizesAndThreadCounts) {
    EXPECT_GE(host::dram_test_bytes(size_t(256) << 20), size_t(256) << 20);
    EXPECT_LE(host::dram_test_bytes(1), size_t(1) << 30);
    EXPECT_EQ(host::dram_test_bytes(size_t(2) << 30), size_t(2) << 30);  // a larger request stands
    EXPECT_EQ(host::gemv_thread_counts(1), (std::vector<int>{1}));
    EXPECT_EQ(host::gemv_thread_counts(2), (std::vector<int>{1, 2}));
    EXPECT_EQ(host::gemv_thread_counts(12), (std::vector<int>{1, 2, 4, 8, 12}));
    EXPECT_EQ(host::gemv_thread_counts(16), (std::vector<int>{1, 2, 4, 8, 16}));
    EXPECT_EQ(host::gemv_thread_counts(0), (std::vector<int>{1}));
}

TEST(HostPlan, CpuFiguresFromTheRecordMeasuredOrAssumed) {
    const int n_hw = int(std::max(1u, std::thread::hardware_concurrency()));
    DoctorRecord r;
    r.date = "2025-01-31T12:00:00Z";
    HostCeilings h;
    h.date = "2025-01-31T12:00:05Z";
    h.cpu = cpu_model_name();
    h.threads = n_hw;
    h.read_gbs = 40.0;
    h.gemv = {{1, 10.0}, {2, 18.0}, {4, 30.0}};
    r.host = h;

    const Bandwidths defaults;
    Bandwidths bw;
    auto src = host::fill_host_bandwidths(bw, &r, 3, false);
    EXPECT_EQ(src.from, host::RatesFrom::record);
    EXPECT_EQ(src.text, "CPU from doctor.json of 2025-01-31T12:00:05Z");
    EXPECT_DOUBLE_EQ(bw.host_read_gbs, 40.0);
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, 24.0);  // interpolated between 2 and 4 threads
    EXPECT_EQ(bw.cpu_threads, 3);
    bw = Bandwidths{};
    host::fill_host_bandwidths(bw, &r, 0, false);  // 0: every hardware thread
    EXPECT_EQ(bw.cpu_threads, n_hw);
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, h.gemv_gbs_at(n_hw));

    // Another CPU's figures are not used.
    r.host->cpu = "Some Other CPU 9000";
    bw = Bandwidths{};
    src = host::fill_host_bandwidths(bw, &r, 2, false);
    EXPECT_EQ(src.from, host::RatesFrom::assumed);
    EXPECT_NE(src.text.find("another CPU, Some Other CPU 9000"), std::string::npos) << src.text;
    EXPECT_DOUBLE_EQ(bw.host_read_gbs, defaults.host_read_gbs);
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, defaults.cpu_gemv_gbs);
    EXPECT_EQ(bw.cpu_threads, 2);

    // No host part, no record.
    r.host.reset();
    src = host::fill_host_bandwidths(bw, &r, 2, false);
    EXPECT_EQ(src.text, "CPU assumed (no host part in doctor.json: `thintensor doctor` stores one)");
    src = host::fill_host_bandwidths(bw, nullptr, 2, false);
    EXPECT_EQ(src.text, "CPU assumed (no doctor.json: `thintensor doctor` stores one)");

    // A quantized profile's CPU layers: the record's INT4 rate when it has one, else (a record
    // from before those were measured) assumed, saying so.
    r.host = h;
    r.host->gemv = {{1, 10.0, 9.0, 6.0}, {2, 18.0, 16.0, 11.0}, {4, 30.0, 27.0, 19.0}};
    bw = Bandwidths{};
    src = host::fill_host_bandwidths(bw, &r, 3, false, QuantScheme::int4);
    EXPECT_EQ(src.from, host::RatesFrom::record);
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, 15.0);
    EXPECT_EQ(bw.cpu_gemv_weights, QuantScheme::int4);
    for (HostGemvRate& g : r.host->gemv) g.int4_gbs = 0;
    bw = Bandwidths{};
    src = host::fill_host_bandwidths(bw, &r, 3, false, QuantScheme::int4);
    EXPECT_EQ(src.from, host::RatesFrom::assumed);
    EXPECT_EQ(src.text, "CPU assumed (doctor.json of 2025-01-31T12:00:05Z has no INT4 GEMV rate: `thintensor doctor` measures it)");
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, defaults.cpu_gemv_gbs);
    EXPECT_DOUBLE_EQ(bw.host_read_gbs, defaults.host_read_gbs);
    src = host::fill_host_bandwidths(bw, &r, 3, false, QuantScheme::int8);  // INT8's is there
    EXPECT_EQ(src.from, host::RatesFrom::record);
    EXPECT_DOUBLE_EQ(bw.cpu_gemv_gbs, 21.5);

    // Measured now, on bf16 rows and on INT4 rows.
    bw = Bandwidths{};
    src = host::fill_host_bandwidths(bw, nullptr, 1, true, QuantScheme::int4);
    EXPECT_EQ(src.from, host::RatesFrom::measured);
    EXPECT_GT(bw.cpu_gemv_gbs, 0);
    EXPECT_EQ(bw.cpu_gemv_weights, QuantScheme::int4);
    bw = Bandwidths{};
    src = host::fill_host_bandwidths(bw, nullptr, 1, true);
    EXPECT_EQ(src.from, host::RatesFrom::measured);
    EXPECT_EQ(src.text, "CPU measured now");
    EXPECT_GT(bw.host_read_gbs, 0);
    EXPECT_GT(bw.cpu_gemv_gbs, 0);
    EXPECT_EQ(bw.cpu_threads, 1);
}
