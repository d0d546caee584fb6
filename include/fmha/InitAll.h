//===- InitAll.h - everything fmha tools register ---------------*- C++ -*-===//
//
// Part of FlashCore. One place that lists the dialects, interfaces, passes
// and pipelines the fmha lowerings need, shared by fmha-opt and the JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_INITALL_H
#define FMHA_INITALL_H

namespace mlir {
class DialectRegistry;

namespace fmha {

/// Adds fmha and every upstream dialect the lowerings produce or consume
/// (gpu, nvgpu, nvvm, llvm, arith, math, scf, cf, memref, vector, func,
/// index, ub), their conversion-to-LLVM interfaces, and the LLVM IR
/// translations and NVVM target that `gpu-module-to-binary` needs.
void registerAllDialects(DialectRegistry &registry);

/// Registers the fmha passes and pipelines and the upstream passes used on
/// the way to PTX.
void registerAllPasses();

} // namespace fmha
} // namespace mlir

#endif // FMHA_INITALL_H
