#!/usr/bin/env bash
# README command (b): set up, build, and run every test (lit + GoogleTest).
# .ci/run calls exactly this. GPU tests report UNSUPPORTED without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" check-fmha
