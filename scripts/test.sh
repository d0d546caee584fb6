#!/usr/bin/env bash
# README command (b): set up, build, and run every test: lit and GoogleTest
# (check-fmha), then the Python package's pytest on its wheel
# (scripts/python/test.sh). .ci/run calls exactly this. GPU tests report
# UNSUPPORTED (or skip) without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" check-fmha
"$root/scripts/python/test.sh"
