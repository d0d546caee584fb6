//===- NvJitLink.h - PTX to cubin with nvJitLink ----------------*- C++ -*-===//
//
// Part of FlashCore. libnvJitLink is opened with dlopen, so that a missing or
// mismatched nvJitLink is a message and a fallback (the driver's PTX JIT),
// not a loader error at start-up.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TARGET_NVJITLINK_H
#define FMHA_TARGET_NVJITLINK_H

#include "fmha/Target/PtxIsa.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::fmha {

/// A cubin and nvJitLink's info log (with -verbose: registers, shared
/// memory and spill bytes per kernel).
struct LinkedCubin {
  std::string cubin;
  std::string infoLog;
};

class NvJitLink {
public:
  /// The process-wide nvJitLink: $FMHA_NVJITLINK if set ("off" disables
  /// nvJitLink, so the JIT uses the driver's PTX JIT), else the soname of
  /// the toolkit FlashCore was built with on the loader's path, under
  /// $CUDA_HOME/lib64, under /usr/local/cuda/lib64, else the library found
  /// at configure time. The error lists every place tried.
  static llvm::Expected<const NvJitLink &> get();

  CudaVersion getVersion() const { return version; }
  /// The file the library was loaded from.
  llvm::StringRef getPath() const { return path; }

  /// Links \p ptx into a cubin for \p arch ("sm_90a", "sm_90", "sm_80") at
  /// -O\p optLevel with -verbose. Errors carry nvJitLink's result name and
  /// error log.
  llvm::Expected<LinkedCubin> link(llvm::StringRef ptx, llvm::StringRef arch,
                                   unsigned optLevel = 3) const;

  /// The resolved entry points (defined in NvJitLink.cpp).
  struct Api;

private:
  NvJitLink() = default;
  static NvJitLink *load(std::string &error);
  const Api *api = nullptr;
  CudaVersion version;
  std::string path;
};

/// The PTX ISA to emit for \p chip when nothing else decides it: \p requested
/// ("9.0") when not empty, else the newest the available nvJitLink accepts,
/// else the newest LLVM emits, in which case \p note says why.
llvm::Expected<PtxIsa> resolvePtxIsa(Chip chip, llvm::StringRef requested,
                                     std::string &note);

} // namespace mlir::fmha

#endif // FMHA_TARGET_NVJITLINK_H
