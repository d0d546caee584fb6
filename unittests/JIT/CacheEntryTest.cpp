//===- CacheEntryTest.cpp - what the disk cache holds on each load path ---===//
//
// Part of FlashCore. The PTX compiler path's entries are whole-program
// cubins for the plan's arch, written and read back through a DiskCache,
// without a GPU.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/CacheEntry.h"
#include "fmha/JIT/Compile.h"
#include "fmha/JIT/DiskCache.h"
#include "fmha/Target/PtxCompiler.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace mlir::fmha;
namespace fs = llvm::sys::fs;

namespace {

constexpr ComputeCapability kH100{9, 0};
constexpr uint16_t kElfMachineCuda = 190;

/// The SM number a CUDA ELF's header names (90 for sm_90 and sm_90a), or 0
/// when \p image is not a 64-bit CUDA ELF.
unsigned getCubinSm(llvm::StringRef image) {
  using namespace llvm::support::endian;
  if (image.size() < 64 ||
      !image.starts_with("\x7f"
                         "ELF") ||
      image[4] != 2 || read16le(image.data() + 18) != kElfMachineCuda)
    return 0;
  uint32_t flags = read32le(image.data() + 48);
  // ELF ABI version 8 (CUDA 12.8 and newer) moved the SM from the low byte
  // of e_flags to the next one.
  return static_cast<unsigned char>(image[8]) >= 8 ? (flags >> 8) & 0xff
                                                   : flags & 0xff;
}

/// cuobjdump from PATH, CUDA_HOME or the setup script's .tools, if any.
std::optional<std::string> findCuobjdump() {
  if (llvm::ErrorOr<std::string> found =
          llvm::sys::findProgramByName("cuobjdump"))
    return *found;
  llvm::SmallVector<std::string> paths = {FLASHCORE_SOURCE_DIR
                                          "/.tools/pypi/nvidia/cu13/bin",
                                          "/usr/local/cuda/bin"};
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    paths.push_back(std::string(cudaHome) + "/bin");
  llvm::SmallVector<llvm::StringRef> refs(paths.begin(), paths.end());
  if (llvm::ErrorOr<std::string> found =
          llvm::sys::findProgramByName("cuobjdump", refs))
    return *found;
  return std::nullopt;
}

/// cuobjdump -sass of \p cubin, or std::nullopt without cuobjdump.
std::optional<std::string> disassemble(llvm::StringRef cubin) {
  std::optional<std::string> cuobjdump = findCuobjdump();
  if (!cuobjdump)
    return std::nullopt;
  llvm::SmallString<128> input, output;
  if (fs::createTemporaryFile("fmha-entry", "cubin", input) ||
      fs::createTemporaryFile("fmha-entry", "sass", output))
    return std::nullopt;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input, ec);
    os << cubin;
  }
  llvm::StringRef args[] = {*cuobjdump, "-sass", input};
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(output), llvm::StringRef(output)};
  int status =
      llvm::sys::ExecuteAndWait(*cuobjdump, args, std::nullopt, redirects);
  auto buffer = llvm::MemoryBuffer::getFile(output);
  fs::remove(input);
  fs::remove(output);
  if (status != 0 || !buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

class CacheEntryTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("fmha-entry-test", directory));
  }
  void TearDown() override { fs::remove_directories(directory); }

  /// The plan of \p chip on an H100 with this build's PTX compiler and a
  /// driver as new.
  LoadPlan planWithThePtxCompiler(Chip chip) {
    CudaVersion compiler = getPtxCompilerVersion();
    llvm::Expected<LoadPlan> plan =
        planLoad(chip, kH100, "H100", compiler, std::nullopt, "not needed",
                 /*preferDriverJit=*/true, compiler);
    if (!plan) {
      ADD_FAILURE() << llvm::toString(plan.takeError());
      return {};
    }
    return *plan;
  }

  /// Compiles \p spec as \p plan says and stores its entry under \p key, as
  /// the JIT does; the linker's info log goes to \p log.
  void compileAndStore(const KernelSpec &spec, const LoadPlan &plan,
                       DiskCache &cache, llvm::StringRef key,
                       std::string &log) {
    llvm::Expected<CompiledModule> compiled =
        compileKernelSpec(spec, getCompileOptions(plan));
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError());
    log = compiled->linkLog;
    ASSERT_FALSE(static_cast<bool>(cache.store(
        key, encodeCacheEntry(makeCacheEntry(plan.path, *compiled)))));
  }

  llvm::SmallString<128> directory;
};

// The sm_90a attention kernel as a whole program: setmaxnreg kept, WGMMA
// not serialized (nvJitLink's relocatable compile warns C7504 and C7509),
// no local memory.
TEST_F(CacheEntryTest, PtxCompilerEntryIsAWholeProgramCubinForTheArch) {
  LoadPlan plan = planWithThePtxCompiler(Chip::sm_90a);
  ASSERT_EQ(plan.path, LoadPath::PtxCompiler);
  KernelSpec spec;
  spec.headDim = 128;
  spec.causal = true;
  DiskCache cache(directory.str().str(), 1 << 30);
  std::string key = computeCacheKey({"sm_90a attention"}), log;
  compileAndStore(spec, plan, cache, key, log);
  EXPECT_EQ(log.find("C7504"), std::string::npos) << log;
  EXPECT_EQ(log.find("C7509"), std::string::npos) << log;
  EXPECT_FALSE(llvm::Regex("[1-9][0-9]* bytes spill").match(log)) << log;

  std::optional<std::string> payload = cache.load(key);
  ASSERT_TRUE(payload);
  llvm::Expected<CacheEntry> entry = decodeCacheEntry(*payload);
  ASSERT_TRUE(static_cast<bool>(entry)) << llvm::toString(entry.takeError());
  EXPECT_EQ(getCubinSm(entry->image), 90u);
  EXPECT_EQ(entry->image.find(".version"), std::string::npos);
  EXPECT_EQ(entry->contracts.count(spec.getKernelName().str()), 1u);

  std::optional<std::string> sass = disassemble(entry->image);
  if (!sass)
    GTEST_SKIP() << "no cuobjdump: the SASS is not checked";
  EXPECT_NE(sass->find("code for sm_90a"), std::string::npos) << *sass;
  EXPECT_NE(sass->find("HGMMA"), std::string::npos);
  EXPECT_EQ(sass->find("STL"), std::string::npos);
  EXPECT_EQ(sass->find("LDL"), std::string::npos);
}

// The sm_80 chip's PTX on a 9.0 device compiles for the device's arch.
TEST_F(CacheEntryTest, Sm80ChipOnHopperIsACubinForSm90) {
  LoadPlan plan = planWithThePtxCompiler(Chip::sm_80);
  ASSERT_EQ(plan.path, LoadPath::PtxCompiler);
  ASSERT_EQ(plan.linkArch, "sm_90");
  KernelSpec spec;
  spec.headDim = 64;
  DiskCache cache(directory.str().str(), 1 << 30);
  std::string key = computeCacheKey({"sm_80 attention"}), log;
  compileAndStore(spec, plan, cache, key, log);
  llvm::Expected<CacheEntry> entry =
      decodeCacheEntry(cache.load(key).value_or(""));
  ASSERT_TRUE(static_cast<bool>(entry)) << llvm::toString(entry.takeError());
  EXPECT_EQ(getCubinSm(entry->image), 90u);
  if (std::optional<std::string> sass = disassemble(entry->image)) {
    EXPECT_NE(sass->find("code for sm_90\n"), std::string::npos) << *sass;
  }
}

// The driver-JIT path stores the PTX, which the driver compiles at load.
TEST_F(CacheEntryTest, DriverJitEntryIsThePtx) {
  llvm::Expected<LoadPlan> plan = planLoad(Chip::sm_90a, kH100, "H100", {13, 0},
                                           std::nullopt, "not needed");
  ASSERT_TRUE(static_cast<bool>(plan));
  ASSERT_EQ(plan->path, LoadPath::DriverJit);
  CompileOptions options = getCompileOptions(*plan);
  EXPECT_FALSE(options.linkArch);
  CompiledModule compiled;
  compiled.ptx = ".version 9.0\n.target sm_90a\n";
  compiled.cubin = "unused";
  CacheEntry entry = makeCacheEntry(plan->path, compiled);
  EXPECT_EQ(entry.image, compiled.ptx);
}

// A damaged entry is a miss (the JIT compiles anew and overwrites it):
// bytes flipped under the checksum, and a payload that checksums but is not
// an entry (another build's format).
TEST_F(CacheEntryTest, DamagedEntriesAreMissesAndRebuilt) {
  DiskCache cache(directory.str().str(), 1 << 30);
  CacheEntry entry;
  entry.image = std::string("\x7f"
                            "ELF\2\1\1A",
                            8) +
                std::string(200, '\0');
  std::string key = computeCacheKey({"entry"});
  ASSERT_FALSE(static_cast<bool>(cache.store(key, encodeCacheEntry(entry))));

  std::string path = cache.getEntryPath(key);
  auto bytes = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(bytes));
  std::string damaged = (*bytes)->getBuffer().str();
  damaged[damaged.size() / 2] ^= 0x40;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << damaged;
  }
  EXPECT_FALSE(cache.load(key));
  EXPECT_EQ(cache.getCorruptCount(), 1u);
  ASSERT_FALSE(static_cast<bool>(cache.store(key, encodeCacheEntry(entry))));
  llvm::Expected<CacheEntry> rebuilt =
      decodeCacheEntry(cache.load(key).value_or(""));
  ASSERT_TRUE(static_cast<bool>(rebuilt))
      << llvm::toString(rebuilt.takeError());
  EXPECT_EQ(rebuilt->image, entry.image);

  for (llvm::StringRef foreign :
       {llvm::StringRef("no contracts"), llvm::StringRef("{}\0", 3),
        llvm::StringRef("[]\0image", 8)}) {
    llvm::Expected<CacheEntry> decoded = decodeCacheEntry(foreign);
    EXPECT_FALSE(static_cast<bool>(decoded)) << foreign.str();
    llvm::consumeError(decoded.takeError());
  }
}

} // namespace
