//===- AttentionLowerings.h - fmha.attention lowerings --------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. The per-chip
// halves of lowerAttentionToGPU, which checks what both need and picks one
// by the tile's chip (FmhaToNVGPU.cpp): each lives in its chip's folder with
// the emitters it is written with.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H
#define LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H

#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fmha {

/// The FlashAttention-2 kernel: mma.sync, ldmatrix, cp.async
/// (Sm80/AttentionToGPUSm80.cpp).
LogicalResult lowerAttentionToGPUSm80(AttentionOp op, TileAttr tile,
                                      gpu::GPUModuleOp kernels);

/// The warp-specialized FlashAttention-3-style kernel: WGMMA, TMA,
/// mbarriers (Sm90a/AttentionToGPUSm90a.cpp).
LogicalResult lowerAttentionToGPUSm90a(AttentionOp op, TileAttr tile,
                                       gpu::GPUModuleOp kernels);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H
