// Command-line input files and archive mappings refuse what is not a regular file (or, for input,
// a pipe) before reading: a directory reads as empty text, /dev/zero never ends, and opening a FIFO
// for reading blocks until a writer comes.
#include "core/error.h"
#include "core/input_file.h"
#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <future>
#include <thread>

using namespace tt;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("tt_input_" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(InputFile, ReadsRegularFilesAndPipes) {
    TempDir d;
    const std::string f = (d.path / "p.txt").string();
    std::ofstream(f) << "Once upon a time";
    EXPECT_EQ(read_input(f, "--prompt-file"), "Once upon a time");

    const std::string fifo = (d.path / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] { std::ofstream(fifo) << "from a pipe"; });
    EXPECT_EQ(read_input(fifo, "--prompt-file"), "from a pipe");
    writer.join();
}

TEST(InputFile, RefusesDirectoriesDevicesAndOversizedInput) {
    TempDir d;
    EXPECT_NE(error_of([&] { read_input(d.path.string(), "--prompt-file"); }).find("--prompt-file " + d.path.string() + ": is a directory"),
              std::string::npos);
    EXPECT_NE(error_of([] { read_input("/dev/zero", "--prompt-file"); }).find("/dev/zero: is a character device"), std::string::npos);
    const std::string f = (d.path / "big.txt").string();
    std::ofstream(f) << std::string(100, 'x');
    EXPECT_NE(error_of([&] { read_input(f, "--prompt-file", 64); }).find(f + ": 100 B is more than the 64 B"), std::string::npos)
        << error_of([&] { read_input(f, "--prompt-file", 64); });
    EXPECT_NE(error_of([] { read_input("/nonexistent/p.txt", "--prompt-file"); }).find("cannot open"), std::string::npos);
}

TEST(MappedFile, RefusesAFifoWithoutBlocking) {
    TempDir d;
    const std::string fifo = (d.path / "archive.thin").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Opened without O_NONBLOCK, this would wait forever for a writer.
    auto done = std::async(std::launch::async, [&] { return error_of([&] { MappedFile m(fifo); }); });
    if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked open return
        done.wait();
        if (w >= 0) ::close(w);
        FAIL() << "opening a FIFO blocked";
    }
    EXPECT_NE(done.get().find("is a FIFO (named pipe), not a regular file"), std::string::npos);
    EXPECT_NE(error_of([&] { MappedFile m(d.path.string()); }).find("is a directory"), std::string::npos);
    EXPECT_NE(error_of([] { MappedFile m("/dev/zero"); }).find("is a character device"), std::string::npos);
}
