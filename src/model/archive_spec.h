// What the runtime reads from a .thin archive's metadata besides the tensors: the model spec and
// which tokenizer the archive embeds, each checked and with errors that name the archive.
// `run`, `verify`, `inspect` and `plan` read them through here, so they agree on what is valid.
#pragma once

#include "format/archive.h"
#include "model/model_spec.h"

#include <string_view>

namespace tt {

// spec_from_json on the archive's "spec", errors as "<path>: spec: ...".
ModelSpec spec_from_archive(const Archive& a);

// metadata "tokenizer": {"kind": ...} (docs/FORMAT.md): which embedded files hold the tokenizer.
enum class TokenizerKind { none, hf, llama2c };
std::string_view tokenizer_kind_name(TokenizerKind k);

// The kind the archive records, checked against the files it embeds (hf: tokenizer.json; llama2c:
// tok512.bin or tokenizer.bin; none: neither). An unknown kind is refused, as FORMAT.md says of
// every enum ("archive written by a newer ThinTensor?"), not guessed from the files.
TokenizerKind tokenizer_kind_of(const Archive& a);

}  // namespace tt
