"""One backward of flashcore.attention to profile (GPU machine, flashcore
installed, e.g. by scripts/gpu/python.sh): a 4 x 4096 x 16 heads bf16
problem, its forward once, then backwards. Usage:

  ncu --kernel-name regex:attention_grad --launch-skip 3 --launch-count 3 \\
      --section SpeedOfLight python3 scripts/gpu/backward_profile.py [D] \\
      [--causal]

With --fa4 (FlashAttention-4 on PYTHONPATH, as ../shared/tools/
fa4-install.sh unpacks it) FA4's backward of the same tensors runs after
each of ours, so that one ncu call profiles both main kernels:

  ncu --kernel-name regex:"attention_grad_dkv|BackwardSm90" \\
      --launch-skip 4 --launch-count 2 --section SpeedOfLight \\
      --section WarpStateStats --section InstructionStats \\
      python3 scripts/gpu/backward_profile.py 128 --causal --fa4

(two warm-up backwards of each, then one of each profiled). With --flash2
torch SDPA's flash backend (FlashAttention-2's mma.sync kernels) is the
peer instead, e.g. beside sm_80's kernels run on Hopper:

  FLASHCORE_CHIP=sm_80 ncu --kernel-name \\
      regex:"attention_grad_dkv|flash_bwd_dq_dk_dv" --launch-skip 2 \\
      --launch-count 2 --section SpeedOfLight --section WarpStateStats \\
      python3 scripts/gpu/backward_profile.py 128 --flash2

D is the head dim (64, 128 or 256; default 128). docs/backward-notes.md
has what it measured (v16: the comparison with FA4; v35, v36: sm_80's
with flash2).
"""

import sys

import torch

import flashcore

args = [a for a in sys.argv[1:] if not a.startswith("--")]
causal = "--causal" in sys.argv
with_fa4 = "--fa4" in sys.argv
with_flash2 = "--flash2" in sys.argv
b, s, h = 4, 4096, 16
d = int(args[0]) if args else 128
q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16,
                       requires_grad=True) for _ in range(3))
outputs = [flashcore.attention(q, k, v, causal=causal)]
if with_fa4:
    from flash_attn.cute import flash_attn_func

    o = flash_attn_func(q, k, v, causal=causal)
    outputs.append(o[0] if isinstance(o, tuple) else o)
if with_flash2:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # BHSD views of the same tensors; the backward runs the kernel that
    # the forward picked.
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        o = torch.nn.functional.scaled_dot_product_attention(
            *(t.transpose(1, 2) for t in (q, k, v)), is_causal=causal)
    outputs.append(o.transpose(1, 2))
dout = torch.randn_like(outputs[0])
# Alone: two backwards. With a peer: three of each, alternating.
for _ in range(3 if len(outputs) > 1 else 2):
    for o in outputs:
        torch.autograd.grad(o, (q, k, v), dout, retain_graph=True)
torch.cuda.synchronize()
