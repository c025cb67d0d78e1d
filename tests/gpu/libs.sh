# Sourced by the GPU scripts and the benchmarks: the GPU machine lacks some shared libraries this
# build links (libcurl and its dependencies). For each one the loader cannot find, link the copy
# carried in $carry/lib (default .carry) into a private folder and put only that folder on
# LD_LIBRARY_PATH, so the machine's own libraries are used wherever it has them.
libs_carry=$(cd "${carry:-.carry}" && pwd)
fix=$(mktemp -d)
export LD_LIBRARY_PATH="$fix${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for _ in 1 2 3 4 5 6; do
  missing=$(ldd "$libs_carry"/bin/thintensor "$libs_carry"/bin/gpu_tests 2>/dev/null | awk '/not found/ {print $1}' | sort -u)
  [ -z "$missing" ] && break
  for lib in $missing; do
    if [ -e "$libs_carry/lib/$lib" ]; then ln -sf "$libs_carry/lib/$lib" "$fix/$lib"; else echo "missing library $lib (not carried)"; fi
  done
done
