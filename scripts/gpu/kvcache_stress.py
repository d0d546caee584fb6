"""Split-KV decode over KV caches, many calls each, to catch a hang that
one call in several shows (decode-notes v23: a producer warp two phases
behind an empty barrier hung about one call in eight over 64- and
256-row pages): each configuration runs SEEDS calls on fresh inputs in a
child process that polls the call's event (a hang kills nothing but that
child). A seed that hangs is replayed alone in fresh processes (does it
hang again: the inputs, or the timing?), and cuda-gdb, where the machine
has it, attaches to the first stuck child and prints its kernels, warps
and each warp's instruction ($OUT/kvcache_stress_gdb.log). A table last;
exit 1 when any call hung.
Usage (GPU machine, flashcore on PYTHONPATH):
  python3 scripts/gpu/kvcache_stress.py [SEEDS]   (default 60)"""

import os
import subprocess
import sys
import time

CONFIGS = {
    # name: (b, hq, hkv, s_cache, d, length, page_size)
    "page256 64/8 50000": (1, 64, 8, 65536, 128, 50000, 256),
    "page64 64/8 50000": (1, 64, 8, 65536, 128, 50000, 64),
    "page16 64/8 50000": (1, 64, 8, 65536, 128, 50000, 16),
    "dense 64/8 50000": (1, 64, 8, 65536, 128, 50000, None),
    "page256 64/8 65536": (1, 64, 8, 65536, 128, 65536, 256),
    "page256 32/8 50000": (1, 32, 8, 65536, 128, 50000, 256),
}
WAIT_S = 10


def child(name, first, last):
    import torch
    import flashcore
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from python_check import page_caches
    b, hq, hkv, s_cache, d, length, page = CONFIGS[name]
    for seed in range(first, last):
        torch.manual_seed(seed)
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, s_cache, hkv, d, device="cuda",
                        dtype=torch.bfloat16)
        v = torch.randn_like(k)
        n = torch.full((b,), length, dtype=torch.int32, device="cuda")
        table = None
        if page:
            (k, v), table = page_caches((k, v), page, n, False)
        torch.cuda.synchronize()
        o = flashcore.attention_with_kvcache(q, k, v, n, page_table=table)
        done = torch.cuda.Event()
        done.record()
        start = time.monotonic()
        while not done.query():
            if time.monotonic() - start > WAIT_S:
                print(f"HANG {seed} pid {os.getpid()}", flush=True)
                time.sleep(600)
            time.sleep(0.001)
        assert not o.isnan().any(), f"seed {seed}: NaN"
    print(f"OK {first}..{last - 1}", flush=True)


def attach(pid, log):
    """cuda-gdb's view of the stuck child: its kernels, blocks, warps and
    each warp's instruction."""
    commands = ["info cuda kernels", "info cuda blocks", "info cuda warps",
                "x/4i $pc", "info cuda lanes"]
    args = ["cuda-gdb", "-batch", "-p", str(pid)]
    for c in commands:
        args += ["-ex", c]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        log.write(r.stdout + r.stderr)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.write(f"cuda-gdb: {e}\n")


def run_child(name, first, last, out, attach_log=None):
    """Returns the seed that hung, or None."""
    p = subprocess.Popen([sys.executable, __file__, "child", name,
                          str(first), str(last)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    hung = None
    for line in p.stdout:
        out.write(line)
        out.flush()
        if line.startswith("HANG"):
            hung = int(line.split()[1])
            if attach_log:
                attach(p.pid, attach_log)
            p.kill()
            break
    p.wait()
    return hung


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    folder = os.environ.get("OUT", "/tmp")
    rows = []
    with open(f"{folder}/kvcache_stress.log", "w") as out, \
            open(f"{folder}/kvcache_stress_gdb.log", "w") as gdb:
        for name in CONFIGS:
            start, hangs, first = time.monotonic(), [], 0
            while first < seeds:
                hung = run_child(name, first, seeds, out,
                                 gdb if not hangs else None)
                if hung is None:
                    break
                hangs.append(hung)
                first = hung + 1
            again = []
            for seed in hangs[:2]:
                again.append(sum(run_child(name, seed, seed + 1, out)
                                 is not None for _ in range(3)))
            rows.append((name, seeds, hangs, again,
                         time.monotonic() - start))
    print("| config | seeds | hung at | replays hung (of 3) | s |")
    print("|---|---|---|---|---|")
    for name, n, hangs, again, seconds in rows:
        print(f"| {name} | {n} | {hangs} | {again} | {seconds:.0f} |")
    return 1 if any(hangs for _, _, hangs, _, _ in rows) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
