//===- Doctor.h - can FlashCore's JIT work on this machine? -----*- C++ -*-===//
//
// Part of FlashCore. The decisions of fmha-doctor as a pure function of what
// was found on the machine (driver, devices, nvJitLink), so that every case
// is unit-tested with injected versions: an old driver, an nvJitLink of
// another major version, an sm_90a kernel on an sm_80 device.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_DOCTOR_H
#define FMHA_RUNTIME_DOCTOR_H

#include "fmha/Runtime/LoadPlan.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha {

/// What fmha-doctor found.
struct MachineFacts {
  /// The driver's CUDA version, or std::nullopt with driverProblem.
  std::optional<CudaVersion> driver;
  std::string driverProblem;
  std::string libcudaPath;
  struct Device {
    std::string name;
    ComputeCapability capability;
  };
  std::vector<Device> devices;
  std::optional<CudaVersion> nvJitLink;
  std::string nvJitLinkProblem;
  /// The JIT's PTX compiler library, or std::nullopt with
  /// ptxCompilerProblem (FMHA_PTX_COMPILER=off).
  std::optional<CudaVersion> ptxCompiler;
  std::string ptxCompilerProblem;
  /// FMHA_DRIVER_JIT (isDriverJitPreferred).
  bool preferDriverJit = true;
};

/// How one of our chips fares on one device.
struct ChipVerdict {
  Chip chip;
  /// The plan when the chip can run there, else the reason it cannot.
  std::optional<LoadPlan> plan;
  std::string problem;
};

struct DeviceVerdict {
  MachineFacts::Device device;
  std::vector<ChipVerdict> chips;
  /// The chip the JIT picks by default on this device.
  Chip preferred;
};

struct Diagnosis {
  std::vector<DeviceVerdict> devices;
  /// Lines that need the user's attention, each with its fix.
  std::vector<std::string> problems;
  /// Whether the JIT can compile, load and run a kernel on some device.
  bool jitCanWork = false;
};

/// Decides, from \p facts alone, what can run here and what to fix.
Diagnosis diagnose(const MachineFacts &facts);

/// Whether a libcuda is a CUDA forward-compatibility one (cuda-compat
/// package: a newer user-mode driver over an older kernel module), judged
/// by its path.
bool isForwardCompatibilityDriver(llvm::StringRef libcudaPath);

/// Whether PTX of ISA \p isa (e.g. from an ahead-of-time build) can be
/// loaded by a driver of version \p driver; the error names both and the fix.
llvm::Error checkDriverAcceptsPtx(PtxIsa isa, CudaVersion driver);

} // namespace mlir::fmha

#endif // FMHA_RUNTIME_DOCTOR_H
