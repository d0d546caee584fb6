//===- Passes.h - fmha passes -----------------------------------*- C++ -*-===//
//
// Part of FlashCore. Declarations and registration of every pass in
// dialects/fmha/FmhaPasses.td.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHA_PASSES_H
#define FMHA_DIALECT_FMHA_PASSES_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace gpu {
class GPUDialect;
} // namespace gpu
namespace NVVM {
class NVVMDialect;
} // namespace NVVM
namespace math {
class MathDialect;
} // namespace math
namespace memref {
class MemRefDialect;
} // namespace memref
namespace nvgpu {
class NVGPUDialect;
} // namespace nvgpu
namespace scf {
class SCFDialect;
} // namespace scf
namespace vector {
class VectorDialect;
} // namespace vector

namespace fmha {

#define GEN_PASS_DECL
#include "fmha/FmhaPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "fmha/FmhaPasses.h.inc"

/// Parses the `chip` option of \p passArgument into \p result, for a pass's
/// initialize(); on failure reports the value and the accepted chips as an
/// error diagnostic.
LogicalResult parseChipOption(MLIRContext *context, StringRef passArgument,
                              StringRef chip, Chip &result);

} // namespace fmha
} // namespace mlir

#endif // FMHA_DIALECT_FMHA_PASSES_H
