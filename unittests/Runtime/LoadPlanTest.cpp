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
