//===- CAPITest.cpp - the C API's statuses and messages -------------------===//
//
// Part of FlashCore. Runs anywhere: without a driver it checks that the
// failure is reported with its message; with one it compiles and launches.
//
//===----------------------------------------------------------------------===//

#include "fmha-c/FlashCore.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>

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
  EXPECT_EQ(fmhaKernelLaunch(nullptr, nullptr, dims, dims, 0, nullptr,
                             &message),
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

TEST(CAPI, AMissingDriverIsReportedNotFatal) {
  // Point at a library that does not exist, whatever this machine has.
  ::setenv("FMHA_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  fmhaJit jit = nullptr;
  char *message = nullptr;
  EXPECT_EQ(fmhaJitCreate(nullptr, &jit, &message), FMHA_ERROR_FAILED);
  EXPECT_EQ(jit, nullptr);
  std::string text = take(message);
  EXPECT_NE(text.find("no CUDA driver: cannot open /nonexistent/libcuda.so.1"),
            std::string::npos)
      << text;
  // A success leaves no message to free.
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  EXPECT_EQ(options.chip, nullptr);
  EXPECT_EQ(options.device, 0);
}

} // namespace
