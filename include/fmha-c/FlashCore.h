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

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fmhaStatus {
  FMHA_SUCCESS = 0,
  /** A null handle or pointer, or an unknown chip name. */
  FMHA_ERROR_INVALID_ARGUMENT = 1,
  /** Anything else: no driver, compile error, launch error. */
  FMHA_ERROR_FAILED = 2,
} fmhaStatus;

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
} fmhaJitOptions;

/** Fills \p options with the defaults. */
void fmhaJitOptionsInit(fmhaJitOptions *options);

/** Creates a JIT for options->device. On failure *message (if message is
 *  not NULL) receives the reason; free it with fmhaFreeMessage. */
fmhaStatus fmhaJitCreate(const fmhaJitOptions *options, fmhaJit *jit,
                         char **message);
void fmhaJitDestroy(fmhaJit jit);

/** The kernel \p kernelName of MLIR \p source (one gpu.module). */
fmhaStatus fmhaJitGetKernelFromSource(fmhaJit jit, const char *source,
                                      const char *kernelName,
                                      fmhaKernel *kernel, char **message);

/** Launches \p kernel on \p stream (a CUstream; NULL is the default
 *  stream). \p arguments follow cuLaunchKernel. */
fmhaStatus fmhaKernelLaunch(fmhaKernel kernel, void *stream,
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
 *  headDim], lse [batch, queryHeads, querySeq] f32; device pointers.
 *  Strides are in elements, of the batch, head and row dimensions (the
 *  head dimension is dense), so BHSD and BSHD layouts both work; q, k, v
 *  and o must be 16-byte aligned and their strides multiples of 8. */
typedef struct fmhaAttentionDesc {
  fmhaElementType elementType;
  /** 64, 128 or 256. */
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
} fmhaAttentionDesc;

/** Zeroes \p desc (bf16, no causal mask, default scale, no window). */
void fmhaAttentionDescInit(fmhaAttentionDesc *desc);

/** Sets every stride of \p desc for dense [B, H, S, D] tensors of its
 *  sizes (and a dense [B, Hq, Sq] lse). */
void fmhaAttentionDescSetDenseStrides(fmhaAttentionDesc *desc);

/** Runs the attention \p desc describes on \p stream (a CUstream; NULL is
 *  the default stream): the kernel is compiled on first use (and cached),
 *  one kernel serving every batch, head count and sequence length. Bad
 *  sizes, strides or alignment are FMHA_ERROR_INVALID_ARGUMENT, with a
 *  message naming the value. */
fmhaStatus fmhaAttention(fmhaJit jit, const fmhaAttentionDesc *desc,
                         void *stream, char **message);

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
fmhaStatus fmhaResample(fmhaJit jit, const fmhaResampleDesc *desc,
                        void *stream, char **message);

void fmhaFreeMessage(char *message);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_C_FLASHCORE_H */
