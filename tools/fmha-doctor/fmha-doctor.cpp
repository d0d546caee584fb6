//===- fmha-doctor.cpp - can FlashCore's JIT work here, and if not, why ---===//
//
// Part of FlashCore. Prints writeDoctorReport: the driver, each GPU and which
// of our chips run on it (and how), nvJitLink, the PTX compiler, FlashCore's
// versions and the cache directory. Exit status 0 when the JIT can work
// here; otherwise 1, with the fix spelled out.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/DoctorReport.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::fmha::writeDoctorReport(llvm::outs()) ? 0 : 1;
}
