// The one subprocess helper (src/core/subprocess.h): exit codes, captured output, signals, the
// timeout killing the child's whole process group, and clear errors for a missing program.
#include "core/error.h"
#include "core/subprocess.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace tt;
namespace fs = std::filesystem;

namespace {

SubprocessResult sh(const std::string& script, SubprocessOptions o = {}) { return run_subprocess({"sh", "-c", script}, o); }

// True while process `pid` is alive (a zombie waiting for its reaper counts as ended).
bool alive(long pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    if (!f) return false;
    std::string stat;
    std::getline(f, stat);
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "tt-subprocess-XXXXXX").string();
        path = ::mkdtemp(t.data());
    }
    ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Subprocess, CapturesOutputAndExitCode) {
    const SubprocessResult r = sh("echo to-stdout; echo to-stderr >&2; exit 3");
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.signal, 0);
    EXPECT_FALSE(r.timed_out);
    EXPECT_FALSE(r.exited_ok());
    EXPECT_EQ(r.output, "to-stdout\nto-stderr\n");
    const SubprocessResult ok = sh("printf done");
    EXPECT_TRUE(ok.exited_ok());
    EXPECT_EQ(ok.output, "done");
}

TEST(Subprocess, StdinIsDevNull) {
    // A child that reads stdin must see end-of-file at once, not wait on our terminal.
    SubprocessOptions o;
    o.timeout_s = 10;
    const SubprocessResult r = sh("cat; echo eof", o);
    EXPECT_TRUE(r.exited_ok());
    EXPECT_EQ(r.output, "eof\n");
}

TEST(Subprocess, ReportsTheSignalThatEndedIt) {
    const SubprocessResult r = sh("kill -9 $$");
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_EQ(r.exit_code, -1);
    EXPECT_FALSE(r.timed_out);
}

TEST(Subprocess, TimeoutKillsTheChildAndWhatItStarted) {
    TempDir d;
    const std::string pidfile = (d.path / "pid").string();
    SubprocessOptions o;
    o.timeout_s = 0.5;
    const auto t0 = std::chrono::steady_clock::now();
    // The background sleep holds the pipe open too: only killing the group ends it.
    const SubprocessResult r = sh("sleep 60 & echo $! > " + pidfile + "; echo started; sleep 60", o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_FALSE(r.exited_ok());
    EXPECT_EQ(r.output, "started\n");  // what it printed before the deadline is kept
    EXPECT_LT(took, 5.0);
    EXPECT_GE(r.seconds, 0.5);
    long grandchild = 0;
    std::ifstream(pidfile) >> grandchild;
    ASSERT_GT(grandchild, 0);
    for (int i = 0; i < 100 && alive(grandchild); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive(grandchild)) << "the background process outlived the timeout";
}

TEST(Subprocess, TimeoutWithoutCapture) {
    SubprocessOptions o;
    o.output = ChildOutput::inherit;
    o.timeout_s = 0.3;
    const SubprocessResult r = sh("sleep 60", o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_LT(r.seconds, 5.0);
    o.timeout_s = 30;
    const SubprocessResult quick = sh("exit 7", o);
    EXPECT_FALSE(quick.timed_out);
    EXPECT_EQ(quick.exit_code, 7);
}

TEST(Subprocess, ReturnsWhenTheChildExitsThoughItsChildHoldsThePipe) {
    SubprocessOptions o;
    o.timeout_s = 30;
    const SubprocessResult r = sh("sleep 2 & echo bye", o);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output, "bye\n");
    EXPECT_LT(r.seconds, 1.5);
}

TEST(Subprocess, KeepsTheTailOfLongOutput) {
    SubprocessOptions o;
    o.max_output = 1000;
    const SubprocessResult r = sh("i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done; echo last", o);
    EXPECT_TRUE(r.exited_ok());
    EXPECT_EQ(r.output.size(), 1000u);
    EXPECT_EQ(r.output.substr(r.output.size() - 15), "line19999\nlast\n");
}

TEST(Subprocess, AMissingProgramIsAClearError) {
    try {
        run_subprocess({"tt-no-such-program-anywhere", "x"});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "tt-no-such-program-anywhere: not found on PATH");
    }
    try {
        run_subprocess({"/nonexistent/dir/prog"});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "/nonexistent/dir/prog: not found (or not executable)");
    }
    TempDir d;  // a directory is not a program
    EXPECT_EQ(find_executable(d.path.string()), "");
    EXPECT_THROW(run_subprocess({}), Error);
}

TEST(Subprocess, FindsProgramsOnPath) {
    const std::string s = find_executable("sh");
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(s.front(), '/');
    EXPECT_EQ(find_executable("tt-no-such-program-anywhere"), "");
    EXPECT_EQ(find_executable(""), "");
}

// With SIGCHLD ignored the kernel reaps the child itself and its exit status is lost: that used
// to read as exit code 0 (success) for a failing child; now it is an error.
TEST(Subprocess, AnExitStatusThatCannotBeLearnedIsAnError) {
    struct sigaction old {};
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ASSERT_EQ(::sigaction(SIGCHLD, &ign, &old), 0);
    std::string what;
    try {
        (void)sh("exit 3");
    } catch (const Error& e) {
        what = e.what();
    }
    ::sigaction(SIGCHLD, &old, nullptr);
    EXPECT_NE(what.find("cannot learn how child process"), std::string::npos) << what;
}
