//===- FmhaOps.td - fmha operations ------------------------*- tablegen -*-===//
//
// Part of FlashCore. The op semantics are the contract of ../shared/DESIGN.md
// ("Op semantics"); the verifiers in lib/Dialect/Fmha/FmhaOps.cpp enforce it.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_OPS_TD
#define FMHA_OPS_TD

include "FmhaAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

def Fmha_AttentionOp : Fmha_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention forward (FlashAttention-style)";
  let description = [{
    Computes `O = softmax(scale * Q K^T + mask) V` per batch and query head,
    with f32 accumulation, and optionally the row log-sum-exp
    `LSE = log(sum(exp(scale * Q K^T + mask)))` (natural log).

    | operand | shape | element type |
    |---|---|---|
    | `q`   | `[B, Hq, Sq, D]`  | f16 or bf16 |
    | `k`   | `[B, Hkv, Sk, D]` | same as `q` |
    | `v`   | `[B, Hkv, Sk, Dv]` | same as `q` |
    | `o`   | `[B, Hq, Sq, Dv]`  | same as `q` (written) |
    | `lse` | `[B, Hq, Sq]`     | f32 (written, optional) |
    | `sinks` | `[Hq, Sq]`      | f32 (optional) |

    `D` and `Dv` are static, each a multiple of 8 from 32 to 256 (the
    kernels' shared tiles round them up to their swizzle unit); `Dv`, v's
    and o's head dim, is `D` but where a model's differs (DeepSeek's
    `D = 192`, `Dv = 128`). Every other size may be dynamic
    (`?`) and becomes a kernel argument, as do the strides, so BHSD and BSHD
    layouts both work. `Hq % Hkv == 0`: query head `h` reads key/value head
    `h / (Hq / Hkv)` (grouped-query and multi-query attention). Any
    `Sq, Sk >= 1`: partial tiles are masked, never read out of bounds.

    - `causal`: query `i` sees key `j` only if `j <= i + Sk - Sq` (bottom-right
      aligned, as FlashAttention 2.1+).
    - `scale` (f32, default `1/sqrt(D)`): the softmax scale.
    - `window = [left, right]`: sliding window; query `i` sees key `j` only if
      `i + Sk - Sq - left <= j <= i + Sk - Sq + right`. With `causal`, `right`
      must be 0.
    - `tile`: a `#fmha.tile` for the target chip; without it the lowering
      picks the chip's default for this head dimension.
    - `softcap = c` (f32, positive): logit softcapping (Gemma 2): each
      logit `x = scale * q . k` becomes `c * tanh(x / c)` before the mask
      and the softmax (and the LSE); `fmha.attention_grad` takes the same
      `softcap`.
    - `sinks` (gpt-oss's attention sinks): a logit per query row that
      joins its softmax denominator, `exp(sinks[h, i])` added to the sum of
      `exp(logit)`, with no value: `O = sum_j exp(x_j) v_j /
      (exp(sinks[h, i]) + sum_j exp(x_j))`, `LSE = log(exp(sinks[h, i]) +
      sum_j exp(x_j))`. gpt-oss's one sink per head is its `[Hq]` vector
      viewed with a row stride of 0 (any strides); a GQA group's decode
      rows folded into one head's rows take theirs with a view too. A row
      that sees no key then writes zeros and its sink. The backward of
      `q`, `k` and `v` is `fmha.attention_grad`'s with this `lse`; that of
      a sink is `-exp(sink - lse) * delta` summed over the rows that read
      it. With `split_keys`, the sinks join split 0's partial state only,
      so that the merge of the states counts each once.

    - `key_lengths` (a KV cache's filled lengths, FlashAttention's
      `cache_seqlens` / `seqused_k`): `[B]` i32. Batch entry `b` attends to
      the first `L_b = key_lengths[b]` keys of its `k` and `v` (clamped to
      `[0, Sk]`), and its mask aligns to them: `Sk` above is `L_b` (query
      `i` sees key `j <= i + L_b - Sq` under `causal`). Keys at or past `L_b`
      never reach the result, whatever they hold (NaN included): the rows of
      `v` past it are zeroed or skipped, never multiplied by a zero weight.
    - `page_table` (a paged KV cache, FlashAttention's `page_table`, vLLM's
      block table): `[B, P]` i32. `k` and `v` are then pools of pages,
      `[pages, Hkv, page_size, D]` with a static `page_size` (a multiple of
      8: whole 8-row swizzle atoms), and key `j` of batch entry `b` is row
      `j % page_size` of page `page_table[b, j / page_size]`: `Sk` above is
      `P * page_size`, which `key_lengths` may limit per entry. Only the
      entries of pages that hold an entry's keys (`j < L_b`) are read; one
      outside `[0, pages)` is clamped into it (another page's keys, never
      memory outside `k` and `v`).

    - `query_offsets` (variable-length batches, FlashAttention's
      `cu_seqlens_q`): `[B + 1]` i32, non-decreasing from 0. `q`, `o` (and
      `lse`, `sinks`) then hold the batch's sequences packed one after the
      other as batch entry 0: `q` `[1, Hq, T_q, D]` (FlashAttention's
      `[total_q, Hq, D]` viewed so), and sequence `b` is their rows
      `query_offsets[b]` to `query_offsets[b + 1]`: its `Sq`.
      `max_query_length` (an `index`, FlashAttention's `max_seqlen_q`) is
      required with them: at least the most rows a sequence has, which
      sizes the grid (a row past it may be left uncomputed). `B` is the
      offsets' size minus 1; without `key_offsets`, `k` and `v` keep a
      batch entry per sequence (`[B, Hkv, Sk, D]`, or pages with
      `page_table`).
    - `key_offsets` (FlashAttention's `cu_seqlens_k`, with
      `query_offsets`): `[B + 1]` i32; `k` and `v` are `[1, Hkv, T_k, D]`
      and sequence `b`'s keys are their rows `key_offsets[b]` to
      `key_offsets[b + 1]`: its `Sk` (which `key_lengths` may limit). Not
      with `page_table`.
      Each offset is clamped into `[0, T]`, and a sequence whose end is
      before its start is empty: bad offsets give wrong rows, never accesses
      outside the tensors. Masks, windows and the rule below apply per
      sequence.

    A query row that sees no key writes zeros to `o` and `+inf` to `lse`.

    - `pack_query_heads` (a schedule, not a change of the result): the
      `G = Hq / Hkv` query heads that share a KV head are computed as the
      rows of one tile, `Sq x G` rows per (batch entry, KV head), row
      `r` being query `r / G` of head `hk * G + r % G`, so that each block
      of `k` and `v` is read once per group rather than `G` times
      (FlashAttention-3's PackGQA): for decode with a few queries per
      sequence (speculative decoding). With `query_offsets`, sequence `b`'s
      tiles hold its `L_b x G` rows of each KV head (decode of packed
      sequences, as serving engines batch it; sm_90a only).

    - `split_keys`: `o` and `lse` (required) hold `S >= 1` partial states
      of each batch entry, `o` `[S * B, Hq, Sq, Dv]` and `lse`
      `[S * B, Hq, Sq]`: entry `s * B + b` is the attention of batch `b` over
      split `s` of its keys. The splits are contiguous ranges that partition
      the keys (the lowering's: whole key blocks, as many per split as the
      blocks allow evenly); a split that holds no key a row sees gives that
      row zeros and `+inf`, as above. `S` is read from the sizes at run
      time. `fmha.merge_attention` combines the states into the attention.
      With `query_offsets` (`q`'s one entry), `o` is `[S, Hq, T_q, Dv]`
      and `lse` `[S, Hq, T_q]`: entry `s` holds split `s` of every packed
      sequence, each sequence's own keys cut into `S` ranges (decode of
      packed sequences whose long caches would leave SMs idle).

    Example (GQA 32:8, causal, bf16, head dim 128):

    ```mlir
    fmha.attention q(%q : memref<?x32x?x128xbf16>)
                   k(%k : memref<?x8x?x128xbf16>)
                   v(%v : memref<?x8x?x128xbf16>)
                -> o(%o : memref<?x32x?x128xbf16>)
                   lse(%lse : memref<?x32x?xf32>) causal
                   {scale = 0.0883883461 : f32}
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "queries [B, Hq, Sq, D]", [MemRead]>:$q,
    Arg<AnyMemRef, "keys [B, Hkv, Sk, D]", [MemRead]>:$k,
    Arg<AnyMemRef, "values [B, Hkv, Sk, Dv]", [MemRead]>:$v,
    Arg<AnyMemRef, "output [B, Hq, Sq, Dv]", [MemWrite]>:$o,
    Arg<Optional<AnyMemRef>, "log-sum-exp [B, Hq, Sq]", [MemWrite]>:$lse,
    Arg<Optional<AnyMemRef>, "attention sinks [Hq, Sq]", [MemRead]>:$sinks,
    Arg<Optional<AnyMemRef>, "keys per batch entry [B]", [MemRead]>:$key_lengths,
    Arg<Optional<AnyMemRef>, "pages of each batch entry [B, P]", [MemRead]>:$page_table,
    Arg<Optional<AnyMemRef>, "first query row of each sequence [B + 1]", [MemRead]>:$query_offsets,
    Arg<Optional<AnyMemRef>, "first key row of each sequence [B + 1]", [MemRead]>:$key_offsets,
    Optional<Index>:$max_query_length,
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<DenseI64ArrayAttr>:$window,
    OptionalAttr<Fmha_TileAttr>:$tile,
    UnitAttr:$split_keys,
    OptionalAttr<F32Attr>:$softcap,
    UnitAttr:$pack_query_heads
  );
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `k` `(` $k `:` type($k) `)`
    `v` `(` $v `:` type($v) `)`
    `->` `o` `(` $o `:` type($o) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`page_table` `(` $page_table^ `:` type($page_table) `)`)?
    (`query_offsets` `(` $query_offsets^ `:` type($query_offsets) `)`)?
    (`key_offsets` `(` $key_offsets^ `:` type($key_offsets) `)`)?
    (`max_query_length` `(` $max_query_length^ `)`)?
    (`causal` $causal^)?
    (`split_keys` $split_keys^)?
    (`pack_query_heads` $pack_query_heads^)?
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension D of q and k.
    int64_t getHeadDim();
    /// The static head dimension Dv of v and o (D unless they differ).
    int64_t getValueHeadDim();
    /// Both, as the tiling policy takes them.
    AttentionHeadDims getHeadDims();
    /// The softmax scale: the `scale` attribute, or 1/sqrt(D) without one.
    float getScaleOrDefault();
    /// The checks of query_offsets, key_offsets and max_query_length.
    LogicalResult verifyPackedSequences();
  }];
}

def Fmha_AttentionGradOp : Fmha_Op<"attention_grad", [AttrSizedOperandSegments]> {
  let summary = "gradients of fmha.attention (FlashAttention-2 backward)";
  let description = [{
    The backward pass of `fmha.attention` with the same `causal`, `scale`
    and `window`: from the forward's inputs, its output `o`, the gradient
    `dout` of the loss with respect to `o`, and the forward's `lse`, computes
    the gradients of the loss with respect to `q`, `k` and `v`. With
    `P = exp(scale * Q K^T + mask - LSE)` (the forward's probabilities,
    recomputed), `delta = rowsum(dout * o)` and `dS = P * (dout V^T - delta)`:

    `dq = scale * dS K`, `dk = scale * dS^T Q`, `dv = P^T dout`

    with f32 accumulation. Under GQA/MQA, `dk` and `dv` of a key/value head
    sum over the `Hq / Hkv` query heads that read it.

    | operand | shape | element type |
    |---|---|---|
    | `q`, `o`, `dout` | `[B, Hq, Sq, D]` | f16 or bf16 |
    | `k`, `v` | `[B, Hkv, Sk, D]` | same as `q` |
    | `lse` | `[B, Hq, Sq]` | f32 (the forward's) |
    | `dq` | `[B, Hq, Sq, D]` | same as `q` (written) |
    | `dk`, `dv` | `[B, Hkv, Sk, D]` | same as `q` (written) |
    | `delta` | `[B, Hq, Sq]` | f32 (written: `rowsum(dout * o)`) |

    `delta` is scratch the caller provides (FlashAttention's `softmax_d`);
    it holds `rowsum(dout * o)` afterwards.

    `dq_accum` (optional, f32 `[B, Hq, Sq, D]`, dense along its rows:
    strides `[?, ?, D, 1]`, scratch) picks the other of two ways to
    compute `dq`: with it, each block of keys adds its part of `dq` into
    `dq_accum` (FlashAttention's way, one pass over the blocks: on sm_90a
    FlashAttention-3's WGMMA kernel, which adds a block's rows with one
    bulk reduce-add and keeps each row's 16-byte chunks in its own order;
    on sm_80 f32 atomics, which keep each whole 16 x 8 tile in mma.sync's
    fragment order) and a last kernel scales and rounds it into
    `dq`; the order of the additions, and so the last bits of `dq`, vary
    from run to run. Without it, `dq` is computed by blocks of queries, S
    and dP once more: the same bits every run.

    `dq_order` (optional, with `dq_accum`, i32 `[B, Hq, ceil(Sq / 64)]`,
    scratch) makes the one-pass way deterministic (FlashAttention-3's
    deterministic mode; sm_90a only): a counter per block of queries, which
    the first kernel zeroes, orders the blocks of keys that add into it, so
    that they add in the same order (the last block of keys first) and
    `dq` has the same bits every run.

    `dkv_partial` (optional, with `dq_accum`, sm_90a only, f32
    `[S, B, Hkv, Sk, D + Dv]`, dense along its rows: strides
    `[?, ?, ?, D + Dv, 1]`, scratch) splits each GQA group's `Hq / Hkv`
    query heads into `S` slices (the run-time size of its first dimension;
    slice `s` takes the group's heads from `s ceil(G / S)`, none past the
    group), each walked by CTAs of its own, so that a group of many heads
    over few blocks of keys (MQA under a causal mask) fills the GPU. Each
    slice writes its `dk` (times `scale`) and `dv` into its row of
    `dkv_partial` (`dk` in the first D columns, `dv` in the next Dv), and a
    last kernel sums the S rows in slice order into `dk` and `dv`: the same
    bits every run where the op is otherwise deterministic.

    With the forward's `softcap = c`, `P` is of the capped logits
    `c * tanh(scale * Q K^T / c)` and `dS` is scaled by the cap's slope,
    `1 - tanh^2`.

    Sizes, strides and the rest of the contract are `fmha.attention`'s; a
    query row that saw no key (`lse` `+inf`) has zero gradients, and so has
    a key no query saw. q, k, dq and dk have head dim D, v, o, dout and dv
    Dv, each a multiple of 8 from 32 to 256; Dv may differ from D
    (DeepSeek's 192 and 128) where the op is lowered with `dq_accum` for
    sm_90a. On sm_80, `dq_accum` takes D up to 128, and 160, 192, 224 and
    256.

    `max_shared_bytes` (optional, positive) is the shared memory a block
    may take on the device the kernels will run on, where that is less
    than the chip's (an sm_86 or sm_89 GPU allows 99 KB, 101376 bytes,
    where sm_80's tiles assume an A100's 163 KB): the lowering tiles the
    kernels to fit it, and refuses, naming the kernel, where one of them
    cannot (sm_80's kernels with `dq_accum` past head dim 128 on 99 KB).

    ```mlir
    fmha.attention_grad q(%q : memref<?x32x?x128xbf16>)
                        k(%k : memref<?x8x?x128xbf16>)
                        v(%v : memref<?x8x?x128xbf16>)
                        o(%o : memref<?x32x?x128xbf16>)
                        dout(%do : memref<?x32x?x128xbf16>)
                        lse(%lse : memref<?x32x?xf32>)
                     -> dq(%dq : memref<?x32x?x128xbf16>)
                        dk(%dk : memref<?x8x?x128xbf16>)
                        dv(%dv : memref<?x8x?x128xbf16>)
                        delta(%delta : memref<?x32x?xf32>) causal
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "queries [B, Hq, Sq, D]", [MemRead]>:$q,
    Arg<AnyMemRef, "keys [B, Hkv, Sk, D]", [MemRead]>:$k,
    Arg<AnyMemRef, "values [B, Hkv, Sk, Dv]", [MemRead]>:$v,
    Arg<AnyMemRef, "forward output [B, Hq, Sq, Dv]", [MemRead]>:$o,
    Arg<AnyMemRef, "gradient of o [B, Hq, Sq, Dv]", [MemRead]>:$dout,
    Arg<AnyMemRef, "forward log-sum-exp [B, Hq, Sq]", [MemRead]>:$lse,
    Arg<AnyMemRef, "gradient of q [B, Hq, Sq, D]", [MemWrite]>:$dq,
    Arg<AnyMemRef, "gradient of k [B, Hkv, Sk, D]", [MemWrite]>:$dk,
    Arg<AnyMemRef, "gradient of v [B, Hkv, Sk, Dv]", [MemWrite]>:$dv,
    Arg<AnyMemRef, "rowsum(dout * o) [B, Hq, Sq]", [MemWrite]>:$delta,
    Arg<Optional<AnyMemRef>, "f32 dq accumulator [B, Hq, Sq, D]",
        [MemRead, MemWrite]>:$dq_accum,
    Arg<Optional<AnyMemRef>, "i32 order of dq_accum's adds [B, Hq, ceil(Sq / 64)]",
        [MemRead, MemWrite]>:$dq_order,
    Arg<Optional<AnyMemRef>, "f32 dk and dv of each slice of a group's query heads [S, B, Hkv, Sk, D + Dv]",
        [MemRead, MemWrite]>:$dkv_partial,
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<DenseI64ArrayAttr>:$window,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$max_shared_bytes
  );
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `k` `(` $k `:` type($k) `)`
    `v` `(` $v `:` type($v) `)`
    `o` `(` $o `:` type($o) `)`
    `dout` `(` $dout `:` type($dout) `)`
    `lse` `(` $lse `:` type($lse) `)`
    `->` `dq` `(` $dq `:` type($dq) `)`
    `dk` `(` $dk `:` type($dk) `)`
    `dv` `(` $dv `:` type($dv) `)`
    `delta` `(` $delta `:` type($delta) `)`
    (`dq_accum` `(` $dq_accum^ `:` type($dq_accum) `)`)?
    (`dq_order` `(` $dq_order^ `:` type($dq_order) `)`)?
    (`dkv_partial` `(` $dkv_partial^ `:` type($dkv_partial) `)`)?
    (`causal` $causal^)?
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension D of q, k, dq and dk.
    int64_t getHeadDim();
    /// The static head dimension Dv of v, o, dout and dv.
    int64_t getValueHeadDim();
    /// The softmax scale: the `scale` attribute, or 1/sqrt(D) without one.
    float getScaleOrDefault();
  }];
}

def Fmha_MergeAttentionOp : Fmha_Op<"merge_attention", [AttrSizedOperandSegments]> {
  let summary = "merge partial attention states by their log-sum-exp";
  let description = [{
    Combines `S` partial attention states of the same queries, each the
    attention over a part of the keys with its log-sum-exp (split-KV,
    `fmha.attention` with `split_keys`, or context parallelism across
    devices), into the attention over all of them:

    `L = log(sum_s exp(lse_s))`, `O = sum_s exp(lse_s - L) * O_s`

    | operand | shape | element type |
    |---|---|---|
    | `outs` | `[S, B, H, Sq, D]` | f16, bf16 or f32 |
    | `lses` | `[S, B, H, Sq]`    | f32 |
    | `o`    | `[B, H, Sq, D]`    | same as `outs` (written) |
    | `lse`  | `[B, H, Sq]`       | f32 (written, optional) |

    `D` is static; every other size may be dynamic, and strides are kernel
    arguments. A state whose `lse` is `+inf` or `-inf` saw no key and has
    no weight (attention writes `+inf` for such a row; other libraries
    write `-inf`). A row no state saw a key for gets zeros and `+inf`, as
    `fmha.attention` gives it. f32 arithmetic.

    - `query_offsets` (`[N + 1]` i32, optional): the offsets of packed
      sequences (`fmha.attention`'s, whose `split_keys` states these are).
      Only the rows from `query_offsets[0]` to `query_offsets[N]` (each
      clamped into `[0, Sq]`) are merged, of every batch entry and head;
      the rows before and after them, outside every sequence, keep what
      `o` and `lse` held (no state was written there).

    ```mlir
    fmha.merge_attention outs(%parts : memref<?x?x8x?x128xbf16>)
                         lses(%lses : memref<?x?x8x?xf32>)
                      -> o(%o : memref<?x8x?x128xbf16>)
                         lse(%lse : memref<?x8x?xf32>)
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "partial outputs [S, B, H, Sq, D]", [MemRead]>:$outs,
    Arg<AnyMemRef, "partial log-sum-exps [S, B, H, Sq]", [MemRead]>:$lses,
    Arg<AnyMemRef, "output [B, H, Sq, D]", [MemWrite]>:$o,
    Arg<Optional<AnyMemRef>, "log-sum-exp [B, H, Sq]", [MemWrite]>:$lse,
    Arg<Optional<AnyMemRef>, "packed sequences' first rows [N + 1]", [MemRead]>:$query_offsets
  );
  let assemblyFormat = [{
    `outs` `(` $outs `:` type($outs) `)`
    `lses` `(` $lses `:` type($lses) `)`
    `->` `o` `(` $o `:` type($o) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`query_offsets` `(` $query_offsets^ `:` type($query_offsets) `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The static head dimension D.
    int64_t getHeadDim();
  }];
}

def Fmha_ResampleOp : Fmha_Op<"resample", [AttrSizedOperandSegments]> {
  let summary = "resample time series onto target timestamps, several streams fused";
  let description = [{
    For each batch row `b`, each stream `s` and each target timestamp
    `targets[b, t]`, computes a value from the stream's samples
    `(times_s[b, i], values_s[b, i, :])` and writes it to
    `out[b, t, off_s : off_s + D_s]`, where `off_s` is the sum of the feature
    sizes of the streams before `s`: several sensor streams sampled at
    different times are fused onto one timeline by one kernel.

    | operand | shape | element type |
    |---|---|---|
    | `times` (one per stream)   | `[B, S_s]`      | f32, non-decreasing per row |
    | `values` (one per stream)  | `[B, S_s, D_s]` | f32, f16 or bf16 (all the same) |
    | `lengths` (optional, one per stream) | `[B]` | i32: valid samples per row |
    | `targets`                  | `[B, T]`        | f32 |
    | `out`                      | `[B, T, sum(D_s)]` | as `values` (written) |

    Modes: `linear` interpolates between the two samples around the target,
    `nearest` takes the closer one (the earlier on a tie), `previous` holds
    the last sample at or before the target. Targets before the first sample
    or after the last valid one take that edge sample's value. With
    `lengths`, row `b` of stream `s` uses only its first `lengths_s[b]`
    samples; a row with no valid sample writes zeros. Unsorted timestamps are
    a precondition violation, not checked here: `fmha.check_sorted` finds
    them.

    `D_s` are static; `B`, `S_s` and `T` may be dynamic (every size at least
    1: static sizes are checked here, dynamic ones are the caller's to keep).
    `tile`, a `#fmha.resample_tile`, overrides the chip's default tiling.

    Example (two streams, IMU 6 features at 200 Hz and joints 32 features at
    50 Hz, onto 30 Hz targets, with valid lengths):

    ```mlir
    fmha.resample linear
        times(%t_imu, %t_joint : memref<?x400xf32>, memref<?x100xf32>)
        values(%imu, %joint : memref<?x400x6xbf16>, memref<?x100x32xbf16>)
        lengths(%n_imu, %n_joint : memref<?xi32>, memref<?xi32>)
        targets(%t_out : memref<?x60xf32>)
        -> out(%out : memref<?x60x38xbf16>)
    ```
  }];
  let arguments = (ins
    Fmha_ResampleMode:$mode,
    Arg<Variadic<AnyMemRef>, "source timestamps [B, S_s], one per stream", [MemRead]>:$times,
    Arg<Variadic<AnyMemRef>, "source values [B, S_s, D_s], one per stream", [MemRead]>:$values,
    Arg<Variadic<AnyMemRef>, "valid samples per row [B], one per stream", [MemRead]>:$lengths,
    Arg<AnyMemRef, "target timestamps [B, T]", [MemRead]>:$targets,
    Arg<AnyMemRef, "output [B, T, sum(D_s)]", [MemWrite]>:$out,
    OptionalAttr<Fmha_ResampleTileAttr>:$tile
  );
  let assemblyFormat = [{
    $mode
    `times` `(` $times `:` type($times) `)`
    `values` `(` $values `:` type($values) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `targets` `(` $targets `:` type($targets) `)`
    `->` `out` `(` $out `:` type($out) `)`
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of fused streams.
    unsigned getNumStreams() { return getTimes().size(); }
  }];
}

def Fmha_CheckSortedOp : Fmha_Op<"check_sorted", [AttrSizedOperandSegments]> {
  let summary = "find the first out-of-order timestamps of resample streams";
  let description = [{
    The checking mode of `fmha.resample`'s precondition: for each stream
    `s`, lowers `first[s]` (unsigned) to `row * 2^32 + i` for every row and
    every `i` where `times_s[row, i]` is not at or before
    `times_s[row, i + 1]` (greater, or either one NaN), `i + 1` a valid
    sample (below `lengths_s[row]` when lengths are given). So, when `first`
    holds all ones (-1) before, it holds after it the first such pair in row
    order, or still -1 where the stream is sorted.

    | operand | shape | element type |
    |---|---|---|
    | `times` (one per stream) | `[B, S_s]` | f32 |
    | `lengths` (optional, one per stream) | `[B]` | i32 |
    | `first` | `[number of streams]` | i64 (read and written) |

    The operands are those of the `fmha.resample` it guards:

    ```mlir
    fmha.check_sorted
        times(%t_imu, %t_joint : memref<?x400xf32>, memref<?x100xf32>)
        lengths(%n_imu, %n_joint : memref<?xi32>, memref<?xi32>)
        -> first(%first : memref<2xi64>)
    ```
  }];
  let arguments = (ins
    Arg<Variadic<AnyMemRef>, "source timestamps [B, S_s], one per stream", [MemRead]>:$times,
    Arg<Variadic<AnyMemRef>, "valid samples per row [B], one per stream", [MemRead]>:$lengths,
    Arg<AnyMemRef, "first unsorted position per stream", [MemRead, MemWrite]>:$first
  );
  let assemblyFormat = [{
    `times` `(` $times `:` type($times) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `->` `first` `(` $first `:` type($first) `)`
    attr-dict
  }];
  let hasVerifier = 1;
}

#endif // FMHA_OPS_TD
