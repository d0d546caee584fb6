"""Start-up of flashcore's kernels (issue #22), each measured in fresh
processes, beside Triton's in the same run:

1. Cold: the 12 forward variants (head dim 64, 128, 256 x bf16, f16 x
   causal or not; a scale the wheel ships no kernels for, so that they
   compile) precompiled into an empty disk cache, one thread against one
   per variant (flashcore.precompile_attention); and each variant alone,
   its cold compile time.
2. Warm: a fresh process whose kernels are in FlashCore's disk cache, with
   CUDA_CACHE_DISABLE=1 (no help from the driver's own cache): from before
   the first flashcore call (creating the JIT included) to its first
   attention's launch, and to the result; and the same with the disk cache
   off, the kernel coming from those the wheel ships (fmha-seed).
3. Triton's attention kernel (bench/peers/triton_attention.py), the same
   way: cold with an empty TRITON_CACHE_DIR, warm with it filled.

Usage (GPU machine, flashcore installed): python3 bench/python/startup.py
Prints markdown tables for docs/BENCHMARKS.md.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = [(d, dtype, causal) for d in (64, 128, 256)
            for dtype in ("bfloat16", "float16") for causal in (False, True)]

# Runs in the child: prints one JSON line of seconds.
CHILD = r"""
import json, sys, time
start = time.perf_counter()
import torch
torch.cuda.init()
torch.empty(1, device="cuda")
torch.cuda.synchronize()
ready = time.perf_counter()
what, args = sys.argv[1], json.loads(sys.argv[2])
result = {"torch": ready - start}
if what == "precompile":
    import flashcore
    t0 = time.perf_counter()
    flashcore.precompile_attention(
        [dict(dtype=getattr(torch, dtype), head_dim=d, causal=causal,
              scale=args["scale"])
         for d, dtype, causal in args["variants"]], threads=args["threads"])
    result["precompile"] = time.perf_counter() - t0
elif what in ("flashcore", "triton"):
    q = torch.randn(1, 1024, 16, 128, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if what == "flashcore":
        import flashcore
        o = flashcore.attention(q, q, q, causal=True, scale=args["scale"])
    else:
        sys.path.insert(0, args["peers"])
        import triton_attention
        qt = q.transpose(1, 2)
        o = triton_attention.attention(qt, qt, qt, True)
    launched = time.perf_counter()
    torch.cuda.synchronize()
    result["launch"] = launched - t0
    result["result"] = time.perf_counter() - t0
print(json.dumps(result))
"""


def child(what, args, env):
    run = subprocess.run([sys.executable, "-c", CHILD, what, json.dumps(args)],
                         env={**os.environ, **env}, capture_output=True,
                         text=True)
    if run.returncode != 0:
        sys.exit(f"startup.py: the {what} child failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


# A scale the wheel's kernels (fmha-seed: the default scale) do not have,
# so that "cold" compiles.
UNSHIPPED_SCALE = 0.1


def main():
    peers = os.path.join(HERE, "..", "peers")
    base = {"CUDA_CACHE_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        print("## Cold: the 12 forward variants into an empty disk cache\n")
        print("| how | seconds |\n|---|---|")
        for threads in (1, len(VARIANTS)):
            cache = os.path.join(tmp, f"cold{threads}")
            took = child("precompile", {"variants": VARIANTS,
                                        "threads": threads,
                                        "scale": UNSHIPPED_SCALE},
                         {**base, "FMHA_CACHE_DIR": cache})["precompile"]
            print(f"| precompile_attention, {threads} thread(s) | {took:.2f} |",
                  flush=True)
        print("\n| variant | cold compile, seconds |\n|---|---|")
        alone = []
        for variant in VARIANTS:
            cache = os.path.join(tmp, "alone-" + "-".join(map(str, variant)))
            took = child("precompile", {"variants": [variant], "threads": 1,
                                        "scale": UNSHIPPED_SCALE},
                         {**base, "FMHA_CACHE_DIR": cache})["precompile"]
            alone.append(took)
            d, dtype, causal = variant
            print(f"| d{d} {dtype}{' causal' if causal else ''} | {took:.2f} |",
                  flush=True)
        print(f"\nsum {sum(alone):.2f} s, max {max(alone):.2f} s")

        print("\n## Warm: a fresh process, kernels in the disk cache, "
              "CUDA_CACHE_DISABLE=1 (first call, milliseconds; median of 5)\n")
        print("| candidate | to the launch | to the result | cold first call |"
              "\n|---|---|---|---|")
        cache = os.path.join(tmp, "warm")
        triton_cache = os.path.join(tmp, "triton")
        rows = {
            "flashcore": ("flashcore", UNSHIPPED_SCALE,
                          {"FMHA_CACHE_DIR": cache}),
            "flashcore, a kernel the wheel ships, disk cache off": (
                "flashcore", None, {"FMHA_CACHE_DIR": "off"}),
            "triton": ("triton", None, {"TRITON_CACHE_DIR": triton_cache}),
        }
        for name, (what, scale, env) in rows.items():
            args = {"peers": peers, "scale": scale}
            cold = child(what, args, {**base, **env})
            warm = [child(what, args, {**base, **env}) for _ in range(5)]
            print(f"| {name} | "
                  f"{statistics.median(w['launch'] for w in warm) * 1e3:.1f} | "
                  f"{statistics.median(w['result'] for w in warm) * 1e3:.1f} | "
                  f"{cold['result'] * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
