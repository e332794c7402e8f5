#!/usr/bin/env bash
# Packs d5, built with the CUDA toolkit on this machine, for a GPU machine that
# has the NVIDIA driver and CUDA's libraries (cuBLAS, cuDNN, NCCL: under
# /usr/local/cuda or in Python's nvidia-* packages) but none of d5's Debian
# libraries and no package registry: scripts/gpu_check.sh unpacks it there.
#
#     scripts/gpu_bundle.sh [BUILD_DIR]      (default build/release)
#
# The bundle, build/gpu-bundle/d5-gpu.tar.xz (well under 64 MiB), holds:
#   bin/       d5 and the GPU benchmarks (d5-bench-cublas-gemm)
#   lib/       d5's libraries, its plugins in lib/d5, and every shared library
#              they and the tests load from this machine except glibc's own
#              and CUDA's (oneDNN, OpenBLAS, protobuf-c, jansson, Open MPI,
#              Criterion, ...)
#   tests/     the test programs that need a device (test_level0_cuda, the
#              executor's device and backend tests) and the simulated device
#   share/d5/  DeepBench's problem sizes, and MNIST where scripts/setup_data.sh
#              fetched it (data/mnist)
# Exit status: 0 written; 1 the build has no cuda plugin (no CUDA toolkit or
# cuDNN found when it was configured) or a step failed.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
out=$here/build/gpu-bundle
stage=$out/stage

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake --preset release -S "$here" >/dev/null
fi
cmake --build "$build" -j"$(nproc)"
if ! find "$build" -name libd5_cuda.so | grep -q .; then
    echo "gpu_bundle.sh: $build has no cuda plugin (libd5_cuda.so): configure it where the CUDA" \
        "toolkit and cuDNN are (/usr/local/cuda)" >&2
    exit 1
fi

rm -rf "$stage"
mkdir -p "$stage/tests" "$stage/lib"
cmake --install "$build" --prefix "$stage" >/dev/null
rm -rf "$stage/include" "$stage/lib/cmake" "$stage/lib/pkgconfig"
for t in d5-bench-cublas-gemm; do
    if [ -x "$build/$t" ]; then cp "$build/$t" "$stage/bin/"; fi
done
for t in test_level0_cuda test_level1_executor_device test_level1_executor_backends; do
    if [ -x "$build/tests/$t" ]; then cp "$build/tests/$t" "$stage/tests/"; fi
done
if [ -f "$build/tests/libtest_simdev.so" ]; then cp "$build/tests/libtest_simdev.so" "$stage/tests/"; fi
# MNIST, for the GPU machine's training check (no network there).
if [ -f "$here/data/mnist/train-images-idx3-ubyte" ]; then
    mkdir -p "$stage/share/d5/mnist"
    cp "$here"/data/mnist/*-ubyte "$stage/share/d5/mnist/"
fi

# The shared libraries they load, but glibc's, the C++ runtime's (the GPU
# machine's are newer) and CUDA's (its own, matched to its driver).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libmvec\.so|libnss_|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink)'
deps=$(for f in "$stage"/bin/* "$stage"/lib/*.so* "$stage"/lib/d5/*.so "$stage"/tests/*; do
    LD_LIBRARY_PATH="$stage/lib" ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u)
while read -r name path; do
    [ -n "$name" ] || continue
    if [[ $name =~ $skip ]] || [[ $path == "$stage"/* ]]; then continue; fi
    cp -L "$path" "$stage/lib/$name"
done <<<"$deps"
# Open MPI's components are plugins of their own: d5 loads libmpi for
# `d5 allreduce`; the GPU checks run single-process and need none of them.

tar -C "$stage" -cJf "$out/d5-gpu.tar.xz" .
rm -rf "$stage"
size=$(du -h "$out/d5-gpu.tar.xz" | cut -f1)
echo "gpu_bundle.sh: wrote $out/d5-gpu.tar.xz ($size); run scripts/gpu_check.sh on the GPU machine"
