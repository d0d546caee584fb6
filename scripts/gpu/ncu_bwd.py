import sys, torch, flashcore
b, s, h, d = 4, 4096, 16, int(sys.argv[1]) if len(sys.argv) > 1 else 128
torch.use_deterministic_algorithms(len(sys.argv) > 2)
torch.utils.deterministic.fill_uninitialized_memory = False
q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
o = flashcore.attention(q, k, v, causal=False)
g = torch.randn_like(o)
for _ in range(2):
    torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
torch.cuda.synchronize()
