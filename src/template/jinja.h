// A Jinja template: parsed once, rendered many times with different globals. This is the engine
// behind ChatTemplate; it implements the subset of Jinja 3 that Hugging Face chat templates use
// (see docs/TEMPLATES.md for the list) with transformers' environment settings.
#pragma once

#include "template/jinja_ast.h"
#include "template/jinja_value.h"

#include <memory>
#include <string>

namespace tt::jinja {

// Bounds for rendering untrusted templates (the fuzz target): 0 means unlimited.
struct RenderLimits {
    uint64_t max_steps = 0;   // statements executed + loop iterations
    size_t max_output = 0;    // bytes of any one rendered body
};

class Template {
public:
    // Parses; throws tt::Error "<context>:<line>:<col>: message" on syntax errors.
    Template(const std::string& source, std::string context);

    // Renders with `vars` as globals on top of the builtins (range, namespace, raise_exception,
    // strftime_now, ...). Throws tt::Error "<context>:<line>:<col>: message" on runtime errors.
    std::string render(const Object& vars, const RenderLimits& limits = {}) const;

    const std::string& context() const { return context_; }

private:
    std::string context_;
    std::shared_ptr<const std::string> source_;  // newline-normalized, for line/column lookups
    std::shared_ptr<const Body> body_;
};

}  // namespace tt::jinja
