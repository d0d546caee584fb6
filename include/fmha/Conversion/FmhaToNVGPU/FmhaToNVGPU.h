//===- FmhaToNVGPU.h - lower fmha ops to GPU kernels ------------*- C++ -*-===//
//
// Part of FlashCore. The lowerings behind convert-fmha-to-nvgpu (declared
// with the other fmha passes in fmha/Dialect/Fmha/Passes.h): each replaces
// one fmha op by a gpu.launch_func of a kernel it adds to a gpu.module, the
// kernel written over the gpu, nvgpu, nvvm, vector, scf, memref and arith
// dialects for the chip of the op's materialized tile, and its launch
// contract recorded on the gpu.func (`fmha.launch`).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_FMHATONVGPU_FMHATONVGPU_H
#define FMHA_CONVERSION_FMHATONVGPU_FMHATONVGPU_H

#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fmha {

/// Replaces \p op by a gpu.launch_func of a FlashAttention kernel for its
/// tile's chip (sm_80: FlashAttention-2, sm_90a: warp-specialized WGMMA and
/// TMA) added to \p kernels. Needs the op's materialized tile.
LogicalResult lowerAttentionToGPU(AttentionOp op, gpu::GPUModuleOp kernels);

/// Replaces \p op by a gpu.launch_func of a resample kernel (the same for
/// every chip) added to \p kernels. Needs the op's materialized tile.
LogicalResult lowerResampleToGPU(ResampleOp op, gpu::GPUModuleOp kernels);

/// Replaces \p op by a gpu.launch_func of a kernel added to \p kernels that
/// merges partial attention states: the same for every chip, but on \p chip
/// sm_90a it first waits for the grids before it (griddepcontrol), so that
/// its launch may overlap the split kernel's tail (dependent_launch).
LogicalResult lowerMergeAttentionToGPU(MergeAttentionOp op,
                                       gpu::GPUModuleOp kernels, Chip chip);

/// Replaces \p op by the launches of the kernels of the attention backward
/// (delta, then dq and dk/dv, or with dq_accum dk/dv and the dq conversion)
/// added to \p kernels: mma.sync on every chip, but for dk/dv with dq_accum
/// on \p chip sm_90a (WGMMA).
LogicalResult lowerAttentionGradToGPU(AttentionGradOp op,
                                      gpu::GPUModuleOp kernels, Chip chip);

/// Replaces \p op by a gpu.launch_func of a kernel added to \p kernels that
/// finds each stream's first out-of-order timestamps.
LogicalResult lowerCheckSortedToGPU(CheckSortedOp op, gpu::GPUModuleOp kernels);

} // namespace mlir::fmha

#endif // FMHA_CONVERSION_FMHATONVGPU_FMHATONVGPU_H
