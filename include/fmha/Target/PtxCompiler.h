//===- PtxCompiler.h - PTX to cubin as a whole program ----------*- C++ -*-===//
//
// Part of FlashCore. NVIDIA's PTX compiler library (ptxas as a library,
// linked statically; scripts/setup.sh installs it) compiles a module's PTX
// as one whole program, as ptxas and the driver's PTX JIT do. nvJitLink
// compiles PTX as relocatable code instead, which ignores setmaxnreg and
// serializes WGMMA in the sm_90a attention kernel and spills the sm_80 one
// (docs/BENCHMARKS.md). fmha-aot, which writes cubins ahead of time with no
// driver to JIT them, uses this; so does the JIT, whose disk cache then
// holds cubins the driver loads without compiling (LoadPath::PtxCompiler).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TARGET_PTXCOMPILER_H
#define FMHA_TARGET_PTXCOMPILER_H

#include "fmha/Target/NvJitLink.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::fmha {

/// Compiles \p ptx for \p arch ("sm_90a", "sm_90", "sm_80") at -O3 with
/// --verbose: the cubin and the compiler's info log (registers, shared
/// memory and spill bytes per kernel). Errors carry the library's result
/// name and error log.
llvm::Expected<LinkedCubin> compilePtxWholeProgram(llvm::StringRef ptx,
                                                   llvm::StringRef arch);

/// The library's version.
CudaVersion getPtxCompilerVersion();

/// The PTX ISA to emit for \p chip for this library: the newest that both
/// it and LLVM's NVPTX backend support, or an error naming both when that
/// is older than \p chip needs.
llvm::Expected<PtxIsa> selectPtxCompilerIsa(Chip chip);

} // namespace mlir::fmha

#endif // FMHA_TARGET_PTXCOMPILER_H
