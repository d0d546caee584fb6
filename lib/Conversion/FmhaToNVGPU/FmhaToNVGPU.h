//===- FmhaToNVGPU.h - per-op lowerings of convert-fmha-to-nvgpu *- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_FMHATONVGPU_H
#define LIB_CONVERSION_FMHATONVGPU_FMHATONVGPU_H

#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fmha {

/// Replaces \p op by a gpu.launch_func of a FlashAttention kernel for its
/// tile's chip (sm_80: FlashAttention-2, sm_90a: warp-specialized WGMMA and
/// TMA) added to \p kernels. Needs the op's materialized tile.
LogicalResult lowerAttentionToGPU(AttentionOp op, gpu::GPUModuleOp kernels);

/// The sm_90a half of lowerAttentionToGPU (AttentionToGPUSm90.cpp).
LogicalResult lowerAttentionToGPUSm90(AttentionOp op, TileAttr tile,
                                      gpu::GPUModuleOp kernels);

/// Replaces \p op by a gpu.launch_func of a kernel added to \p kernels.
/// Needs the op's materialized tile.
LogicalResult lowerResampleToGPU(ResampleOp op, gpu::GPUModuleOp kernels);

/// Replaces \p op by a gpu.launch_func of a kernel added to \p kernels that
/// finds each stream's first out-of-order timestamps (ResampleToGPU.cpp).
LogicalResult lowerCheckSortedToGPU(CheckSortedOp op,
                                    gpu::GPUModuleOp kernels);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_FMHATONVGPU_H
