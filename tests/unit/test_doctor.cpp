// The CPU side of `thintensor doctor` (src/runtime/doctor.h): the report and its --strict rule, the
// doctor.json record (round trip, malformed records, the host part, records from before it, the
// host GEMV rate between measured thread counts), the pinned-memory limit against setrlimit, the
// model-cache check against std::filesystem::space, and the python probe against scripted
// interpreters (versions, import errors, crashes, hangs) and the real python3 when there is one.
#include "core/progress.h"
#include "runtime/doctor.h"

#include "core/error.h"
#include "core/output_file.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace tt;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "tt_doctor_XXXXXX").string();
        TT_ASSERT(mkdtemp(tmpl.data()) != nullptr);
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// An executable shell script standing in for python3.
std::string script(const TempDir& d, const std::string& name, const std::string& body) {
    const fs::path p = d.path / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
}

GpuCeilings sample_gpu(int device) {
    GpuCeilings g;
    g.device = device;
    g.name = "NVIDIA H200";
    g.pci_bus_id = "0000:19:00.0";
    g.d2d_gbs = 4301.5;
    g.h2d_pinned_gbs = 53.25;
    g.h2d_pageable_gbs = 21.5;
    g.d2h_gbs = 54.75;
    g.gemm_bf16_tflops = 781.0;
    return g;
}

HostCeilings sample_host() {
    HostCeilings h;
    h.date = "2025-01-31T12:00:05Z";
    h.cpu = "Intel(R) Xeon(R) Platinum 8480+";
    h.threads = 16;
    h.isa = "avx512";
    h.read_gbs = 61.5;
    h.gemv = {{1, 11.0}, {2, 20.0}, {4, 34.0}, {8, 48.0}, {16, 52.0}};
    return h;
}

}  // namespace

TEST(Doctor, ReportStrictRuleTableAndJson) {
    DoctorReport r;
    r.add("gpu", "device", "no CUDA GPU: none here", CheckStatus::missing);
    r.add("cache", "free disk", "1 GiB free", CheckStatus::warn, {{"free_bytes", 1}});
    r.add("host", "cpu + memory", "x", CheckStatus::ok);
    EXPECT_EQ(r.count(CheckStatus::missing), 1);
    EXPECT_EQ(r.count(CheckStatus::warn), 1);
    EXPECT_FALSE(r.strict_ok());  // missing fails --strict
    r.items[0].status = CheckStatus::warn;
    EXPECT_TRUE(r.strict_ok());  // warnings pass
    r.add("kernels", "gemv", "rel err f32 1.0e+00", CheckStatus::fail);
    EXPECT_FALSE(r.strict_ok());

    const std::string t = r.table();
    EXPECT_NE(t.find("GROUP"), std::string::npos);
    EXPECT_NE(t.find("FAIL"), std::string::npos);
    EXPECT_NE(t.find("no CUDA GPU: none here"), std::string::npos);
    EXPECT_NE(t.find("1 ok, 2 warn, 1 failed, 0 missing"), std::string::npos) << t;
    // Columns line up: every row has its status at the same offset as the header's STATUS.
    const size_t col = t.find("STATUS");
    size_t line = t.find('\n') + 1;
    for (const char* s : {"warn", "warn", "ok", "FAIL"}) {
        EXPECT_EQ(t.compare(line + col, std::strlen(s), s), 0) << t;
        line = t.find('\n', line) + 1;
    }

    const json j = r.to_json();
    ASSERT_EQ(j["items"].size(), 4u);
    EXPECT_EQ(j["items"][3]["status"], "FAIL");
    EXPECT_EQ(j["items"][1]["data"]["free_bytes"], 1);
    EXPECT_EQ(j["summary"]["fail"], 1);
    EXPECT_EQ(j["summary"]["strict_ok"], false);
}

TEST(Doctor, RecordRoundTripThroughTheFile) {
    TempDir d;
    DoctorRecord r;
    r.date = "2025-01-31T12:00:00Z";
    r.hostname = "gpu-host";
    r.thintensor_version = "0.1.0";
    r.gpus = {sample_gpu(0), sample_gpu(1)};
    r.gpus[1].pci_bus_id = "0000:2a:00.0";
    const std::string path = (d.path / "sub" / "doctor.json").string();
    save_doctor_record(r, path);  // creates the directory
    const auto back = load_doctor_record(path);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->date, r.date);
    EXPECT_EQ(back->hostname, "gpu-host");
    ASSERT_EQ(back->gpus.size(), 2u);
    const GpuCeilings* g1 = back->gpu(1);
    ASSERT_NE(g1, nullptr);
    EXPECT_EQ(g1->pci_bus_id, "0000:2a:00.0");
    EXPECT_EQ(g1->name, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(g1->d2d_gbs, 4301.5);
    EXPECT_DOUBLE_EQ(g1->h2d_pinned_gbs, 53.25);
    EXPECT_DOUBLE_EQ(g1->h2d_pageable_gbs, 21.5);
    EXPECT_DOUBLE_EQ(g1->d2h_gbs, 54.75);
    EXPECT_DOUBLE_EQ(g1->gemm_bf16_tflops, 781.0);
    EXPECT_EQ(back->gpu(7), nullptr);
    // The file is the documented JSON (docs/DOCTOR.md): version 1, one object per GPU.
    const json j = json::parse(read_file(path));
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["gpus"][0]["device"], 0);
    EXPECT_EQ(j["gpus"][0]["gemm_bf16_tflops"], 781.0);
    EXPECT_EQ(format_utc_iso8601().size(), 20u);
    EXPECT_EQ(format_utc_iso8601(0), "1970-01-01T00:00:00Z");
}

TEST(Doctor, HostPartRoundTripsThroughTheFile) {
    TempDir d;
    DoctorRecord r;
    r.date = "2025-01-31T12:00:00Z";
    r.gpus = {sample_gpu(0)};
    r.host = sample_host();
    const std::string path = (d.path / "doctor.json").string();
    save_doctor_record(r, path);
    const auto back = load_doctor_record(path);
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(back->host.has_value());
    const HostCeilings& h = *back->host;
    EXPECT_EQ(h.date, "2025-01-31T12:00:05Z");
    EXPECT_EQ(h.cpu, "Intel(R) Xeon(R) Platinum 8480+");
    EXPECT_EQ(h.threads, 16);
    EXPECT_EQ(h.isa, "avx512");
    EXPECT_EQ(h.gemv_dtype, "bf16");
    EXPECT_DOUBLE_EQ(h.read_gbs, 61.5);
    ASSERT_EQ(h.gemv.size(), 5u);
    EXPECT_EQ(h.gemv[3].threads, 8);
    EXPECT_DOUBLE_EQ(h.gemv[3].gemv_gbs, 48.0);
    ASSERT_NE(back->gpu(0), nullptr);  // the GPU part beside it is unchanged
    EXPECT_DOUBLE_EQ(back->gpu(0)->d2d_gbs, 4301.5);
    // The documented JSON (docs/DOCTOR.md): still version 1, a "host" object with the rates as a list.
    const json j = json::parse(read_file(path));
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["host"]["read_gbs"], 61.5);
    EXPECT_EQ(j["host"]["gemv"][0], json({{"threads", 1}, {"gemv_gbs", 11.0}}));
    EXPECT_EQ(j["host"], host_ceilings_to_json(sample_host()));

    // A CPU-only record: no GPU, the host part alone.
    r.gpus.clear();
    const DoctorRecord cpu_only = doctor_record_from_json(doctor_record_to_json(r), "cpu-only.json");
    EXPECT_TRUE(cpu_only.gpus.empty());
    ASSERT_TRUE(cpu_only.host.has_value());
    EXPECT_EQ(cpu_only.host->gemv.size(), 5u);
}

TEST(Doctor, RecordsWithoutAHostPartStillLoad) {
    // A record as the build before the host part wrote it (docs/DOCTOR.md's example, verbatim).
    const json old = json::parse(R"({
      "version": 1, "date": "2025-01-31T12:00:00Z", "hostname": "gpu-host", "thintensor_version": "0.1.0",
      "gpus": [{"device": 0, "name": "NVIDIA H200", "pci_bus_id": "00000000:19:00.0", "d2d_gbs": 4300.0,
                "h2d_pinned_gbs": 53.0, "h2d_pageable_gbs": 20.0, "d2h_gbs": 54.0, "gemm_bf16_tflops": 780.0}]})");
    const DoctorRecord r = doctor_record_from_json(old, "old.json");
    EXPECT_FALSE(r.host.has_value());
    ASSERT_NE(r.gpu(0), nullptr);
    EXPECT_DOUBLE_EQ(r.gpu(0)->h2d_pinned_gbs, 53.0);
    EXPECT_FALSE(doctor_record_to_json(r).contains("host"));  // and writes back as it was
    json null_host = old;
    null_host["host"] = nullptr;
    EXPECT_FALSE(doctor_record_from_json(null_host, "old.json").host.has_value());
    // Optional fields of the host part: isa and gemv_dtype.
    json minimal = old;
    minimal["host"] = {{"date", "d"}, {"cpu", "c"}, {"threads", 2}, {"read_gbs", 9.5},
                       {"gemv", json::array({{{"threads", 1}, {"gemv_gbs", 4.0}}})}};
    const DoctorRecord m = doctor_record_from_json(minimal, "min.json");
    ASSERT_TRUE(m.host.has_value());
    EXPECT_EQ(m.host->isa, "");
    EXPECT_EQ(m.host->gemv_dtype, "bf16");
}

TEST(Doctor, MalformedHostPartsNameTheField) {
    DoctorRecord r;
    r.date = "2025-01-31T12:00:00Z";
    r.host = sample_host();
    const json good = doctor_record_to_json(r);
    auto expect_error = [](const json& j, const std::string& needle) {
        try {
            doctor_record_from_json(j, "rec.json");
            ADD_FAILURE() << "accepted a record with " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    json j = good;
    j["host"].erase("read_gbs");
    expect_error(j, "rec.json: host: field 'read_gbs' missing");
    j = good;
    j["host"]["threads"] = 0;
    expect_error(j, "host: field 'threads' is 0 (expected a whole number >= 1)");
    j = good;
    j["host"]["gemv"][2]["threads"] = 2.5;
    expect_error(j, "host.gemv[2]: field 'threads' is 2.5");
    j = good;
    j["host"]["gemv"][1]["gemv_gbs"] = "fast";
    expect_error(j, "host.gemv[1]: field 'gemv_gbs' is not a number");
    j = good;
    j["host"]["gemv"][1]["threads"] = 1;
    expect_error(j, "lists 1 threads twice");
    j = good;
    j["host"]["gemv"] = 3;
    expect_error(j, "host: field 'gemv' is not an array");
    j = good;
    j["host"] = "fast";
    expect_error(j, "host: not an object");
}

TEST(Doctor, HostGemvRateInterpolatesBetweenMeasuredThreadCounts) {
    HostCeilings h = sample_host();  // 1: 11, 2: 20, 4: 34, 8: 48, 16: 52 GB/s
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(1), 11.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(4), 34.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(3), 27.0);     // halfway between 2 and 4
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(6), 41.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(12), 50.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(16), 52.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(64), 52.0);    // more threads than cores: the largest count's rate
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(0), 52.0);     // 0 = every hardware thread (16)
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(-1), 52.0);
    // Below the smallest count measured: proportional to the threads.
    h.gemv = {{2, 20.0}, {4, 34.0}};
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(1), 10.0);
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(0), 34.0);     // all 16 threads: clamped to the 4 measured
    // Loading sorts the counts, so a hand-edited record in any order interpolates the same.
    DoctorRecord r;
    r.date = "d";
    r.host = sample_host();
    std::reverse(r.host->gemv.begin(), r.host->gemv.end());
    const DoctorRecord back = doctor_record_from_json(doctor_record_to_json(r), "rec.json");
    EXPECT_DOUBLE_EQ(back.host->gemv_gbs_at(3), 27.0);
    EXPECT_EQ(back.host->gemv.front().threads, 1);
    h.gemv.clear();
    EXPECT_DOUBLE_EQ(h.gemv_gbs_at(4), 0.0);      // nothing measured
}

TEST(Doctor, QuantizedGemvRatesRoundTripAndInterpolate) {
    // The INT8 and INT4 rows' rates beside bf16's: written, read back, interpolated as bf16's.
    DoctorRecord r;
    r.date = "d";
    r.host = sample_host();
    for (HostGemvRate& g : r.host->gemv) g.int8_gbs = g.gemv_gbs * 0.9, g.int4_gbs = g.gemv_gbs * 0.5;
    const json j = doctor_record_to_json(r);
    EXPECT_EQ(j["host"]["gemv"][0], json({{"threads", 1}, {"gemv_gbs", 11.0}, {"int8_gbs", 11.0 * 0.9}, {"int4_gbs", 5.5}}));
    const DoctorRecord back = doctor_record_from_json(j, "rec.json");
    EXPECT_DOUBLE_EQ(back.host->gemv_gbs_at(3, QuantScheme::int4), 13.5);  // halfway between 10 and 17
    EXPECT_DOUBLE_EQ(back.host->gemv_gbs_at(16, QuantScheme::int8), 52.0 * 0.9);
    EXPECT_DOUBLE_EQ(back.host->gemv_gbs_at(3, QuantScheme::none), 27.0);
    // A record from before the quantized rates: bf16's stand, INT8 / INT4 are unknown (0), also
    // when only some thread counts have them.
    HostCeilings old = sample_host();
    EXPECT_DOUBLE_EQ(old.gemv_gbs_at(4, QuantScheme::int4), 0.0);
    EXPECT_DOUBLE_EQ(old.gemv_gbs_at(4), 34.0);
    old.gemv[0].int4_gbs = 5.0;
    EXPECT_DOUBLE_EQ(old.gemv_gbs_at(1, QuantScheme::int4), 0.0);
    json bad = j;
    bad["host"]["gemv"][2]["int4_gbs"] = -1;
    try {
        doctor_record_from_json(bad, "rec.json");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("host.gemv[2]: field 'int4_gbs' is -1"), std::string::npos) << e.what();
    }
}

TEST(Doctor, PeerLinksRoundTripAndAreOptional) {
    // Several GPUs (issue #22): the copy between every ordered pair, written only when measured.
    DoctorRecord r;
    r.date = "d";
    r.gpus = {sample_gpu(0), sample_gpu(1)};
    r.links = {{0, 1, true, 391.5, 6.5}, {1, 0, false, 21.0, 14.0}};
    const json j = doctor_record_to_json(r);
    EXPECT_EQ(j["links"][0], json({{"from", 0}, {"to", 1}, {"p2p", true}, {"gbs", 391.5}, {"latency_us", 6.5}}));
    const DoctorRecord back = doctor_record_from_json(j, "rec.json");
    ASSERT_NE(back.link(1, 0), nullptr);
    EXPECT_FALSE(back.link(1, 0)->p2p);
    EXPECT_DOUBLE_EQ(back.link(0, 1)->gbs, 391.5);
    EXPECT_DOUBLE_EQ(back.link(0, 1)->latency_us, 6.5);
    EXPECT_EQ(back.link(0, 2), nullptr);
    r.links.clear();
    EXPECT_FALSE(doctor_record_to_json(r).contains("links"));  // one GPU: no links field
    EXPECT_TRUE(doctor_record_from_json(doctor_record_to_json(r), "rec.json").links.empty());
    auto expect_error = [](json bad, const std::string& what) {
        try {
            doctor_record_from_json(bad, "rec.json");
            FAIL() << "expected an error containing " << what;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    json bad = j;
    bad["links"][1]["p2p"] = "yes";
    expect_error(bad, "rec.json: links[1]: field 'p2p' is not true or false");
    bad = j;
    bad["links"][0]["to"] = 0;
    expect_error(bad, "rec.json: links[0]: a link from device 0 to itself");
    bad = j;
    bad["links"] = 5;
    expect_error(bad, "rec.json: field 'links' is not an array");
}

TEST(Doctor, CpuModelNameIsTheFirstOfProcCpuinfo) {
    const std::string name = cpu_model_name();
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name.front(), ' ');
    EXPECT_NE(name.back(), ' ');
    std::ifstream info("/proc/cpuinfo");
    if (!info) GTEST_SKIP() << "no /proc/cpuinfo";
    for (std::string line; std::getline(info, line);)
        if (line.rfind("model name", 0) == 0) {
            EXPECT_NE(line.find(name), std::string::npos) << line;
            break;
        }
}

TEST(Doctor, RecordDefaultPathFollowsThintensorHome) {
    TempDir d;
    const char* old = std::getenv("THINTENSOR_HOME");
    const std::string saved = old ? old : "";
    setenv("THINTENSOR_HOME", d.path.c_str(), 1);
    EXPECT_EQ(doctor_record_path(), (d.path / "doctor.json").string());
    EXPECT_FALSE(load_doctor_record().has_value());  // none yet
    DoctorRecord r;
    r.date = format_utc_iso8601();
    r.gpus = {sample_gpu(0)};
    save_doctor_record(r, doctor_record_path());
    const auto back = load_doctor_record();
    if (old) setenv("THINTENSOR_HOME", saved.c_str(), 1);
    else unsetenv("THINTENSOR_HOME");
    ASSERT_TRUE(back.has_value());
    ASSERT_NE(back->gpu(0), nullptr);
    EXPECT_DOUBLE_EQ(back->gpu(0)->d2h_gbs, 54.75);
}

TEST(Doctor, MalformedRecordsNameTheFieldAndAreIgnoredOnLoad) {
    DoctorRecord r;
    r.date = "2025-01-31T12:00:00Z";
    r.gpus = {sample_gpu(0)};
    const json good = doctor_record_to_json(r);
    auto expect_error = [](const json& j, const std::string& needle) {
        try {
            doctor_record_from_json(j, "rec.json");
            ADD_FAILURE() << "accepted a record lacking " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("rec.json"), std::string::npos) << e.what();
        }
    };
    json j = good;
    j["gpus"][0].erase("d2d_gbs");
    expect_error(j, "gpus[0]: field 'd2d_gbs' missing");
    j = good;
    j["gpus"][0]["h2d_pinned_gbs"] = "fast";
    expect_error(j, "'h2d_pinned_gbs' is not a number");
    j = good;
    j["gpus"][0]["gemm_bf16_tflops"] = -3;
    expect_error(j, "'gemm_bf16_tflops' is -3");
    j = good;
    j["version"] = 2;
    expect_error(j, "record version 2");
    j = good;
    j["gpus"] = 5;
    expect_error(j, "'gpus' is not an array");
    expect_error(json::array(), "not a JSON object");

    TempDir d;
    const std::string path = (d.path / "doctor.json").string();
    EXPECT_FALSE(load_doctor_record(path).has_value());  // absent
    write_file_atomic(path, "{\"version\": 1, \"gpus\": [");
    EXPECT_FALSE(load_doctor_record(path).has_value());  // truncated: a warning, no record
    write_file_atomic(path, good.dump());
    EXPECT_TRUE(load_doctor_record(path).has_value());
}

TEST(Doctor, PcieLinkBandwidth) {
    EXPECT_NEAR(pcie_link_gbs(5, 16), 63.0, 0.05);
    EXPECT_NEAR(pcie_link_gbs(4, 16), 31.5, 0.05);
    EXPECT_NEAR(pcie_link_gbs(3, 8), 7.88, 0.01);
    EXPECT_NEAR(pcie_link_gbs(1, 1), 0.25, 1e-9);
    EXPECT_EQ(pcie_link_gbs(0, 16), 0.0);   // unknown generation
    EXPECT_EQ(pcie_link_gbs(5, -1), 0.0);   // unknown width
    EXPECT_EQ(pcie_link_gbs(9, 16), 0.0);
}

TEST(Doctor, MemlockLimitFollowsSetrlimit) {
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &saved), 0);
    const CheckItem now = check_memlock();
    EXPECT_EQ(now.data["unlimited"], saved.rlim_cur == RLIM_INFINITY);
    if (saved.rlim_cur != RLIM_INFINITY) {
        EXPECT_EQ(now.data["soft_bytes"], uint64_t(saved.rlim_cur));
    }

    // Lowering the soft limit is always allowed: 64 KiB is far below half the RAM, so a warning.
    rlimit low = saved;
    low.rlim_cur = 64 << 10;
    if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < low.rlim_cur) low.rlim_cur = saved.rlim_max;
    ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &low), 0);
    const CheckItem capped = check_memlock();
    ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &saved), 0);
    EXPECT_EQ(capped.status, CheckStatus::warn);
    EXPECT_EQ(capped.data["soft_bytes"], uint64_t(low.rlim_cur));
    EXPECT_NE(capped.value.find("ulimit -l"), std::string::npos) << capped.value;
}

TEST(Doctor, ModelCacheFreeDiskAndReadSpeed) {
    TempDir d;
    const std::string dir = (d.path / "cache").string();  // created by the check
    const auto items = check_model_cache(dir, uint64_t(8) << 20);
    ASSERT_EQ(items.size(), 2u);
    const CheckItem& disk = items[0];
    const CheckItem& speed = items[1];
    EXPECT_TRUE(fs::is_directory(dir));
    // Free space against std::filesystem::space (the same statvfs fields, read independently; other
    // processes may write in between, hence the slack).
    const auto sp = fs::space(dir);
    const double free_bytes = disk.data["free_bytes"].get<double>();
    EXPECT_NEAR(free_bytes, double(sp.available), 0.02 * double(sp.capacity) + double(64 << 20));
    EXPECT_EQ(disk.data["total_bytes"].get<uint64_t>(), sp.capacity);
    EXPECT_NE(speed.status, CheckStatus::fail) << speed.value;
    EXPECT_NE(speed.status, CheckStatus::missing) << speed.value;
    EXPECT_EQ(speed.data["test_bytes"], uint64_t(8) << 20);
    EXPECT_GT(speed.data["read_gbs"].get<double>(), 0.0);
    EXPECT_GT(speed.data["write_gbs"].get<double>(), 0.0);
    EXPECT_NE(speed.value.find("GB/s cold read"), std::string::npos) << speed.value;
    EXPECT_TRUE(fs::is_empty(dir)) << "the test file was left behind";

    const auto skipped = check_model_cache(dir, 0);
    EXPECT_EQ(skipped[1].status, CheckStatus::missing);
}

TEST(Doctor, ModelCacheThatCannotBeCreatedFails) {
    TempDir d;
    const fs::path file = d.path / "plain-file";
    std::ofstream(file) << "x";
    const std::string dir = (file / "cache").string();  // below a regular file
    const auto items = check_model_cache(dir, 1 << 20);
    ASSERT_EQ(items.size(), 2u);
    for (const auto& it : items) {
        EXPECT_EQ(it.status, CheckStatus::fail);
        EXPECT_NE(it.value.find(dir), std::string::npos) << it.value;
    }
}

TEST(Doctor, PythonProbeReportsVersions) {
    TempDir d;
    const std::string py = script(d, "python3",
                                  "echo 'some warning on the way'\n"
                                  "echo 'THINTENSOR_DOCTOR {\"python\": \"3.11.9\", \"torch\": \"2.5.1+cu124\", "
                                  "\"torch_cuda\": \"12.4\", \"cuda_available\": true, \"transformers\": \"4.46.3\"}'");
    const CheckItem it = check_python(py, 10);
    EXPECT_EQ(it.status, CheckStatus::ok) << it.value;
    EXPECT_EQ(it.value, "python 3.11.9: torch 2.5.1+cu124 (CUDA 12.4), transformers 4.46.3; torch sees a CUDA GPU");
    EXPECT_EQ(it.data["probe"]["transformers"], "4.46.3");
    EXPECT_EQ(it.data["path"], py);
}

TEST(Doctor, PythonProbeReportsWhatIsMissing) {
    TempDir d;
    const std::string no_torch = script(
        d, "py_no_torch",
        "echo 'THINTENSOR_DOCTOR {\"python\": \"3.12.3\", \"torch_error\": \"ModuleNotFoundError: No module named "
        "torch\", \"transformers\": \"4.46.3\"}'");
    CheckItem it = check_python(no_torch, 10);
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_NE(it.value.find("torch: ModuleNotFoundError: No module named torch"), std::string::npos) << it.value;
    EXPECT_NE(it.value.find("validate --hf-model"), std::string::npos) << it.value;

    const std::string crash = script(d, "py_crash", "echo 'Traceback (most recent call last):'\necho 'SyntaxError: bad'\nexit 3");
    it = check_python(crash, 10);
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_NE(it.value.find("exit 3"), std::string::npos) << it.value;
    EXPECT_NE(it.value.find("SyntaxError: bad"), std::string::npos) << it.value;

    it = check_python((d.path / "no-such-python").string(), 10);
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_NE(it.value.find("not found"), std::string::npos) << it.value;
    it = check_python("tt-no-such-interpreter-on-path", 10);
    EXPECT_NE(it.value.find("not found on PATH"), std::string::npos) << it.value;
}

TEST(Doctor, PythonProbeTimesOut) {
    TempDir d;
    const std::string hang = script(d, "py_hang", "sleep 30");
    const auto t0 = std::chrono::steady_clock::now();
    const CheckItem it = check_python(hang, 0.5);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_NE(it.value.find("no answer within 0.5 s"), std::string::npos) << it.value;
    EXPECT_LT(took, 5.0);  // the interpreter and its sleep were killed, not waited for
}

// A probe answer of the wrong shape is reported naming the field, not as a library type error.
TEST(Doctor, PythonProbeWithMalformedOutput) {
    TempDir d;
    const std::string number = script(d, "py_number",
                                      "echo 'THINTENSOR_DOCTOR {\"python\": \"3.12.3\", \"torch\": 2, \"transformers\": \"4.46.3\"}'");
    CheckItem it = check_python(number, 10);
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_EQ(it.value, "unreadable probe output (" + number + "'s probe output: field 'torch' is not a string)");
    const std::string flag = script(d, "py_flag",
                                    "echo 'THINTENSOR_DOCTOR {\"python\": \"3.12.3\", \"torch\": \"2.5\", "
                                    "\"transformers\": \"4.46.3\", \"cuda_available\": \"yes\"}'");
    it = check_python(flag, 10);
    EXPECT_NE(it.value.find("field 'cuda_available' is not true or false"), std::string::npos) << it.value;
    const std::string broken = script(d, "py_broken", "echo 'THINTENSOR_DOCTOR {\"python\": '");
    it = check_python(broken, 10);
    EXPECT_EQ(it.status, CheckStatus::missing);
    EXPECT_NE(it.value.find("unreadable probe output (" + broken + "'s probe output: invalid JSON"), std::string::npos) << it.value;
}

// The timeout ends the interpreter's whole process group, and a probe whose interpreter left a
// background process holding its output still answers.
TEST(Doctor, PythonProbeTimeoutEndsWhatTheInterpreterStarted) {
    TempDir d;
    const std::string pidfile = (d.path / "pid").string();
    const std::string hang = script(d, "py_bg_hang", "sleep 60 &\necho $! > " + pidfile + "\nsleep 60");
    const CheckItem it = check_python(hang, 0.5);
    EXPECT_NE(it.value.find("no answer within 0.5 s"), std::string::npos) << it.value;
    long pid = 0;
    std::ifstream(pidfile) >> pid;
    ASSERT_GT(pid, 0);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string line;
        gone = !stat || !std::getline(stat, line) || line.find(") Z") != std::string::npos;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "the interpreter's background process outlived the timeout";
    const std::string bg = script(d, "py_bg_answer",
                                  "sleep 20 &\n"
                                  "echo 'THINTENSOR_DOCTOR {\"python\": \"3.12.3\", \"torch_error\": \"no\", \"transformers\": \"4\"}'");
    const auto t0 = std::chrono::steady_clock::now();
    const CheckItem answered = check_python(bg, 10);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    EXPECT_NE(answered.value.find("torch: no"), std::string::npos) << answered.value;
}

TEST(Doctor, PythonProbeRunsOnARealInterpreter) {
    // The probe script itself, on Debian's python3 (no torch there, so usually "missing").
    const std::string py = "/usr/bin/python3";
    if (access(py.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << py;
    const CheckItem it = check_python(py, 60);
    ASSERT_TRUE(it.data.contains("probe")) << it.value;  // the script ran and answered
    const std::string version = it.data["probe"]["python"];
    EXPECT_EQ(version.rfind("3.", 0), 0u) << version;
    if (it.status == CheckStatus::missing) {
        EXPECT_TRUE(it.data["probe"].contains("torch_error") || it.data["probe"].contains("transformers_error"));
        EXPECT_NE(it.value.find("Error"), std::string::npos) << it.value;
    } else {
        EXPECT_EQ(it.status, CheckStatus::ok) << it.value;
    }
}
