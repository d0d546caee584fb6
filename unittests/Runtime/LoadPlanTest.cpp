//===- LoadPlanTest.cpp - load decisions with injected versions -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/LoadPlan.h"

#include "gtest/gtest.h"

using namespace mlir::fmha;

namespace {

constexpr ComputeCapability kH100{9, 0};
constexpr ComputeCapability kA100{8, 0};

std::string errorOf(llvm::Expected<LoadPlan> plan) {
  return plan ? std::string("<no error>") : llvm::toString(plan.takeError());
}

TEST(LoadPlan, PreferredChip) {
  EXPECT_EQ(getPreferredChip(kH100), Chip::sm_90a);
  EXPECT_EQ(getPreferredChip(kA100), Chip::sm_80);
  EXPECT_EQ(getPreferredChip({8, 9}), Chip::sm_80);
  EXPECT_EQ(getPreferredChip({10, 0}), Chip::sm_80);
}

// nvJitLink's relocatable compile spills more (sm_80) and ignores
// setmaxnreg (sm_90a): both chips go through the driver's whole-program JIT
// when the driver takes their PTX (LoadPlan.cpp).
TEST(LoadPlan, BothChipsPreferTheDriversWholeProgramJit) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_90a, kH100, "H100", {13, 0}, CudaVersion{13, 0}, "");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->linkArch, "sm_90a");
  EXPECT_EQ(plan->ptxIsa, (PtxIsa{9, 0}));
  EXPECT_EQ(plan->reason, "the driver (CUDA 13.0) compiles the sm_90a PTX "
                          "for sm_90a as a whole program");

  plan = planLoad(Chip::sm_80, kA100, "A100", {13, 0}, CudaVersion{13, 0}, "");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->linkArch, "sm_80");
  EXPECT_EQ(plan->ptxIsa, (PtxIsa{9, 0}));
}

TEST(LoadPlan, Sm80KernelsRunOnHopperLinkedForSm90) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_80, kH100, "H100", {13, 0}, CudaVersion{13, 0}, "");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->linkArch, "sm_90");
}

// The driver's JIT takes the newest PTX ISA the driver accepts, whatever
// nvJitLink there is.
TEST(LoadPlan, TheDriversJitGetsTheDriversIsa) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_80, kA100, "A100", {12, 4}, CudaVersion{13, 0}, "");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->ptxIsa, (PtxIsa{8, 4}));

  plan = planLoad(Chip::sm_80, kH100, "H100", {12, 8}, std::nullopt,
                  "not found");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->ptxIsa, (PtxIsa{8, 7}));
}

// A driver too old for the chip's PTX: nvJitLink of the same major version
// links a cubin that it loads.
TEST(LoadPlan, DriverTooOldForThePtxLinksWithNvJitLink) {
  llvm::Expected<LoadPlan> plan = planLoad(Chip::sm_90a, kH100, "H100",
                                           {12, 4}, CudaVersion{12, 9}, "");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::NvJitLink);
  EXPECT_EQ(plan->linkArch, "sm_90a");
  EXPECT_EQ(plan->reason,
            "the driver (CUDA 12.4) does not take the sm_90a PTX; nvJitLink "
            "12.9 links it for sm_90a and the driver loads the cubin");
}

// FMHA_DRIVER_JIT=off: nvJitLink wherever it can link, the driver's JIT
// where it cannot.
TEST(LoadPlan, DriverJitSetAsideTakesNvJitLinkWhereItCanLink) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_80, kH100, "H100", {13, 0}, CudaVersion{13, 0}, "",
               /*preferDriverJit=*/false);
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::NvJitLink);
  EXPECT_EQ(plan->reason,
            "the driver's JIT set aside (FMHA_DRIVER_JIT=off); nvJitLink 13.0 "
            "links it for sm_90 and the driver loads the cubin");

  plan = planLoad(Chip::sm_80, kH100, "H100", {12, 8}, std::nullopt,
                  "not found", /*preferDriverJit=*/false);
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
}

// The PTX compiler library's whole-program cubin, when the driver is at
// least as new as the compiler: the disk cache then holds a cubin that
// loads with no compile at all.
TEST(LoadPlan, PtxCompilerCubinWhenTheDriverIsAsNew) {
  for (CudaVersion driver : {CudaVersion{13, 0}, CudaVersion{13, 1}}) {
    llvm::Expected<LoadPlan> plan =
        planLoad(Chip::sm_90a, kH100, "H100", driver, CudaVersion{13, 0}, "",
                 /*preferDriverJit=*/true, CudaVersion{13, 0});
    ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->path, LoadPath::PtxCompiler);
    EXPECT_EQ(plan->linkArch, "sm_90a");
    EXPECT_EQ(plan->ptxIsa, (PtxIsa{9, 0}));
    EXPECT_EQ(plan->reason,
              "the PTX compiler (CUDA 13.0) compiles the sm_90a PTX for "
              "sm_90a as a whole program and the driver (CUDA " +
                  driver.str() + ") loads the cubin");
  }
  // The sm_80 chip's PTX on a 9.0 device compiles for the device's arch.
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_80, kH100, "H100", {13, 0}, std::nullopt, "not found",
               /*preferDriverJit=*/true, CudaVersion{13, 0});
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::PtxCompiler);
  EXPECT_EQ(plan->linkArch, "sm_90");
}

// A driver older than the compiler may not load its cubins: the driver's
// JIT compiles the PTX, and the plan says why.
TEST(LoadPlan, DriverOlderThanThePtxCompilerJitsThePtx) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_90a, kH100, "H100", {12, 9}, CudaVersion{12, 9}, "",
               /*preferDriverJit=*/true, CudaVersion{13, 0});
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->ptxIsa, (PtxIsa{8, 8}));
  EXPECT_EQ(plan->reason,
            "the driver (CUDA 12.9) is older than the PTX compiler (CUDA "
            "13.0) and may not load its cubins; the driver (CUDA 12.9) "
            "compiles the sm_90a PTX for sm_90a as a whole program");

  // Older still than the chip's PTX: nvJitLink, with both reasons.
  plan = planLoad(Chip::sm_90a, kH100, "H100", {12, 4}, CudaVersion{12, 9}, "",
                  /*preferDriverJit=*/true, CudaVersion{13, 0});
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::NvJitLink);
  EXPECT_EQ(plan->reason,
            "the driver (CUDA 12.4) is older than the PTX compiler (CUDA "
            "13.0) and may not load its cubins; the driver (CUDA 12.4) does "
            "not take the sm_90a PTX; nvJitLink 12.9 links it for sm_90a and "
            "the driver loads the cubin");
}

// FMHA_PTX_COMPILER=off: the driver's JIT, saying so; FMHA_DRIVER_JIT=off
// still takes nvJitLink first, to measure the fallback.
TEST(LoadPlan, EnvironmentSetsThePtxCompilerAside) {
  llvm::Expected<LoadPlan> plan =
      planLoad(Chip::sm_90a, kH100, "H100", {13, 0}, CudaVersion{13, 0}, "",
               /*preferDriverJit=*/true, std::nullopt,
               "the PTX compiler set aside (FMHA_PTX_COMPILER=off)");
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::DriverJit);
  EXPECT_EQ(plan->reason,
            "the PTX compiler set aside (FMHA_PTX_COMPILER=off); the driver "
            "(CUDA 13.0) compiles the sm_90a PTX for sm_90a as a whole "
            "program");

  plan = planLoad(Chip::sm_80, kH100, "H100", {13, 0}, CudaVersion{13, 0}, "",
                  /*preferDriverJit=*/false, CudaVersion{13, 0});
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan->path, LoadPath::NvJitLink);
}

TEST(LoadPlan, Sm90aKernelOnAnAmpereDeviceSaysWhatToCompile) {
  EXPECT_EQ(errorOf(planLoad(Chip::sm_90a, kA100, "NVIDIA A100-SXM4-80GB",
                             {13, 0}, CudaVersion{13, 0}, "")),
            "kernel built for sm_90a (WGMMA, TMA), which runs only on compute "
            "capability 9.0 (H100, H200), but the device is sm_80 (NVIDIA "
            "A100-SXM4-80GB): compile with chip=sm_80");
}

TEST(LoadPlan, PreAmpereDevicesHaveNoKernels) {
  EXPECT_EQ(errorOf(planLoad(Chip::sm_80, {7, 5}, "Tesla T4", {13, 0},
                             CudaVersion{13, 0}, "")),
            "kernel built for sm_80 needs compute capability 8.0 or newer, "
            "but the device is sm_75 (Tesla T4): FlashCore has no kernels "
            "for this GPU");
}

TEST(LoadPlan, DriverTooOldForTheChipNamesBothVersions) {
  EXPECT_EQ(errorOf(planLoad(Chip::sm_90a, kH100, "H100", {11, 8}, std::nullopt,
                             "not found")),
            "sm_90a needs PTX ISA 8.6 (CUDA 12.8), but the driver (CUDA 11.8) "
            "accepts PTX ISA up to 7.8: install CUDA 12.8 or newer there "
            "(nvJitLink unavailable: not found)");
}

} // namespace
