// libedit behind LineEditor: our read function (terminal + wake-up descriptor, UTF-8 decoded with
// utf8proc), the wide-character line read, and the history.
#include "cli/line_editor.h"

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/unicode.h"

#include <histedit.h>
#include <utf8proc.h>

#include <cerrno>
#include <clocale>
#include <cstring>
#include <langinfo.h>
#include <poll.h>
#include <unistd.h>

namespace tt::cli {

namespace {

// How many lines Up/Down can go back.
constexpr int k_history_size = 1000;

bool ctype_is_utf8() {
    const char* cs = nl_langinfo(CODESET);
    return cs && (std::strcmp(cs, "UTF-8") == 0 || std::strcmp(cs, "utf8") == 0);
}

}  // namespace

struct LineEditor::Impl {
    std::string prompt;
    int in_fd, wake_fd;
    std::function<bool()> take_interrupt;
    EditLine* el = nullptr;
    HistoryW* hist = nullptr;
    std::string saved_ctype;  // LC_CTYPE before ours, restored at the end
    std::string pending;      // bytes read from the terminal, not yet handed to libedit
    bool eof = false;
    Status status = Status::line;
    int read_errno = 0;  // a read error other than an interrupt (reported by next())

    // One character for libedit: 1 with *out set, 0 at end of input, -1 when interrupted or on
    // an error (status/read_errno say which).
    int read_char(wchar_t* out) {
        for (;;) {
            if (!pending.empty()) {
                // A character whose bytes have not all arrived waits for the rest: the complete
                // prefix is empty only then.
                if (tok::utf8_complete_prefix(pending) > 0 || eof) {
                    utf8proc_int32_t cp = 0;
                    ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(pending.data()),
                                                 ssize_t(pending.size()), &cp);
                    if (n <= 0) cp = 0xFFFD, n = 1;  // not UTF-8: shown as the replacement character
                    pending.erase(0, size_t(n));
                    *out = wchar_t(cp);
                    return 1;
                }
            } else if (eof) {
                status = Status::eof;
                return 0;
            }
            pollfd p[2] = {{in_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                read_errno = errno;
                return -1;
            }
            if ((p[1].revents & POLLIN) && take_interrupt()) {
                status = Status::interrupted;
                errno = EINTR;
                return -1;
            }
            if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[256];
            const ssize_t n = read(in_fd, chunk, sizeof chunk);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                if (errno == EIO) {  // the terminal went away (its window closed): end of input
                    eof = true;
                    continue;
                }
                read_errno = errno;
                return -1;
            }
            if (n == 0) eof = true;
            else pending.append(chunk, size_t(n));
        }
    }

    static Impl& of(EditLine* e) {
        Impl* self = nullptr;
        el_get(e, EL_CLIENTDATA, &self);
        return *self;
    }
    static int read_char_thunk(EditLine* e, wchar_t* out) { return of(e).read_char(out); }
    static char* prompt_thunk(EditLine* e) { return of(e).prompt.data(); }
};

LineEditor::LineEditor(std::string prompt, int in_fd, std::FILE* out, int wake_fd, std::function<bool()> take_interrupt)
    : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.prompt = std::move(prompt);
    m.in_fd = in_fd;
    m.wake_fd = wake_fd;
    m.take_interrupt = std::move(take_interrupt);
    // libedit measures and writes characters through the C library's multibyte functions, which
    // follow LC_CTYPE: the program starts in the "C" locale, where nothing beyond ASCII exists.
    // Text here is UTF-8, so a UTF-8 LC_CTYPE is chosen for as long as the editor lives.
    m.saved_ctype = std::setlocale(LC_CTYPE, nullptr);
    if (!(std::setlocale(LC_CTYPE, "") && ctype_is_utf8()) && !(std::setlocale(LC_CTYPE, "C.UTF-8") && ctype_is_utf8())) {
        std::setlocale(LC_CTYPE, m.saved_ctype.c_str());
        log::warn("no UTF-8 locale (LANG, or C.UTF-8) is installed: characters beyond ASCII may show wrongly while typing");
    }
    // el_init's input FILE is unused (our read function reads in_fd); stdin stands in.
    m.el = el_init("thintensor", stdin, out, stderr);
    if (!m.el) fail("cannot start line editing on the terminal");
    m.hist = history_winit();
    if (!m.hist) {
        el_end(m.el);
        fail("cannot start the line-editing history");
    }
    HistEventW ev;
    history_w(m.hist, &ev, H_SETSIZE, k_history_size);
    history_w(m.hist, &ev, H_SETUNIQUE, 1);
    el_set(m.el, EL_CLIENTDATA, impl_.get());
    el_set(m.el, EL_EDITOR, "emacs");
    el_set(m.el, EL_SIGNAL, 0);  // Ctrl-C is chat's (the self-pipe); libedit's handlers would re-raise it
    el_set(m.el, EL_PROMPT, Impl::prompt_thunk);
    el_set(m.el, EL_GETCFN, Impl::read_char_thunk);
    el_wset(m.el, EL_HIST, history_w, m.hist);
}

LineEditor::~LineEditor() {
    history_wend(impl_->hist);
    el_end(impl_->el);
    std::setlocale(LC_CTYPE, impl_->saved_ctype.c_str());
}

LineEditor::Status LineEditor::next(std::string& line) {
    Impl& m = *impl_;
    m.status = Status::line;
    m.read_errno = 0;
    el_resize(m.el);  // the window may have changed size during the reply (no SIGWINCH handler)
    int count = 0;
    const wchar_t* text = el_wgets(m.el, &count);
    if (!text || count <= 0) {
        if (m.status == Status::interrupted) return Status::interrupted;
        if (m.read_errno != 0) fail("stdin: {}", std::strerror(m.read_errno));
        return Status::eof;  // Ctrl-D on an empty line, or the terminal closed
    }
    line.clear();
    for (int i = 0; i < count; ++i) {
        utf8proc_uint8_t buf[4];
        const utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_int32_t(text[i]), buf);
        line.append(reinterpret_cast<const char*>(buf), size_t(n));
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) {
        HistEventW ev;
        std::wstring entry(text, size_t(count));
        while (!entry.empty() && (entry.back() == L'\n' || entry.back() == L'\r')) entry.pop_back();
        history_w(m.hist, &ev, H_ENTER, entry.c_str());
    }
    return Status::line;
}

}  // namespace tt::cli
