// The tokenizer interface the rest of ThinTensor uses (runtime, chat REPL, convert, CLI): text ->
// ids and ids -> text, exactly as Hugging Face `tokenizers` does for the model's tokenizer.json,
// or as llama2.c's run.c does for its tokenizer.bin. Loaded from a .thin archive (the embedded
// files), a tokenizer.json, a llama2.c .bin tokenizer, or a Hugging Face model directory.
//
// Two implementations sit behind it (src/tokenizer/hf_tokenizer.cpp, llama2c_tokenizer.cpp);
// StreamDecoder turns ids into text one at a time for streaming generation output.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

class Archive;

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // tokenizer.json text + tokenizer_config.json text (may be empty). `context` names the source
    // in error messages. Throws tt::Error on malformed JSON or an unsupported component (named).
    static std::unique_ptr<Tokenizer> from_hf(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                              const std::string& context);
    // llama2.c tokenizer.bin / tok512.bin bytes; vocab_size -1 reads tokens until the end.
    static std::unique_ptr<Tokenizer> from_llama2c(std::string_view bytes, int vocab_size, const std::string& context);
    // From an opened archive: embedded "tokenizer.json" (+ "tokenizer_config.json"), or
    // "tok512.bin" / "tokenizer.bin" (llama2.c). Throws if the archive has none.
    static std::unique_ptr<Tokenizer> from_archive(const Archive& a);
    // SOURCE: a .thin archive, a tokenizer.json (a tokenizer_config.json beside it is read too),
    // a llama2.c .bin tokenizer, or a directory holding one of those.
    static std::unique_ptr<Tokenizer> load(const std::string& source);

    // Throws tt::Error if `text` is not valid UTF-8 (`tokenizers` only accepts str).
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
    // Ids outside the vocabulary are skipped, as `tokenizers` does. Invalid UTF-8 produced by byte
    // tokens becomes U+FFFD, so the result is always valid UTF-8.
    virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
    // One past the largest id (model vocab and added tokens).
    virtual int vocab_size() const = 0;
    // The ids of the tokenizer model's own vocabulary, without added tokens (which a checkpoint may
    // list past its embedding rows: Gemma 3 1B's <image_soft_token> is id 262144 of 262144 rows).
    virtual int model_vocab_size() const { return vocab_size(); }
    virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
    // The raw vocab string ("Ġthe", "▁the", "<0x0A>", "<|im_end|>"); "" for an unknown id.
    virtual std::string id_to_token(int32_t id) const = 0;
    virtual bool is_special(int32_t id) const = 0;

    int32_t bos_id() const { return bos_id_; }                // -1 if none
    std::vector<int32_t> eos_ids() const { return eos_ids_; }  // from tokenizer_config eos_token
    std::string bos_token() const { return bos_token_; }      // "" if none
    std::string eos_token() const { return eos_token_; }
    bool add_bos() const { return add_bos_; }  // whether encode(.., true) prepends BOS
    const std::string& context() const { return context_; }

protected:
    std::string context_;
    int32_t bos_id_ = -1;
    std::vector<int32_t> eos_ids_;
    std::string bos_token_, eos_token_;
    bool add_bos_ = false;
};

// Streaming decode for generation: push ids one at a time; push() returns the text that became
// final, such that all push() results + flush() == decode(all ids, skip_special_tokens).
// note: it keeps a window of the ids since the last emitted text and emits the growth of
// decode(window) once that text does not end in U+FFFD (an incomplete UTF-8 character, e.g. a
// byte-fallback or byte-level token split); leading-space stripping (SentencePiece, llama2.c)
// applies to the window's first token in both decodes, so it cancels out.
class StreamDecoder {
public:
    StreamDecoder(const Tokenizer& tok, bool skip_special_tokens);
    std::string push(int32_t id);
    // Returns whatever is still held back (e.g. a trailing incomplete character, as U+FFFD) and
    // resets the decoder for a new sequence.
    std::string flush();

private:
    const Tokenizer& tok_;
    bool skip_special_;
    std::vector<int32_t> ids_;
    std::string prefix_;
    size_t prefix_index_ = 0;
};

// Whether `tok` belongs to a model with `model_rows` embedding rows: fails (naming `where`) when its
// own vocabulary is larger; warns when only added tokens lie past the rows (text that contains
// them is then refused at run time, as the backends refuse any id outside the vocabulary).
void check_tokenizer_fits(const Tokenizer& tok, int model_rows, const std::string& where);

}  // namespace tt
