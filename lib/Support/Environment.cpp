//===- Environment.cpp - every environment variable FlashCore reads -------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/Environment.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::fmha;

llvm::StringRef fmha::getSettingName(Setting setting) {
  switch (setting) {
  case Setting::CudaHome:
    return "CUDA_HOME";
  case Setting::LibCuda:
    return "FMHA_LIBCUDA";
  case Setting::NvJitLink:
    return "FMHA_NVJITLINK";
  case Setting::DriverJit:
    return "FMHA_DRIVER_JIT";
  case Setting::PtxCompiler:
    return "FMHA_PTX_COMPILER";
  case Setting::CacheDir:
    return "FMHA_CACHE_DIR";
  case Setting::CacheMaxBytes:
    return "FMHA_CACHE_MAX_BYTES";
  case Setting::MaxSharedBytes:
    return "FMHA_MAX_SHARED_BYTES";
  case Setting::XdgCacheHome:
    return "XDG_CACHE_HOME";
  case Setting::Home:
    return "HOME";
  }
  llvm_unreachable("unknown setting");
}

std::optional<std::string> fmha::readSetting(Setting setting) {
  const char *value = std::getenv(getSettingName(setting).data());
  if (!value)
    return std::nullopt;
  return std::string(value);
}
