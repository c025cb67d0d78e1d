// The CPU-side checks of `thintensor doctor`, the report table / JSON, and the doctor.json record
// of measured GPU and host ceilings (see doctor.h). Every check returns an item rather than
// throwing: the doctor's job is to report everything that is wrong in one run, not to stop at the
// first fault.
#include "runtime/doctor.h"

#include "core/error.h"
#include "core/json.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/progress.h"
#include "core/subprocess.h"
#include "runtime/model_source.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>


namespace tt {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t physical_ram_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

std::string_view check_status_name(CheckStatus s) {
    switch (s) {
        case CheckStatus::ok: return "ok";
        case CheckStatus::warn: return "warn";
        case CheckStatus::fail: return "FAIL";
        case CheckStatus::missing: return "missing";
    }
    return "?";
}

// ---------------------------------------------------------------------------------------------
// The report

CheckItem& DoctorReport::add(std::string group, std::string name, std::string value, CheckStatus status, json data) {
    items.push_back(CheckItem{std::move(group), std::move(name), std::move(value), status, std::move(data)});
    return items.back();
}

int DoctorReport::count(CheckStatus s) const {
    return int(std::count_if(items.begin(), items.end(), [s](const CheckItem& i) { return i.status == s; }));
}

std::string DoctorReport::table() const {
    size_t wg = 5, wn = 4;
    for (const auto& i : items) {
        wg = std::max(wg, i.group.size());
        wn = std::max(wn, i.name.size());
    }
    std::string out = fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", "GROUP", wg, "ITEM", wn, "STATUS", "VALUE");
    for (const auto& i : items)
        out += fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", i.group, wg, i.name, wn, check_status_name(i.status), i.value);
    out += fmt::format("{} ok, {} warn, {} failed, {} missing\n", count(CheckStatus::ok), count(CheckStatus::warn),
                       count(CheckStatus::fail), count(CheckStatus::missing));
    return out;
}

json DoctorReport::to_json() const {
    json j;
    j["items"] = json::array();
    for (const auto& i : items)
        j["items"].push_back({{"group", i.group},
                              {"name", i.name},
                              {"value", i.value},
                              {"status", std::string(check_status_name(i.status))},
                              {"data", i.data}});
    j["summary"] = {{"ok", count(CheckStatus::ok)},
                    {"warn", count(CheckStatus::warn)},
                    {"fail", count(CheckStatus::fail)},
                    {"missing", count(CheckStatus::missing)},
                    {"strict_ok", strict_ok()}};
    return j;
}

// ---------------------------------------------------------------------------------------------
// Host and pinned-memory limit

std::string cpu_model_name() {
    try {
        const std::string info = read_file("/proc/cpuinfo");
        const size_t at = info.find("model name");
        if (at != std::string::npos) {
            const size_t colon = info.find(':', at), nl = info.find('\n', at);
            if (colon != std::string::npos && colon < nl) {
                std::string model = info.substr(colon + 1, nl - colon - 1);
                model.erase(0, model.find_first_not_of(" \t"));
                model.erase(model.find_last_not_of(" \t") + 1);
                if (!model.empty()) return model;
            }
        }
    } catch (const Error&) {
        // not Linux /proc: the model stays unknown
    }
    return "unknown CPU";
}

CheckItem check_host() {
    CheckItem it{"host", "cpu + memory", "", CheckStatus::ok, json::object()};
    const std::string model = cpu_model_name();
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const uint64_t ram = physical_ram_bytes();
    it.data = {{"cpu", model}, {"cores", cores}, {"ram_bytes", ram}};
    it.value = fmt::format("{}, {} cores, {} RAM", model, cores, format_bytes(double(ram)));
    return it;
}

double pcie_link_gbs(int gen, int width) {
    // GB/s per lane and direction: transfer rate x encoding efficiency / 8 bits.
    static constexpr double k_lane_gbs[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
    if (gen < 1 || gen > 6 || width < 1) return 0;
    return k_lane_gbs[gen] * width;
}

CheckItem check_memlock() {
    CheckItem it{"host", "pinned-memory limit", "", CheckStatus::ok, json::object()};
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        it.status = CheckStatus::fail;
        it.value = fmt::format("getrlimit(RLIMIT_MEMLOCK) failed: {}", errno_text(errno));
        return it;
    }
    const uint64_t ram = physical_ram_bytes();
    auto limit_json = [](rlim_t v) { return v == RLIM_INFINITY ? json(nullptr) : json(uint64_t(v)); };
    it.data = {{"soft_bytes", limit_json(rl.rlim_cur)}, {"hard_bytes", limit_json(rl.rlim_max)},
               {"unlimited", rl.rlim_cur == RLIM_INFINITY}, {"ram_bytes", ram}};
    auto text = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : format_bytes(double(v)); };
    if (rl.rlim_cur == RLIM_INFINITY) {
        it.value = "RLIMIT_MEMLOCK unlimited";
        return it;
    }
    it.value = fmt::format("RLIMIT_MEMLOCK {} (hard {}, RAM {})", text(rl.rlim_cur), text(rl.rlim_max),
                           format_bytes(double(ram)));
    // note: cudaHostAlloc pins through the driver and is not capped by this limit; mlock() of host
    // memory (weights kept resident for streaming) is, so a small limit is a warning, not a failure.
    if (ram > 0 && uint64_t(rl.rlim_cur) < ram / 2) {
        it.status = CheckStatus::warn;
        it.value += "; mlock of host weights capped (raise with `ulimit -l unlimited` or limits.conf memlock)";
    }
    return it;
}

// ---------------------------------------------------------------------------------------------
// Model cache: free disk and cold read speed

namespace {

// Removes the test file however the check ends, Ctrl-C and SIGTERM included (it can be GBs in the
// model cache).
struct TempFile {
    std::string path;
    int fd = -1;
    RemoveOnSignal on_signal;
    ~TempFile() {
        on_signal.release();
        if (fd >= 0) ::close(fd);
        if (!path.empty()) ::unlink(path.c_str());
    }
};

// Fills buf with pseudo-random bytes that differ per chunk: zeros would let a compressing or
// deduplicating filesystem (ZFS, btrfs) skip the disk and report a meaningless speed.
void fill_chunk(std::vector<uint64_t>& buf, uint64_t chunk) {
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (chunk * 0xbf58476d1ce4e5b9ull);
    for (auto& w : buf) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w = x;
    }
}

uint64_t fold(const uint64_t* p, size_t n_words, uint64_t h) {
    for (size_t i = 0; i < n_words; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// Fraction of the file's pages still in the page cache (mincore); -1 when it cannot be told.
double resident_fraction(int fd, uint64_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return -1;
    const long page = sysconf(_SC_PAGE_SIZE);
    const size_t n_pages = size_t((bytes + uint64_t(page) - 1) / uint64_t(page));
    std::vector<unsigned char> vec(n_pages);
    double frac = -1;
    if (::mincore(p, bytes, vec.data()) == 0) {
        size_t resident = 0;
        for (unsigned char v : vec) resident += v & 1;
        frac = double(resident) / double(std::max<size_t>(n_pages, 1));
    }
    ::munmap(p, bytes);
    return frac;
}

}  // namespace

std::vector<CheckItem> check_model_cache(const std::string& dir, uint64_t test_bytes) {
    CheckItem disk{"cache", "free disk", "", CheckStatus::ok, {{"dir", dir}}};
    CheckItem speed{"cache", "read speed", "", CheckStatus::ok, {{"dir", dir}}};
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        disk.status = speed.status = CheckStatus::fail;
        disk.value = speed.value = fmt::format("{}: cannot create the model cache directory: {}", dir, ec.message());
        return {disk, speed};
    }
    struct statvfs sv {};
    if (::statvfs(dir.c_str(), &sv) != 0) {
        disk.status = speed.status = CheckStatus::fail;
        disk.value = speed.value = fmt::format("{}: statvfs failed: {}", dir, errno_text(errno));
        return {disk, speed};
    }
    const uint64_t avail = uint64_t(sv.f_bavail) * uint64_t(sv.f_frsize);
    const uint64_t total = uint64_t(sv.f_blocks) * uint64_t(sv.f_frsize);
    disk.data["free_bytes"] = avail;
    disk.data["total_bytes"] = total;
    disk.value = fmt::format("{} free of {} in {}", format_bytes(double(avail)), format_bytes(double(total)), dir);
    // A 7-8B model in bf16 is ~16 GB, and the cache holds the download and the converted archive.
    constexpr uint64_t k_low_disk = uint64_t(32) << 30;
    if (avail < k_low_disk) {
        disk.status = CheckStatus::warn;
        disk.value += " (below 32 GiB: room for small models only)";
    }

    speed.data["test_bytes"] = test_bytes;
    if (test_bytes == 0) {
        speed.status = CheckStatus::missing;
        speed.value = "read test skipped (size 0)";
        return {disk, speed};
    }
    if (avail < 2 * test_bytes) {
        speed.status = CheckStatus::missing;
        speed.value = fmt::format("not enough free disk for a {} read test", format_bytes(double(test_bytes)));
        return {disk, speed};
    }
    TempFile tmp;
    tmp.path = (fs::path(dir) / fmt::format(".doctor-read-test-{}.tmp", ::getpid())).string();
    auto failed = [&](const std::string& what) {
        speed.status = CheckStatus::fail;
        speed.value = fmt::format("{}: {}: {}", tmp.path, what, errno_text(errno));
        return std::vector<CheckItem>{disk, speed};
    };
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (tmp.fd < 0) {
        const std::string p = tmp.path;
        tmp.path.clear();  // not ours to delete
        speed.status = CheckStatus::fail;
        speed.value = fmt::format("{}: cannot create the test file: {}", p, errno_text(errno));
        return {disk, speed};
    }
    tmp.on_signal = RemoveOnSignal(tmp.path);

    constexpr size_t k_chunk = size_t(8) << 20;
    std::vector<uint64_t> buf(k_chunk / 8);
    uint64_t written_hash = 0xcbf29ce484222325ull;
    const auto tw = std::chrono::steady_clock::now();
    for (uint64_t off = 0, c = 0; off < test_bytes; off += k_chunk, ++c) {
        const size_t n = size_t(std::min<uint64_t>(k_chunk, test_bytes - off));
        fill_chunk(buf, c);
        written_hash = fold(buf.data(), n / 8, written_hash);
        const auto* p = reinterpret_cast<const char*>(buf.data());
        for (size_t done = 0; done < n;) {
            const ssize_t w = ::write(tmp.fd, p + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return failed("write");
            done += size_t(w);
        }
    }
    if (::fsync(tmp.fd) != 0) return failed("fsync");
    const double write_s = seconds_since(tw);
    // Drop the file's pages so the read below comes from the disk, not from memory.
    ::posix_fadvise(tmp.fd, 0, 0, POSIX_FADV_DONTNEED);
    const double resident = resident_fraction(tmp.fd, test_bytes);
    ::close(tmp.fd);
    tmp.fd = ::open(tmp.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (tmp.fd < 0) return failed("reopen");
    ::posix_fadvise(tmp.fd, 0, 0, POSIX_FADV_SEQUENTIAL);

    uint64_t read_hash = 0xcbf29ce484222325ull, got = 0;
    const auto tr = std::chrono::steady_clock::now();
    for (;;) {
        const ssize_t r = ::read(tmp.fd, buf.data(), k_chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return failed("read");
        if (r == 0) break;
        // note: reads come back in whole 8-byte words except possibly at the end of a short file.
        read_hash = fold(buf.data(), size_t(r) / 8, read_hash);
        got += uint64_t(r);
    }
    const double read_s = seconds_since(tr);
    const double read_gbs = double(got) / std::max(read_s, 1e-9) / 1e9;
    const double write_gbs = double(test_bytes) / std::max(write_s, 1e-9) / 1e9;
    speed.data["read_gbs"] = read_gbs;
    speed.data["write_gbs"] = write_gbs;
    speed.data["resident_after_drop"] = resident < 0 ? json(nullptr) : json(resident);
    if (got != test_bytes || read_hash != written_hash) {
        speed.status = CheckStatus::fail;
        speed.value = fmt::format("{}: read back {} of {} bytes, {}", tmp.path, got, test_bytes,
                                  got == test_bytes ? "content differs from what was written" : "short read");
        return {disk, speed};
    }
    speed.value = fmt::format("{:.2f} GB/s cold read, {:.2f} GB/s write+fsync ({} test file)", read_gbs, write_gbs,
                              format_bytes(double(test_bytes)));
    if (resident > 0.5) {
        // tmpfs, or a filesystem that ignores the hint: the figure is memory speed, not the disk's.
        speed.status = CheckStatus::warn;
        speed.value += fmt::format("; {:.0f}% stayed in the page cache, so this is a warm read", 100 * resident);
    } else if (read_gbs < 0.2) {
        speed.status = CheckStatus::warn;
        speed.value += fmt::format("; slow: a 16 GB model takes {:.0f} s to load", 16.0 / read_gbs);
    }
    return {disk, speed};
}

// ---------------------------------------------------------------------------------------------
// python3 with torch + transformers

namespace {

// The script prints one marker line of JSON; import failures are caught and reported per module.
constexpr const char* k_python_probe = R"PY(
import json, sys
r = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
    r["torch"] = torch.__version__
    r["torch_cuda"] = torch.version.cuda
    r["cuda_available"] = bool(torch.cuda.is_available())
except Exception as e:
    r["torch_error"] = type(e).__name__ + ": " + str(e)
try:
    import transformers
    r["transformers"] = transformers.__version__
except Exception as e:
    r["transformers_error"] = type(e).__name__ + ": " + str(e)
print("THINTENSOR_DOCTOR " + json.dumps(r), flush=True)
)PY";

constexpr std::string_view k_marker = "THINTENSOR_DOCTOR ";

std::string last_line(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
    const size_t nl = s.rfind('\n');
    return std::string(nl == std::string_view::npos ? s : s.substr(nl + 1));
}

}  // namespace

std::string default_python() {
    if (const char* p = std::getenv("THINTENSOR_PYTHON"); p && *p) return p;
    return "python3";
}

CheckItem check_python(const std::string& python, double timeout_s) {
    CheckItem it{"python", "torch + transformers", "", CheckStatus::missing, {{"python", python}}};
    const std::string exe = find_executable(python);
    if (exe.empty()) {
        it.value = fmt::format("{}: not found{} (needed by `validate --hf-model`)", python,
                               python.find('/') == std::string::npos ? " on PATH" : "");
        return it;
    }
    it.data["path"] = exe;

    SubprocessOptions so;
    so.output = ChildOutput::capture;
    so.timeout_s = timeout_s;
    so.max_output = size_t(64) << 10;  // the marker line is the last; the tail is enough
    SubprocessResult child;
    try {
        child = run_subprocess({exe, "-c", k_python_probe}, so);
    } catch (const Error& e) {
        it.value = e.what();  // names the interpreter and why it could not start
        return it;
    }
    const std::string& out = child.output;
    it.data["seconds"] = child.seconds;
    if (child.timed_out) {
        it.value = fmt::format("{}: no answer within {:g} s (importing torch hung?)", exe, timeout_s);
        return it;
    }

    const size_t at = out.rfind(k_marker);
    if (at == std::string::npos) {
        const std::string why = last_line(out);
        it.value = fmt::format("{}: probe failed (exit {}){}{}", exe, child.exit_code, why.empty() ? "" : ": ", why);
        return it;
    }
    const size_t end = out.find('\n', at);
    const std::string line =
        out.substr(at + k_marker.size(), end == std::string::npos ? std::string::npos : end - at - k_marker.size());
    json r;
    try {
        r = parse_json(line, exe + "'s probe output");
        if (!r.is_object()) fail("{}'s probe output: not a JSON object", exe);
        // Every field the report reads is a string (cuda_available a bool), or absent.
        for (const char* key : {"python", "torch", "torch_cuda", "transformers", "torch_error", "transformers_error"})
            if (r.contains(key) && !r[key].is_string() && !(std::string(key) == "torch_cuda" && r[key].is_null()))
                fail("{}'s probe output: field '{}' is not a string", exe, key);
        if (r.contains("cuda_available") && !r["cuda_available"].is_boolean())
            fail("{}'s probe output: field 'cuda_available' is not true or false", exe);
    } catch (const Error& e) {
        it.value = fmt::format("unreadable probe output ({})", e.what());
        return it;
    }
    auto str = [&](const char* key) { return r.contains(key) ? r[key].get<std::string>() : std::string(); };
    it.data["probe"] = r;
    const std::string py = r.contains("python") ? str("python") : "?";
    if (!r.contains("torch") || !r.contains("transformers")) {
        std::string why;
        if (r.contains("torch_error")) why += "torch: " + str("torch_error");
        if (r.contains("transformers_error")) why += std::string(why.empty() ? "" : "; ") + "transformers: " + str("transformers_error");
        it.value = fmt::format("python {} ({}): {} (needed by `validate --hf-model`)", py, exe, why);
        return it;
    }
    const bool cuda = r.value("cuda_available", false);
    it.value = fmt::format("python {}: torch {}{}, transformers {}; torch {} a CUDA GPU", py, str("torch"),
                           r.contains("torch_cuda") && r["torch_cuda"].is_string() ? " (CUDA " + str("torch_cuda") + ")" : "", str("transformers"),
                           cuda ? "sees" : "does not see");
    it.status = CheckStatus::ok;
    return it;
}

// ---------------------------------------------------------------------------------------------
// The record of measured ceilings

const GpuCeilings* DoctorRecord::gpu(int device) const {
    for (const auto& g : gpus)
        if (g.device == device) return &g;
    return nullptr;
}

const PeerLink* DoctorRecord::link(int from, int to) const {
    for (const auto& l : links)
        if (l.from == from && l.to == to) return &l;
    return nullptr;
}

double HostCeilings::gemv_gbs_at(int n_threads, QuantScheme weights) const {
    if (gemv.empty()) return 0;
    for (const HostGemvRate& g : gemv)
        if (!(g.gbs(weights) > 0)) return 0;
    const double n = n_threads > 0 ? n_threads : threads > 0 ? threads : gemv.back().threads;
    if (n <= gemv.front().threads) return gemv.front().gbs(weights) * n / std::max(1, gemv.front().threads);
    for (size_t i = 1; i < gemv.size(); ++i) {
        const double a = gemv[i - 1].gbs(weights), b = gemv[i].gbs(weights);
        const int ta = gemv[i - 1].threads, tb = gemv[i].threads;
        if (n <= tb) return a + (b - a) * (n - ta) / (tb - ta);
    }
    return gemv.back().gbs(weights);
}

std::string doctor_record_path() { return (fs::path(thintensor_home()) / "doctor.json").string(); }

json host_ceilings_to_json(const HostCeilings& h) {
    json rates = json::array();
    for (const auto& g : h.gemv) {
        json r = {{"threads", g.threads}, {"gemv_gbs", g.gemv_gbs}};
        if (g.int8_gbs > 0) r["int8_gbs"] = g.int8_gbs;
        if (g.int4_gbs > 0) r["int4_gbs"] = g.int4_gbs;
        rates.push_back(r);
    }
    return {{"date", h.date},
            {"cpu", h.cpu},
            {"threads", h.threads},
            {"isa", h.isa},
            {"gemv_dtype", h.gemv_dtype},
            {"read_gbs", h.read_gbs},
            {"gemv", rates}};
}

json doctor_record_to_json(const DoctorRecord& r) {
    json j;
    j["version"] = DoctorRecord::k_version;
    j["date"] = r.date;
    j["hostname"] = r.hostname;
    j["thintensor_version"] = r.thintensor_version;
    j["gpus"] = json::array();
    for (const auto& g : r.gpus)
        j["gpus"].push_back({{"device", g.device},
                             {"name", g.name},
                             {"pci_bus_id", g.pci_bus_id},
                             {"d2d_gbs", g.d2d_gbs},
                             {"h2d_pinned_gbs", g.h2d_pinned_gbs},
                             {"h2d_pageable_gbs", g.h2d_pageable_gbs},
                             {"d2h_gbs", g.d2h_gbs},
                             {"gemm_bf16_tflops", g.gemm_bf16_tflops}});
    if (r.host) j["host"] = host_ceilings_to_json(*r.host);
    if (!r.links.empty()) {
        j["links"] = json::array();
        for (const auto& l : r.links)
            j["links"].push_back({{"from", l.from}, {"to", l.to}, {"p2p", l.p2p}, {"gbs", l.gbs}, {"latency_us", l.latency_us}});
    }
    return j;
}

namespace {

const json& field(const json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) fail("{}: field '{}' missing", where, key);
    return j[key];
}
std::string get_string(const json& j, const char* key, const std::string& where) {
    const json& v = field(j, key, where);
    if (!v.is_string()) fail("{}: field '{}' is not a string", where, key);
    return v.get<std::string>();
}
double get_number(const json& j, const char* key, const std::string& where) {
    const json& v = field(j, key, where);
    if (!v.is_number()) fail("{}: field '{}' is not a number", where, key);
    const double d = v.get<double>();
    if (!(d >= 0) || !std::isfinite(d)) fail("{}: field '{}' is {} (expected a finite number >= 0)", where, key, d);
    return d;
}
// A whole number >= `least` (thread counts).
int get_count(const json& j, const char* key, const std::string& where, int least) {
    const double d = get_number(j, key, where);
    if (d != std::floor(d) || d < least || d > 1e6)
        fail("{}: field '{}' is {} (expected a whole number >= {})", where, key, d, least);
    return int(d);
}

HostCeilings host_from_json(const json& h, const std::string& where) {
    if (!h.is_object()) fail("{}: not an object", where);
    HostCeilings c;
    c.date = get_string(h, "date", where);
    c.cpu = get_string(h, "cpu", where);
    c.threads = get_count(h, "threads", where, 1);
    c.isa = h.contains("isa") ? get_string(h, "isa", where) : "";
    c.gemv_dtype = h.contains("gemv_dtype") ? get_string(h, "gemv_dtype", where) : "bf16";
    c.read_gbs = get_number(h, "read_gbs", where);
    const json& rates = field(h, "gemv", where);
    if (!rates.is_array()) fail("{}: field 'gemv' is not an array", where);
    for (size_t i = 0; i < rates.size(); ++i) {
        const std::string at = fmt::format("{}.gemv[{}]", where, i);
        HostGemvRate g;
        g.threads = get_count(rates[i], "threads", at, 1);
        g.gemv_gbs = get_number(rates[i], "gemv_gbs", at);
        // Optional: records written before the quantized rates were measured lack them.
        if (rates[i].contains("int8_gbs")) g.int8_gbs = get_number(rates[i], "int8_gbs", at);
        if (rates[i].contains("int4_gbs")) g.int4_gbs = get_number(rates[i], "int4_gbs", at);
        c.gemv.push_back(g);
    }
    std::sort(c.gemv.begin(), c.gemv.end(), [](const HostGemvRate& a, const HostGemvRate& b) { return a.threads < b.threads; });
    for (size_t i = 1; i < c.gemv.size(); ++i)
        if (c.gemv[i].threads == c.gemv[i - 1].threads) fail("{}: field 'gemv' lists {} threads twice", where, c.gemv[i].threads);
    return c;
}

}  // namespace

DoctorRecord doctor_record_from_json(const json& j, const std::string& origin) {
    if (!j.is_object()) fail("{}: not a JSON object", origin);
    const double version = get_number(j, "version", origin);
    if (version != DoctorRecord::k_version)
        fail("{}: record version {} (this build reads version {}); run `thintensor doctor` again", origin, version,
             DoctorRecord::k_version);
    DoctorRecord r;
    r.date = get_string(j, "date", origin);
    r.hostname = j.value("hostname", "");
    r.thintensor_version = j.value("thintensor_version", "");
    const json& gpus = field(j, "gpus", origin);
    if (!gpus.is_array()) fail("{}: field 'gpus' is not an array", origin);
    for (size_t i = 0; i < gpus.size(); ++i) {
        const std::string where = fmt::format("{}: gpus[{}]", origin, i);
        const json& g = gpus[i];
        GpuCeilings c;
        c.device = int(get_number(g, "device", where));
        c.name = get_string(g, "name", where);
        c.pci_bus_id = g.value("pci_bus_id", "");
        c.d2d_gbs = get_number(g, "d2d_gbs", where);
        c.h2d_pinned_gbs = get_number(g, "h2d_pinned_gbs", where);
        c.h2d_pageable_gbs = get_number(g, "h2d_pageable_gbs", where);
        c.d2h_gbs = get_number(g, "d2h_gbs", where);
        c.gemm_bf16_tflops = get_number(g, "gemm_bf16_tflops", where);
        r.gpus.push_back(std::move(c));
    }
    if (j.contains("host") && !j["host"].is_null()) r.host = host_from_json(j["host"], origin + ": host");
    // Optional: records of one GPU, or written before links were measured, have none.
    if (j.contains("links") && !j["links"].is_null()) {
        const json& links = j["links"];
        if (!links.is_array()) fail("{}: field 'links' is not an array", origin);
        for (size_t i = 0; i < links.size(); ++i) {
            const std::string where = fmt::format("{}: links[{}]", origin, i);
            PeerLink l;
            l.from = get_count(links[i], "from", where, 0);
            l.to = get_count(links[i], "to", where, 0);
            const json& p2p = field(links[i], "p2p", where);
            if (!p2p.is_boolean()) fail("{}: field 'p2p' is not true or false", where);
            l.p2p = p2p.get<bool>();
            l.gbs = get_number(links[i], "gbs", where);
            l.latency_us = get_number(links[i], "latency_us", where);
            if (l.from == l.to) fail("{}: a link from device {} to itself", where, l.from);
            r.links.push_back(l);
        }
    }
    return r;
}

void save_doctor_record(const DoctorRecord& r, const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) {
        std::error_code ec;
        fs::create_directories(parent, ec);
        if (ec) fail("{}: cannot create the directory: {}", parent.string(), ec.message());
    }
    write_file_atomic(path, doctor_record_to_json(r).dump(2) + "\n");
}

std::optional<DoctorRecord> load_doctor_record(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    try {
        return doctor_record_from_json(parse_json(read_file(path), path), path);
    } catch (const Error& e) {
        log::warn("ignoring the doctor record: {} (`thintensor doctor` writes a new one)", e.what());
        return std::nullopt;
    }
}

std::optional<DoctorRecord> load_doctor_record() { return load_doctor_record(doctor_record_path()); }

}  // namespace tt
