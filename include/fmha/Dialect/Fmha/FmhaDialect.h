//===- FmhaDialect.h - the fmha dialect -------------------------*- C++ -*-===//
//
// Part of FlashCore. The dialect, its enums, attributes and operations.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHA_FMHADIALECT_H
#define FMHA_DIALECT_FMHA_FMHADIALECT_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Dialect/Fmha/LaunchContract.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fmha/FmhaDialect.h.inc"

namespace mlir::fmha {
/// Parses a chip keyword in an attribute; an unknown chip is reported with
/// parseChip's explanation at the keyword.
FailureOr<Chip> parseChipKeyword(AsmParser &parser);
} // namespace mlir::fmha

#define GET_ATTRDEF_CLASSES
#include "fmha/FmhaAttrs.h.inc"

#define GET_OP_CLASSES
#include "fmha/FmhaOps.h.inc"

#endif // FMHA_DIALECT_FMHA_FMHADIALECT_H
