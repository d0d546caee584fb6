#!/usr/bin/env bash
# flashcore's tests as a user runs the package: builds the wheel
# (scripts/python/wheel.sh), installs it into the test environment
# (scripts/python/setup.sh) and runs pytest on python/tests from outside
# the source tree. Called by scripts/test.sh after the C++ tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${FLASHCORE_VENV:-$root/.venv}
"$root/scripts/python/setup.sh"
"$root/scripts/python/wheel.sh"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
  --force-reinstall "$root"/dist/flashcore-*.whl
cd "$root/python/tests"
timeout "${FLASHCORE_PYTEST_TIMEOUT:-900}" "$venv/bin/python" -m pytest -q -p no:cacheprovider .
