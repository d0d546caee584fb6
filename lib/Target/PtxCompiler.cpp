//===- PtxCompiler.cpp - PTX to cubin as a whole program ------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/PtxCompiler.h"

#include "CompilerLog.h"

#include "llvm/Support/FormatVariadic.h"

#include <nvPTXCompiler.h>

#include <algorithm>
#include <memory>
#include <string>

using namespace mlir::fmha;

static const char *getResultName(nvPTXCompileResult result) {
  switch (result) {
  case NVPTXCOMPILE_SUCCESS:
    return "NVPTXCOMPILE_SUCCESS";
  case NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE:
    return "NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE";
  case NVPTXCOMPILE_ERROR_INVALID_INPUT:
    return "NVPTXCOMPILE_ERROR_INVALID_INPUT";
  case NVPTXCOMPILE_ERROR_COMPILATION_FAILURE:
    return "NVPTXCOMPILE_ERROR_COMPILATION_FAILURE";
  case NVPTXCOMPILE_ERROR_INTERNAL:
    return "NVPTXCOMPILE_ERROR_INTERNAL";
  case NVPTXCOMPILE_ERROR_OUT_OF_MEMORY:
    return "NVPTXCOMPILE_ERROR_OUT_OF_MEMORY";
  case NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE:
    return "NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE";
  case NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION:
    return "NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION";
  default:
    return "an unknown nvPTXCompileResult";
  }
}

CudaVersion mlir::fmha::getPtxCompilerVersion() {
  CudaVersion version;
  nvPTXCompilerGetVersion(&version.major, &version.minor);
  return version;
}

llvm::Expected<PtxIsa> mlir::fmha::selectPtxCompilerIsa(Chip chip) {
  int count = 0;
  if (nvPTXCompilerGetNumSupportedVersions(&count) != NVPTXCOMPILE_SUCCESS ||
      count <= 0)
    return llvm::createStringError(
        llvm::formatv("the PTX compiler {0} lists no PTX ISA it supports",
                      getPtxCompilerVersion().str()));
  std::unique_ptr<int[][2]> versions(new int[count][2]);
  nvPTXCompilerGetSupportedVersions(versions.get());
  // Ascending: the last is the newest.
  PtxIsa newest{unsigned(versions[count - 1][0]),
                unsigned(versions[count - 1][1])};
  PtxIsa isa = std::min(newest, kNewestLlvmPtxIsa);
  PtxIsa minimum = getMinimumPtxIsa(chip);
  if (isa < minimum)
    return llvm::createStringError(llvm::formatv(
        "{0} needs PTX ISA {1} or newer; the PTX compiler {2} takes up to "
        "{3} and LLVM emits up to {4}",
        stringifyChip(chip), minimum.str(), getPtxCompilerVersion().str(),
        newest.str(), kNewestLlvmPtxIsa.str()));
  return isa;
}

llvm::Expected<LinkedCubin>
mlir::fmha::compilePtxWholeProgram(llvm::StringRef ptx, llvm::StringRef arch) {
  std::string archOption = ("--gpu-name=" + arch).str();
  const char *options[] = {archOption.c_str(), "-O3", "--verbose"};
  nvPTXCompilerHandle handle = nullptr;
  nvPTXCompileResult result =
      nvPTXCompilerCreate(&handle, ptx.size(), ptx.data());
  if (result != NVPTXCOMPILE_SUCCESS)
    return llvm::createStringError(llvm::formatv(
        "nvPTXCompilerCreate failed: {0}", getResultName(result)));
  auto readLog = [&](auto getSize, auto getLog) {
    return readCompilerLog(handle, NVPTXCOMPILE_SUCCESS, getSize, getLog);
  };
  LinkedCubin compiled;
  result = nvPTXCompilerCompile(handle, std::size(options), options);
  if (result == NVPTXCOMPILE_SUCCESS) {
    size_t size = 0;
    result = nvPTXCompilerGetCompiledProgramSize(handle, &size);
    if (result == NVPTXCOMPILE_SUCCESS) {
      compiled.cubin.resize(size);
      result = nvPTXCompilerGetCompiledProgram(handle, compiled.cubin.data());
    }
  }
  compiled.infoLog =
      readLog(nvPTXCompilerGetInfoLogSize, nvPTXCompilerGetInfoLog);
  std::string failure;
  if (result != NVPTXCOMPILE_SUCCESS)
    failure =
        llvm::formatv(
            "the PTX compiler {0} failed compiling PTX for {1}: {2}\n{3}",
            getPtxCompilerVersion().str(), arch, getResultName(result),
            readLog(nvPTXCompilerGetErrorLogSize, nvPTXCompilerGetErrorLog))
            .str();
  nvPTXCompilerDestroy(&handle);
  if (!failure.empty())
    return llvm::createStringError(failure);
  return compiled;
}
