//===- DoctorReport.cpp - fmha-doctor's report ----------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/DoctorReport.h"
#include "fmha/JIT/DiskCache.h"
#include "fmha/JIT/JIT.h"
#include "fmha/Runtime/CudaDriver.h"
#include "fmha/Runtime/Doctor.h"
#include "fmha/Target/NvJitLink.h"
#include "fmha/Target/PtxCompiler.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <unistd.h>

using namespace mlir::fmha;

static void printCache(llvm::raw_ostream &os) {
  std::optional<std::string> directory = DiskCache::getDefaultDirectory();
  if (!directory) {
    os << "cache:      disabled (FMHA_CACHE_DIR=off, or no home directory)\n";
    return;
  }
  uint64_t bytes = 0;
  unsigned entries = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(*directory, ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (!llvm::StringRef(it->path()).ends_with(".fmhac") ||
        llvm::sys::fs::status(it->path(), status))
      continue;
    ++entries;
    bytes += status.getSize();
  }
  bool exists = llvm::sys::fs::is_directory(*directory);
  bool writable = exists ? access(directory->c_str(), W_OK) == 0 : true;
  os << llvm::formatv("cache:      {0}: {1}", *directory,
                      exists
                          ? llvm::formatv("{0} entries, {1} KB of {2} MB",
                                          entries, bytes / 1024,
                                          DiskCache::getDefaultMaxBytes() >> 20)
                                .str()
                          : std::string("not created yet"))
     << (writable ? ""
                  : ", NOT WRITABLE (kernels are recompiled in every "
                    "process; set FMHA_CACHE_DIR)")
     << "\n";
}

bool mlir::fmha::writeDoctorReport(llvm::raw_ostream &os) {
  os << llvm::formatv("FlashCore {0} (LLVM {1}, emits PTX ISA up to {2})\n",
                      getFlashCoreVersion(), LLVM_VERSION_STRING,
                      kNewestLlvmPtxIsa.str());

  MachineFacts facts;
  facts.preferDriverJit = isDriverJitPreferred();
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver) {
    facts.driverProblem = llvm::toString(driver.takeError());
    os << "driver:     none (" << facts.driverProblem << ")\n";
  } else {
    facts.driver = driver->getVersion();
    facts.libcudaPath = driver->getLibraryPath().str();
    os << llvm::formatv("driver:     CUDA {0}, accepts PTX ISA up to {1} "
                        "(libcuda: {2}{3})\n",
                        facts.driver->str(),
                        getNewestPtxIsa(*facts.driver).str(), facts.libcudaPath,
                        isForwardCompatibilityDriver(facts.libcudaPath)
                            ? ", a forward-compatibility driver"
                            : "");
    llvm::Expected<int> count = driver->getDeviceCount();
    for (int i = 0; count && i < *count; ++i) {
      llvm::Expected<DeviceInfo> info = driver->getDevice(i);
      if (!info) {
        os << "GPU " << i << ":      " << llvm::toString(info.takeError())
           << "\n";
        continue;
      }
      facts.devices.push_back({info->name, info->capability});
    }
    if (!count)
      llvm::consumeError(count.takeError());
  }

  llvm::Expected<const NvJitLink &> linker = NvJitLink::get();
  if (linker) {
    facts.nvJitLink = linker->getVersion();
    os << llvm::formatv("nvJitLink:  {0} ({1})\n", facts.nvJitLink->str(),
                        linker->getPath());
  } else {
    facts.nvJitLinkProblem = llvm::toString(linker.takeError());
    os << "nvJitLink:  none (" << facts.nvJitLinkProblem << ")\n";
  }

  if (isPtxCompilerEnabled()) {
    facts.ptxCompiler = getPtxCompilerVersion();
    os << llvm::formatv("compiler:   PTX compiler {0}, linked in (the disk "
                        "cache holds its cubins where the driver is as "
                        "new)\n",
                        facts.ptxCompiler->str());
  } else {
    facts.ptxCompilerProblem =
        "the PTX compiler set aside (FMHA_PTX_COMPILER=off)";
    os << "compiler:   PTX compiler off (FMHA_PTX_COMPILER=off): the "
          "driver's JIT compiles cached PTX at every load\n";
  }

  Diagnosis diagnosis = diagnose(facts);
  for (auto [index, verdict] : llvm::enumerate(diagnosis.devices)) {
    os << llvm::formatv("GPU {0}:      {1}, {2}; default chip {3}\n", index,
                        verdict.device.name, verdict.device.capability.arch(),
                        stringifyChip(verdict.preferred));
    for (const ChipVerdict &chip : verdict.chips)
      os << llvm::formatv("  {0,-7}   ", stringifyChip(chip.chip))
         << (chip.plan ? "runs: " + chip.plan->reason + ", PTX ISA " +
                             chip.plan->ptxIsa.str()
                       : "cannot run: " + chip.problem)
         << "\n";
  }
  printCache(os);
  if (!diagnosis.problems.empty()) {
    os << "problems:\n";
    for (const std::string &problem : diagnosis.problems)
      os << "  - " << problem << "\n";
  }
  os << (diagnosis.jitCanWork
             ? "verdict:    the JIT can work here\n"
             : "verdict:    the JIT cannot run kernels here\n");
  return diagnosis.jitCanWork;
}
