//===- FmhaEnums.h - fmha enums (Chip, ResampleMode) ------------*- C++ -*-===//
//
// Part of FlashCore. The enums alone, for code that needs the chip but not
// the IR (tile policy, the JIT, tools).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHA_FMHAENUMS_H
#define FMHA_DIALECT_FMHA_FMHAENUMS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "fmha/FmhaEnums.h.inc"

#endif // FMHA_DIALECT_FMHA_FMHAENUMS_H
