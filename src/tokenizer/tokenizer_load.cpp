// Tokenizer::load / from_archive: find the tokenizer files of a SOURCE (a .thin archive, a
// tokenizer.json, a llama2.c .bin tokenizer, or a model directory) and pick the implementation.
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "format/archive.h"
#include "tokenizer/tokenizer.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace tt {

namespace fs = std::filesystem;

namespace {

std::string read_if_exists(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) ? read_file(p.string()) : std::string();
}

std::string file_magic(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char buf[8] = {};
    f.read(buf, sizeof buf);
    return std::string(buf, static_cast<size_t>(f.gcount()));
}

bool looks_like_json(const std::string& path, const std::string& magic) {
    if (fs::path(path).extension() == ".json") return true;
    for (char c : magic) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        return c == '{';
    }
    return false;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_archive(const Archive& a) {
    if (auto tj = a.file("tokenizer.json"))
        return from_hf(*tj, a.file("tokenizer_config.json").value_or(std::string_view()), a.path() + ": tokenizer.json");
    for (const char* name : {"tok512.bin", "tokenizer.bin"})
        if (auto bin = a.file(name)) return from_llama2c(*bin, -1, a.path() + ": " + name);
    fail("{}: the archive embeds no tokenizer (tokenizer.json, tok512.bin or tokenizer.bin)", a.path());
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& source) {
    std::error_code ec;
    if (fs::is_directory(source, ec)) {
        fs::path dir(source);
        if (fs::is_regular_file(dir / "tokenizer.json", ec))
            return from_hf(read_file((dir / "tokenizer.json").string()), read_if_exists(dir / "tokenizer_config.json"),
                           (dir / "tokenizer.json").string());
        for (const char* name : {"tok512.bin", "tokenizer.bin"})
            if (fs::is_regular_file(dir / name, ec)) return from_llama2c(read_file((dir / name).string()), -1, (dir / name).string());
        fail("{}: directory has no tokenizer.json (or llama2.c tok512.bin / tokenizer.bin)", source);
    }
    if (!fs::exists(source, ec)) fail("{}: no such file or directory", source);
    std::string magic = file_magic(source);
    if (magic.size() == 8 && std::memcmp(magic.data(), k_thin_magic, 8) == 0) {
        Archive a = Archive::open(source);
        return from_archive(a);
    }
    if (looks_like_json(source, magic))
        return from_hf(read_file(source), read_if_exists(fs::path(source).parent_path() / "tokenizer_config.json"), source);
    return from_llama2c(read_file(source), -1, source);
}

void check_tokenizer_fits(const Tokenizer& tok, int model_rows, const std::string& where) {
    if (tok.model_vocab_size() > model_rows)
        fail("{}: the tokenizer's vocabulary has {} tokens but the model's has {} rows (vocab_size in config.json); "
             "it is not this model's tokenizer",
             where, tok.model_vocab_size(), model_rows);
    if (tok.vocab_size() > model_rows)
        log::warn("{}: added tokens with ids {}..{} lie past the model's {} embedding rows; a prompt containing them "
                  "is refused (the checkpoint lists them, as Gemma 3 lists its image tokens)",
                  where, model_rows, tok.vocab_size() - 1, model_rows);
}

}  // namespace tt
