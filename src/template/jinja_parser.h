// Recursive-descent parser from Jinja tokens to the statement tree, with Jinja's operator
// precedence (or < and < not < comparison < + - < ~ < * / // % < ** < unary < postfix / filters).
// Tags it does not know (extends, include, import, block, ...) are errors naming line and column.
#pragma once

#include "template/jinja_ast.h"
#include "template/jinja_lexer.h"

#include <string>

namespace tt::jinja {

// Throws tt::Error "<context>:<line>:<col>: message" on syntax errors, and on any construct
// nested deeper than max_depth (RenderLimits::max_depth): expression trees, parentheses, blocks.
Body parse(const std::string& normalized_source, const std::string& context, int max_depth);

}  // namespace tt::jinja
