//===- DiskCache.cpp - compiled kernels on disk ---------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/DiskCache.h"
#include "fmha/Support/Environment.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

using namespace mlir;
using namespace mlir::fmha;
namespace fs = llvm::sys::fs;

/// Entry layout: magic, payload size (u64 LE), payload checksum (xxh3, u64
/// LE), the 64-character key, then the payload.
static constexpr llvm::StringLiteral kMagic("FMHAC\x01\r\n");
static constexpr size_t kKeySize = 64;
static constexpr size_t kHeaderSize = 8 + 8 + 8 + kKeySize;
static constexpr llvm::StringLiteral kEntrySuffix(".fmhac");
static constexpr llvm::StringLiteral kTemporarySuffix(".part");
/// A temporary file older than this belongs to a writer that died.
static constexpr std::chrono::hours kStaleTemporaryAge(1);

std::string fmha::computeCacheKey(llvm::ArrayRef<std::string> parts) {
  llvm::SHA256 hash;
  for (const std::string &part : parts) {
    uint8_t length[8];
    llvm::support::endian::write64le(length, part.size());
    hash.update(length);
    hash.update(part);
  }
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::optional<std::string> DiskCache::getDefaultDirectory() {
  if (std::optional<std::string> dir = readSetting(Setting::CacheDir)) {
    if (*dir == "off")
      return std::nullopt;
    return dir;
  }
  std::optional<std::string> xdg = readSetting(Setting::XdgCacheHome);
  if (xdg && !xdg->empty())
    return *xdg + "/flashcore";
  std::optional<std::string> home = readSetting(Setting::Home);
  if (home && !home->empty())
    return *home + "/.cache/flashcore";
  return std::nullopt;
}

uint64_t DiskCache::getDefaultMaxBytes() {
  uint64_t bytes = 0;
  if (std::optional<std::string> text = readSetting(Setting::CacheMaxBytes))
    if (!llvm::StringRef(*text).getAsInteger(10, bytes) && bytes > 0)
      return bytes;
  return uint64_t(1) << 30;
}

std::string DiskCache::getEntryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + kEntrySuffix);
  return path.str().str();
}

std::optional<std::string> DiskCache::load(llvm::StringRef key) {
  std::string path = getEntryPath(key);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt;
  llvm::StringRef bytes = (*file)->getBuffer();
  auto damaged = [&]() -> std::optional<std::string> {
    ++corruptCount;
    fs::remove(path);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderSize || !bytes.starts_with(kMagic))
    return damaged();
  const char *header = bytes.data();
  uint64_t size = llvm::support::endian::read64le(header + 8);
  uint64_t checksum = llvm::support::endian::read64le(header + 16);
  llvm::StringRef storedKey(header + 24, kKeySize);
  llvm::StringRef payload = bytes.drop_front(kHeaderSize);
  if (storedKey != key || payload.size() != size ||
      llvm::xxh3_64bits(payload) != checksum)
    return damaged();

  // Mark as recently used for eviction; failure only costs LRU precision.
  int fd;
  if (!fs::openFileForWrite(path, fd, fs::CD_OpenExisting, fs::OF_Append)) {
    (void)fs::setLastAccessAndModificationTime(
        fd, std::chrono::system_clock::now());
    (void)llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  return payload.str();
}

llvm::Error DiskCache::store(llvm::StringRef key, llvm::StringRef payload) {
  if (key.size() != kKeySize)
    return llvm::createStringError(llvm::formatv(
        "cache keys are {0} hex characters, got '{1}'", kKeySize, key));
  if (std::error_code ec = fs::create_directories(directory))
    return llvm::createStringError(llvm::formatv(
        "cannot create cache directory '{0}': {1}", directory, ec.message()));

  llvm::SmallString<256> model(directory);
  llvm::sys::path::append(model, key + "-%%%%%%%%" + kTemporarySuffix);
  int fd;
  llvm::SmallString<256> temporary;
  if (std::error_code ec = fs::createUniqueFile(model, fd, temporary))
    return llvm::createStringError(
        llvm::formatv("cannot create a file in cache directory '{0}': {1}",
                      directory, ec.message()));
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    char header[kHeaderSize];
    std::copy(kMagic.begin(), kMagic.end(), header);
    llvm::support::endian::write64le(header + 8, payload.size());
    llvm::support::endian::write64le(header + 16, llvm::xxh3_64bits(payload));
    std::copy(key.begin(), key.end(), header + 24);
    os.write(header, kHeaderSize);
    os << payload;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      fs::remove(temporary);
      return llvm::createStringError(llvm::formatv(
          "cannot write cache entry '{0}': {1}", temporary, ec.message()));
    }
  }
  // rename() replaces atomically: readers see the old entry or the new one.
  if (std::error_code ec = fs::rename(temporary, getEntryPath(key))) {
    fs::remove(temporary);
    return llvm::createStringError(
        llvm::formatv("cannot publish cache entry '{0}': {1}",
                      getEntryPath(key), ec.message()));
  }
  evict();
  return llvm::Error::success();
}

void DiskCache::evict() {
  struct Entry {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> lastUse;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef path = it->path();
    fs::file_status status;
    if (fs::status(path, status))
      continue;
    if (path.ends_with(kTemporarySuffix)) {
      if (now - status.getLastModificationTime() > kStaleTemporaryAge)
        fs::remove(path);
      continue;
    }
    if (!path.ends_with(kEntrySuffix))
      continue;
    entries.push_back(
        {path.str(), status.getSize(), status.getLastModificationTime()});
    total += status.getSize();
  }
  if (total <= maxBytes)
    return;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.lastUse < b.lastUse;
  });
  for (const Entry &entry : entries) {
    if (total <= maxBytes)
      break;
    // Another process may have removed it already; either way it is gone.
    fs::remove(entry.path);
    total -= entry.size;
  }
}
