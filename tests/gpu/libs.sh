# Sourced by the GPU scripts and the benchmarks before they run a carried binary. First the
# binaries and libraries tests/gpu/stage.sh packed ($carry/payload.tar.xz, default .carry) are
# unpacked, once. Then: the GPU machine lacks some shared libraries this build links (libcurl and
# its dependencies). For each one the loader cannot find, link the copy carried in $carry/lib into a
# private folder and put only that folder on LD_LIBRARY_PATH, so the machine's own libraries are
# used wherever it has them.
libs_carry=$(cd "${carry:-.carry}" && pwd)
[ -f "$libs_carry/payload.tar.xz" ] && [ ! -x "$libs_carry/bin/thintensor" ] && xz -dc "$libs_carry/payload.tar.xz" | tar -C "$libs_carry" -xf -
fix=$(mktemp -d)
export LD_LIBRARY_PATH="$fix${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for _ in 1 2 3 4 5 6; do
  missing=$(ldd "$libs_carry"/bin/thintensor "$libs_carry"/bin/gpu_tests 2>/dev/null | awk '/not found/ {print $1}' | sort -u)
  [ -z "$missing" ] && break
  for lib in $missing; do
    if [ -e "$libs_carry/lib/$lib" ]; then ln -sf "$libs_carry/lib/$lib" "$fix/$lib"; else echo "missing library $lib (not carried)"; fi
  done
done
