//===- NvJitLink.cpp - PTX to cubin with nvJitLink ------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/NvJitLink.h"
#include "fmha/Support/Environment.h"

#include "CompilerLog.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <dlfcn.h>
#include <nvJitLink.h>

using namespace mlir;
using namespace mlir::fmha;

/// The entry points, resolved by name. Since CUDA 12 each is exported with
/// the library's major version in its name (`__nvJitLinkCreate_13_0`);
/// only nvJitLinkVersion is unversioned.
struct NvJitLink::Api {
  nvJitLinkResult (*create)(nvJitLinkHandle *, uint32_t, const char **);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *);
  nvJitLinkResult (*addData)(nvJitLinkHandle, nvJitLinkInputType, const void *,
                             size_t, const char *);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*getLinkedCubinSize)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*getLinkedCubin)(nvJitLinkHandle, void *);
  nvJitLinkResult (*getErrorLogSize)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*getErrorLog)(nvJitLinkHandle, char *);
  nvJitLinkResult (*getInfoLogSize)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*getInfoLog)(nvJitLinkHandle, char *);
};

static const char *getResultName(nvJitLinkResult result) {
  switch (result) {
#define CASE(name)                                                             \
  case name:                                                                   \
    return #name;
    CASE(NVJITLINK_SUCCESS)
    CASE(NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
    CASE(NVJITLINK_ERROR_MISSING_ARCH)
    CASE(NVJITLINK_ERROR_INVALID_INPUT)
    CASE(NVJITLINK_ERROR_PTX_COMPILE)
    CASE(NVJITLINK_ERROR_NVVM_COMPILE)
    CASE(NVJITLINK_ERROR_INTERNAL)
    CASE(NVJITLINK_ERROR_THREADPOOL)
    CASE(NVJITLINK_ERROR_UNRECOGNIZED_INPUT)
    CASE(NVJITLINK_ERROR_FINALIZE)
    CASE(NVJITLINK_ERROR_NULL_INPUT)
    CASE(NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
    CASE(NVJITLINK_ERROR_INCORRECT_INPUT_TYPE)
    CASE(NVJITLINK_ERROR_ARCH_MISMATCH)
    CASE(NVJITLINK_ERROR_OUTDATED_LIBRARY)
    CASE(NVJITLINK_ERROR_MISSING_FATBIN)
    CASE(NVJITLINK_ERROR_UNRECOGNIZED_ARCH)
    CASE(NVJITLINK_ERROR_UNSUPPORTED_ARCH)
    CASE(NVJITLINK_ERROR_LTO_NOT_ENABLED)
#undef CASE
  }
  return "NVJITLINK_ERROR_UNKNOWN";
}

/// Resolves every entry point of the library at \p handle, whose major
/// version is \p major.
static llvm::Expected<NvJitLink::Api *> resolveApi(void *handle,
                                                   unsigned major) {
  auto api = std::make_unique<NvJitLink::Api>();
  std::string missing;
  auto resolve = [&](auto &fn, llvm::StringRef name) {
    std::string symbol = llvm::formatv("__{0}_{1}_0", name, major).str();
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, symbol.c_str()));
    if (!fn)
      missing += " " + symbol;
  };
  resolve(api->create, "nvJitLinkCreate");
  resolve(api->destroy, "nvJitLinkDestroy");
  resolve(api->addData, "nvJitLinkAddData");
  resolve(api->complete, "nvJitLinkComplete");
  resolve(api->getLinkedCubinSize, "nvJitLinkGetLinkedCubinSize");
  resolve(api->getLinkedCubin, "nvJitLinkGetLinkedCubin");
  resolve(api->getErrorLogSize, "nvJitLinkGetErrorLogSize");
  resolve(api->getErrorLog, "nvJitLinkGetErrorLog");
  resolve(api->getInfoLogSize, "nvJitLinkGetInfoLogSize");
  resolve(api->getInfoLog, "nvJitLinkGetInfoLog");
  if (!missing.empty())
    return llvm::createStringError("nvJitLink lacks" + missing);
  return api.release();
}

NvJitLink *NvJitLink::load(std::string &error) {
  llvm::SmallVector<std::string> candidates;
  if (std::optional<std::string> overridden =
          readSetting(Setting::NvJitLink)) {
    if (*overridden == "off") {
      error = "nvJitLink disabled by FMHA_NVJITLINK=off";
      return nullptr;
    }
    candidates.push_back(*overridden);
  } else {
    candidates.push_back(FLASHCORE_NVJITLINK_SONAME);
    if (std::optional<std::string> cudaHome = readSetting(Setting::CudaHome))
      candidates.push_back(*cudaHome + "/lib64/" FLASHCORE_NVJITLINK_SONAME);
    candidates.push_back("/usr/local/cuda/lib64/" FLASHCORE_NVJITLINK_SONAME);
    candidates.push_back(FLASHCORE_NVJITLINK_PATH);
  }
  std::string tried;
  for (const std::string &candidate : candidates) {
    void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += llvm::formatv("\n  {0}: {1}", candidate, dlerror()).str();
      continue;
    }
    using VersionFn = nvJitLinkResult (*)(unsigned *, unsigned *);
    auto versionFn =
        reinterpret_cast<VersionFn>(dlsym(handle, "nvJitLinkVersion"));
    unsigned major = 0, minor = 0;
    if (!versionFn || versionFn(&major, &minor) != NVJITLINK_SUCCESS) {
      tried += "\n  " + candidate + ": no usable nvJitLinkVersion";
      continue;
    }
    llvm::Expected<Api *> api = resolveApi(handle, major);
    if (!api) {
      tried += "\n  " + candidate + ": " + llvm::toString(api.takeError());
      continue;
    }
    auto *library = new NvJitLink();
    library->api = *api;
    library->version = {major, minor};
    library->path = candidate;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(versionFn), &info) && info.dli_fname)
      library->path = info.dli_fname;
    return library;
  }
  error = "nvJitLink not found (set FMHA_NVJITLINK to a libnvJitLink.so, or "
          "install the CUDA toolkit's libnvjitlink); tried:" +
          tried;
  return nullptr;
}

llvm::Expected<const NvJitLink &> NvJitLink::get() {
  // Loaded once per process; the library stays open for its lifetime.
  static std::string error;
  static const NvJitLink *library = load(error);
  if (!library)
    return llvm::createStringError(error);
  return *library;
}

llvm::Expected<LinkedCubin> NvJitLink::link(llvm::StringRef ptx,
                                            llvm::StringRef arch,
                                            unsigned optLevel) const {
  std::string archOption = ("-arch=" + arch).str();
  std::string optOption = llvm::formatv("-O{0}", optLevel).str();
  const char *options[] = {archOption.c_str(), optOption.c_str(), "-verbose"};
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult result = api->create(&handle, 3, options);
  if (result != NVJITLINK_SUCCESS)
    return llvm::createStringError(
        llvm::formatv("nvJitLinkCreate({0} {1}) failed: {2}", archOption,
                      optOption, getResultName(result)));
  auto readLog = [&](auto getSize, auto getLog) {
    return readCompilerLog(handle, NVJITLINK_SUCCESS, getSize, getLog);
  };
  LinkedCubin linked;
  std::string failure;
  result = api->addData(handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(),
                        "fmha.ptx");
  if (result == NVJITLINK_SUCCESS)
    result = api->complete(handle);
  if (result == NVJITLINK_SUCCESS) {
    size_t size = 0;
    result = api->getLinkedCubinSize(handle, &size);
    if (result == NVJITLINK_SUCCESS) {
      linked.cubin.resize(size);
      result = api->getLinkedCubin(handle, linked.cubin.data());
    }
  }
  linked.infoLog = readLog(api->getInfoLogSize, api->getInfoLog);
  if (result != NVJITLINK_SUCCESS)
    failure =
        llvm::formatv("nvJitLink {0} failed linking PTX for {1}: {2}\n{3}",
                      version.str(), arch, getResultName(result),
                      readLog(api->getErrorLogSize, api->getErrorLog))
            .str();
  api->destroy(&handle);
  if (!failure.empty())
    return llvm::createStringError(failure);
  return linked;
}

llvm::Expected<PtxIsa> fmha::resolvePtxIsa(Chip chip, llvm::StringRef requested,
                                           std::string &note) {
  if (!requested.empty()) {
    llvm::Expected<PtxIsa> isa = parsePtxIsa(requested);
    if (!isa)
      return isa.takeError();
    PtxIsa minimum = getMinimumPtxIsa(chip);
    if (*isa < minimum || kNewestLlvmPtxIsa < *isa)
      return llvm::createStringError(llvm::formatv(
          "PTX ISA {0} is outside what {1} and LLVM allow ({2} to {3})",
          isa->str(), stringifyChip(chip), minimum.str(),
          kNewestLlvmPtxIsa.str()));
    return *isa;
  }
  llvm::Expected<const NvJitLink &> linker = NvJitLink::get();
  if (!linker) {
    note = llvm::toString(linker.takeError()) + "\nemitting PTX ISA " +
           kNewestLlvmPtxIsa.str() + ", the newest LLVM emits";
    return kNewestLlvmPtxIsa;
  }
  return selectPtxIsa(chip, linker->getVersion(),
                      "nvJitLink " + linker->getVersion().str());
}
