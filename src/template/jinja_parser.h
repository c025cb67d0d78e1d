// Recursive-descent parser from Jinja tokens to the statement tree, with Jinja's operator
// precedence (or < and < not < comparison < + - < ~ < * / // % < ** < unary < postfix / filters).
// Tags it does not know (extends, include, import, block, ...) are errors naming line and column.
#pragma once

#include "template/jinja_ast.h"
#include "template/jinja_lexer.h"

#include <string>

namespace tt::jinja {

// Throws tt::Error "<context>:<line>:<col>: message" on syntax errors.
Body parse(const std::string& normalized_source, const std::string& context);

}  // namespace tt::jinja
