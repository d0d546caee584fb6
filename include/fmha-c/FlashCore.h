/*===- FlashCore.h - C API of the FlashCore JIT -------------------*- C -*-===*\
|*                                                                            *|
|* Part of FlashCore. Every call returns a status; on failure it hands the    *|
|* caller a message it owns (free it with fmhaFreeMessage), so no error text *|
|* is ever truncated or lost. Thread-safe where the C++ JIT is.               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FMHA_C_FLASHCORE_H
#define FMHA_C_FLASHCORE_H

#include <stddef.h>

/* Every function is exported from libflashcore.so, which is built with
 * hidden visibility so that only the C API leaves it. */
#if defined(__GNUC__)
#define FMHA_C_API __attribute__((visibility("default")))
#else
#define FMHA_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fmhaStatus {
  FMHA_SUCCESS = 0,
  /** A null handle or pointer, or an unknown chip name. */
  FMHA_ERROR_INVALID_ARGUMENT = 1,
  /** Anything else: no driver, compile error, launch error. */
  FMHA_ERROR_FAILED = 2,
  /** A call with FMHA_CALL_LOADED_ONLY whose kernel is not loaded yet. */
  FMHA_ERROR_NOT_LOADED = 3,
} fmhaStatus;

/** FlashCore's version (git describe at configure time); static storage. */
FMHA_C_API const char *fmhaVersion(void);

/** fmha-doctor's report on this machine: the driver, each GPU and which
 *  chips run on it, the PTX compiler and nvJitLink, the cache, and each
 *  problem with its fix. Needs no JIT. *report (if not NULL) receives the
 *  text; free it with fmhaFreeMessage. Returns 1 when the JIT can work
 *  here, else 0. */
FMHA_C_API int fmhaDoctor(char **report);

/** What an fmhaAttentionEx or fmhaResampleEx call may do besides launching
 *  (flags, or'ed). */
typedef enum fmhaCallFlags {
  /** Compile and load the kernel on first use (and cache it). */
  FMHA_CALL_DEFAULT = 0,
  /** Launch only a kernel this JIT has loaded already, else fail with
   *  FMHA_ERROR_NOT_LOADED: for calls inside CUDA graph capture, where
   *  loading a module is not allowed and a compile would stall. */
  FMHA_CALL_LOADED_ONLY = 1,
  /** Compile and load the kernel the call needs and launch nothing (a
   *  precompile). Sizes and strides are checked as for a launch, and a NULL
   *  or non-NULL lse still picks the kernel; no pointer is dereferenced. */
  FMHA_CALL_PREPARE_ONLY = 2,
} fmhaCallFlags;

typedef struct fmhaJit_ *fmhaJit;
/** Owned by its fmhaJit and valid until fmhaJitDestroy. */
typedef struct fmhaKernel_ *fmhaKernel;

typedef struct fmhaJitOptions {
  int device;
  /** "sm_80" or "sm_90a"; NULL picks the device's best. */
  const char *chip;
  /** NULL: the default cache directory; "": no disk cache. */
  const char *cacheDirectory;
  /** 0: the default bound. */
  unsigned long long cacheMaxBytes;
  /** NULL or "": no dumps. */
  const char *dumpDirectory;
  /** NULL or "": none. Otherwise a directory of cache entries shipped with
   *  the program (fmha-seed's), read after a miss of the disk cache, never
   *  written. */
  const char *seedDirectory;
} fmhaJitOptions;

/** Fills \p options with the defaults. */
FMHA_C_API void fmhaJitOptionsInit(fmhaJitOptions *options);

/** Creates a JIT for options->device. On failure *message (if message is
 *  not NULL) receives the reason; free it with fmhaFreeMessage. */
FMHA_C_API fmhaStatus fmhaJitCreate(const fmhaJitOptions *options, fmhaJit *jit,
                         char **message);
FMHA_C_API void fmhaJitDestroy(fmhaJit jit);

/** The kernel \p kernelName of MLIR \p source (one gpu.module). */
FMHA_C_API fmhaStatus fmhaJitGetKernelFromSource(fmhaJit jit, const char *source,
                                      const char *kernelName,
                                      fmhaKernel *kernel, char **message);

/** Launches \p kernel on \p stream (a CUstream; NULL is the default
 *  stream). \p arguments follow cuLaunchKernel. */
FMHA_C_API fmhaStatus fmhaKernelLaunch(fmhaKernel kernel, void *stream,
                            const unsigned grid[3], const unsigned block[3],
                            unsigned sharedBytes, void **arguments,
                            char **message);

/** The element type of an attention's q, k, v and o (bf16 or f16), or of
 *  a resample's values and out (any of the three). */
typedef enum fmhaElementType {
  FMHA_BF16 = 0,
  FMHA_F16 = 1,
  FMHA_F32 = 2,
} fmhaElementType;

/** One fmha.attention (the op's contract: FmhaOps.td). q and o are
 *  [batch, queryHeads, querySeq, headDim], k and v [batch, kvHeads, keySeq,
 *  headDim] (v and o: valueHeadDim where given), lse [batch, queryHeads,
 *  querySeq] f32; device pointers.
 *  Strides are in elements, of the batch, head and row dimensions (the
 *  head dimension is dense), so BHSD and BSHD layouts both work; q, k, v
 *  and o must be 16-byte aligned and their strides multiples of 8. */
typedef struct fmhaAttentionDesc {
  fmhaElementType elementType;
  /** A multiple of 8 from 32 to 256. */
  unsigned headDim;
  /** Query i sees key j only if j <= i + keySeq - querySeq. */
  int causal;
  /** The softmax scale; 0 picks 1 / sqrt(headDim). */
  float scale;
  /** With hasWindow, query i sees key j only if
   *  i + keySeq - querySeq - windowLeft <= j <= ... + windowRight. */
  int hasWindow;
  long long windowLeft, windowRight;
  long long batch, queryHeads, kvHeads, querySeq, keySeq;
  const void *q, *k, *v;
  void *o;
  /** NULL: no LSE output. */
  float *lse;
  long long qStride[3], kStride[3], vStride[3], oStride[3], lseStride[3];
  /** Logit softcapping (Gemma 2): each logit x = scale * q . k becomes
   *  softcap * tanh(x / softcap) before the mask and the softmax. 0: none;
   *  otherwise positive. The backward takes the forward's (dS scaled by the
   *  cap's slope, 1 - tanh^2). */
  float softcap;
  /** Attention sinks (gpt-oss): queryHeads f32 logits, dense, 4-byte
   *  aligned; sinks[h] joins the softmax denominator of every row of query
   *  head h (exp(sinks[h]) added, no value), and the LSE. NULL: none.
   *  The backward takes the forward's desc with its lse (which holds the
   *  sinks) and gives dq, dk and dv; the gradient of sinks[h] is
   *  -sum(exp(sinks[h] - lse) * delta) over the rows of head h, from the
   *  backward's delta. */
  const float *sinks;
  /** Device memory (16-byte aligned) of workspaceBytes bytes, with which a
   *  decode call (querySeq 1, or on sm_90a a few queries whose group of
   *  query heads is packed into one tile) whose batch x heads leave SMs
   *  idle splits each row's keys over several CTAs and merges their
   *  partial states:
   *  fmhaAttentionWorkspaceSize says how much (0: it would not split).
   *  workspaceBytes 0 (and NULL): no split. A FMHA_CALL_PREPARE_ONLY call
   *  reads only workspaceBytes. */
  void *workspace;
  size_t workspaceBytes;
  /** Per-sequence key counts (a KV cache's filled lengths, FlashAttention's
   *  cache_seqlens): batch int32 values in device memory, 4-byte aligned.
   *  Batch entry b attends to the first keyLengths[b] keys of its k and v
   *  (values below 0 count as 0, above keySeq as keySeq); causal masks and
   *  windows align the queries to those keys' end (query i sees key j only
   *  if j <= i + keyLengths[b] - querySeq). Keys at or past the length
   *  never reach the result, whatever they hold (NaN included). NULL:
   *  keySeq keys for every batch entry. Forward only: the backward refuses
   *  a desc with it. */
  const int *keyLengths;
  /** A paged KV cache (FlashAttention's page_table, vLLM's block table):
   *  batch x (keySeq / pageSize) int32 page numbers in device memory,
   *  dense, 4-byte aligned. k and v are then pools of `pages` pages of
   *  pageSize rows (a multiple of 8), [pages, kvHeads, pageSize, headDim]
   *  with kStride and vStride their page, head and row strides, and key j
   *  of batch entry b is row j % pageSize of page pageTable[b * (keySeq /
   *  pageSize) + j / pageSize]. keySeq is then the most keys a sequence has
   *  (a multiple of pageSize); keyLengths may limit each. Only the entries
   *  of pages that hold keys below the length are read; one outside [0,
   *  pages) is clamped into it (another page's keys, never memory outside k
   *  and v). NULL: no pages (pages and pageSize unread). Forward only. */
  const int *pageTable;
  long long pages, pageSize;
  /** Variable-length batches (FlashAttention's cu_seqlens_q and
   *  max_seqlen_q): batch + 1 int32 offsets in device memory, dense,
   *  4-byte aligned. q and o (and lse) then hold the batch's sequences
   *  packed, [querySeq, queryHeads, headDim] (querySeq: the total rows;
   *  lse [queryHeads, querySeq]) with qStride[1], qStride[2] (and o's,
   *  lse's) their head and row strides, the batch strides unread; sequence
   *  b is rows queryOffsets[b] to queryOffsets[b + 1], at most
   *  maxQueryLength (>= 1) of them (a row past it may be left
   *  uncomputed). Masks and windows align per sequence. Each offset is
   *  clamped into [0, querySeq]: bad offsets give wrong rows, never
   *  accesses outside the tensors. Without keyOffsets, k and v keep one
   *  batch entry per sequence (or pages). NULL: none. Forward only. */
  const int *queryOffsets;
  /** With queryOffsets (cu_seqlens_k): batch + 1 int32 offsets; k and v
   *  hold the sequences' keys packed, [keySeq, kvHeads, headDim] (keySeq:
   *  the total rows), sequence b's from row keyOffsets[b] to keyOffsets[b
   *  + 1] (keyLengths may limit each). Not with a pageTable. NULL: none. */
  const int *keyOffsets;
  long long maxQueryLength;
  /** v's and o's head dim where it differs from q's and k's headDim
   *  (DeepSeek's 192 and 128): a multiple of 8 from 32 to 256; v is then
   *  [batch, kvHeads, keySeq, valueHeadDim] and o [batch, queryHeads,
   *  querySeq, valueHeadDim]. 0: headDim. The backward takes a different
   *  one on sm_90a with a workspace (its dout and dv then have it too);
   *  elsewhere it refuses it by name. */
  unsigned valueHeadDim;
  /** With queryOffsets (FlashAttention's max_seqlen_k): the most keys a
   *  sequence attends to, or 0 where unknown. With a workspace, a decode
   *  call of packed sequences on sm_90a whose tiles would leave SMs idle
   *  splits each sequence's keys by it, as a dense decode does by keySeq
   *  (fmhaAttentionWorkspaceSize reads it); 0 splits by keySeq where k and
   *  v hold an entry (or pages) per sequence, and not at all with
   *  keyOffsets. */
  long long maxKeyLength;
} fmhaAttentionDesc;

/** Zeroes \p desc (bf16, no causal mask, default scale, no window). */
FMHA_C_API void fmhaAttentionDescInit(fmhaAttentionDesc *desc);

/** Sets every stride of \p desc for dense [B, H, S, D] tensors of its
 *  sizes (and a dense [B, Hq, Sq] lse). */
FMHA_C_API void fmhaAttentionDescSetDenseStrides(fmhaAttentionDesc *desc);

/** Runs the attention \p desc describes on \p stream (a CUstream; NULL is
 *  the default stream): the kernel is compiled on first use (and cached),
 *  one kernel serving every batch, head count and sequence length. Bad
 *  sizes, strides or alignment are FMHA_ERROR_INVALID_ARGUMENT, with a
 *  message naming the value. */
FMHA_C_API fmhaStatus fmhaAttention(fmhaJit jit, const fmhaAttentionDesc *desc,
                         void *stream, char **message);

/** Checks \p desc as fmhaAttention does (element type, sizes, head ratio,
 *  strides, alignment) without a JIT or a GPU: FMHA_ERROR_INVALID_ARGUMENT
 *  with the same message, or FMHA_SUCCESS. */
FMHA_C_API fmhaStatus fmhaAttentionCheck(const fmhaAttentionDesc *desc, char **message);

/** Gets ready, \p threads at a time (0: one per hardware thread), every
 *  attention kernel that \p count descriptions need (from the disk cache or
 *  compiled, then loaded), so that no later fmhaAttention compiles, inside
 *  CUDA graph capture or not. Of each description only elementType,
 *  headDim, causal, scale, softcap, the window, whether lse, sinks,
 *  keyLengths, pageTable, queryOffsets and keyOffsets are NULL (any
 *  non-NULL value asks for the kernel with them), pageSize with a
 *  pageTable, querySeq (maxQueryLength with queryOffsets) and queryHeads
 *  and kvHeads are read: querySeq 0 prepares the kernels of every query
 *  length, a length the one for it; heads, where both are given, those of
 *  a grouped-query launch (which on sm_90a may pack a group's query heads
 *  into one tile's rows), 0 those without. Launches nothing; the error
 *  names each kernel that failed. */
FMHA_C_API fmhaStatus fmhaAttentionPrecompile(fmhaJit jit,
                                              const fmhaAttentionDesc *descs,
                                              int count, unsigned threads,
                                              char **message);

/** fmhaAttention with fmhaCallFlags \p flags. */
FMHA_C_API fmhaStatus fmhaAttentionEx(fmhaJit jit, const fmhaAttentionDesc *desc,
                           void *stream, unsigned flags, char **message);

/** *bytes receives the workspace with which fmhaAttention of \p desc
 *  splits its keys on this JIT's GPU (fmhaAttentionDesc::workspace), 0
 *  where it would not split. Depends on the sizes, not on the pointers. */
FMHA_C_API fmhaStatus fmhaAttentionWorkspaceSize(fmhaJit jit,
                                                 const fmhaAttentionDesc *desc,
                                                 size_t *bytes,
                                                 char **message);

/** One fmha.attention_grad (FmhaOps.td): the gradients of the attention
 *  \p forward describes (its attributes, sizes, q, k, v, o, lse and their
 *  strides; lse is required, its workspace not read) with respect to q, k
 *  and v, given dout, the gradient with respect to o (o's shape). dq has
 *  q's shape, dk and dv k's: under GQA each KV head's dk and dv sum over
 *  the query heads that read it. delta [batch, queryHeads, querySeq] f32 is
 *  scratch that receives rowsum(dout * o). Strides in elements, as the
 *  forward's (16-byte aligned tensors, strides multiples of 8); device
 *  pointers. Head dims multiples of 8 from 32 to 256 (with a workspace on
 *  sm_80: up to 128, 160, 192, 224 and 256). */
typedef struct fmhaAttentionBackwardDesc {
  fmhaAttentionDesc forward;
  const void *dout;
  void *dq, *dk, *dv;
  float *delta;
  long long doutStride[3], dqStride[3], dkStride[3], dvStride[3],
      deltaStride[3];
  /** NULL: the deterministic backward (dq by blocks of queries, the same
   *  bits every run). Otherwise device memory (16-byte aligned) of
   *  workspaceBytes >= fmhaAttentionBackwardWorkspaceSize bytes: the f32
   *  accumulator of the backward that adds dq in one pass over the blocks
   *  (5 GEMMs, not 7; its last bits vary from run to run unless
   *  deterministic). On sm_90a that is FlashAttention-3's kernel, the
   *  faster of the two (docs/backward-notes.md, v5 and v11); on sm_80, at
   *  head dims up to 128 only, FlashAttention-2's kernel (dq by f32
   *  atomics): on the H200 0.98-1.13 x the deterministic kernels' rate at
   *  d128 (v36; v38's grid of warps then adds 6-8%), 1.03 at d80,
   *  0.97-0.99 at d96, 1.00-1.08 at d64 (v39). */
  void *workspace;
  size_t workspaceBytes;
  /** Nonzero: the same bits every run. With a workspace on sm_90a, the
   *  one-pass kernel adds dq in a fixed order (FlashAttention-3's
   *  deterministic mode: a counter per block of queries); elsewhere, or
   *  without a workspace, dq by blocks of queries (the workspace unread).
   *  Zero with a workspace: dq added in any order. */
  int deterministic;
} fmhaAttentionBackwardDesc;

/** *bytes receives the workspace of the one-pass backward of \p desc
 *  (fmhaAttentionBackwardDesc::workspace), deterministic or not:
 *  batch x queryHeads x querySeq x headDim floats, then batch x queryHeads
 *  x ceil(querySeq / 64) 32-bit counters. Depends on the sizes alone;
 *  needs no JIT. The backward may run faster with more
 *  (fmhaAttentionBackwardFastestWorkspaceSize). */
FMHA_C_API fmhaStatus fmhaAttentionBackwardWorkspaceSize(
    const fmhaAttentionBackwardDesc *desc, size_t *bytes, char **message);

/** *bytes receives the workspace with which fmhaAttentionBackward of
 *  \p desc runs fastest on \p jit's GPU, deterministic or not (the larger
 *  of the two's): fmhaAttentionBackwardWorkspaceSize's
 *  bytes, and where sm_90a's kernel would leave SMs idle (a group of many
 *  query heads a KV head over few blocks of keys: MQA, or GQA under a
 *  causal mask, without a window) room after them for the f32 dk and dv of
 *  slices of each group's query heads, which CTAs of their own walk
 *  (fmha.attention_grad's dkv_partial; the slices summed in order: the
 *  same bits every run where deterministic). Given less, but at least
 *  fmhaAttentionBackwardWorkspaceSize, the backward runs unsliced. Depends
 *  on the sizes and the GPU, not on the pointers. */
FMHA_C_API fmhaStatus fmhaAttentionBackwardFastestWorkspaceSize(
    fmhaJit jit, const fmhaAttentionBackwardDesc *desc, size_t *bytes,
    char **message);

/** *uses receives whether the backward that runs by default for \p desc
 *  (its head dims and deterministic; sizes unread) on \p jit's GPU takes a
 *  workspace (fmhaAttentionBackwardWorkspaceSize): 1 with sm_90a's
 *  kernels, and with sm_80's on an A100 or a Hopper GPU from head dim 64
 *  to 128 and at 160, 192, 224 and 256 unless deterministic (the one-pass
 *  backward, the faster there); else 0 (the deterministic backward, no
 *  workspace). flashcore's autograd and precompile follow it. */
FMHA_C_API fmhaStatus fmhaAttentionBackwardUsesWorkspace(
    fmhaJit jit, const fmhaAttentionBackwardDesc *desc, int *uses,
    char **message);

/** Sets every stride of \p desc (the forward's too) for dense tensors of
 *  the forward's sizes. */
FMHA_C_API void
fmhaAttentionBackwardDescSetDenseStrides(fmhaAttentionBackwardDesc *desc);

/** Runs the backward \p desc describes on \p stream with fmhaCallFlags
 *  \p flags: three kernels (four where the workspace holds the slices of
 *  fmhaAttentionBackwardFastestWorkspaceSize), compiled on first use for
 *  the forward's element type, head dim, mask and scale, whether a
 *  workspace is given and (with one, on sm_90a) deterministic. No
 *  allocation. Bad sizes, strides or
 *  alignment are FMHA_ERROR_INVALID_ARGUMENT, with a message naming the
 *  value. */
FMHA_C_API fmhaStatus fmhaAttentionBackward(fmhaJit jit,
                                            const fmhaAttentionBackwardDesc *desc,
                                            void *stream, unsigned flags,
                                            char **message);

/** Gets ready the backward kernels of \p count descriptions (read as
 *  fmhaAttentionPrecompile reads them: the forward's attributes; and
 *  whether workspace is NULL), \p threads at a time, so that no later
 *  fmhaAttentionBackward compiles. */
FMHA_C_API fmhaStatus fmhaAttentionBackwardPrecompile(
    fmhaJit jit, const fmhaAttentionBackwardDesc *descs, int count,
    unsigned threads, char **message);

/** One fmha.merge_attention (FmhaOps.td): states partial attention states
 *  of the same queries, outs [states, batch, heads, querySeq, headDim] with
 *  their log-sum-exps lses [states, batch, heads, querySeq] (f32), merged
 *  into o [batch, heads, querySeq, headDim] and lse [batch, heads,
 *  querySeq] (f32; NULL: none). outs and o are bf16, f16 or f32. Strides
 *  in elements, the head dimension dense; device pointers. A state whose
 *  lse is +inf or -inf has no weight; a row without any gets zeros and
 *  +inf. */
typedef struct fmhaMergeDesc {
  fmhaElementType elementType;
  unsigned headDim;
  long long states, batch, heads, querySeq;
  const void *outs;
  const float *lses;
  void *o;
  float *lse;
  long long outsStride[4], lsesStride[4], oStride[3], lseStride[3];
} fmhaMergeDesc;

/** Sets every stride of \p desc for dense tensors of its sizes. */
FMHA_C_API void fmhaMergeDescSetDenseStrides(fmhaMergeDesc *desc);

/** Runs the merge \p desc describes on \p stream, with fmhaCallFlags
 *  \p flags; compiled on first use for its element type, head dim and
 *  whether it writes lse. */
FMHA_C_API fmhaStatus fmhaMergeAttention(fmhaJit jit, const fmhaMergeDesc *desc,
                                         void *stream, unsigned flags,
                                         char **message);

typedef enum fmhaResampleMode {
  FMHA_LINEAR = 0,
  FMHA_NEAREST = 1,
  FMHA_PREVIOUS = 2,
} fmhaResampleMode;

/** One stream of a resample: times [batch, samples] f32 (non-decreasing per
 *  row), values [batch, samples, features], lengths [batch] (valid samples
 *  per row) or NULL. Dense, device pointers; values 16-byte aligned. */
typedef struct fmhaResampleStream {
  const float *times;
  const void *values;
  const int *lengths;
  long long samples;
  unsigned features;
} fmhaResampleStream;

/** One fmha.resample (FmhaOps.td): the streams resampled onto targets
 *  [batch, targetCount] f32, side by side in out [batch, targetCount, sum of
 *  features] (dense, 16-byte aligned). Either every stream has lengths or
 *  none does. */
typedef struct fmhaResampleDesc {
  fmhaElementType elementType;
  fmhaResampleMode mode;
  long long batch, targetCount;
  const float *targets;
  void *out;
  int numStreams;
  const fmhaResampleStream *streams;
} fmhaResampleDesc;

/** Runs the resample \p desc describes on \p stream; compiled on first use
 *  for its element type, mode and stream features. Bad sizes, pointers or
 *  alignment are FMHA_ERROR_INVALID_ARGUMENT, with a message naming the
 *  value. */
FMHA_C_API fmhaStatus fmhaResample(fmhaJit jit, const fmhaResampleDesc *desc,
                        void *stream, char **message);

/** Checks \p desc as fmhaResample does, without a JIT or a GPU. */
FMHA_C_API fmhaStatus fmhaResampleCheck(const fmhaResampleDesc *desc, char **message);

/** fmhaResample with fmhaCallFlags \p flags. */
FMHA_C_API fmhaStatus fmhaResampleEx(fmhaJit jit, const fmhaResampleDesc *desc,
                          void *stream, unsigned flags, char **message);

FMHA_C_API void fmhaFreeMessage(char *message);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_C_FLASHCORE_H */
