/*===- FmhaRef.h - launchers of the reference kernels -------------*- C -*-===*\
|*                                                                            *|
|* Part of FlashCore. Hand-written CUDA references for every fmha op, the     *|
|* oracle that generated kernels are checked against. Correct over fast:     *|
|* f32 arithmetic, every case of the op contract (DESIGN.md, "Op semantics"). *|
|* Strides are in elements; the innermost (head or feature) dim is dense.    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FMHA_REF_H
#define FMHA_REF_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fmhaRefDType {
  FMHA_REF_F32 = 0,
  FMHA_REF_F16 = 1,
  FMHA_REF_BF16 = 2,
} fmhaRefDType;

/** fmha.attention: Q [B, Hq, Sq, D], K and V [B, Hkv, Sk, D], O like Q,
 *  optional LSE [B, Hq, Sq] (natural log; +inf for a row that sees no key,
 *  whose O is 0). Strides are [batch, head, sequence]. */
typedef struct fmhaRefAttentionArgs {
  fmhaRefDType dtype; /* FMHA_REF_F16 or FMHA_REF_BF16 */
  int batch, queryHeads, kvHeads, querySeq, keySeq, headDim;
  const void *q, *k, *v;
  void *o;
  float *lse; /* NULL: not written */
  long long qStride[3], kStride[3], vStride[3], oStride[3], lseStride[3];
  float scale;
  int causal; /* bottom-right aligned: key j visible to query i if j <= i + Sk - Sq */
  long long windowLeft, windowRight; /* -1: unbounded on that side */
} fmhaRefAttentionArgs;

/** Head dims up to this are supported by the reference. */
#define FMHA_REF_MAX_HEAD_DIM 256

cudaError_t fmhaRefAttention(const fmhaRefAttentionArgs *args,
                             cudaStream_t stream);

typedef enum fmhaRefResampleMode {
  FMHA_REF_LINEAR = 0,
  FMHA_REF_NEAREST = 1,
  FMHA_REF_PREVIOUS = 2,
} fmhaRefResampleMode;

/** One source stream of fmha.resample: times [B, S] (f32, non-decreasing),
 *  values [B, S, D], optional lengths [B] (valid samples per row). */
typedef struct fmhaRefStream {
  const float *times;
  long long timesStride; /* batch stride */
  const void *values;
  long long valuesStride[2]; /* [batch, sample] */
  const int *lengths;        /* NULL: every row has S samples */
  int samples, features;
} fmhaRefStream;

#define FMHA_REF_MAX_STREAMS 16

/** fmha.resample: targets [B, T] -> out [B, T, sum(D_s)], streams side by
 *  side. Targets outside a row's samples take the edge sample; a row with no
 *  valid sample writes zeros. nearest breaks ties toward the earlier sample. */
typedef struct fmhaRefResampleArgs {
  fmhaRefDType dtype; /* of values and out */
  fmhaRefResampleMode mode;
  int batch, targets, numStreams;
  fmhaRefStream streams[FMHA_REF_MAX_STREAMS];
  const float *targetTimes;
  long long targetStride; /* batch stride */
  void *out;
  long long outStride[2]; /* [batch, target] */
} fmhaRefResampleArgs;

cudaError_t fmhaRefResample(const fmhaRefResampleArgs *args,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_REF_H */
