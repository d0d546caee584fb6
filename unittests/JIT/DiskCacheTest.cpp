//===- DiskCacheTest.cpp - keys, corruption, concurrency, eviction --------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/DiskCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::fmha;
namespace fs = llvm::sys::fs;
using namespace std::string_literals;

namespace {

class DiskCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("fmha-cache-test", directory));
  }
  void TearDown() override { fs::remove_directories(directory); }

  std::string key(llvm::StringRef name) {
    return computeCacheKey({name.str()});
  }

  /// Overwrites the entry file of \p k with \p bytes.
  void writeRaw(DiskCache &cache, llvm::StringRef k, llvm::StringRef bytes) {
    std::error_code ec;
    llvm::raw_fd_ostream os(cache.getEntryPath(k), ec);
    ASSERT_FALSE(ec);
    os << bytes;
  }

  std::string readRaw(DiskCache &cache, llvm::StringRef k) {
    auto buffer = llvm::MemoryBuffer::getFile(cache.getEntryPath(k));
    return buffer ? (*buffer)->getBuffer().str() : std::string();
  }

  void setAge(DiskCache &cache, llvm::StringRef k, int secondsAgo) {
    int fd;
    ASSERT_FALSE(fs::openFileForWrite(cache.getEntryPath(k), fd,
                                      fs::CD_OpenExisting, fs::OF_Append));
    ASSERT_FALSE(fs::setLastAccessAndModificationTime(
        fd,
        std::chrono::system_clock::now() - std::chrono::seconds(secondsAgo)));
    ::close(fd);
  }

  llvm::SmallString<128> directory;
};

TEST(CacheKey, DependsOnEveryPartAndItsBoundaries) {
  std::string base = computeCacheKey({"ab", "c"});
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, computeCacheKey({"ab", "c"}));
  EXPECT_NE(base, computeCacheKey({"a", "bc"}));
  EXPECT_NE(base, computeCacheKey({"ab", "c", ""}));
  EXPECT_NE(base, computeCacheKey({"ab", "d"}));
}

TEST_F(DiskCacheTest, StoresAndLoads) {
  DiskCache cache(directory.str().str(), 1 << 20);
  EXPECT_FALSE(cache.load(key("a")));
  ASSERT_FALSE(static_cast<bool>(cache.store(key("a"), "cubin bytes\0x"s)));
  std::optional<std::string> loaded = cache.load(key("a"));
  ASSERT_TRUE(loaded);
  EXPECT_EQ(*loaded, "cubin bytes\0x"s);
  EXPECT_EQ(cache.getCorruptCount(), 0u);
}

TEST_F(DiskCacheTest, FlippedByteIsDetectedDeletedAndAMiss) {
  DiskCache cache(directory.str().str(), 1 << 20);
  ASSERT_FALSE(static_cast<bool>(cache.store(key("a"), "payload payload")));
  std::string bytes = readRaw(cache, key("a"));
  bytes.back() ^= 1;
  writeRaw(cache, key("a"), bytes);
  EXPECT_FALSE(cache.load(key("a")));
  EXPECT_EQ(cache.getCorruptCount(), 1u);
  EXPECT_FALSE(fs::exists(cache.getEntryPath(key("a"))));
  // Rebuilt after.
  ASSERT_FALSE(static_cast<bool>(cache.store(key("a"), "payload payload")));
  EXPECT_EQ(cache.load(key("a")).value_or(""), "payload payload");
}

TEST_F(DiskCacheTest, TruncatedAndForeignEntriesAreMisses) {
  DiskCache cache(directory.str().str(), 1 << 20);
  ASSERT_FALSE(static_cast<bool>(cache.store(key("a"), "0123456789")));
  std::string bytes = readRaw(cache, key("a"));
  writeRaw(cache, key("a"), bytes.substr(0, bytes.size() - 3));
  EXPECT_FALSE(cache.load(key("a")));
  writeRaw(cache, key("b"), "not a cache entry at all");
  EXPECT_FALSE(cache.load(key("b")));
  // An intact entry copied under another key's name.
  ASSERT_FALSE(static_cast<bool>(cache.store(key("c"), "0123456789")));
  writeRaw(cache, key("d"), readRaw(cache, key("c")));
  EXPECT_FALSE(cache.load(key("d")));
  EXPECT_EQ(cache.getCorruptCount(), 3u);
}

TEST_F(DiskCacheTest, EvictsLeastRecentlyUsedFirst) {
  std::string payload(1000, 'x');
  DiskCache cache(directory.str().str(), 1 << 20);
  for (const char *name : {"old", "used", "new"})
    ASSERT_FALSE(static_cast<bool>(cache.store(key(name), payload)));
  setAge(cache, key("old"), 300);
  setAge(cache, key("used"), 200);
  setAge(cache, key("new"), 100);
  ASSERT_TRUE(cache.load(key("used"))); // now the most recently used
  // Room for two entries (each 1000 bytes of payload plus a header).
  DiskCache bounded(directory.str().str(), 2300);
  bounded.evict();
  EXPECT_FALSE(fs::exists(cache.getEntryPath(key("old"))));
  EXPECT_TRUE(fs::exists(cache.getEntryPath(key("used"))));
  EXPECT_TRUE(fs::exists(cache.getEntryPath(key("new"))));
}

TEST_F(DiskCacheTest, RemovesTemporaryFilesOfDeadWriters) {
  DiskCache cache(directory.str().str(), 1 << 20);
  llvm::SmallString<128> stale(directory);
  llvm::sys::path::append(stale, "abc-12345678.part");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(stale, ec);
    os << "half written";
  }
  int fd;
  ASSERT_FALSE(
      fs::openFileForWrite(stale, fd, fs::CD_OpenExisting, fs::OF_Append));
  ASSERT_FALSE(fs::setLastAccessAndModificationTime(
      fd, std::chrono::system_clock::now() - std::chrono::hours(2)));
  ::close(fd);
  cache.evict();
  EXPECT_FALSE(fs::exists(stale));
}

// Many processes writing the same and different keys at once: every entry
// read afterwards is whole, and no temporary file is left behind.
TEST_F(DiskCacheTest, ConcurrentWritersInSeparateProcesses) {
  constexpr int kWriters = 8, kKeys = 16;
  std::string payload(64 * 1024, 'p');
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DiskCache cache(directory.str().str(), 1 << 30);
      for (int round = 0; round < 4; ++round)
        for (int k = 0; k < kKeys; ++k) {
          std::string value = payload + std::to_string(k);
          if (cache.store(computeCacheKey({std::to_string(k)}), value))
            _exit(1);
          std::optional<std::string> read =
              cache.load(computeCacheKey({std::to_string((k + w) % kKeys)}));
          if (read &&
              read->substr(payload.size()) != std::to_string((k + w) % kKeys))
            _exit(2);
        }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  DiskCache cache(directory.str().str(), 1 << 30);
  for (int k = 0; k < kKeys; ++k)
    EXPECT_EQ(cache.load(computeCacheKey({std::to_string(k)})).value_or(""),
              payload + std::to_string(k));
  EXPECT_EQ(cache.getCorruptCount(), 0u);
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; it != end && !ec;
       it.increment(ec))
    EXPECT_FALSE(llvm::StringRef(it->path()).ends_with(".part")) << it->path();
}

TEST(DiskCacheDefaults, EnvironmentMovesOrDisablesTheCache) {
  ::setenv("FMHA_CACHE_DIR", "/tmp/somewhere", 1);
  EXPECT_EQ(DiskCache::getDefaultDirectory().value_or(""), "/tmp/somewhere");
  ::setenv("FMHA_CACHE_DIR", "off", 1);
  EXPECT_FALSE(DiskCache::getDefaultDirectory());
  ::unsetenv("FMHA_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(DiskCache::getDefaultDirectory().value_or(""), "/xdg/flashcore");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DiskCache::getDefaultDirectory().value_or(""),
            "/home/u/.cache/flashcore");
  ::setenv("FMHA_CACHE_MAX_BYTES", "4096", 1);
  EXPECT_EQ(DiskCache::getDefaultMaxBytes(), 4096u);
  ::unsetenv("FMHA_CACHE_MAX_BYTES");
  EXPECT_EQ(DiskCache::getDefaultMaxBytes(), uint64_t(1) << 30);
}

} // namespace
