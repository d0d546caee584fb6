//===- Compile.h - MLIR source to PTX and cubin, no driver ------*- C++ -*-===//
//
// Part of FlashCore. The compile half of the JIT: parse, run fmha-to-nvvm,
// translate to PTX, compile that to a cubin (PTX compiler or nvJitLink). Needs
// no GPU and no driver, so the lit tests and fmha-compile use exactly what the
// JIT runs.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_COMPILE_H
#define FMHA_JIT_COMPILE_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Dialect/Fmha/LaunchContract.h"
#include "fmha/JIT/KernelSpec.h"
#include "fmha/Runtime/LoadPlan.h"
#include "fmha/Target/PtxIsa.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha {

/// What turns the PTX into a cubin.
enum class CubinCompiler {
  /// NVIDIA's PTX compiler library, linked in (PtxCompiler.h): the whole
  /// program, as ptxas and the driver's JIT compile it.
  PtxCompiler,
  /// nvJitLink, opened at run time: relocatable code, which ignores
  /// setmaxnreg and serializes WGMMA on sm_90a (LoadPlan.cpp).
  NvJitLink,
};

struct CompileOptions {
  /// The name diagnostics give the source.
  std::string sourceName = "<fmha source>";
  Chip chip = Chip::sm_90a;
  PtxIsa ptxIsa = kNewestLlvmPtxIsa;
  /// When set, cubinCompiler compiles the PTX into a cubin for this arch.
  std::optional<std::string> linkArch;
  CubinCompiler cubinCompiler = CubinCompiler::NvJitLink;
  /// When set, every stage lands here: NN-<pass>.mlir after each pass,
  /// kernel.ll, kernel.opt.ll, kernel.ptx, kernel.cubin, nvjitlink.log or
  /// ptxcompiler.log, and kernel.sass when cuobjdump is installed.
  std::string dumpDirectory;
};

/// Where a compilation's time went, in seconds.
struct CompileTimes {
  /// The MLIRContext and the input module (parsed, or built from a spec).
  double setup = 0;
  /// The MLIR pipeline to the NVVM dialect.
  double mlirPasses = 0;
  /// NVVM to LLVM IR, LLVM's optimizer and the NVPTX backend, to PTX.
  double llvmToPtx = 0;
  /// PTX to a cubin (the PTX compiler library or nvJitLink); 0 without.
  double ptxToCubin = 0;
  double total() const { return setup + mlirPasses + llvmToPtx + ptxToCubin; }
};

struct CompiledModule {
  CompileTimes times;
  std::string ptx;
  /// Empty unless CompileOptions::linkArch was set.
  std::string cubin;
  /// The cubin compiler's verbose info log (registers, shared memory,
  /// spills).
  std::string linkLog;
  /// Names of the kernels (gpu.func ... kernel) in the module.
  std::vector<std::string> kernelNames;
  /// The launch contract (fmha.launch) of each kernel that has one: every
  /// kernel an fmha op lowers to; not those written by hand.
  std::map<std::string, LaunchContract> contracts;
};

/// The options that compile a module as \p plan says: its chip and PTX
/// ISA, and on the paths that load a cubin, a cubin for its arch from the
/// compiler the path names (the driver's JIT takes the PTX).
CompileOptions getCompileOptions(const LoadPlan &plan);

/// Compiles \p source: a module of fmha ops, or of one gpu.module with
/// kernels written in upstream dialects. Diagnostics (parse errors, verifier
/// errors, missing lowerings) are collected into the error.
llvm::Expected<CompiledModule> compileModule(llvm::StringRef source,
                                             const CompileOptions &options);

/// Compiles the op \p spec describes, built with an OpBuilder
/// (buildKernelSpecModule): no MLIR text is written or parsed. Diagnostics
/// (an invalid spec, a tile that does not fit) are collected into the
/// error.
llvm::Expected<CompiledModule> compileKernelSpec(const KernelSpec &spec,
                                                 const CompileOptions &options);

/// The op \p spec describes, in a func.func named after its kernel whose
/// parameters are the op's operands (every size but the head or feature
/// dimension dynamic; attention's strides dynamic with a dense head
/// dimension), in a new module of \p context. Not verified.
OwningOpRef<ModuleOp> buildKernelSpecModule(const KernelSpec &spec,
                                            MLIRContext &context);

} // namespace mlir::fmha

#endif // FMHA_JIT_COMPILE_H
