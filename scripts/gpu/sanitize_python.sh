#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on kernels that only
# flashcore's Python calls reach with their options (kernels-ref, the
# harness's oracle, has no softcap, sinks or KV cache lengths): a small
# GQA call of each (causal, unless the path is the unmasked kernel's),
# through the installed wheel (scripts/gpu/python.sh installs it into
# /tmp/flashcore-site).
# Usage (GPU machine, repository root, after python.sh):
#   scripts/gpu/sanitize_python.sh [NAME_REGEX]   (default: every call)
# Logs go to $OUT; exit 0 when every tool reports no error.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
export PYTHONPATH=${PYTHONPATH:-/tmp/flashcore-site}
cd /tmp
status=0
# run NAME D CALL: sanitize_python (lib.sh) where NAME matches NAME_REGEX.
only=${1:-.}
run() {
  [[ $1 =~ $only ]] || return 0
  sanitize_python "$@"
}
attention="flashcore.attention(q, k, k, causal=True, return_lse=True"
run softcap-d128 128 "$attention, softcap=30.0)"
run softcap-d96 96 "$attention, softcap=5.0, scale=1.0)"
run sinks-d64 64 "$attention, sinks=torch.randn(4, device='cuda'))"
# Causal pairs over 3 row blocks (300 queries) and 640 units, more than a
# wave: each (batch, head)'s pair, then the middle row blocks alone.
run causal-pairs-d128 128 "flashcore.attention(q.repeat(40, 2, 1, 1), k.repeat(40, 2, 1, 1), k.repeat(40, 2, 1, 1), causal=True)"
# P V over O's 80 columns: the V tile's second 64-column block read in
# part.
run attention-d80 80 "flashcore.attention(q, k, k, return_lse=True)"
# v's head dim of 160 (tiles of 192 columns) beside q's 96: O staged in
# its own buffer in three passes of 64 columns.
run attention-d96-dv160 96 "flashcore.attention(q, k, torch.randn(2, 170, 2, 160, device='cuda', dtype=torch.bfloat16), return_lse=True)"
# v's head dim apart from q's at 4200 queries: the long-query 192 x 96
# tile beside q's 128 columns.
run attention-d128-dv96-long 128 "flashcore.attention(q.repeat(1, 28, 1, 1), k.repeat(1, 25, 1, 1), torch.randn(2, 4250, 2, 96, device='cuda', dtype=torch.bfloat16), causal=True, return_lse=True)"
# A few queries (speculative decoding): 4 causal queries of a GQA 2:1
# group packed into decode's one-consumer tile.
run speculative-d128 128 "flashcore.attention(q[:, :4], k, k, causal=True, return_lse=True)"
# A KV cache filled to 0, 77 and 170 keys (NaN past them; the sm_90a
# consumers zero V's rows past the length), prefill and split-KV decode.
lengths="torch.tensor([77, 170], device='cuda', dtype=torch.int32)"
run kvcache-d128 128 "flashcore.attention_with_kvcache(q, k, k.index_fill(1, torch.arange(77, 170, device='cuda'), float('nan')), $lengths, causal=True)"
run kvcache-decode-d64 64 "flashcore.attention_with_kvcache(q[:, :1], k.repeat(1, 400, 1, 1), k.repeat(1, 400, 1, 1), torch.tensor([0, 30000], device='cuda', dtype=torch.int32), return_lse=True)"
# A paged cache of 16-row pages in reversed order (8 boxes a key block on
# sm_90a), prefill over lengths 77 and 170 (the table's last entry of the
# first row past its length, out of range), and split-KV decode over
# 256-row pages.
table="torch.arange(21, -1, -1, device='cuda', dtype=torch.int32).view(2, 11).masked_fill(torch.tensor([[False] * 5 + [True] * 6, [False] * 11], device='cuda'), -5)"
pool16="torch.randn(44, 16, 2, 128, device='cuda', dtype=torch.bfloat16)"
run paged16-d128 128 "flashcore.attention_with_kvcache(q, $pool16, $pool16, $lengths, page_table=$table, causal=True)"
pool256="torch.randn(530, 256, 2, 64, device='cuda', dtype=torch.bfloat16)"
run paged256-decode-d64 64 "flashcore.attention_with_kvcache(q[:, :1], $pool256, $pool256, torch.tensor([0, 30000], device='cuda', dtype=torch.int32), page_table=torch.arange(530, device='cuda', dtype=torch.int32).view(2, 265), return_lse=True)"
# Packed sequences (varlen) of 0, 1, 77 and 200 queries over 170, 3, 0 and
# 127 keys (q's 300 rows reach past the last sequence), causal GQA.
cu_q="torch.tensor([0, 0, 1, 78, 278], device='cuda', dtype=torch.int32)"
cu_k="torch.tensor([0, 170, 173, 173, 300], device='cuda', dtype=torch.int32)"
run varlen-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1)[:300], k.flatten(0, 1)[:300], $cu_q, $cu_k, 200, causal=True, return_lse=True)"
# The same without a mask: the first 32 sequences' units go longest first
# (the producer's order kept in the alignment slack), sequences without
# queries or keys among them.
run varlen-longest-first-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1)[:300], k.flatten(0, 1)[:300], $cu_q, $cu_k, 200, return_lse=True)"
# 40 sequences of 0 to 9 queries over 0 to 7 keys, more than a warp's 32
# lanes: the tiles' search walks a second chunk of them.
many_q="torch.nn.functional.pad(torch.tensor([i % 10 for i in range(40)], device='cuda').cumsum(0), (1, 0)).int()"
many_k="torch.nn.functional.pad(torch.tensor([i * 3 % 8 for i in range(40)], device='cuda').cumsum(0), (1, 0)).int()"
run varlen-many-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1), k.flatten(0, 1), $many_q, $many_k, 9, causal=True)"
# Without a mask: the first chunk longest first, the second in index order.
run varlen-many-longest-first-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1), k.flatten(0, 1), $many_q, $many_k, 9)"
# The same queries over 16-row pages in reversed order with key counts 77,
# 170, 0 and 30 (chunked prefill; the table's entries past them out of
# range).
run varlen-paged16-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), $pool16, $pool16, $cu_q, None, 200, seqused_k=torch.tensor([77, 170, 0, 30], device='cuda', dtype=torch.int32), page_table=torch.arange(43, -1, -1, device='cuda', dtype=torch.int32).view(4, 11).masked_fill(torch.tensor([[False] * 5 + [True] * 6, [False] * 11, [True] * 11, [False] * 2 + [True] * 9], device='cuda'), -5), causal=True)"
# Decode of packed sequences (1, 0, 1 and 4 queries over 170, 3, 0 and 127
# keys): sm_90a packs each KV head's 2 query heads into a tile's rows; over
# the keys packed, and over the 16-row pages with key counts.
cu_dq="torch.tensor([0, 1, 1, 2, 6], device='cuda', dtype=torch.int32)"
run varlen-packed-decode-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1)[:300], k.flatten(0, 1)[:300], $cu_dq, $cu_k, 4, causal=True, return_lse=True)"
# No sequence at all (offsets [0]): the tile loop's one search stays
# inside the offsets.
run varlen-packed-empty-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), k.flatten(0, 1), k.flatten(0, 1), torch.zeros(1, device='cuda', dtype=torch.int32), torch.zeros(1, device='cuda', dtype=torch.int32), 1)"
run varlen-packed-paged16-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), $pool16, $pool16, $cu_dq, None, 4, seqused_k=torch.tensor([77, 170, 0, 30], device='cuda', dtype=torch.int32), page_table=torch.arange(43, -1, -1, device='cuda', dtype=torch.int32).view(4, 11), causal=True)"
# Split decode of packed sequences (sm_90a): 1, 1, 0 and 1 queries from row
# 2 on over 8000, 1, 0 and 8999 keys packed (max_seqlen_k given), and over
# 256-row pages with key counts 30000, 0, 5 and 20000 (split by the
# table's capacity); each sequence's keys split, the merge over their rows.
cu_sq="torch.tensor([2, 3, 4, 4, 5], device='cuda', dtype=torch.int32)"
cu_sk="torch.tensor([0, 8000, 8001, 8001, 17000], device='cuda', dtype=torch.int32)"
long_k="k.repeat(1, 50, 1, 1).flatten(0, 1)"
run varlen-split-decode-d128 128 "flashcore.attention_varlen(q.flatten(0, 1), $long_k, $long_k, $cu_sq, $cu_sk, 1, 8999, return_lse=True)"
run varlen-split-paged256-d64 64 "flashcore.attention_varlen(q.flatten(0, 1), $pool256, $pool256, torch.tensor([0, 1, 1, 2, 3], device='cuda', dtype=torch.int32), None, 1, seqused_k=torch.tensor([30000, 0, 5, 20000], device='cuda', dtype=torch.int32), page_table=torch.arange(528, device='cuda', dtype=torch.int32).view(4, 132), return_lse=True)"
# v's head dim apart from q's: DeepSeek's 192/128 causal prefill, and a
# wide v (256) over key lengths with split-KV decode (the merge of v's).
v128="torch.randn(2, 170, 2, 128, device='cuda', dtype=torch.bfloat16)"
run dv128-d192 192 "flashcore.attention(q, k, $v128, causal=True, return_lse=True)"
v256="torch.randn(2, 68000, 2, 256, device='cuda', dtype=torch.bfloat16)"
run dv256-decode-d64 64 "flashcore.attention_with_kvcache(q[:, :1], k.repeat(1, 400, 1, 1), $v256, torch.tensor([77, 60000], device='cuda', dtype=torch.int32), return_lse=True)"
# Head dims of 8 mod 16 (the last k step half past D, an odd count of
# n8 tiles on sm_80): d40 and d72, causal GQA with the LSE.
run d40 40 "$attention)"
run d72 72 "$attention)"
# A few queries of a GQA group packed into one tile's rows (sm_90a's
# pack_query_heads; q [2, 4, 4, D] over 2 KV heads): causal with the LSE
# and sinks over a cache filled to 77 and 170 keys, and split-KV over
# 68000 keys.
run packed-d128 128 "flashcore.attention_with_kvcache(q[:, :4], k, k.index_fill(1, torch.arange(77, 170, device='cuda'), float('nan')), $lengths, causal=True, sinks=torch.randn(4, device='cuda'), return_lse=True)"
run packed-decode-d64 64 "flashcore.attention_with_kvcache(q[:, :4], k.repeat(1, 400, 1, 1), k.repeat(1, 400, 1, 1), torch.tensor([3, 60000], device='cuda', dtype=torch.int32), causal=True, return_lse=True)"
# Softcap's backward: the sm_90a dq_accum kernel (d128; d256, where its
# consumers split the head dim), adding in any order, and (d64)
# deterministic, where on sm_90a the same kernel adds in a fixed order
# (dq_order), each on a capped causal GQA forward.
grad="q.requires_grad_(); k.requires_grad_(); o = flashcore.attention(q, k, k, causal=True, softcap=5.0, scale=1.0); o.sum().backward()"
run softcap-grad-d128 128 "None; $grad"
run softcap-grad-d256 256 "None; $grad"
run softcap-grad-deterministic-d64 64 "None; torch.use_deterministic_algorithms(True); $grad"
# The backward at head dims below its tiles' 64, 128 and 256 columns
# (zeros past D; D's columns stored, dq_accum's last chunk group partial
# at 40 and 72), any order and (72) deterministic. Under
# FLASHCORE_CHIP=sm_80, grad-d64, grad-d96, softcap-grad-d128, grad-d160,
# grad-d192, grad-d224 and softcap-grad-d256 run sm_80's one-pass kernel
# over its 4 x 2 grid of warps (past 192 with one Q and dO buffer).
plain="q.requires_grad_(); k.requires_grad_(); o = flashcore.attention(q, k, k, causal=True); o.sum().backward()"
# A group sliced across CTAs (dkv_partial; MQA 8:1 over 170 keys: 8
# slices), any order (d128, d256: the split head dim) and ordered (d64).
mqa="q2 = q.repeat(1, 1, 2, 1).requires_grad_(); k1 = k[:, :, :1].contiguous().requires_grad_(); o = flashcore.attention(q2, k1, k1, causal=True); o.sum().backward()"
run sliced-grad-d128 128 "None; $mqa"
run sliced-grad-d256 256 "None; $mqa"
run sliced-grad-deterministic-d64 64 "None; torch.use_deterministic_algorithms(True); $mqa"
run grad-d40 40 "None; $plain"
run grad-d64 64 "None; $plain"
run grad-d96 96 "None; $plain"
run grad-d160 160 "None; $plain"
run grad-d192 192 "None; $plain"
run grad-d224 224 "None; $plain"
run grad-deterministic-d72 72 "None; torch.use_deterministic_algorithms(True); $plain"
# From 136 to 192 the consumers share out the column blocks of dK, dV and
# dQ of tiles of 192 columns (d160: 64 + 64 + 128 and 96 + 96 + 32), each
# consumer's code apart, its dK/dV slabs of its own widths.
run grad-deterministic-d160 160 "None; torch.use_deterministic_algorithms(True); $plain"
# v's head dim apart from q's (DeepSeek's 192/128): sm_90a's kernel on
# tiles of 192 columns, its consumers' blocks of dK (192) and dV (128)
# shared out, dV past 128 neither computed nor stored.
run grad-dv128-d192 192 "None; q.requires_grad_(); k.requires_grad_(); v = $v128.requires_grad_(); o = flashcore.attention(q, k, v, causal=True); o.sum().backward()"
exit $status
