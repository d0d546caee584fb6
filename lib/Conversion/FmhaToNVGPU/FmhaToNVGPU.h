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

/// Adds to \p kernels a kernel gpu.func named \p name (uniquified if
/// taken) whose parameters are \p op's operands, with \p workgroup shared
/// buffers and a known block size of \p threads x 1 x 1.
gpu::GPUFuncOp createKernelFunc(Operation *op, gpu::GPUModuleOp kernels,
                                StringRef name, TypeRange workgroup,
                                int32_t threads);

/// Replaces \p op by a gpu.launch_func of an sm_80 FlashAttention-2 kernel
/// added to \p kernels. Needs the op's materialized tile; other chips are
/// reported as not lowered yet.
LogicalResult lowerAttentionToGPU(AttentionOp op, gpu::GPUModuleOp kernels);

/// Replaces \p op by a gpu.launch_func of a kernel added to \p kernels.
/// Needs the op's materialized tile.
LogicalResult lowerResampleToGPU(ResampleOp op, gpu::GPUModuleOp kernels);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_FMHATONVGPU_H
