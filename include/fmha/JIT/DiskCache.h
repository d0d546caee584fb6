//===- DiskCache.h - compiled kernels on disk -------------------*- C++ -*-===//
//
// Part of FlashCore. One file per entry, named by its key. Writes are atomic
// (a unique temporary file, then rename), so concurrent processes never see
// a partial entry; each entry carries its key, size and checksum, so a
// truncated or corrupt file is detected, deleted and rebuilt; the directory
// is bounded in bytes and evicts the least recently used entries first.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_DISKCACHE_H
#define FMHA_JIT_DISKCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::fmha {

/// The SHA-256 (hex) of \p parts, each length-prefixed so that no two
/// different lists of parts give the same bytes.
std::string computeCacheKey(llvm::ArrayRef<std::string> parts);

class DiskCache {
public:
  /// Where the cache lives unless told otherwise: $FMHA_CACHE_DIR, else
  /// $XDG_CACHE_HOME/flashcore, else $HOME/.cache/flashcore. std::nullopt
  /// when $FMHA_CACHE_DIR is "off" (caching disabled) or no home is known.
  static std::optional<std::string> getDefaultDirectory();
  /// $FMHA_CACHE_MAX_BYTES, else 1 GiB.
  static uint64_t getDefaultMaxBytes();

  DiskCache(std::string directory, uint64_t maxBytes)
      : directory(std::move(directory)), maxBytes(maxBytes) {}

  /// The payload stored under \p key, or std::nullopt on a miss. A hit
  /// marks the entry recently used. A damaged entry is deleted, counted in
  /// getCorruptCount(), and reported as a miss.
  std::optional<std::string> load(llvm::StringRef key);
  /// Stores \p payload under \p key, then evicts down to the size bound.
  llvm::Error store(llvm::StringRef key, llvm::StringRef payload);
  /// Deletes least recently used entries until at most maxBytes remain, and
  /// temporary files that a crashed writer left behind.
  void evict();

  llvm::StringRef getDirectory() const { return directory; }
  std::string getEntryPath(llvm::StringRef key) const;
  unsigned getCorruptCount() const { return corruptCount.load(); }

private:
  std::string directory;
  uint64_t maxBytes;
  /// Atomic: the JIT's threads (JIT::precompile) share one cache.
  std::atomic<unsigned> corruptCount{0};
};

} // namespace mlir::fmha

#endif // FMHA_JIT_DISKCACHE_H
