// A float archive's matrices quantized into a new archive: the load-time quantization of the CUDA
// backend, which uploads and streams archive blocks as they are stored (docs/QUANTIZATION.md).
#pragma once

#include "core/quant.h"

#include <string>

namespace tt {

class Archive;
class ThreadPool;

// Writes `out_path` (through a temporary file renamed into place, as convert does) with the
// blocks, tensors, embedded files and metadata of `src`, except that every matrix whose role takes
// a scheme under `body` (model/weight_quant.h: the head INT8, the body `body`) is stored quantized:
// the same bytes as `convert --quant` of the checkpoint `src` came from, and the weights the CPU
// reference quantizes at load. Rows spread over the pool. Throws tt::Error naming the archive and
// the tensor when `src` already stores a quantized tensor or a row does not split into groups.
void quantize_archive(const Archive& src, QuantScheme body, int32_t group_size, const std::string& out_path, ThreadPool& pool);

}  // namespace tt
