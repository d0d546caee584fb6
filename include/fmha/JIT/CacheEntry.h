//===- CacheEntry.h - one module as the JIT's disk cache holds it -*- C++ -*-=//
//
// Part of FlashCore. What the JIT stores under a module's cache key: the
// launch contracts of its kernels and the image the driver loads (a cubin,
// or PTX on the driver-JIT path). DiskCache makes entries atomic,
// checksummed and bounded; this is only their payload, so that the payload
// written for each load path is tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_CACHEENTRY_H
#define FMHA_JIT_CACHEENTRY_H

#include "fmha/Dialect/Fmha/LaunchContract.h"
#include "fmha/JIT/Compile.h"
#include "fmha/Runtime/LoadPlan.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace mlir::fmha {

struct CacheEntry {
  /// The launch contract of each kernel that has one, by kernel name.
  std::map<std::string, LaunchContract> contracts;
  /// What the driver loads.
  std::string image;
};

/// Whether \p path hands the driver PTX (which it compiles at every load)
/// rather than a cubin.
inline bool isPtxImage(LoadPath path) { return path == LoadPath::DriverJit; }

/// The entry of \p compiled (compiled with getCompileOptions(plan)) for
/// \p path: its PTX on the driver-JIT path, its cubin otherwise.
CacheEntry makeCacheEntry(LoadPath path, CompiledModule compiled);

/// The payload of \p entry: the contracts as one JSON object, a NUL, then
/// the image.
std::string encodeCacheEntry(const CacheEntry &entry);

/// The entry encodeCacheEntry wrote as \p payload; an error when it is not
/// one (the JIT then compiles anew and overwrites it).
llvm::Expected<CacheEntry> decodeCacheEntry(llvm::StringRef payload);

} // namespace mlir::fmha

#endif // FMHA_JIT_CACHEENTRY_H
