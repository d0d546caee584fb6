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
/// taken) whose parameters are \p leading, then \p op's operands, with
/// \p workgroup shared buffers and a known block size of \p threads x 1 x 1.
gpu::GPUFuncOp createKernelFunc(Operation *op, gpu::GPUModuleOp kernels,
                                StringRef name, TypeRange workgroup,
                                int32_t threads, TypeRange leading = {});

/// The kernel attribute giving how many leading parameters are TMA tensor
/// maps (nvgpu.tensormap.descriptor) that the runtime passes by value:
/// fmha-tensor-map-parameters makes them byval grid-constant parameters
/// once the kernel is an llvm.func.
inline constexpr llvm::StringLiteral kTensorMapArgumentsAttrName =
    "fmha.tensor_map_arguments";

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
