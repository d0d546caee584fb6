//===- PtxIsa.h - PTX ISA versions and what accepts them --------*- C++ -*-===//
//
// Part of FlashCore. The PTX `.version` is a choice, not an accident
// (DESIGN.md): the newest ISA the consumer (nvJitLink, or the driver's own
// PTX JIT) accepts, no newer than LLVM emits, no older than the chip needs.
// Plain data and functions, unit-tested with injected versions.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TARGET_PTXISA_H
#define FMHA_TARGET_PTXISA_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"

#include "llvm/Support/Error.h"

#include <string>
#include <tuple>

namespace mlir::fmha {

/// A CUDA release, as nvJitLinkVersion or cuDriverGetVersion report it.
struct CudaVersion {
  unsigned major = 0;
  unsigned minor = 0;

  /// From cuDriverGetVersion's encoding (1000 * major + 10 * minor).
  static CudaVersion fromDriverEncoding(int version);
  std::string str() const;
  bool operator<(const CudaVersion &o) const {
    return std::tie(major, minor) < std::tie(o.major, o.minor);
  }
  bool operator==(const CudaVersion &o) const {
    return major == o.major && minor == o.minor;
  }
};

/// A PTX ISA version (`.version major.minor`).
struct PtxIsa {
  unsigned major = 0;
  unsigned minor = 0;

  /// "9.0".
  std::string str() const;
  /// The NVPTX subtarget feature, "+ptx90".
  std::string feature() const;
  bool operator<(const PtxIsa &o) const {
    return std::tie(major, minor) < std::tie(o.major, o.minor);
  }
  bool operator==(const PtxIsa &o) const {
    return major == o.major && minor == o.minor;
  }
};

/// Parses "9.0" (or "90"); the error names the value.
llvm::Expected<PtxIsa> parsePtxIsa(llvm::StringRef text);

/// The newest PTX ISA LLVM 22's NVPTX backend emits.
inline constexpr PtxIsa kNewestLlvmPtxIsa{9, 0};

/// The newest PTX ISA a CUDA release's ptxas, nvJitLink or driver accepts
/// (PTX ISA release notes). Releases newer than the table accept at least
/// its newest entry.
PtxIsa getNewestPtxIsa(CudaVersion cuda);

/// The first CUDA release that accepts \p isa.
CudaVersion getFirstCudaAccepting(PtxIsa isa);

/// The oldest PTX ISA with the instructions a chip's kernels use
/// (sm_80: 7.0; sm_90a: 8.0).
PtxIsa getMinimumPtxIsa(Chip chip);

/// Chooses the PTX ISA for \p chip when \p consumer (e.g. "nvJitLink 13.0"
/// or "the driver (CUDA 12.4)") at CUDA version \p cuda will read the PTX:
/// the newest it accepts, capped at what LLVM emits. Fails, naming both
/// versions and the fix, when the consumer is too old for the chip.
llvm::Expected<PtxIsa> selectPtxIsa(Chip chip, CudaVersion cuda,
                                    llvm::StringRef consumer);

} // namespace mlir::fmha

#endif // FMHA_TARGET_PTXISA_H
