"""One backward of flashcore.attention to profile (GPU machine, flashcore
installed, e.g. by scripts/gpu/python.sh): a 4 x 4096 x 16 heads bf16
non-causal problem, its forward once, two backwards. Usage:

  ncu --kernel-name regex:attention_grad --launch-skip 3 --launch-count 3 \\
      --section SpeedOfLight python3 scripts/gpu/backward_profile.py [D]

D is the head dim (64, 128 or 256; default 128). docs/backward-notes.md has
what it measured.
"""

import sys

import torch

import flashcore

b, s, h = 4, 4096, 16
d = int(sys.argv[1]) if len(sys.argv) > 1 else 128
q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16,
                       requires_grad=True) for _ in range(3))
o = flashcore.attention(q, k, v, causal=False)
dout = torch.randn_like(o)
for _ in range(2):
    torch.autograd.grad(o, (q, k, v), dout, retain_graph=True)
torch.cuda.synchronize()
