//===- fmha-opt.cpp - the fmha optimizer driver ---------------------------===//
//
// Part of FlashCore. mlir-opt with the fmha dialect, the upstream dialects
// and passes the lowerings use, and the named pipelines (--fmha-to-ptx).
//
//===----------------------------------------------------------------------===//

#include "fmha/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::fmha::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::fmha::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FlashCore fmha optimizer driver\n", registry));
}
