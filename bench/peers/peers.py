"""Times the peers of ../shared/ANCHORS.md on this GPU, in one run: torch
SDPA's flash, cuDNN and efficient backends and a Triton FA2-style kernel on
the attention grid, torch's searchsorted+gather+lerp on the resample rows.
FlashCore's kernels are timed by fmha-runner-jit in bench/run.sh, in the
same run: attention into $OUT/ours.txt (read here for the `ours` column;
`--grid` prints the grid for it), resample into harness.txt. CUDA events, warm-up, median of 30, random inputs.
Prints markdown rows for docs/BENCHMARKS.md and writes them to $OUT."""

import datetime
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
import triton_attention  # noqa: E402

ATTENTION_GRID = [  # B, H, S, D, causal, dtype (ANCHORS.md)
    (16, 96, 4096, 128, True, torch.float16),
    *[(b, h, s, d, c, torch.bfloat16)
      for (b, h, s, d) in [(16, 32, 1024, 64), (4, 32, 4096, 64), (1, 32, 16384, 64),
                           (16, 16, 1024, 128), (4, 16, 4096, 128), (1, 16, 16384, 128),
                           (16, 8, 1024, 256), (4, 8, 4096, 256), (1, 8, 16384, 256)]
      for c in (False, True)],
]
RESAMPLE_ROWS = [(256, 500, 250, 32), (4096, 1000, 500, 64), (1024, 4096, 4096, 128)]


# Cycles the stream is held before a timed call with held=True: ~0.5 ms,
# longer than the host takes to queue torch's resample (a few ops).
HOLD_CYCLES = 1_000_000


def median_ms(fn, runs=30, warmup=5, held=False):
    """Median of CUDA-event times. held=True queues the call behind a
    spinning kernel, so the time is the GPU's alone (no host launch cost),
    as the harness's Timing::StreamHeld."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if held:
            torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def sdpa(backend, q, k, v, causal):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def read_ours():
    """TFLOP/s of FlashCore's kernel per grid row, from bench/run.sh."""
    ours = {}
    path = os.path.join(os.environ.get("OUT", "/tmp"), "ours.txt")
    if os.path.exists(path):
        for line in open(path):
            *key, value = line.split()
            ours[tuple(key)] = value
    return ours


def grid_key(b, h, s, d, causal, dtype):
    return (str(b), str(h), str(s), str(d), "1" if causal else "0",
            "f16" if dtype == torch.float16 else "bf16")


def attention_rows():
    rows = []
    ours = read_ours()
    for b, h, s, d, causal, dtype in ATTENTION_GRID:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        expected = sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)
        results = {}
        for name, fn in [
            ("flash2", lambda: sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)),
            ("cudnn", lambda: sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)),
            ("efficient", lambda: sdpa(SDPBackend.EFFICIENT_ATTENTION, q, k, v, causal)),
            ("triton", lambda: triton_attention.attention(q, k, v, causal)),
        ]:
            try:
                error = (fn().float() - expected.float()).abs().max().item()
                if error > 2e-2:
                    results[name] = f"wrong (max error {error:.3f})"
                    continue
                results[name] = f"{flops / median_ms(fn) / 1e9:.0f}"
            except Exception as e:  # a backend that refuses the shape
                results[name] = f"n/a ({type(e).__name__})"
        del q, k, v, expected
        torch.cuda.empty_cache()
        row = (f"| {b}x{h}x{s}x{d} | {'yes' if causal else 'no'} | "
               f"{'fp16' if dtype == torch.float16 else 'bf16'} | "
               f"{ours.get(grid_key(b, h, s, d, causal, dtype), 'not measured')} | "
               + " | ".join(results[n] for n in ("flash2", "cudnn", "efficient", "triton"))
               + " |")
        print(row, flush=True)
        rows.append(row)
    return rows


def torch_resample(times, values, targets):
    s = times.shape[1]
    count = torch.searchsorted(times, targets, right=True)
    i1 = count.clamp(1, s - 1)
    i0 = i1 - 1
    t0, t1 = times.gather(1, i0), times.gather(1, i1)
    w = ((targets - t0) / (t1 - t0).clamp_min(1e-12)).clamp(0, 1)
    d = values.shape[2]
    v0 = values.gather(1, i0[..., None].expand(-1, -1, d))
    v1 = values.gather(1, i1[..., None].expand(-1, -1, d))
    return v0 + w[..., None].to(values.dtype) * (v1 - v0)


def resample_rows():
    rows = []
    for b, s, t, d in RESAMPLE_ROWS:
        times = torch.cumsum(torch.rand(b, s, device="cuda") + 0.01, dim=1)
        values = torch.randn(b, s, d, device="cuda", dtype=torch.bfloat16)
        targets = torch.sort(torch.rand(b, t, device="cuda") * times[:, -1:], dim=1).values
        min_bytes = values.numel() * 2 + times.numel() * 4 + targets.numel() * 4 + b * t * d * 2
        ms = median_ms(lambda: torch_resample(times, values, targets))
        gpu_ms = median_ms(lambda: torch_resample(times, values, targets), held=True)
        row = (f"| {b} x {s} -> {t} x {d} | fmha-runner-jit, in harness.txt | {ms * 1e3:.1f} us, "
               f"{min_bytes / ms / 1e6:.0f} GB/s; GPU alone {gpu_ms * 1e3:.1f} us | "
               f"{min_bytes / 1e6:.0f} MB |")
        print(row, flush=True)
        rows.append(row)
        del times, values, targets
        torch.cuda.empty_cache()
    return rows


def main():
    if sys.argv[1:] == ["--grid"]:
        for row in ATTENTION_GRID:
            print(*grid_key(*row))
        return
    device = torch.cuda.get_device_name()
    header = (f"{datetime.date.today()}, {device}, torch {torch.__version__}, "
              f"cuDNN {torch.backends.cudnn.version()}, triton "
              f"{__import__('triton').__version__}")
    print(header)
    print("| B x H x S x D | causal | dtype | ours | flash2 | cudnn | efficient | triton |")
    print("|---|---|---|---|---|---|---|---|")
    attention = attention_rows()
    resample = []
    # bench/run.sh: BENCH_ATTENTION_ONLY=1 leaves resample out.
    if os.environ.get("BENCH_ATTENTION_ONLY") != "1":
        print("| B x S -> T x D | ours | torch (searchsorted+gather+lerp) | minimum bytes |")
        print("|---|---|---|---|")
        resample = resample_rows()
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "peers.md"), "w") as f:
        f.write(header + "\n\n" + "\n".join(attention) + "\n\n" + "\n".join(resample) + "\n")


if __name__ == "__main__":
    main()
