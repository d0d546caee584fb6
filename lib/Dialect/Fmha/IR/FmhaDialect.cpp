//===- FmhaDialect.cpp - fmha dialect, enums and attributes ---------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fmha;

#include "fmha/FmhaDialect.cpp.inc"
#include "fmha/FmhaEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fmha/FmhaAttrs.cpp.inc"

void FmhaDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fmha/FmhaAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "fmha/FmhaOps.cpp.inc"
      >();
}

FailureOr<Chip> fmha::parseChipKeyword(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseKeyword(&keyword)))
    return failure();
  llvm::Expected<Chip> chip = parseChip(keyword);
  if (!chip)
    return parser.emitError(loc) << llvm::toString(chip.takeError());
  return *chip;
}

LogicalResult TileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               Chip chip, unsigned blockM, unsigned blockN,
                               unsigned warps, unsigned stages) {
  if (llvm::Error err =
          checkAttentionTiling({chip, blockM, blockN, warps, stages}))
    return emitError() << "invalid #fmha.tile: "
                       << llvm::toString(std::move(err));
  return success();
}

LogicalResult
ResampleTileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         Chip chip, unsigned blockT, unsigned threads) {
  if (llvm::Error err = checkResampleTiling({chip, blockT, threads}))
    return emitError() << "invalid #fmha.resample_tile: "
                       << llvm::toString(std::move(err));
  return success();
}
