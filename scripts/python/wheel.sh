#!/usr/bin/env bash
# Builds flashcore's wheel into dist/ as `pip wheel .` does for a user
# (pyproject.toml: scikit-build-core drives the project's CMake, in build/,
# so that after scripts/build.sh only libflashcore.so is relinked). Uses the
# test environment's pip (scripts/python/setup.sh); FLASHCORE_JOBS compile
# jobs (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${FLASHCORE_VENV:-$root/.venv}
rm -rf "$root/dist"
CMAKE_BUILD_PARALLEL_LEVEL=${FLASHCORE_JOBS:-2} \
  "$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps \
  -w "$root/dist" "$root"
ls -la "$root"/dist/flashcore-*.whl
