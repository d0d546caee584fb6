//===- LoadPlan.cpp - can this kernel load here, and how ------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/LoadPlan.h"
#include "fmha/Support/Environment.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::fmha;

std::string ComputeCapability::arch() const {
  return llvm::formatv("sm_{0}{1}", major, minor).str();
}

Chip fmha::getPreferredChip(ComputeCapability device) {
  return device.major == 9 && device.minor == 0 ? Chip::sm_90a : Chip::sm_80;
}

llvm::Expected<std::string> fmha::getLinkArch(Chip chip,
                                              ComputeCapability device,
                                              llvm::StringRef deviceName) {
  std::string deviceText =
      llvm::formatv("device is {0} ({1})", device.arch(), deviceName).str();
  switch (chip) {
  case Chip::sm_90a:
    if (device.major == 9 && device.minor == 0)
      return std::string("sm_90a");
    return llvm::createStringError(llvm::formatv(
        "kernel built for sm_90a (WGMMA, TMA), which runs only on compute "
        "capability 9.0 (H100, H200), but the {0}: compile with chip=sm_80",
        deviceText));
  case Chip::sm_80:
    if (device.major >= 8)
      return device.arch();
    return llvm::createStringError(llvm::formatv(
        "kernel built for sm_80 needs compute capability 8.0 or newer, but "
        "the {0}: FlashCore has no kernels for this GPU",
        deviceText));
  }
  llvm_unreachable("unknown chip");
}

bool fmha::isDriverJitPreferred() {
  return readSetting(Setting::DriverJit) != "off";
}

bool fmha::isPtxCompilerEnabled() {
  return readSetting(Setting::PtxCompiler) != "off";
}

/// \p reason, after \p why (a clause saying why a better path was not
/// taken) when there is one.
static std::string after(llvm::StringRef why, llvm::StringRef reason) {
  return why.empty() ? reason.str() : (why + "; " + reason).str();
}

llvm::Expected<LoadPlan>
fmha::planLoad(Chip chip, ComputeCapability device, llvm::StringRef deviceName,
               CudaVersion driver, std::optional<CudaVersion> nvJitLink,
               llvm::StringRef nvJitLinkProblem, bool preferDriverJit,
               std::optional<CudaVersion> ptxCompiler,
               llvm::StringRef ptxCompilerProblem) {
  llvm::Expected<std::string> linkArch = getLinkArch(chip, device, deviceName);
  if (!linkArch)
    return linkArch.takeError();
  std::string driverName =
      llvm::formatv("the driver (CUDA {0})", driver.str()).str();

  // nvJitLink compiles PTX as relocatable code (ptxas -c). For sm_90a that
  // ignores setmaxnreg (ptxas C7504) and serializes WGMMA (C7509): the
  // warp-specialized kernels would run with a third of their registers. For
  // sm_80 it schedules the attention kernels as if registers were free and
  // spills at every head dim, where the whole program spills at d128 only
  // (and less); the driver's JIT runs them 1-9% faster on the H100
  // (docs/BENCHMARKS.md). So both chips compile as a whole program wherever
  // something can: nvJitLink is the fallback for drivers that take neither.
  llvm::Expected<PtxIsa> driverIsa = selectPtxIsa(chip, driver, driverName);
  bool canLink = nvJitLink && nvJitLink->major == driver.major;
  bool linkFirst = !preferDriverJit && canLink;

  // The PTX compiler library's cubin loads with no compile at all, where
  // the driver's JIT compiles the PTX again in every process that loads it
  // (about 0.9 s for an sm_90a attention kernel on the H100 with the
  // driver's own cache off). A cubin is only loaded by a driver at least as
  // new as the compiler that made it, which is also why the compiler's
  // version is in the JIT's cache key.
  std::string notCompiled = ptxCompilerProblem.str();
  if (ptxCompiler && !linkFirst) {
    std::string compilerName =
        llvm::formatv("the PTX compiler (CUDA {0})", ptxCompiler->str()).str();
    if (driver < *ptxCompiler) {
      notCompiled = llvm::formatv("{0} is older than {1} and may not load "
                                  "its cubins",
                                  driverName, compilerName)
                        .str();
    } else if (llvm::Expected<PtxIsa> isa =
                   selectPtxIsa(chip, *ptxCompiler, compilerName)) {
      return LoadPlan{chip, *linkArch, LoadPath::PtxCompiler, *isa,
                      llvm::formatv("{0} compiles the {1} PTX for {2} as a "
                                    "whole program and {3} loads the cubin",
                                    compilerName, stringifyChip(chip),
                                    *linkArch, driverName)
                          .str()};
    } else {
      notCompiled = llvm::toString(isa.takeError());
    }
  }

  if (driverIsa && !linkFirst)
    return LoadPlan{
        chip, *linkArch, LoadPath::DriverJit, *driverIsa,
        after(notCompiled,
              llvm::formatv("{0} compiles the {1} PTX for {2} as "
                            "a whole program",
                            driverName, stringifyChip(chip), *linkArch)
                  .str())};

  if (canLink) {
    std::string why =
        driverIsa
            ? std::string("the driver's JIT set aside "
                          "(FMHA_DRIVER_JIT=off)")
            : after(notCompiled, llvm::formatv("{0} does not take the {1} PTX",
                                               driverName, stringifyChip(chip))
                                     .str());
    llvm::consumeError(driverIsa.takeError());
    llvm::Expected<PtxIsa> isa =
        selectPtxIsa(chip, *nvJitLink, "nvJitLink " + nvJitLink->str());
    if (!isa)
      return isa.takeError();
    return LoadPlan{chip, *linkArch, LoadPath::NvJitLink, *isa,
                    llvm::formatv("{0}; nvJitLink {1} links it for {2} and "
                                  "the driver loads the cubin",
                                  why, nvJitLink->str(), *linkArch)
                        .str()};
  }

  std::string why =
      nvJitLink
          ? llvm::formatv("nvJitLink {0} does not match {1} (a cubin needs "
                          "the same major version)",
                          nvJitLink->str(), driverName)
                .str()
          : ("nvJitLink unavailable: " + nvJitLinkProblem).str();
  if (!notCompiled.empty())
    why += "; " + notCompiled;
  return llvm::createStringError(llvm::toString(driverIsa.takeError()) +
                                 " (" + why + ")");
}
