//===- CAPITest.cpp - the C API's statuses and messages -------------------===//
//
// Part of FlashCore. Runs anywhere: without a driver it checks that the
// failure is reported with its message; with one it compiles and launches.
//
//===----------------------------------------------------------------------===//

#include "fmha-c/FlashCore.h"
#include "fmha/Runtime/CudaDriver.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// Takes ownership of a C API message.
std::string take(char *message) {
  std::string text = message ? message : "";
  fmhaFreeMessage(message);
  return text;
}

TEST(CAPI, NullArgumentsAreRefusedWithAMessage) {
  char *message = nullptr;
  EXPECT_EQ(fmhaJitCreate(nullptr, nullptr, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaJitCreate: jit must not be NULL");
  fmhaKernel kernel;
  EXPECT_EQ(fmhaJitGetKernelFromSource(nullptr, "", "k", &kernel, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("must not be NULL"), std::string::npos);
  unsigned dims[3] = {1, 1, 1};
  EXPECT_EQ(
      fmhaKernelLaunch(nullptr, nullptr, dims, dims, 0, nullptr, &message),
      FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("must not be NULL"), std::string::npos);
}

TEST(CAPI, UnknownChipIsAnInvalidArgument) {
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  options.chip = "sm_90";
  fmhaJit jit = nullptr;
  char *message = nullptr;
  EXPECT_EQ(fmhaJitCreate(&options, &jit, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(jit, nullptr);
  std::string text = take(message);
  EXPECT_NE(text.find("'sm_90a'"), std::string::npos) << text;
}

// The driver is loaded once per process, so this runs in a child process
// that points FMHA_LIBCUDA at a library that does not exist, whatever this
// machine has.
TEST(CAPI, AMissingDriverIsReportedNotFatal) {
  EXPECT_EXIT(
      {
        ::setenv("FMHA_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
        fmhaJit jit = nullptr;
        char *message = nullptr;
        fmhaStatus status = fmhaJitCreate(nullptr, &jit, &message);
        std::string text = take(message);
        std::fprintf(stderr, "%s\n", text.c_str());
        std::exit(status == FMHA_ERROR_FAILED && jit == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "no CUDA driver: cannot open /nonexistent/libcuda.so.1");
}

TEST(CAPI, OptionDefaults) {
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  EXPECT_EQ(options.chip, nullptr);
  EXPECT_EQ(options.cacheDirectory, nullptr);
  EXPECT_EQ(options.device, 0);
  EXPECT_EQ(options.cacheMaxBytes, 0u);
}

// On a machine with a GPU: compile, launch and check through the C API.
TEST(CAPI, CompilesAndLaunchesOnAGpu) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  options.cacheDirectory = "";
  fmhaJit jit = nullptr;
  char *message = nullptr;
  ASSERT_EQ(fmhaJitCreate(&options, &jit, &message), FMHA_SUCCESS)
      << take(message);
  EXPECT_EQ(message, nullptr);

  const char *source = R"mlir(
    module attributes {gpu.container_module} {
      gpu.module @m {
        gpu.func @iota(%x: memref<?xi32>) kernel {
          %i = gpu.thread_id x
          %v = arith.index_cast %i : index to i32
          memref.store %v, %x[%i] : memref<?xi32>
          gpu.return
        }
      }
    })mlir";
  fmhaKernel kernel = nullptr;
  ASSERT_EQ(fmhaJitGetKernelFromSource(jit, source, "iota", &kernel, &message),
            FMHA_SUCCESS)
      << take(message);
  EXPECT_EQ(fmhaJitGetKernelFromSource(jit, source, "nope", &kernel, &message),
            FMHA_ERROR_FAILED);
  EXPECT_NE(take(message).find("cuModuleGetFunction(nope) failed"),
            std::string::npos);

  constexpr int n = 96;
  llvm::Expected<CUdeviceptr> buffer = driver->allocate(n * sizeof(int32_t));
  ASSERT_TRUE(static_cast<bool>(buffer));
  CUdeviceptr pointer = *buffer;
  int64_t offset = 0, size = n, stride = 1;
  void *arguments[] = {&pointer, &pointer, &offset, &size, &stride};
  unsigned grid[3] = {1, 1, 1}, block[3] = {n, 1, 1};
  ASSERT_EQ(
      fmhaKernelLaunch(kernel, nullptr, grid, block, 0, arguments, &message),
      FMHA_SUCCESS)
      << take(message);
  std::vector<int32_t> host(n, -1);
  ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
  ASSERT_FALSE(static_cast<bool>(
      driver->copyToHost(host.data(), pointer, n * sizeof(int32_t))));
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(host[i], i);
  llvm::consumeError(driver->release(pointer));
  fmhaJitDestroy(jit);
}

} // namespace
