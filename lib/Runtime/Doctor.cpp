//===- Doctor.cpp - can FlashCore's JIT work on this machine? -------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Doctor.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fmha;

static constexpr Chip kChips[] = {Chip::sm_80, Chip::sm_90a};

bool fmha::isForwardCompatibilityDriver(llvm::StringRef libcudaPath) {
  return libcudaPath.contains("/compat/");
}

llvm::Error fmha::checkDriverAcceptsPtx(PtxIsa isa, CudaVersion driver) {
  PtxIsa accepted = getNewestPtxIsa(driver);
  if (!(accepted < isa))
    return llvm::Error::success();
  return llvm::createStringError(llvm::formatv(
      "PTX ISA {0} needs a driver for CUDA {1} or newer, but the driver is "
      "CUDA {2} (PTX ISA up to {3}): update the NVIDIA driver, or build the "
      "kernels with --ptx-isa={3}",
      isa.str(), getFirstCudaAccepting(isa).str(), driver.str(),
      accepted.str()));
}

Diagnosis fmha::diagnose(const MachineFacts &facts) {
  Diagnosis diagnosis;
  if (!facts.driver) {
    diagnosis.problems.push_back(
        facts.driverProblem +
        "\n  fix: install the NVIDIA driver (R580 or newer for CUDA 13), or "
        "set FMHA_LIBCUDA to its libcuda.so.1");
    return diagnosis;
  }
  if (facts.devices.empty()) {
    diagnosis.problems.push_back(
        "the driver sees no CUDA device\n  fix: check nvidia-smi, "
        "CUDA_VISIBLE_DEVICES and the container's GPU access");
    return diagnosis;
  }
  if (!facts.nvJitLink)
    diagnosis.problems.push_back(
        "nvJitLink unavailable (" + facts.nvJitLinkProblem +
        "): a kernel whose PTX the driver's JIT does not take has no "
        "fallback\n  fix: install libnvjitlink of the driver's CUDA major "
        "version, or set FMHA_NVJITLINK");
  else if (facts.nvJitLink->major != facts.driver->major)
    diagnosis.problems.push_back(llvm::formatv(
        "nvJitLink {0} does not match the driver (CUDA {1}): its cubins "
        "would not load, so a kernel whose PTX the driver's JIT does not "
        "take has no fallback\n  fix: use nvJitLink {2}.x (FMHA_NVJITLINK), "
        "or a driver for CUDA {3}",
        facts.nvJitLink->str(), facts.driver->str(), facts.driver->major,
        facts.nvJitLink->major));

  for (const MachineFacts::Device &device : facts.devices) {
    DeviceVerdict verdict{device, {}, getPreferredChip(device.capability)};
    for (Chip chip : kChips) {
      llvm::Expected<LoadPlan> plan = planLoad(
          chip, device.capability, device.name, *facts.driver, facts.nvJitLink,
          facts.nvJitLinkProblem, facts.preferDriverJit, facts.ptxCompiler,
          facts.ptxCompilerProblem);
      if (plan) {
        verdict.chips.push_back({chip, *plan, ""});
        diagnosis.jitCanWork = true;
      } else {
        verdict.chips.push_back(
            {chip, std::nullopt, llvm::toString(plan.takeError())});
      }
    }
    bool preferredRuns = llvm::any_of(verdict.chips, [&](const ChipVerdict &v) {
      return v.chip == verdict.preferred && v.plan;
    });
    if (!preferredRuns)
      for (const ChipVerdict &v : verdict.chips)
        if (v.chip == verdict.preferred)
          diagnosis.problems.push_back(device.name + ": " + v.problem);
    diagnosis.devices.push_back(std::move(verdict));
  }
  return diagnosis;
}
