//===- DoctorReport.h - fmha-doctor's report ---------------------*- C++ -*-===//
//
// Part of FlashCore. What fmha-doctor prints, for every front door that
// reports on the machine: the tool, the C API (fmhaDoctor) and so Python's
// flashcore.doctor().
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_DOCTORREPORT_H
#define FMHA_JIT_DOCTORREPORT_H

#include "llvm/Support/raw_ostream.h"

namespace mlir::fmha {

/// Writes to \p os the driver and the newest PTX ISA it accepts, each GPU
/// and which of our chips run on it (and how), which libcuda was loaded,
/// nvJitLink, the PTX compiler FlashCore carries, FlashCore's own versions,
/// the cache directory, and each problem with its fix. Returns whether the
/// JIT can compile, load and run a kernel here.
bool writeDoctorReport(llvm::raw_ostream &os);

} // namespace mlir::fmha

#endif // FMHA_JIT_DOCTORREPORT_H
