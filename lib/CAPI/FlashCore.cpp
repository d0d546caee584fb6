//===- FlashCore.cpp - C API of the FlashCore JIT -------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha-c/FlashCore.h"
#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/JIT.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;
using namespace mlir::fmha;

struct fmhaJit_ {
  std::unique_ptr<JIT> jit;
};

/// Hands \p text to the caller as a malloc'ed string it owns.
static fmhaStatus report(fmhaStatus status, const std::string &text,
                         char **message) {
  if (message) {
    *message = static_cast<char *>(std::malloc(text.size() + 1));
    if (*message)
      std::memcpy(*message, text.c_str(), text.size() + 1);
  }
  return status;
}

static fmhaStatus report(llvm::Error err, char **message) {
  return report(FMHA_ERROR_FAILED, llvm::toString(std::move(err)), message);
}

static fmhaStatus succeed(char **message) {
  if (message)
    *message = nullptr;
  return FMHA_SUCCESS;
}

void fmhaJitOptionsInit(fmhaJitOptions *options) {
  if (options)
    *options = fmhaJitOptions{0, nullptr, nullptr, 0, nullptr};
}

fmhaStatus fmhaJitCreate(const fmhaJitOptions *options, fmhaJit *jit,
                         char **message) {
  if (!jit)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaJitCreate: jit must not be NULL", message);
  *jit = nullptr;
  JITOptions cppOptions;
  if (options) {
    cppOptions.device = options->device;
    if (options->chip) {
      llvm::Expected<Chip> chip = parseChip(options->chip);
      if (!chip)
        return report(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaJitCreate: " + llvm::toString(chip.takeError()),
                      message);
      cppOptions.chip = *chip;
    }
    if (options->cacheDirectory)
      cppOptions.cacheDirectory = std::string(options->cacheDirectory);
    if (options->cacheMaxBytes)
      cppOptions.cacheMaxBytes = options->cacheMaxBytes;
    if (options->dumpDirectory)
      cppOptions.dumpDirectory = options->dumpDirectory;
  }
  llvm::Expected<std::unique_ptr<JIT>> created = JIT::create(cppOptions);
  if (!created)
    return report(created.takeError(), message);
  *jit = new fmhaJit_{std::move(*created)};
  return succeed(message);
}

void fmhaJitDestroy(fmhaJit jit) { delete jit; }

fmhaStatus fmhaJitGetKernelFromSource(fmhaJit jit, const char *source,
                                      const char *kernelName,
                                      fmhaKernel *kernel, char **message) {
  if (!jit || !source || !kernelName || !kernel)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaJitGetKernelFromSource: jit, source, kernelName and "
                  "kernel must not be NULL",
                  message);
  llvm::Expected<const Kernel &> found =
      jit->jit->getKernelFromSource(source, kernelName);
  if (!found)
    return report(found.takeError(), message);
  // The C handle is the C++ kernel, which the JIT owns.
  *kernel = reinterpret_cast<fmhaKernel>(const_cast<Kernel *>(&*found));
  return succeed(message);
}

fmhaStatus fmhaKernelLaunch(fmhaKernel kernel, void *stream,
                            const unsigned grid[3], const unsigned block[3],
                            unsigned sharedBytes, void **arguments,
                            char **message) {
  if (!kernel || !grid || !block)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaKernelLaunch: kernel, grid and block must not be NULL",
                  message);
  LaunchConfig config;
  std::copy(grid, grid + 3, config.grid.begin());
  std::copy(block, block + 3, config.block.begin());
  config.sharedBytes = sharedBytes;
  if (llvm::Error err = reinterpret_cast<const Kernel *>(kernel)->launch(
          static_cast<CUstream>(stream), config, arguments))
    return report(std::move(err), message);
  return succeed(message);
}

void fmhaFreeMessage(char *message) { std::free(message); }
