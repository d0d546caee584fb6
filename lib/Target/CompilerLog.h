//===- CompilerLog.h - Logs of NVIDIA's compiler libraries ------*- C++ -*-===//
//
// nvJitLink (NvJitLink.cpp) and the PTX compiler library (PtxCompiler.cpp)
// report a log the same way: its size including the terminating NUL, then
// the text into a buffer of that size.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_LIB_TARGET_COMPILERLOG_H
#define FMHA_LIB_TARGET_COMPILERLOG_H

#include <cstddef>
#include <string>

namespace mlir::fmha {

/// The log that \p getSize and \p getLog read from \p handle, without its
/// NUL; empty when there is none or reading its size fails.
template <typename Handle, typename Result, typename GetSize, typename GetLog>
std::string readCompilerLog(Handle handle, Result success, GetSize getSize,
                            GetLog getLog) {
  size_t size = 0;
  std::string log;
  if (getSize(handle, &size) == success && size > 1) {
    log.resize(size);
    getLog(handle, log.data());
    log.resize(size - 1);
  }
  return log;
}

} // namespace mlir::fmha

#endif // FMHA_LIB_TARGET_COMPILERLOG_H
