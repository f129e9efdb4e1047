#!/usr/bin/env bash
# Install pertload's build and test dependencies from Debian's packages.
set -euo pipefail
# libopenblas0-pthread becomes the libblas.so.3 that Debian's torch calls,
# in place of the reference BLAS (docs/dcell.md: about 20-40x its matrix products)
pkgs=(build-essential meson ninja-build pkg-config liblmdb-dev liburing-dev libzstd-dev
      libroaring-dev libcriterion-dev zlib1g-dev libyaml-dev libsbml5-dev libxml2-dev python3 python3-numpy python3-pytest python3-torch
      libopenblas0-pthread
      python3-matplotlib
      python3-jinja2 python3-tqdm python3-sklearn python3-scipy python3-psutil python3-requests
      python3-pyparsing
      python3-cobra python3-venv python3-mesonpy patchelf
      valgrind clang libclang-rt-14-dev libfuzzer-14-dev gcovr)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
