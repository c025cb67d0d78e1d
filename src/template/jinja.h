// A Jinja template: parsed once, rendered many times with different globals. This is the engine
// behind ChatTemplate; it implements the subset of Jinja 3 that Hugging Face chat templates use
// (see docs/TEMPLATES.md for the list) with transformers' environment settings.
#pragma once

#include "template/jinja_ast.h"
#include "template/jinja_value.h"

#include <memory>
#include <string>

namespace tt::jinja {

// The bounds every template is parsed and rendered under, so that a downloaded model's template
// cannot crash (stack overflow), hang or exhaust memory. One set of defaults for every caller: the
// `template` command, `run --chat` and `chat` (through ChatTemplate) and the fuzz target. They sit
// far above what real chat templates need (nesting under 20, a few thousand steps for a long
// conversation, well under a second, a prompt of at most a few MB) and far below what would hurt.
// Exceeding one is a tt::Error "<template>:<line>:<col>: template exceeded ...".
struct RenderLimits {
    // Nesting of any construct, at parse time (parentheses, operator / filter / attribute / index
    // chains, list and dict literals, unary operators, blocks) and at render time (expressions
    // within blocks within macro calls, counted together, and the nesting of values). Every part
    // of the engine that recurses (parser, evaluator, destructors, str() and tojson) recurses at
    // most this deep; a few KB of stack per level at most, even under ASan.
    int max_depth = 256;
    uint64_t max_steps = 1'000'000;  // statements executed + loop iterations
    double max_seconds = 10;         // wall time of one render
    // Bytes of text rendered, counted at every level (macro, set-block and filter-block bodies as
    // well as the output), and the size of any one value (a string, or a list or dict counted as
    // if nothing in it were shared; see Value::weight()).
    size_t max_output = size_t{32} << 20;
};

class Template {
public:
    // Parses under limits.max_depth and keeps the limits for render(); throws tt::Error
    // "<context>:<line>:<col>: message" on syntax errors.
    Template(const std::string& source, std::string context, const RenderLimits& limits = {});

    // Renders with `vars` as globals on top of the builtins (range, namespace, raise_exception,
    // strftime_now, ...) under the limits given at construction. Throws tt::Error
    // "<context>:<line>:<col>: message" on runtime errors and when a limit is exceeded.
    std::string render(const Object& vars) const { return render(vars, limits_); }
    // The same under other limits (tests).
    std::string render(const Object& vars, const RenderLimits& limits) const;

    const std::string& context() const { return context_; }

private:
    std::string context_;
    RenderLimits limits_;
    std::shared_ptr<const std::string> source_;  // newline-normalized, for line/column lookups
    std::shared_ptr<const Body> body_;
};

}  // namespace tt::jinja
