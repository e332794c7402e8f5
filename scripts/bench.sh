#!/usr/bin/env bash
# Sets up a fresh machine, builds d5 (release) and runs its main job, `d5 bench`,
# on the built-in defaults. Extra arguments go to `d5 bench` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
./build/release/d5 bench "$@"
