//===- Environment.h - every environment variable FlashCore reads -*- C++ -*-=//
//
// Part of FlashCore. The one place the libraries read the environment, so
// that every setting a user can make is listed, with its meaning, here:
//
//   CUDA_HOME             where the CUDA toolkit is (libdevice, nvJitLink,
//                         cuobjdump), before the configured one
//   FMHA_LIBCUDA          the driver library to open (default libcuda.so.1)
//   FMHA_NVJITLINK        the nvJitLink library to open, or "off"
//   FMHA_DRIVER_JIT       "off": link with nvJitLink rather than compile a
//                         whole program (PTX compiler or driver's JIT)
//                         where both work
//   FMHA_PTX_COMPILER     "off": hand PTX to the driver's JIT (which compiles
//                         it at every load) rather than cache whole-program
//                         cubins from FlashCore's own PTX compiler
//   FMHA_CACHE_DIR        the JIT's disk cache directory, or "off"
//   FMHA_CACHE_MAX_BYTES  the disk cache's size bound (default 1 GiB)
//   FMHA_MAX_SHARED_BYTES the shared memory a block may take, where less
//                         than the device allows: the JIT picks and checks
//                         tiles against it (an sm_86 or sm_89 GPU's 99 KB,
//                         101376, run on an A100 or Hopper GPU)
//   XDG_CACHE_HOME, HOME  where the disk cache goes by default
//
// Tools, examples and benchmarks have options of their own; the Python
// package reads one more, FLASHCORE_LIBRARY (python/flashcore/_capi.py: the
// libflashcore.so to load instead of its own).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_SUPPORT_ENVIRONMENT_H
#define FMHA_SUPPORT_ENVIRONMENT_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::fmha {

/// The environment variables FlashCore's libraries read (see above).
enum class Setting {
  CudaHome,
  LibCuda,
  NvJitLink,
  DriverJit,
  PtxCompiler,
  CacheDir,
  CacheMaxBytes,
  MaxSharedBytes,
  XdgCacheHome,
  Home,
};

/// The variable's name, e.g. "FMHA_CACHE_DIR".
llvm::StringRef getSettingName(Setting setting);

/// The variable's value now (read anew: a process may change it), or
/// std::nullopt when it is unset.
std::optional<std::string> readSetting(Setting setting);

} // namespace mlir::fmha

#endif // FMHA_SUPPORT_ENVIRONMENT_H
