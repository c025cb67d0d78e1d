// Line editing for the chat prompt when a person types at a terminal: cursor keys, the usual
// Emacs keys (Ctrl-A/E/K/U/W...), and an in-memory history recalled with Up/Down, through libedit
// (BSD editline, linked statically; see CMakeLists.txt). chat.cpp uses it only when stdin is a
// terminal; piped input is read as plain lines.
//
// The terminal is read through our own read function, which polls a wake-up descriptor beside it
// (chat's Ctrl-C self-pipe): a Ctrl-C at the prompt abandons the half-typed line at once, the way
// a shell does, instead of being swallowed by a read() that SA_RESTART restarts.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

namespace tt::cli {

class LineEditor {
public:
    enum class Status { line, eof, interrupted };

    // in_fd: the terminal typed at; out: the terminal the prompt and the edited line are shown on.
    // When wake_fd becomes readable, take_interrupt() is called; true abandons the line being typed
    // (next() returns interrupted), false goes on reading.
    LineEditor(std::string prompt, int in_fd, std::FILE* out, int wake_fd, std::function<bool()> take_interrupt);
    ~LineEditor();
    LineEditor(const LineEditor&) = delete;
    LineEditor& operator=(const LineEditor&) = delete;

    // Reads one edited line (without its newline, UTF-8) into `line`. eof: Ctrl-D on an empty line
    // or the terminal closed (Ctrl-D on a non-empty line deletes the character under the cursor or
    // rings the bell, as in a shell: a half-typed line is never sent by it). Lines are added to the
    // history (not twice in a row) when returned.
    Status next(std::string& line);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tt::cli
