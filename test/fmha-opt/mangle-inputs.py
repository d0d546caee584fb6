#!/usr/bin/env python3
"""Feeds fmha-opt truncated, byte-flipped and random inputs derived from the
given .mlir files and fails if any run crashes, hangs, or fails without an
error diagnostic. Deterministic: the seed is fixed and printed."""

import random
import subprocess
import sys
import tempfile

SEED = 20261121
TIMEOUT_S = 20


def run(fmha_opt, text, label):
    with tempfile.NamedTemporaryFile("wb", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        try:
            proc = subprocess.run([fmha_opt, f.name], capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"{label}: hung for more than {TIMEOUT_S} s"
    if proc.returncode < 0:
        return f"{label}: crashed with signal {-proc.returncode}"
    if proc.returncode not in (0, 1):
        return f"{label}: exit status {proc.returncode}"
    if proc.returncode == 1 and b"error:" not in proc.stderr:
        return f"{label}: failed without an error diagnostic: {proc.stderr[:200]!r}"
    return None


def main():
    fmha_opt, inputs = sys.argv[1], sys.argv[2:]
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    failures, runs = [], 0
    for path in inputs:
        data = open(path, "rb").read()
        # Truncations at ~120 evenly spaced points, always including the
        # middle of the op text.
        step = max(1, len(data) // 120)
        cases = [(f"{path} truncated at {n}", data[:n]) for n in range(0, len(data), step)]
        # Single-byte corruptions at random offsets.
        for _ in range(60):
            n = rng.randrange(len(data))
            b = bytes([rng.choice(b"(){}<>[]:,%#@?x0\"\\\x00\xff")])
            cases.append((f"{path} byte {n} set to {b!r}", data[:n] + b + data[n + 1:]))
        for label, text in cases:
            runs += 1
            if (err := run(fmha_opt, text, label)) is not None:
                failures.append(err)
    for n in range(20):
        runs += 1
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        if (err := run(fmha_opt, blob, f"random blob #{n}")) is not None:
            failures.append(err)
    for f in failures:
        print("FAIL:", f)
    print(f"{runs} inputs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
