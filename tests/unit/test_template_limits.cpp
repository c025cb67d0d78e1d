// The bounds every template renders under (jinja::RenderLimits, the same defaults for the CLI,
// the chat REPL and the fuzz target): hostile or broken templates end in a tt::Error that names
// the template and the limit, never in a stack overflow, a hang or unbounded memory. Each long
// input here (20,000-link chains, 20,000-deep brackets and blocks) overflowed the stack before
// the bounds existed.
#include "core/error.h"
#include "template/chat_template.h"
#include "template/jinja.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

using namespace tt;

namespace {

std::string repeat(const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

const jinja::Object& vars() {
    static const jinja::Object v =
        jinja::from_json(nlohmann::json::parse(R"({"x": "a", "xs": [[0]], "d": {"a": {}}})")).object();
    return v;
}

// The message of the tt::Error that parsing + rendering `source` (named t.jinja) throws; "" if none.
std::string error_of(const std::string& source, const jinja::RenderLimits& limits = {}) {
    try {
        jinja::Template t(source, "t.jinja", limits);
        t.render(vars());
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The error starts with the template's name and position, and names the limit.
void expect_limit(const std::string& source, const std::string& what, const jinja::RenderLimits& limits = {}) {
    std::string err = error_of(source, limits);
    EXPECT_EQ(err.rfind("t.jinja:", 0), 0u) << "no error naming the template for " << source.substr(0, 60)
                                            << "...: '" << err << "'";
    EXPECT_NE(err.find(what), std::string::npos) << "expected '" << what << "' in: " << err;
}

const std::string k_nesting = "template exceeded the nesting limit";

}  // namespace

TEST(TemplateLimits, DefaultsAreOneStruct) {
    jinja::RenderLimits l;
    EXPECT_EQ(l.max_depth, 256);
    EXPECT_EQ(l.max_steps, 1'000'000u);
    EXPECT_GT(l.max_seconds, 0);
    EXPECT_EQ(l.max_output, size_t{32} << 20);
}

// Flat chains are parsed by loops but make left-deep trees; each is refused at parse time with
// the position of the link that went past the bound.
TEST(TemplateLimits, LongFlatChains) {
    expect_limit("{{ 1" + repeat(" + 1", 20000) + " }}", k_nesting + ": expression nested deeper than 256 levels");
    expect_limit("{{ 1" + repeat(" ~ 1", 20000) + " }}", k_nesting);
    expect_limit("{{ 1" + repeat(" * 1", 20000) + " }}", k_nesting);
    expect_limit("{{ 1" + repeat(" and 1", 20000) + " }}", k_nesting);
    expect_limit("{{ x" + repeat("|upper", 20000) + " }}", k_nesting);
    expect_limit("{{ x" + repeat(" is string", 20000) + " }}", k_nesting);
    expect_limit("{{ d" + repeat(".a", 20000) + " }}", k_nesting);
    expect_limit("{{ xs" + repeat("[0]", 20000) + " }}", k_nesting);
    expect_limit("{{ xs" + repeat("[0:1]", 20000) + " }}", k_nesting);
    expect_limit("{{ x" + repeat("()", 20000) + " }}", k_nesting);
    expect_limit("{{ 1" + repeat(" if 1 else 1", 20000) + " }}", k_nesting);
    // The position is that of the operator that went past the bound: " + 1" is 4 bytes, and the
    // first `+` is at column 6, so the 256th is at 6 + 255 * 4.
    EXPECT_EQ(error_of("{{ 1" + repeat(" + 1", 300) + " }}"),
              "t.jinja:1:1026: " + k_nesting +
                  ": expression nested deeper than 256 levels (a chain of operators, filters, attributes or "
                  "subscripts, or nested brackets)");
}

TEST(TemplateLimits, DeepBrackets) {
    expect_limit("{{ " + repeat("(", 20000) + "1" + repeat(")", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("[", 20000) + repeat("]", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("{'a': ", 20000) + "1" + repeat("}", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("(1, ", 20000) + "1" + repeat(")", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("not ", 20000) + "1 }}", k_nesting);
    expect_limit("{{ " + repeat("- ", 20000) + "1 }}", k_nesting);
    expect_limit("{{ " + repeat("x(", 20000) + repeat(")", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("range(", 20000) + "1" + repeat(")", 20000) + " }}", k_nesting);
    expect_limit("{{ " + repeat("x|join(", 20000) + "1" + repeat(")", 20000) + " }}", k_nesting);
    expect_limit("{{ xs[" + repeat("xs[", 20000) + "0" + repeat("]", 20001) + " }}", k_nesting);
}

TEST(TemplateLimits, DeepBlocks) {
    std::string blocks = "blocks nested deeper than 256 levels";
    expect_limit(repeat("{% if 1 %}", 20000) + repeat("{% endif %}", 20000), blocks);
    expect_limit(repeat("{% for i in xs %}", 20000) + repeat("{% endfor %}", 20000), blocks);
    expect_limit(repeat("{% macro m() %}", 20000) + repeat("{% endmacro %}", 20000), blocks);
    expect_limit(repeat("{% filter upper %}", 20000) + repeat("{% endfilter %}", 20000), blocks);
    expect_limit(repeat("{% set v %}", 20000) + repeat("{% endset %}", 20000), blocks);
    expect_limit(repeat("{% generation %}", 20000) + repeat("{% endgeneration %}", 20000), blocks);
}

// Under the bound everything still works: real templates nest a few levels, not hundreds.
TEST(TemplateLimits, BelowTheBoundRenders) {
    jinja::Template sum("{{ 0" + repeat(" + 1", 200) + " }}", "t.jinja");
    EXPECT_EQ(sum.render(vars()), "200");
    jinja::Template parens("{{ " + repeat("(", 100) + "7" + repeat(")", 100) + " }}", "t.jinja");
    EXPECT_EQ(parens.render(vars()), "7");
    jinja::Template ifs(repeat("{% if 1 %}", 60) + "ok" + repeat("{% endif %}", 60), "t.jinja");
    EXPECT_EQ(ifs.render(vars()), "ok");
    jinja::Template flat("{{ 1" + repeat(" == 1", 20000) + " }}", "t.jinja");  // one compare node
    EXPECT_EQ(flat.render(vars()), "True");
}

// Nesting that no single tree has: a macro calling itself, or blocks within expressions within
// macros. Counted together at render time.
TEST(TemplateLimits, RenderNesting) {
    std::string msg = k_nesting + ": evaluation nested deeper than 256 levels";
    expect_limit("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", msg);
    expect_limit("{% macro f(n) %}{% if n %}{% for i in [1] %}{{ f(n + 1) }}{% endfor %}{% endif %}{% endmacro %}"
                 "{{ f(1) }}",
                 msg);
    expect_limit("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}", msg);
    // A bounded recursion renders (here 20 levels).
    EXPECT_EQ(error_of("{% macro f(n) %}{% if n < 20 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}{% endmacro %}{{ f(0) }}"),
              "");
}

// Values are bounded when built, so nothing walks (prints, serializes, destroys) one too deep or
// exponentially large.
TEST(TemplateLimits, ValueNestingAndSize) {
    expect_limit("{% set ns = namespace(x=0) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}",
                 k_nesting + ": a value nested deeper than 256 levels");
    expect_limit("{% set ns = namespace(x={}) %}{% for i in range(100000) %}{% set ns.x = {'k': ns.x} %}{% endfor %}",
                 k_nesting + ": a value nested deeper than 256 levels");
    // Doubling a list that holds itself twice: 2^60 items if printed.
    expect_limit("{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}"
                 "{{ ns.x }}",
                 "template exceeded the output limit: a value larger than 33554432 bytes");
    expect_limit("{% set ns = namespace(x='ab') %}{% for i in range(60) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}",
                 "template exceeded the output limit: a value larger than");
    expect_limit("{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = ns.x + ns.x %}{% endfor %}",
                 "template exceeded the output limit: a value larger than");
}

TEST(TemplateLimits, Steps) {
    // Two nested range(100000) loops: 10^10 iterations without the bound.
    auto t0 = std::chrono::steady_clock::now();
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "template exceeded the step limit (1000000 statements and loop iterations)");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    jinja::RenderLimits small;
    small.max_steps = 100;
    expect_limit("{% for i in range(1000) %}{% endfor %}", "step limit (100 statements", small);
    EXPECT_EQ(error_of("{% for i in range(50) %}{% endfor %}", small), "");
}

TEST(TemplateLimits, WallTime) {
    jinja::RenderLimits l;
    l.max_steps = UINT64_MAX;
    l.max_seconds = 0.2;
    auto t0 = std::chrono::steady_clock::now();
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "template exceeded the time limit (0.2 s)", l);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    // Work inside one statement (a filtered loop evaluating its condition 10^5 times per pass)
    // is clocked as well.
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) if j > 1 and j < 0 %}{% endfor %}{% endfor %}",
                 "template exceeded the time limit", l);
}

TEST(TemplateLimits, Output) {
    std::string msg = "template exceeded the output limit (33554432 bytes rendered)";
    // 100 KB per step: GBs without the bound.
    expect_limit("{% set s = 'x' * 100000 %}{% for i in range(100000) %}{{ s }}{% endfor %}", msg);
    expect_limit("{% for i in range(100000) %}" + std::string(100000, 'y') + "{% endfor %}", msg);
    // Text piled up where it is not printed counts too: macro results, set blocks, filter blocks.
    expect_limit("{% set s = 'x' * 100000 %}{% macro m() %}{{ s }}{% endmacro %}"
                 "{% for i in range(100000) %}{% set _ = m() %}{% endfor %}",
                 msg);
    expect_limit("{% set s = 'x' * 100000 %}{% for i in range(100000) %}{% set b %}{{ s }}{% endset %}{% endfor %}",
                 msg);
    jinja::RenderLimits l;
    l.max_output = 10;
    expect_limit("{{ 'abcdefghijk' }}", "the output limit: a value larger than 10 bytes", l);
    l.max_output = 2000;
    expect_limit("{% for i in range(5) %}{% for j in range(5) %}{{ 'x' * 100 }}{% endfor %}{% endfor %}",
                 "t.jinja:1:47: template exceeded the output limit (2000 bytes rendered)", l);
    EXPECT_EQ(error_of("{% for i in range(4) %}{% for j in range(5) %}{{ 'x' * 100 }}{% endfor %}{% endfor %}", l), "");
}

// The limits apply without anyone asking: ChatTemplate (what `template`, `run --chat` and `chat`
// use) renders under the defaults, and its errors name the template's source.
TEST(TemplateLimits, ChatTemplateAppliesThemByDefault) {
    auto msgs = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
    ChatTemplate hang("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                      "model/chat_template.jinja");
    try {
        hang.render(msgs, true);
        FAIL() << "expected the step limit";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("model/chat_template.jinja:1:", 0), 0u) << e.what();
        EXPECT_NE(std::string(e.what()).find("step limit"), std::string::npos) << e.what();
    }
    try {
        ChatTemplate("{{ messages" + repeat("[0]", 20000) + " }}", "model/tokenizer_config.json:chat_template");
        FAIL() << "expected the nesting limit";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("model/tokenizer_config.json:chat_template:1:", 0), 0u) << e.what();
        EXPECT_NE(std::string(e.what()).find(k_nesting), std::string::npos) << e.what();
    }
}

// JSON that reaches the template is depth-bounded: tokenizer_config.json, --var values, and JSON
// built in memory by a caller.
TEST(TemplateLimits, DeepJson) {
    auto dir = std::filesystem::temp_directory_path() / ("tt_tpl_limits_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto cfg = (dir / "tokenizer_config.json").string();
    std::ofstream(cfg) << "{\"chat_template\": \"x\", \"k\": " << repeat("[", 50000) << repeat("]", 50000) << "}";
    try {
        ChatTemplate::load(cfg);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), cfg + ": JSON nested deeper than 128 levels");
    }
    std::filesystem::remove_all(dir);

    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    try {
        add_template_var(extra, "deep=" + repeat("[", 50000) + repeat("]", 50000));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "--var deep: JSON nested deeper than 128 levels");
    }
    add_template_var(extra, "word=[not json");  // not JSON: the string as written
    EXPECT_EQ(extra["word"], "[not json");

    nlohmann::json deep = 1;
    for (int i = 0; i < 1000; ++i) deep = nlohmann::json::array({deep});
    EXPECT_THROW(jinja::from_json(deep), Error);
}

// One UTF-8 codec (utf8proc) under the engine: code points, invalid bytes as characters of their own.
TEST(TemplateLimits, Utf8Codec) {
    EXPECT_EQ(jinja::utf8_length("a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80"), 4u);
    EXPECT_EQ(jinja::utf8_length("a\xff" "b"), 3u);
    EXPECT_EQ(jinja::utf8_chars("\xe6\x97").size(), 2u);  // truncated: two invalid bytes
    EXPECT_EQ(jinja::utf8_decode("\xf0\x9f\x98\x80"), 0x1f600u);
    std::string s;
    jinja::utf8_append(s, 0xe9);
    jinja::utf8_append(s, 0x65e5);
    EXPECT_EQ(s, "\xc3\xa9\xe6\x97\xa5");
    jinja::Template t(R"({{ "\u00e9\U0001F600"|upper }}|{{ "\u00e9"|tojson(ensure_ascii=true) }}|{{ "\U0001F600"|tojson(ensure_ascii=true) }})", "t.jinja");
    EXPECT_EQ(t.render(vars()), "\xc3\x89\xf0\x9f\x98\x80|\"\\u00e9\"|\"\\ud83d\\ude00\"");
    // Lone surrogates from escapes are one character each, as Python counts and escapes them.
    jinja::Template sur(R"({{ "\ud83d\ude00"|length }}|{{ "\ud83d"|tojson(ensure_ascii=true) }})", "sur.jinja");
    EXPECT_EQ(sur.render(vars()), "2|\"\\ud83d\"");
}
