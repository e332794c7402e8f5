#!/bin/sh
# Installs onnxruntime-node, the peer of d5's network benchmark, into PREFIX
# (PREFIX/node_modules/onnxruntime-node), at the version package.json pins.
#
#     bench/network/install.sh PREFIX
#     d5-bench-network --ort-dir PREFIX
#
# The npm package carries ONNX Runtime's CPU libraries; its install script,
# which would download the CUDA/TensorRT variants, is skipped
# (ONNXRUNTIME_NODE_INSTALL=skip, --ignore-scripts). Running it again when the
# package is present does nothing. Exit status: 0 installed or present, 1 npm
# or the registry unavailable or the install failed, 2 bad usage.
set -u

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 PREFIX   (installs onnxruntime-node into PREFIX/node_modules)" >&2
    exit 2
fi
prefix=$1

if [ -f "$prefix/node_modules/onnxruntime-node/package.json" ]; then
    echo "install.sh: onnxruntime-node is already in $prefix/node_modules: nothing to do"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed (Debian: apt-get install npm): ONNX Runtime is unavailable" >&2
    exit 1
fi
if ! command -v node >/dev/null 2>&1; then
    echo "install.sh: node is not installed (Debian: apt-get install nodejs): ONNX Runtime is unavailable" >&2
    exit 1
fi

mkdir -p "$prefix" || {
    echo "install.sh: cannot create the folder $prefix" >&2
    exit 1
}
prefix=$(CDPATH= cd -- "$prefix" && pwd) || exit 1
cp "$here/package.json" "$prefix/package.json" || exit 1

# A registry that does not answer within a minute is reported as such rather
# than as a failed install.
if command -v timeout >/dev/null 2>&1; then
    ping="timeout 60 npm ping"
else
    ping="npm ping"
fi
if ! $ping >/dev/null 2>&1; then
    echo "install.sh: the npm registry ($(npm config get registry 2>/dev/null)) is unreachable: ONNX Runtime is unavailable" >&2
    exit 1
fi

echo "install.sh: installing onnxruntime-node into $prefix"
if ! (cd "$prefix" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund \
        --ignore-scripts); then
    echo "install.sh: npm install failed in $prefix (see npm's messages above)" >&2
    exit 1
fi
if [ ! -f "$prefix/node_modules/onnxruntime-node/package.json" ]; then
    echo "install.sh: npm finished but $prefix/node_modules/onnxruntime-node is missing" >&2
    exit 1
fi
version=$(node -e 'console.log(require(process.argv[1]).version)' \
    "$prefix/node_modules/onnxruntime-node/package.json" 2>/dev/null)
echo "install.sh: onnxruntime-node $version is in $prefix/node_modules"
