// Sequence slots (Backend::max_sequences / select_sequence / decode_batch) on the CPU reference with
// TinyStories-656K: a batched decode step gives, bit for bit, the logits each sequence gets alone;
// sequences do not disturb each other; and the server's Scheduler, batching several requests over
// two slots with its prefix cache, produces generate()'s tokens for each. The same equality on the
// tiny random fixtures of the other layer kinds: DeltaNet (recurrent state per sequence), Gemma 4
// (KV sharing, per-layer inputs), sliding windows, mixture of experts.
#include "backends/cpu/cpu_backend.h"
#include "convert/convert.h"
#include "core/error.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "runtime/generate.h"
#include "server/scheduler.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace tt;
namespace fs = std::filesystem;

namespace {

// TinyStories-656K converted once into a folder removed at exit.
const Archive& tinystories() {
    struct Converted {
        fs::path dir = fs::temp_directory_path() / ("tt_sequences_" + std::to_string(::getpid()));
        Archive archive;
        Converted() : archive(convert_and_open(dir)) {}
        ~Converted() {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
        static Archive convert_and_open(const fs::path& d) {
            fs::create_directories(d);
            const std::string out = (d / "ts.thin").string();
            convert_hf(std::string(TT_SHARED_DIR) + "/models/tinystories-656k", out, ConvertOptions{});
            return Archive::open(out);
        }
    };
    static const Converted c;
    return c.archive;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

// Three sequences with prompts of different lengths, one batched step; each row must equal the
// logits of the same step on a backend holding that sequence alone.
void expect_batch_equals_alone(const Archive& a, int vocab, const std::string& what) {
    BackendOptions opt;
    opt.context = 64;
    opt.n_sequences = 3;
    opt.n_threads = 2;
    auto batched = make_cpu_backend(a, opt);
    opt.n_sequences = 1;
    auto alone = make_cpu_backend(a, opt);
    std::vector<std::vector<int32_t>> prompts;
    for (int s = 0; s < 3; ++s) {
        std::vector<int32_t> p;
        for (int t = 0; t < 2 + 3 * s; ++t) p.push_back(int32_t((7 + 13 * t + 31 * s) % vocab));
        prompts.push_back(p);
    }
    for (int s = 0; s < 3; ++s) {
        batched->select_sequence(s);
        batched->forward(prompts[size_t(s)], false);
    }
    const std::vector<int> seqs = {1, 2, 0};
    const std::vector<int32_t> next = {int32_t(3 % vocab), int32_t(5 % vocab), int32_t(9 % vocab)};
    const std::vector<float> got = copy(batched->decode_batch(seqs, next));
    const size_t n_vocab = got.size() / 3;
    for (size_t i = 0; i < seqs.size(); ++i) {
        alone->rewind(0);
        alone->forward(prompts[size_t(seqs[i])], false);
        const std::vector<float> want = copy(alone->forward(std::span<const int32_t>(&next[i], 1), false));
        ASSERT_EQ(want.size(), n_vocab) << what;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + std::ptrdiff_t(i * n_vocab))) << what << ": row " << i;
    }
}

}  // namespace

TEST(BackendSequences, BatchedDecodeOfEveryLayerKind) {
    for (const char* name : {"qwen3_5_text", "gemma4_text", "gemma3_text", "qwen3_moe", "qwen3_5_moe_text"}) {
        const fs::path dir = fs::temp_directory_path() / ("tt_sequences_fx_" + std::to_string(::getpid()));
        fs::create_directories(dir);
        const std::string out = (dir / (std::string(name) + ".thin")).string();
        convert_hf(std::string(TT_SHARED_DIR) + "/fixtures/hf-tiny/" + name, out, ConvertOptions{});
        const Archive a = Archive::open(out);
        expect_batch_equals_alone(a, spec_from_archive(a).vocab_size, name);
        fs::remove_all(dir);
    }
}

TEST(BackendSequences, BatchedDecodeEqualsOneSequenceAtATime) {
    BackendOptions opt;
    opt.context = 64;
    opt.n_sequences = 3;
    opt.n_threads = 2;
    auto batched = make_cpu_backend(tinystories(), opt);
    opt.n_sequences = 1;
    auto alone = make_cpu_backend(tinystories(), opt);
    ASSERT_EQ(batched->max_sequences(), 3);
    ASSERT_EQ(alone->max_sequences(), 1);

    // Three prompts of different lengths, so the batch's rows sit at different positions.
    const std::vector<std::vector<int32_t>> prompts = {{1, 400, 401}, {1, 500}, {1, 600, 601, 602, 603}};
    for (int s = 0; s < 3; ++s) {
        batched->select_sequence(s);
        batched->forward(prompts[size_t(s)], false);
    }
    const std::vector<int> seqs = {2, 0, 1};
    const std::vector<int32_t> next = {700, 701, 702};
    const std::vector<float> got = copy(batched->decode_batch(seqs, next));
    const size_t vocab = got.size() / 3;
    for (size_t i = 0; i < seqs.size(); ++i) {
        alone->rewind(0);
        alone->forward(prompts[size_t(seqs[i])], false);
        const std::vector<float> want = copy(alone->forward(std::span<const int32_t>(&next[i], 1), false));
        ASSERT_EQ(want.size(), vocab);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + std::ptrdiff_t(i * vocab))) << "row " << i;
    }
    for (int s = 0; s < 3; ++s) {
        batched->select_sequence(s);
        EXPECT_EQ(batched->n_past(), int(prompts[size_t(s)].size()) + 1) << "sequence " << s;
    }
    // The same step again through decode_batch_greedy: each row's first largest logit, and the
    // sequences advanced as by decode_batch.
    for (int s = 0; s < 3; ++s) {
        batched->select_sequence(s);
        batched->rewind(int(prompts[size_t(s)].size()));
    }
    std::vector<int32_t> ids(3, -1);
    batched->decode_batch_greedy(seqs, next, ids);
    for (size_t i = 0; i < seqs.size(); ++i) {
        const auto row = std::span<const float>(got).subspan(i * vocab, vocab);
        EXPECT_EQ(ids[i], int32_t(std::max_element(row.begin(), row.end()) - row.begin())) << "row " << i;
        batched->select_sequence(seqs[i]);
        EXPECT_EQ(batched->n_past(), int(prompts[size_t(seqs[i])].size()) + 1) << "sequence " << seqs[i];
    }
    // Rewinding one sequence leaves the others alone.
    batched->select_sequence(1);
    batched->rewind(1);
    batched->select_sequence(2);
    EXPECT_EQ(batched->n_past(), 6);
    EXPECT_THROW(batched->select_sequence(3), Error);
    EXPECT_THROW(alone->select_sequence(1), Error);
}

TEST(BackendSequences, SchedulerMatchesGenerateWithBatchingAndThePrefixCache) {
    const Archive& a = tinystories();
    auto tok = Tokenizer::from_archive(a);
    BackendOptions opt;
    opt.context = 128;
    opt.n_threads = 2;
    auto alone = make_cpu_backend(a, opt);
    opt.n_sequences = 2;
    auto shared = make_cpu_backend(a, opt);

    const std::vector<std::string> texts = {"Once upon a time", "Tom had a red ball", "Once upon a time, there was", "The sun"};
    std::vector<GenerateOptions> gens(texts.size());
    std::vector<std::vector<int32_t>> want;
    for (size_t i = 0; i < texts.size(); ++i) {
        gens[i].max_tokens = 24;
        gens[i].sampling.temperature = i % 2 ? 0.9f : 0.0f;
        gens[i].sampling.seed = 11 + i;
        alone->rewind(0);
        want.push_back(generate(*alone, tok.get(), tok->encode(texts[i], true), gens[i], [](std::string_view) {}).tokens);
    }

    server::Metrics metrics;
    server::Scheduler sched(*shared, tok.get(), 2, 8, metrics);
    // Twice: the second round finds the prompts in the slots' prefix caches.
    for (int round = 0; round < 2; ++round) {
        std::vector<std::shared_ptr<server::Job>> jobs;
        for (size_t i = 0; i < texts.size(); ++i) {
            auto j = std::make_shared<server::Job>();
            j->prompt = tok->encode(texts[i], true);
            j->gen = gens[i];
            j->sampling = gens[i].sampling;
            ASSERT_TRUE(sched.submit(j));
            jobs.push_back(j);
        }
        int reused = 0;
        for (size_t i = 0; i < jobs.size(); ++i) {
            std::vector<server::JobEvent> evs;
            std::string text;
            while (jobs[i]->wait(evs))
                for (const auto& e : evs) text += e.text;
            EXPECT_TRUE(jobs[i]->error.empty()) << jobs[i]->error;
            EXPECT_EQ(jobs[i]->completion_tokens, int(want[i].size())) << "round " << round << " job " << i;
            EXPECT_EQ(text, tok->decode(want[i], true)) << "round " << round << " job " << i;
            reused += jobs[i]->cached_tokens;
        }
        if (round == 1) {
            EXPECT_GT(reused, 0) << "the second round reuses cached prefixes";
        }
    }
    const std::string m = metrics.render(sched.gauges());
    EXPECT_EQ(m.find("thintensor_decode_rows_total 0\n"), std::string::npos);
}
