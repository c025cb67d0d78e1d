#!/usr/bin/env bash
# Run here (not on the GPU machine): fills the folder bench/moe_bench.sh reads on the GPU machine,
# the way tests/gpu/stage.sh fills .carry/ for the GPU tests: the thintensor binary (stripped) with
# the shared libraries it needs beyond glibc and CUDA, the transformers helper found beside it, the
# llama.cpp anchor (source tarball + build script, from ../shared/anchors) and the tokenizers the
# GGUF converter needs (from ../shared/tokenizers/NAME, still xz-compressed): qwen3 by default,
# STAGE_TOKENIZERS="llama3" (or several, space-separated) for another benchmark (bench/offload_stage.sh).
# ../shared does not travel with a device call; this folder does, when the call names it in `carry`.
# usage: bench/moe_stage.sh [build-dir] [dest]   (default: build .carry; dest is emptied first)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}; dest=${2:-.carry}
shared=../shared
limit_mib=64  # what one device call carries: the git tree plus every carried path
tokenizers=${STAGE_TOKENIZERS:-qwen3}
[ -x "$build/thintensor" ] || { echo "$build/thintensor not found: build it first (cmake --build $build)"; exit 1; }
need=("$shared/anchors/llama.cpp-src.tar.xz" "$shared/anchors/build_llama.sh" "$shared/anchors/LICENSE.llama.cpp")
for t in $tokenizers; do need+=("$shared/tokenizers/$t/tokenizer.json.xz" "$shared/tokenizers/$t/tokenizer_config.json"); done
for f in "${need[@]}"; do
  [ -f "$f" ] || { echo "$f not found (../shared is the read-only reference data beside the checkout)"; exit 1; }
done
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib" "$dest/anchors"
cp "$build/thintensor" "$dest/bin/"
cp tools/thintensor_hf.py "$dest/bin/"  # the transformers helper, found beside the binary
ldd "$build/thintensor" | awk '/=> \// {print $3}' | grep -v -E 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|librt|libdl|ld-linux|cuda' \
  | while read -r lib; do cp -L "$lib" "$dest/lib/"; done
strip "$dest/bin/thintensor"
cp "$shared/anchors/llama.cpp-src.tar.xz" "$shared/anchors/build_llama.sh" "$shared/anchors/LICENSE.llama.cpp" "$dest/anchors/"
for t in $tokenizers; do
  mkdir -p "$dest/tokenizers/$t"
  cp "$shared/tokenizers/$t/tokenizer.json.xz" "$shared/tokenizers/$t/tokenizer_config.json" "$dest/tokenizers/$t/"
done
chmod -R u+w "$dest"  # ../shared is read-only; the copies need not be
# The budget: tracked and untracked-not-ignored files of the tree, plus this folder.
tree_b=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
dest_b=$(du -sb "$dest" | cut -f1)
total_mib=$(( (tree_b + dest_b) / 1048576 ))
du -sh "$dest"/* "$dest"
echo "tree $(( tree_b / 1048576 )) MiB + $dest $(( dest_b / 1048576 )) MiB = $total_mib MiB of the $limit_mib MiB a device call carries"
[ "$total_mib" -lt "$limit_mib" ] || { echo "over the $limit_mib MiB a device call carries"; exit 1; }
