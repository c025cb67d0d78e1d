// thintensor verify FILE.thin [--json]: checks an archive the way `run` will use it: the spec
// (spec_from_archive), the tensors it binds (bind_weights), the embedded tokenizer (its kind, then loaded with Tokenizer::from_archive
// and its ids checked against the vocabulary) and every tensor and file checksum. All checks run;
// the first that failed is the error (stderr, exit 1), and --json prints every result on stdout.
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>

namespace {

struct Opts {
    std::string path;
    bool json = false;
};

struct Check {
    std::string name;
    std::optional<std::string> error;    // nullopt = passed
    std::optional<std::string> skipped;  // not run: a check it depends on failed
    nlohmann::json detail = nlohmann::json::object();
};

// Thrown by a check whose prerequisite failed: reported as skipped, not as one more failure.
struct Skip {
    std::string why;
};

int run(const Opts& o) {
    std::vector<Check> checks;
    auto attempt = [&](const char* name, const std::function<void(nlohmann::json&)>& body) {
        Check c{name, std::nullopt, std::nullopt};
        try {
            body(c.detail);
        } catch (const tt::Error& e) {
            c.error = e.what();
        } catch (const Skip& s) {
            c.skipped = s.why;
        }
        checks.push_back(std::move(c));
        return !checks.back().error && !checks.back().skipped;
    };
    auto report = [&]() -> int {
        const Check* bad = nullptr;
        for (const auto& c : checks)
            if (c.error && !bad) bad = &c;
        if (o.json) {
            nlohmann::json j = {{"path", o.path}, {"ok", bad == nullptr}, {"checks", nlohmann::json::array()}};
            for (const auto& c : checks) {
                nlohmann::json e = c.detail;
                e["name"] = c.name;
                e["ok"] = !c.error && !c.skipped;
                if (c.error) e["error"] = *c.error;
                if (c.skipped) e["skipped"] = *c.skipped;
                j["checks"].push_back(e);
            }
            fmt::print("{}\n", j.dump(2));
        }
        if (bad) {
            size_t n_bad = 0;
            for (const auto& c : checks) n_bad += c.error.has_value();
            if (n_bad > 1) throw tt::Error(fmt::format("{} (and {} more failed check(s))", *bad->error, n_bad - 1));
            throw tt::Error(*bad->error);
        }
        return 0;
    };

    std::optional<tt::Archive> a;
    if (!attempt("open", [&](nlohmann::json&) { a.emplace(tt::Archive::open(o.path)); })) return report();
    std::optional<tt::ModelSpec> spec;
    attempt("spec", [&](nlohmann::json& d) {
        spec = tt::spec_from_archive(*a);
        d["arch"] = tt::arch_name(spec->arch);
        d["vocab_size"] = spec->vocab_size;
    });
    attempt("weights", [&](nlohmann::json&) {
        // Every tensor `run` binds, with its dtype and shape (what the backends read the spec with).
        if (!spec) throw Skip{"the spec is invalid"};
        (void)tt::bind_weights(*a, *spec);
    });
    uint64_t total = 0;
    for (const auto& t : a->tensors()) total += t.view.nbytes;
    const bool sums_ok = attempt("checksums", [&](nlohmann::json& d) {
        tt::Progress progress("verify", total);
        a->verify([&](uint64_t done) { progress.set(done); });
        progress.finish();
        d["tensors"] = a->tensors().size();
        d["files"] = a->files().size();
        d["bytes"] = total;
    });
    std::string tok_summary = "no tokenizer";
    attempt("tokenizer", [&](nlohmann::json& d) {
        // note: after the checksums, so that a corrupt embedded file is reported as such first.
        if (!sums_ok) throw Skip{"the checksums failed"};
        const tt::TokenizerKind kind = tt::tokenizer_kind_of(*a);
        d["kind"] = tt::tokenizer_kind_name(kind);
        if (kind == tt::TokenizerKind::none) return;
        const auto tok = tt::Tokenizer::from_archive(*a);
        d["vocab_size"] = tok->vocab_size();
        if (spec) tt::check_tokenizer_fits(*tok, spec->vocab_size, o.path + ": the embedded tokenizer");
        tok_summary = fmt::format("tokenizer {} ({} tokens)", tt::tokenizer_kind_name(kind), tok->vocab_size());
    });
    const int rc = report();
    if (!o.json)
        fmt::print("{}: OK ({} tensors, {} files, {} checked; spec {}, {})\n", o.path, a->tensors().size(), a->files().size(),
                   tt::format_bytes(double(total)), tt::arch_name(spec->arch), tok_summary);
    return rc;
}

}  // namespace

static tt::cli::Registration reg("verify", "Check a .thin archive as `run` will use it: spec, tokenizer, every checksum", 31,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
                                     auto o = std::make_shared<Opts>();
                                     sub.add_option("FILE", o->path, ".thin archive")->required();
                                     sub.add_flag("--json", o->json, "Print every check's result as JSON on stdout");
                                     return [o]() -> int { return run(*o); };
                                 });
