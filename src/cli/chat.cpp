// thintensor chat MODEL: an interactive multi-turn conversation. Lines from stdin are the user's
// turns; replies stream to stdout. The history is rendered through the model's chat template each
// turn and the KV cache is reused between turns (runtime/chat_session.h). Commands: /reset, /exit
// (or end of input), /help. Ctrl-C stops the reply being written and returns to the prompt. At a
// terminal the line is edited through cli/line_editor.h (cursor keys, history); piped input is
// read line by line, and a turn that fails ends a piped session with the error (non-zero exit).
#include "cli/command.h"
#include "cli/line_editor.h"
#include "cli/model_args.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/chat_session.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace {

struct Opts {
    tt::cli::ModelArgs model;
    tt::cli::SamplingArgs sampling;
    std::string template_path, system;
    std::vector<std::string> vars, stop;
    int max_tokens = 1024;
};

// Chat's default KV cache when --context is not given: long enough for a conversation, small
// enough that a 128k-context model does not allocate its whole cache (Ollama's default is close).
constexpr int k_default_chat_context = 4096;

std::atomic<bool> g_interrupted{false};
int g_wake_fd = -1;  // write end of the self-pipe

extern "C" void on_sigint(int) {
    g_interrupted.store(true);
    const int saved = errno;
    [[maybe_unused]] const ssize_t n = write(g_wake_fd, "!", 1);
    errno = saved;
}

// Ctrl-C sets a flag and does not kill the process. SA_RESTART keeps stdio writes and the thread
// pool's waits going. The handler also writes a byte to a pipe that the line reader polls beside
// stdin (the self-pipe trick): a Ctrl-C just before the reader starts waiting is not lost, as it
// would be if the reader relied on poll() failing with EINTR.
class SigintGuard {
public:
    SigintGuard() {
        if (pipe(fds_) != 0) tt::fail("cannot create a pipe: {}", std::strerror(errno));
        for (int fd : fds_) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        g_wake_fd = fds_[1];
        struct sigaction sa {};
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGINT, &sa, &old_);
    }
    ~SigintGuard() {
        sigaction(SIGINT, &old_, nullptr);
        g_wake_fd = -1;
        close(fds_[0]);
        close(fds_[1]);
    }
    SigintGuard(const SigintGuard&) = delete;
    SigintGuard& operator=(const SigintGuard&) = delete;

    int wake_fd() const { return fds_[0]; }
    // Forgets a Ctrl-C that was already handled (or that came between two turns).
    void clear() const {
        char buf[64];
        while (read(fds_[0], buf, sizeof buf) > 0) {
        }
        g_interrupted.store(false);
    }

private:
    int fds_[2] = {-1, -1};
    struct sigaction old_ {};
};

// Takes a pending Ctrl-C: whether one came since the last clear() (the pipe may also hold a
// byte of a Ctrl-C already handled).
bool take_interrupt(const SigintGuard& sigint) {
    const bool interrupted = g_interrupted.load();
    sigint.clear();
    return interrupted;
}

using Status = tt::cli::LineEditor::Status;

// Reads lines from a file descriptor with read(2) (not std::getline: a Ctrl-C at the prompt must
// come back as "interrupted" rather than as a failed stream). For input that is not a terminal.
class LineReader {
public:
    LineReader(int fd, const SigintGuard& sigint) : fd_(fd), sigint_(sigint) {}

    Status next(std::string& line) {
        for (;;) {
            const size_t nl = buf_.find('\n');
            if (nl != std::string::npos) {
                line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                return Status::line;
            }
            if (eof_) {
                if (buf_.empty()) return Status::eof;
                line = std::exchange(buf_, {});  // a last line without '\n'
                return Status::line;
            }
            pollfd p[2] = {{fd_, POLLIN, 0}, {sigint_.wake_fd(), POLLIN, 0}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                tt::fail("stdin: {}", std::strerror(errno));
            }
            if ((p[1].revents & POLLIN) && take_interrupt(sigint_)) return Status::interrupted;
            if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[4096];
            const ssize_t n = read(fd_, chunk, sizeof chunk);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                tt::fail("stdin: {}", std::strerror(errno));
            }
            if (n == 0) eof_ = true;
            else buf_.append(chunk, size_t(n));
        }
    }

private:
    int fd_;
    const SigintGuard& sigint_;
    std::string buf_;
    bool eof_ = false;
};

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

void write_out(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

// Where a line editor shows the prompt and the line: stdout when it is the terminal, else stderr
// when that is (`chat MODEL > transcript.txt` still edits at the terminal); null without one.
std::FILE* editor_output() {
    if (isatty(STDOUT_FILENO)) return stdout;
    if (isatty(STDERR_FILENO)) return stderr;
    return nullptr;
}

int chat(const Opts& o) {
    using namespace tt;
    cli::LoadedModel m = cli::load_model(o.model, /*needed_context=*/0);
    if (!m.tokenizer) fail("{}: the model has no tokenizer, and chat needs one to read and write text", o.model.model);
    const ChatTemplate tmpl = chat_template_for(*m.archive, m.archive_path, o.model.model, o.template_path);
    m.create_backend(o.model, k_default_chat_context);

    ChatOptions co;
    co.max_tokens = o.max_tokens;
    co.sampling = cli::sampling_config(o.sampling, m);
    co.stop_ids = chat_stop_ids(*m.tokenizer, tmpl, m.eos_ids());
    co.stop = o.stop;
    co.template_vars = default_template_vars(*m.tokenizer, tmpl);
    for (const auto& kv : o.vars) add_template_var(co.template_vars, kv);
    ChatSession session(*m.backend, *m.tokenizer, tmpl, co);
    session.set_system(o.system);

    const bool interactive = isatty(STDIN_FILENO);
    if (interactive)
        log::info("chatting with {} ({} tokens of context, template {}). /reset forgets the conversation, "
                  "/exit or Ctrl-D quits, Ctrl-C stops a reply.",
                  o.model.model, m.backend->context_size(), tmpl.context());
    SigintGuard sigint;
    std::unique_ptr<cli::LineEditor> editor;
    if (std::FILE* out = interactive ? editor_output() : nullptr)
        editor = std::make_unique<cli::LineEditor>("> ", STDIN_FILENO, out, sigint.wake_fd(),
                                                   [&sigint] { return take_interrupt(sigint); });
    LineReader reader(STDIN_FILENO, sigint);
    // At a terminal a failed turn is shown and the person goes on (/reset, a shorter message);
    // the exit status still says that some turn failed.
    int failed_turns = 0;
    const auto finish = [&]() -> int {
        if (failed_turns == 0) return 0;
        log::warn("{} turn{} failed in this session: exit status 1", failed_turns, failed_turns == 1 ? "" : "s");
        return 1;
    };
    for (;;) {
        std::string line;
        Status status;
        if (editor) {
            status = editor->next(line);
        } else {
            if (interactive) write_out("> ");
            status = reader.next(line);
        }
        if (status == Status::eof) {
            if (interactive) write_out("\n");
            return finish();
        }
        if (status == Status::interrupted) {
            write_out("\n");
            log::info("(no reply to stop: /exit or Ctrl-D quits)");
            continue;
        }
        const std::string cmd = trim(line);
        if (cmd.empty()) continue;
        if (cmd == "/exit" || cmd == "/quit" || cmd == "/bye") return finish();
        if (cmd == "/reset" || cmd == "/clear") {
            session.reset();
            log::info("(conversation cleared)");
            continue;
        }
        if (cmd == "/help" || cmd == "/?") {
            log::info("/reset forgets the conversation (the system message stays); /exit quits; Ctrl-C stops a reply");
            continue;
        }
        if (cmd[0] == '/' && cmd.find(' ') == std::string::npos) {
            log::warn("unknown command {} (commands: /reset, /exit, /help)", cmd);
            continue;
        }
        sigint.clear();
        try {
            const ChatTurnStats st = session.send(line, write_out, [] { return g_interrupted.load(); });
            write_out("\n");
            if (st.stop_reason == "interrupted") log::info("(reply stopped)");
            else if (st.stop_reason == "context full")
                log::warn("the context ({} tokens) is full: /reset to go on", m.backend->context_size());
            log::debug("turn: prompt {} tokens ({} reused from the cache{}, {} fed in {:.0f} ms) | generated {} tokens, {:.1f} tok/s | stop: {}",
                       st.prompt_tokens, st.reused_tokens,
                       st.recomputed_tokens ? fmt::format(", {} recomputed: the recurrent state has no checkpoint there", st.recomputed_tokens) : "",
                       st.fed_tokens, st.prefill_seconds * 1e3, st.generated_tokens,
                       st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0.0, st.stop_reason);
        } catch (const Error& e) {
            // Piped, the turns after a failed one would answer a conversation that lacks it: the
            // session ends with the error (printed once by main, non-zero exit).
            if (!interactive) throw;
            // At a terminal the session stays usable (the turn is dropped from the history).
            std::fflush(stdout);
            fmt::print(stderr, "thintensor: error: {}\n", e.what());
            ++failed_turns;
        }
        sigint.clear();  // a Ctrl-C that came as the reply ended belongs to the reply
    }
}

}  // namespace

static tt::cli::Registration reg("chat", "Talk with a model, turn by turn (its chat template, KV cache kept)", 45,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    tt::cli::add_model_args(sub, o->model);
    sub.add_option("--template", o->template_path,
                   "Chat template to use instead of the model's: a .jinja file or a tokenizer_config.json");
    sub.add_option("--system", o->system, "System message that starts the conversation");
    sub.add_option("--var", o->vars, "Extra template variable key=value, e.g. enable_thinking=false (value parsed as JSON if it parses); repeatable")
        ->allow_extra_args(false);
    sub.add_option("-n,--max-tokens", o->max_tokens, "Most tokens per reply")->capture_default_str();
    tt::cli::add_stop_arg(sub, o->stop);
    tt::cli::add_sampling_args(sub, o->sampling);
    return [o]() -> int { return chat(*o); };
});
