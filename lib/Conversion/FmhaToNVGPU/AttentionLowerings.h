//===- AttentionLowerings.h - fmha.attention lowerings --------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. The per-chip
// halves of lowerAttentionToGPU (and the sm_90a kernel of
// lowerAttentionGradToGPU), which checks what both need and picks one
// by the tile's chip (FmhaToNVGPU.cpp): each lives in its chip's folder with
// the emitters it is written with.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H
#define LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H

#include "KernelBuilder.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>
#include <vector>

namespace mlir::fmha {

/// The FlashAttention-2 kernel: mma.sync, ldmatrix, cp.async
/// (Sm80/AttentionToGPUSm80.cpp).
LogicalResult lowerAttentionToGPUSm80(AttentionOp op, TileAttr tile,
                                      gpu::GPUModuleOp kernels);

/// The warp-specialized FlashAttention-3-style kernel: WGMMA, TMA,
/// mbarriers (Sm90a/AttentionToGPUSm90a.cpp).
LogicalResult lowerAttentionToGPUSm90a(AttentionOp op, TileAttr tile,
                                       gpu::GPUModuleOp kernels);

/// fmha.attention_grad's operands, in order: the launch operands of each
/// of its kernels (their memref parameters, after any tensor maps). The
/// optional ones (from dq_accum on) are numbered among those an op has:
/// getAttentionGradOperandIndex.
enum AttentionGradOperand : unsigned {
  kGradQ,
  kGradK,
  kGradV,
  kGradO,
  kGradDout,
  kGradLse,
  kGradDq,
  kGradDk,
  kGradDv,
  kGradDelta,
  kGradDqAccum,
  kGradDqOrder,
  kGradDkvPartial
};

/// The index of \p operand among \p op's operands (its launch operands),
/// which has it: dkv_partial after dq_order where the op has that.
unsigned getAttentionGradOperandIndex(AttentionGradOp op,
                                      AttentionGradOperand operand);

/// The names of \p op's launch operands, in AttentionGradOperand's order:
/// dq_accum, dq_order and dkv_partial only where the op has them.
std::vector<std::string> getAttentionGradOperandNames(AttentionGradOp op);

/// fmha.attention_grad's dk/dv kernel with dq_accum on sm_90a, in
/// FlashAttention-3's design: WGMMA, TMA, mbarriers, dQ by bulk reduce-add
/// (Sm90a/AttentionGradToGPUSm90a.cpp). The delta and dq conversion kernels
/// around it are the chip-independent ones.
gpu::GPUFuncOp createAttentionGradDkvSm90a(AttentionGradOp op,
                                           gpu::GPUModuleOp kernels);

/// The columns of a group in dq_accum's layout (getQueryGradColumn).
constexpr int64_t kQueryGradGroupColumns = 32;

/// Where that kernel keeps column \p column (index) of query row \p row
/// in dq_accum, whose rows are \p headDim f32: 16-byte chunk c of a row at
/// chunk c ^ 2 (row % 4). A staging store of 8 bytes a lane runs as two
/// half-warps, each of four rows (g) by two neighbouring chunks (t / 2):
/// the XOR puts those eight in eight different 16-byte bank groups. The
/// XOR keeps a chunk within its group of 8 (32 columns); the chunks of a
/// last group that D leaves partial (D not a multiple of 32) stay put.
Value getQueryGradColumn(KernelBuilder &b, Value row, Value column,
                         int64_t headDim);

/// What getQueryGradColumn XORs into the 16-byte chunk index of a column
/// of query row \p row (index or i32): 2 (row % 4), of \p row's type.
Value getQueryGradChunkXor(KernelBuilder &b, Value row);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_ATTENTIONLOWERINGS_H
