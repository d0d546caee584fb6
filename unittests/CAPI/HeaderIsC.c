/*===- HeaderIsC.c - FlashCore.h from a C translation unit ------------------===*\
|*                                                                            *|
|* Part of FlashCore. The C API's header must compile as C (not only as the  *|
|* C++ that includes it elsewhere); CAPITest.cpp calls this.                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "fmha-c/FlashCore.h"

/* A GQA 8:2 problem's dense strides, set from C: 0 when they are right. */
int fmhaTestDenseStridesFromC(void) {
  fmhaAttentionDesc desc;
  fmhaAttentionDescInit(&desc);
  if (desc.elementType != FMHA_BF16 || desc.scale != 0.0f || desc.lse)
    return 1;
  desc.headDim = 64;
  desc.batch = 3;
  desc.queryHeads = 8;
  desc.kvHeads = 2;
  desc.querySeq = 100;
  desc.keySeq = 40;
  fmhaAttentionDescSetDenseStrides(&desc);
  if (desc.qStride[0] != 8 * 100 * 64 || desc.qStride[1] != 100 * 64 ||
      desc.qStride[2] != 64 || desc.oStride[0] != desc.qStride[0])
    return 2;
  if (desc.kStride[0] != 2 * 40 * 64 || desc.vStride[1] != 40 * 64 ||
      desc.kStride[2] != 64)
    return 3;
  if (desc.lseStride[0] != 800 || desc.lseStride[1] != 100 ||
      desc.lseStride[2] != 1)
    return 4;
  return 0;
}
