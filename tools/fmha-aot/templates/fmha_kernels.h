/* fmha-aot:begin banner */
/*===- fmha_kernels.h - the template of fmha-aot's header ---------*- C -*-===*\
 *
 * Part of FlashCore. fmha-aot writes PREFIX.h from this file (EmitC.cpp):
 * `fmha_kernels` and `FMHA_KERNELS` become the prefix (--name) and its upper
 * case, and each region between an `fmha-aot:begin NAME` and an
 * `fmha-aot:end NAME` comment becomes what the kernels hold. As it stands,
 * it declares the placeholder kernels of fmha_kernels.c, so that the
 * template compiles and runs on its own (test/fmha-aot/template.test).
\*===----------------------------------------------------------------------===*/
/* fmha-aot:end banner */

#ifndef FMHA_KERNELS_H
#define FMHA_KERNELS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What every function returns. After a failure, the module's message says
 *  what failed, with the values involved. */
typedef enum fmha_kernels_status {
  FMHA_KERNELS_SUCCESS = 0,
  /** No cubin in this file runs on the current device (fmha_kernels_load). */
  FMHA_KERNELS_ERROR_NO_CUBIN = 1,
  /** A CUDA driver call failed; the message names it and its CUresult. */
  FMHA_KERNELS_ERROR_CUDA = 2,
  /** An argument does not fit the kernel: a size, stride, alignment, or an
   *  operand the kernel was (or was not) generated with. */
  FMHA_KERNELS_ERROR_INVALID_ARGUMENT = 3,
  /** A launch on a module that fmha_kernels_load has not loaded. */
  FMHA_KERNELS_ERROR_NOT_LOADED = 4
} fmha_kernels_status;

enum {
/* fmha-aot:begin counts */
  FMHA_KERNELS_NUM_CUBINS = 2,
  FMHA_KERNELS_NUM_KERNELS = 3,
  FMHA_KERNELS_NUM_FUNCTIONS = 4,
  /* queries per counter of an attention_grad's dq_order */
  FMHA_KERNELS_DQ_ORDER_ROWS = 64,
/* fmha-aot:end counts */
  FMHA_KERNELS_MESSAGE_SIZE = 512
};

/** The kernels of this file, loaded into one CUDA context by
 *  fmha_kernels_load. Launches record their failures in `message`, so give
 *  each thread that launches concurrently its own module (loading is
 *  cheap). */
typedef struct fmha_kernels_module {
  CUmodule module; /* NULL until loaded */
  int cubin;       /* index in fmha_kernels_archs of the cubin */
  /* the kernels' functions in the order of fmha_kernels_kernels, each
     kernel's in the order it launches them (an attention_grad kernel has
     several) */
  CUfunction functions[FMHA_KERNELS_NUM_FUNCTIONS];
  int multiprocessors; /* the device's SMs */
  /* why the last call failed */
  char message[FMHA_KERNELS_MESSAGE_SIZE];
} fmha_kernels_module;

/** The archs of the embedded cubins ("sm_80", "sm_90a", ...). */
extern const char *const fmha_kernels_archs[FMHA_KERNELS_NUM_CUBINS];

/** Picks the cubin for a device of compute capability major.minor and
 *  returns its index in fmha_kernels_archs: an sm_XYa cubin runs only on
 *  X.Y exactly (and is preferred there), an sm_XY cubin on X.y for every
 *  y >= Y (the closest one preferred). Returns -1 when none runs there,
 *  after writing why (the capability, the archs held, the --archs that
 *  would) to `message` (`size` bytes; may be NULL). Calls no CUDA
 *  function. */
int fmha_kernels_select_cubin(int major, int minor, char *message, size_t size);

/** Loads the cubin for the device of the current CUDA context (see
 *  fmha_kernels_select_cubin) and prepares every kernel (dynamic shared
 *  memory). Initializes all of *module; its kernels launch in this context
 *  only. Fails with FMHA_KERNELS_ERROR_NO_CUBIN when no cubin runs on the
 *  device, or FMHA_KERNELS_ERROR_CUDA (no current context, a load
 *  failure). */
fmha_kernels_status fmha_kernels_load(fmha_kernels_module *module);

/** Unloads the module; the context it was loaded in must be current. */
fmha_kernels_status fmha_kernels_unload(fmha_kernels_module *module);

/** The operands of an fmha.attention kernel: Q [B, Hq, Sq, D], K and V
 *  [B, Hkv, Sk, D], O [B, Hq, Sq, D] (written), LSE [B, Hq, Sq] f32
 *  (written; only for kernels generated with lse, else NULL). Pointers are
 *  device pointers; strides are in elements, ordered like the sizes
 *  (batch, head, sequence, head dim), so BHSD and BSHD layouts both work;
 *  the head dim's stride must be 1. Only for kernels generated with them
 *  (else NULL):
 *  - sinks [Hq, Sq] f32: a logit per query row that joins its softmax
 *    denominator (gpt-oss's one per head: a [Hq] vector with a row stride
 *    of 0);
 *  - key_lengths [B] int32: batch entry b attends to its first
 *    key_lengths[b] keys (a KV cache's filled length, clamped to k_seq);
 *  - page_table [B, pages_per_sequence] int32: a paged KV cache. K and V
 *    are then pools of pages [pages, Hkv, page_size, D] (their strides the
 *    pool's), key j of entry b is row j % page_size of page
 *    page_table[b][j / page_size], and k_seq is pages_per_sequence x
 *    page_size. */
typedef struct fmha_kernels_attention_args {
  const void *q, *k, *v;
  void *o;
  float *lse;
  int64_t batch, q_heads, kv_heads, q_seq, k_seq;
  int64_t q_strides[4], k_strides[4], v_strides[4], o_strides[4];
  int64_t lse_strides[3];
  const float *sinks;
  const int32_t *key_lengths;
  const int32_t *page_table;
  int64_t pages, pages_per_sequence;
  int64_t sinks_strides[2], key_lengths_strides[1], page_table_strides[2];
  /* Only for kernels generated with split_keys: O and LSE then hold the
     partial states of `splits` key splits of each batch entry, [splits x
     B, Hq, Sq, D] and [splits x B, Hq, Sq] (entry s x B + b: batch b over
     split s), which a merge_attention kernel combines; with query_offsets,
     [splits, Hq, q_seq, D] and [splits, Hq, q_seq] (entry s: split s of
     every sequence's keys), merged by a kernel generated with
     query_offsets. */
  int64_t splits;
  /* Only for kernels generated with query_offsets (FlashAttention's varlen
     convention): `batch` sequences packed without padding. Q, O and LSE
     are [1, Hq, q_seq, D] with q_seq the total rows (FlashAttention's
     [total_q, Hq, D] viewed so), sequence b their rows query_offsets[b] to
     query_offsets[b + 1] (int32 [batch + 1]); max_query_length is at least
     the most rows a sequence has. With key_offsets too, K and V are [1,
     Hkv, k_seq, D] likewise; without, [batch, Hkv, k_seq, D] (or pages). */
  const int32_t *query_offsets, *key_offsets;
  int64_t max_query_length;
  int64_t query_offsets_strides[1], key_offsets_strides[1];
} fmha_kernels_attention_args;

/** The operands of an fmha.merge_attention kernel: OUTS [S, B, H, Sq, D]
 *  and LSES [S, B, H, Sq] f32, S partial attention states of the same
 *  queries (a split_keys attention's, viewed so: states = splits); written:
 *  O [B, H, Sq, D] and LSE [B, H, Sq] f32 (only for kernels generated with
 *  lse, else NULL). Strides are in elements, ordered like the sizes; the
 *  head dim's stride must be 1. */
typedef struct fmha_kernels_merge_attention_args {
  const void *outs;
  const float *lses;
  void *o;
  float *lse;
  int64_t states, batch, heads, q_seq;
  int64_t outs_strides[5], lses_strides[4], o_strides[4], lse_strides[3];
  /* Only for kernels generated with query_offsets (the states of a
     split_keys attention over `sequences` packed sequences; batch 1): the
     sequences' offsets, int32 [sequences + 1]. Only the rows from
     query_offsets[0] to query_offsets[sequences] are merged; O's and LSE's
     other rows keep what they held. */
  const int32_t *query_offsets;
  int64_t sequences;
  int64_t query_offsets_strides[1];
} fmha_kernels_merge_attention_args;

/** The operands of an fmha.attention_grad kernel, the backward of
 *  fmha.attention: Q, K, V, O and LSE as the forward had them, dOut (the
 *  gradient of O) [B, Hq, Sq, Dv]; written: dQ [B, Hq, Sq, D], dK
 *  [B, Hkv, Sk, D] and dV [B, Hkv, Sk, Dv] (summed over the query heads of
 *  a KV head; Dv is the kernel's value_head_dim, D unless they differ),
 *  delta [B, Hq, Sq] f32 (scratch: rowsum(dout * o) afterwards); dq_accum
 *  [B, Hq, Sq, D] f32, scratch that needs no zeroing, dense rows (strides
 *  [?, ?, D, 1]), only for kernels generated with dq_accum (else NULL);
 *  dq_order [B, Hq, ceil(Sq / FMHA_KERNELS_DQ_ORDER_ROWS)] int32, scratch
 *  that needs no zeroing, only for kernels generated with it (--dq-order:
 *  the deterministic one-pass backward; else NULL).
 *  Strides are in elements, ordered like the sizes, as for attention. */
typedef struct fmha_kernels_attention_grad_args {
  const void *q, *k, *v, *o, *dout;
  const float *lse;
  void *dq, *dk, *dv;
  float *delta, *dq_accum;
  int64_t batch, q_heads, kv_heads, q_seq, k_seq;
  int64_t q_strides[4], k_strides[4], v_strides[4], o_strides[4];
  int64_t dout_strides[4], lse_strides[3];
  int64_t dq_strides[4], dk_strides[4], dv_strides[4], delta_strides[3];
  int64_t dq_accum_strides[4];
  int32_t *dq_order;
  int64_t dq_order_strides[3];
} fmha_kernels_attention_grad_args;

/** One source stream of an fmha.resample kernel: times [B, S] (f32,
 *  non-decreasing per row), values [B, S, D], lengths [B] (valid samples
 *  per row; only for kernels generated with lengths, else NULL). Strides
 *  are in elements. */
typedef struct fmha_kernels_resample_stream {
  const float *times;
  const void *values;
  const int32_t *lengths;
  int64_t samples;
  int64_t times_strides[2], values_strides[3];
} fmha_kernels_resample_stream;

/** The operands of an fmha.resample kernel: `num_streams` streams,
 *  target times [B, T] (f32) and out [B, T, sum of the streams' D]
 *  (written). Strides are in elements. */
typedef struct fmha_kernels_resample_args {
  int64_t batch, targets;
  int num_streams;
  const fmha_kernels_resample_stream *streams;
  const float *target_times;
  int64_t target_strides[2];
  void *out;
  int64_t out_strides[3];
} fmha_kernels_resample_args;

/** What each kernel computes, to pick one at run time. */
typedef struct fmha_kernels_kernel_info {
  const char *name;  /* the launcher is fmha_kernels_launch_<name> */
  const char *op;    /* "attention", "attention_grad" or "resample" */
  const char *dtype; /* "f16", "bf16" or "f32" */
  /* fmha.attention and fmha.attention_grad (which takes lse: lse is 0);
     value_head_dim: v's and o's (head_dim unless they differ); dq_accum
     and dq_order: the backward's scratch it takes */
  int head_dim, value_head_dim, causal, lse, dq_accum, dq_order, has_window;
  int64_t window[2]; /* keys visible left and right of the diagonal */
  float scale;
  float softcap; /* the op's logit softcapping (either op); 0: none */
  /* fmha.resample */
  const char *mode; /* "linear", "nearest" or "previous" */
  int num_streams;
  const int *features; /* D of each stream */
  int lengths;
  /* the launcher of the kernel's op; the others are NULL */
  fmha_kernels_status (*launch_attention)(
      fmha_kernels_module *module, const fmha_kernels_attention_args *args,
      CUstream stream);
  fmha_kernels_status (*launch_attention_grad)(
      fmha_kernels_module *module,
      const fmha_kernels_attention_grad_args *args, CUstream stream);
  fmha_kernels_status (*launch_resample)(
      fmha_kernels_module *module, const fmha_kernels_resample_args *args,
      CUstream stream);
  /* fmha.attention: whether it takes sinks and key_lengths, the rows of a
     page of its paged K and V (0: not paged), and whether it writes the
     partial states of key splits */
  int sinks, key_lengths, page_size, split_keys;
  /* fmha.attention: sequences packed by query_offsets (and key_offsets) */
  int query_offsets, key_offsets;
  /* fmha.merge_attention's launcher; NULL for the other ops */
  fmha_kernels_status (*launch_merge_attention)(
      fmha_kernels_module *module,
      const fmha_kernels_merge_attention_args *args, CUstream stream);
} fmha_kernels_kernel_info;

/** The kernels of this file, in the order of fmha_kernels_module's
 *  functions. */
extern const fmha_kernels_kernel_info fmha_kernels_kernels[FMHA_KERNELS_NUM_KERNELS];

/* Each launcher below launches its kernel's functions on `stream`, one
 * after the other (each sees what the previous wrote): the grid, block,
 * dynamic shared memory and kernel parameters are those of the launch
 * contract that the compiler recorded for the loaded cubin's function,
 * evaluated on the sizes; a function with an empty grid is not launched.
 * It checks every size, stride and pointer against what the kernel was
 * generated for, and makes every function's parameters, before it
 * launches any, and fails with FMHA_KERNELS_ERROR_INVALID_ARGUMENT (the
 * message names the operand, the value and what was expected);
 * FMHA_KERNELS_ERROR_CUDA when encoding a tensor map or cuLaunchKernel
 * fails. Errors inside the kernel surface at the next synchronization, as
 * usual. */
/* fmha-aot:begin launchers */

/* attention: a placeholder fmha.attention bf16 kernel, head dim 64, causal,
 * lse. Operands:
 *   q [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   k [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   v [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   o [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   lse [?, ?, ?] any strides, 4-byte aligned
 */
fmha_kernels_status fmha_kernels_launch_attention(fmha_kernels_module *module,
    const fmha_kernels_attention_args *args, CUstream stream);

/* resample: a placeholder fmha.resample linear f32 kernel, 1 stream(s) of 8
 * features. Operands:
 *   times0 [?, ?] contiguous (row-major), 4-byte aligned
 *   values0 [?, ?, 8] contiguous (row-major), 16-byte aligned
 *   targets [?, ?] contiguous (row-major), 4-byte aligned
 *   out [?, ?, 8] contiguous (row-major), 16-byte aligned
 */
fmha_kernels_status fmha_kernels_launch_resample(fmha_kernels_module *module,
    const fmha_kernels_resample_args *args, CUstream stream);

/* attention_grad: a placeholder fmha.attention_grad bf16 kernel, head dim
 * 64, causal, dq_accum. Operands:
 *   q, k, v, o, dout [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   lse [?, ?, ?] any strides, 4-byte aligned
 *   dq, dk, dv [?, ?, ?, 64] strides [any, any, any, 1], 16-byte aligned
 *   delta [?, ?, ?] any strides, 4-byte aligned
 *   dq_accum [?, ?, ?, 64] strides [any, any, 64, 1], 16-byte aligned
 * Two functions on each cubin, in order.
 */
fmha_kernels_status fmha_kernels_launch_attention_grad(
    fmha_kernels_module *module, const fmha_kernels_attention_grad_args *args,
    CUstream stream);
/* fmha-aot:end launchers */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
