//===- PTX.h - NVVM gpu.module to PTX through LLVM's NVPTX ------*- C++ -*-===//
//
// Part of FlashCore. Our own NVPTX TargetMachine (O3) rather than
// gpu-module-to-binary's, so that the PTX ISA, libdevice and the stage dumps
// are ours to choose (DESIGN.md, "The pipeline").
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TARGET_PTX_H
#define FMHA_TARGET_PTX_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Target/PtxIsa.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
class Operation;

namespace fmha {

/// Receives an intermediate stage of a compilation: a short name that is
/// also a file name ("kernel.ll", "kernel.opt.ll", "kernel.ptx") and its text.
using StageSink =
    llvm::function_ref<void(llvm::StringRef name, llvm::StringRef text)>;

/// The libdevice of the CUDA toolkit found at configure time, or under
/// $CUDA_HOME when that is set.
std::string getDefaultLibdevicePath();

struct PTXOptions {
  Chip chip = Chip::sm_90a;
  PtxIsa ptxIsa = kNewestLlvmPtxIsa;
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 3;
  /// libdevice, linked only when the module calls `__nv_*` functions.
  std::string libdevicePath = getDefaultLibdevicePath();
};

/// A StageSink that writes each stage to a file of its name under a
/// directory (created on first use). Keeps the first error.
class StageDirectory {
public:
  explicit StageDirectory(std::string directory)
      : directory(std::move(directory)) {}
  void write(llvm::StringRef name, llvm::StringRef text);
  /// A sink for translateToPTX and the pass-manager dumps.
  auto sink() {
    return [this](llvm::StringRef name, llvm::StringRef text) {
      write(name, text);
    };
  }
  llvm::Error takeError() { return std::move(error); }

private:
  std::string directory;
  llvm::Error error = llvm::Error::success();
};

/// Translates \p gpuModule, a gpu.module already lowered to the LLVM and
/// NVVM dialects, to PTX for \p options.chip. Each stage goes to \p sink
/// when one is given.
llvm::Expected<std::string> translateToPTX(Operation *gpuModule,
                                           const PTXOptions &options,
                                           StageSink sink = nullptr);

} // namespace fmha
} // namespace mlir

#endif // FMHA_TARGET_PTX_H
