//===- LoadPlan.h - can this kernel load here, and how ----------*- C++ -*-===//
//
// Part of FlashCore. The decisions between a compiled kernel and the machine
// in front of us: which arch to compile for; the PTX compiler library,
// nvJitLink or the driver's PTX JIT; which PTX ISA. Pure functions of the
// versions involved, so that every case (old driver, mismatched nvJitLink,
// wrong chip) is unit-tested with injected versions, and the messages name both
// sides and the fix.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_LOADPLAN_H
#define FMHA_RUNTIME_LOADPLAN_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Target/PtxIsa.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::fmha {

/// A device's compute capability.
struct ComputeCapability {
  unsigned major = 0;
  unsigned minor = 0;
  /// "sm_90".
  std::string arch() const;
};

/// The chip FlashCore compiles for by default on a device: sm_90a on
/// compute capability 9.0, sm_80 PTX on every other device that runs it.
Chip getPreferredChip(ComputeCapability device);

/// The arch nvJitLink links \p chip's PTX for on \p device: sm_90a PTX runs
/// only on compute capability 9.0; sm_80 PTX on 8.0 and newer, linked for
/// the device's own arch. The error names the kernel's chip, the device and
/// the fix.
llvm::Expected<std::string> getLinkArch(Chip chip, ComputeCapability device,
                                        llvm::StringRef deviceName);

enum class LoadPath {
  /// PTX compiled to a whole-program cubin in the process by the PTX
  /// compiler library (PtxCompiler.h), the cubin loaded by the driver with
  /// no compile of its own: the JIT's disk cache holds the cubin.
  PtxCompiler,
  /// PTX linked to a cubin by nvJitLink, the cubin loaded by the driver.
  NvJitLink,
  /// PTX handed to the driver, which compiles it itself.
  DriverJit,
};

struct LoadPlan {
  Chip chip;
  /// What the kernel is linked for, e.g. "sm_90a" or "sm_90".
  std::string linkArch;
  LoadPath path;
  PtxIsa ptxIsa;
  /// Why this path was taken, for logs and fmha-doctor.
  std::string reason;
};

/// planLoad's preferDriverJit as this process's environment sets it: false
/// when FMHA_DRIVER_JIT is "off".
bool isDriverJitPreferred();

/// Whether the JIT may compile cubins with its PTX compiler library: false
/// when FMHA_PTX_COMPILER is "off".
bool isPtxCompilerEnabled();

/// Decides how a \p chip kernel reaches \p device under a driver of CUDA
/// version \p driver. Whole-program compiles first: nvJitLink's relocatable
/// compile spills more (sm_80) and ignores setmaxnreg (sm_90a).
///
/// The PTX compiler library (\p ptxCompiler, its CUDA version; std::nullopt
/// with \p ptxCompilerProblem saying why it is not used) when the driver is
/// at least as new: its cubin loads with no compile at load time, but a
/// driver older than the compiler may not load what it made. Then the
/// driver's own PTX JIT, with the newest PTX ISA the driver accepts,
/// whenever it accepts the chip's PTX. Otherwise nvJitLink (\p nvJitLink,
/// or std::nullopt with \p nvJitLinkProblem saying why it is unavailable)
/// when its major version equals the driver's: a cubin from a newer major
/// does not load, and an older one may not know the device.
/// \p preferDriverJit false (FMHA_DRIVER_JIT=off) takes nvJitLink wherever
/// it can link, before either whole-program compile, so that the fallback
/// can be run and measured on any machine.
llvm::Expected<LoadPlan>
planLoad(Chip chip, ComputeCapability device, llvm::StringRef deviceName,
         CudaVersion driver, std::optional<CudaVersion> nvJitLink,
         llvm::StringRef nvJitLinkProblem, bool preferDriverJit = true,
         std::optional<CudaVersion> ptxCompiler = std::nullopt,
         llvm::StringRef ptxCompilerProblem = "");

} // namespace mlir::fmha

#endif // FMHA_RUNTIME_LOADPLAN_H
