#include "cli/interrupt.h"

#include "core/error.h"

#include <atomic>
#include <csignal>

#include <signal.h>

namespace tt::cli {

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_active{false};
struct sigaction g_previous {};

static_assert(std::atomic<bool>::is_always_lock_free, "the handler touches it, so it must be lock-free");

void on_generation_sigint(int sig) {
    if (g_interrupted.exchange(true)) {
        // The second Ctrl-C: the user does not want to wait for the current step.
        ::sigaction(sig, &g_previous, nullptr);
        ::raise(sig);
    }
}

}  // namespace

InterruptScope::InterruptScope() {
    TT_ASSERT(!g_active.load());  // one scope at a time: g_previous has room for one handler
    g_interrupted = false;
    struct sigaction current {};
    ::sigaction(SIGINT, nullptr, &current);
    if (current.sa_handler == SIG_IGN && !(current.sa_flags & SA_SIGINFO)) return;
    struct sigaction sa {};
    sa.sa_handler = on_generation_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // a write to stdout in progress is resumed, not failed with EINTR
    ::sigaction(SIGINT, &sa, &g_previous);
    g_active = true;
}

InterruptScope::~InterruptScope() {
    if (g_active.exchange(false)) ::sigaction(SIGINT, &g_previous, nullptr);
}

bool InterruptScope::interrupted() const { return g_interrupted.load(); }

}  // namespace tt::cli
