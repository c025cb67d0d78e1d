// llama.cpp's logits over given token ids, for comparing its quantized models' quality with
// ThinTensor's on the same tokens (bench/quality_vs_llamacpp.sh). Built against the anchors'
// llama.cpp (../shared/anchors) by that script; not part of ThinTensor.
//
// usage: llama_logits MODEL.gguf IDS.txt OUT.f32 [threads [gpu_layers [f16|f32]]]
//   IDS.txt: one sequence a line, token ids separated by spaces. Each sequence is decoded alone
//   from an empty cache, in one batch that outputs every position. OUT.f32 receives, sequence
//   after sequence, [n_tokens, n_vocab] float32 logits, row-major, little-endian. gpu_layers: as
//   llama.cpp's -ngl (0, the default: the CPU; a build with a GPU backend can take 99). The KV
//   cache: f16, llama.cpp's default, or f32 without flash attention (the full-precision base the
//   others are scored on).
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf IDS.txt OUT.f32 [threads [gpu_layers [f16|f32]]]\n", argv[0]);
        return 2;
    }
    std::vector<std::vector<llama_token>> seqs;
    std::ifstream in(argv[2]);
    if (!in) {
        std::fprintf(stderr, "llama_logits: cannot read %s\n", argv[2]);
        return 1;
    }
    size_t longest = 0;
    for (std::string line; std::getline(in, line);) {
        std::istringstream ss(line);
        std::vector<llama_token> s;
        for (long id; ss >> id;) s.push_back(llama_token(id));
        if (s.empty()) continue;
        longest = std::max(longest, s.size());
        seqs.push_back(std::move(s));
    }
    if (seqs.empty()) {
        std::fprintf(stderr, "llama_logits: %s holds no token ids\n", argv[2]);
        return 1;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = argc > 5 ? std::atoi(argv[5]) : 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        std::fprintf(stderr, "llama_logits: cannot load %s\n", argv[1]);
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(longest);
    cp.n_batch = cp.n_ubatch = uint32_t(longest);
    if (argc > 4) cp.n_threads = cp.n_threads_batch = std::atoi(argv[4]);
    if (argc > 6 && std::string(argv[6]) == "f32") {
        // The base: f32 rows, and no flash attention (its CPU kernel multiplies in f16 whatever
        // the cache holds: f16 and f32 caches gave identical logits with it).
        cp.type_k = cp.type_v = GGML_TYPE_F32;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    }
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "llama_logits: cannot create a context of %zu tokens\n", longest);
        return 1;
    }
    std::ofstream out(std::string(argv[3]) + ".part", std::ios::binary);
    llama_batch batch = llama_batch_init(int32_t(longest), 0, 1);
    for (const auto& s : seqs) {
        for (llama_token id : s)
            if (id < 0 || id >= n_vocab) {
                std::fprintf(stderr, "llama_logits: token id %d outside the vocabulary of %d\n", id, n_vocab);
                return 1;
            }
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = int32_t(s.size());
        for (size_t i = 0; i < s.size(); ++i) {
            batch.token[i] = s[i];
            batch.pos[i] = llama_pos(i);
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        if (llama_decode(ctx, batch) != 0) {
            std::fprintf(stderr, "llama_logits: decode failed on a sequence of %zu tokens\n", s.size());
            return 1;
        }
        for (size_t i = 0; i < s.size(); ++i)
            out.write(reinterpret_cast<const char*>(llama_get_logits_ith(ctx, int32_t(i))), std::streamsize(n_vocab * sizeof(float)));
    }
    out.close();
    if (!out || std::rename((std::string(argv[3]) + ".part").c_str(), argv[3]) != 0) {
        std::fprintf(stderr, "llama_logits: cannot write %s\n", argv[3]);
        return 1;
    }
    std::fprintf(stderr, "llama_logits: %zu sequences, vocabulary %d\n", seqs.size(), n_vocab);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
