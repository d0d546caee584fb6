//===- DoctorTest.cpp - fmha-doctor's decisions with injected versions ----===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Doctor.h"

#include "gtest/gtest.h"

using namespace mlir::fmha;

namespace {

MachineFacts machine(CudaVersion driver, std::optional<CudaVersion> nvJitLink,
                     std::vector<MachineFacts::Device> devices) {
  MachineFacts facts;
  facts.driver = driver;
  facts.libcudaPath = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  facts.devices = std::move(devices);
  facts.nvJitLink = nvJitLink;
  if (!nvJitLink)
    facts.nvJitLinkProblem = "not found";
  return facts;
}

const MachineFacts::Device kH100{"NVIDIA H100 80GB HBM3", {9, 0}};
const MachineFacts::Device kA100{"NVIDIA A100-SXM4-80GB", {8, 0}};

TEST(Doctor, HealthyHopperMachine) {
  Diagnosis d = diagnose(machine({13, 0}, CudaVersion{13, 0}, {kH100}));
  EXPECT_TRUE(d.jitCanWork);
  EXPECT_TRUE(d.problems.empty());
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.devices[0].preferred, Chip::sm_90a);
  for (const ChipVerdict &v : d.devices[0].chips) {
    ASSERT_TRUE(v.plan) << v.problem;
    // Both chips through the driver's whole-program JIT (LoadPlan.cpp).
    EXPECT_EQ(v.plan->path, LoadPath::DriverJit);
  }
}

TEST(Doctor, HopperMachineWithThePtxCompilerLoadsCubins) {
  MachineFacts facts = machine({13, 0}, CudaVersion{13, 0}, {kH100});
  facts.ptxCompiler = CudaVersion{13, 0};
  Diagnosis d = diagnose(facts);
  EXPECT_TRUE(d.problems.empty());
  for (const ChipVerdict &v : d.devices[0].chips) {
    ASSERT_TRUE(v.plan) << v.problem;
    EXPECT_EQ(v.plan->path, LoadPath::PtxCompiler);
  }
}

TEST(Doctor, NvJitLink13WithA12Driver) {
  Diagnosis d = diagnose(machine({12, 4}, CudaVersion{13, 0}, {kH100}));
  EXPECT_TRUE(d.jitCanWork); // sm_80 through the driver's PTX JIT
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_EQ(
      d.problems[0],
      "nvJitLink 13.0 does not match the driver (CUDA 12.4): its cubins "
      "would not load, so a kernel whose PTX the driver's JIT does not take "
      "has no fallback\n  fix: use nvJitLink 12.x (FMHA_NVJITLINK), or a "
      "driver for CUDA 13");
  // The sm_90a kernels need PTX ISA 8.6, which a 12.4 driver does not take.
  EXPECT_NE(d.problems[1].find("sm_90a needs PTX ISA 8.6 (CUDA 12.8)"),
            std::string::npos)
      << d.problems[1];
  EXPECT_EQ(d.devices[0].chips[0].plan->path, LoadPath::DriverJit);
  EXPECT_EQ(d.devices[0].chips[0].plan->ptxIsa, (PtxIsa{8, 4}));
  EXPECT_FALSE(d.devices[0].chips[1].plan);
}

TEST(Doctor, Driver124CannotLoadPtx90) {
  llvm::Error err = checkDriverAcceptsPtx({9, 0}, {12, 4});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "PTX ISA 9.0 needs a driver for CUDA 13.0 or newer, but the "
            "driver is CUDA 12.4 (PTX ISA up to 8.4): update the NVIDIA "
            "driver, or build the kernels with --ptx-isa=8.4");
  EXPECT_FALSE(static_cast<bool>(checkDriverAcceptsPtx({8, 4}, {12, 4})));
}

TEST(Doctor, Sm90aKernelOnAnSm80Device) {
  Diagnosis d = diagnose(machine({13, 0}, CudaVersion{13, 0}, {kA100}));
  EXPECT_TRUE(d.jitCanWork); // sm_80 runs; sm_90a does not
  EXPECT_TRUE(d.problems.empty());
  EXPECT_EQ(d.devices[0].preferred, Chip::sm_80);
  const ChipVerdict &hopper = d.devices[0].chips[1];
  EXPECT_EQ(hopper.chip, Chip::sm_90a);
  EXPECT_FALSE(hopper.plan);
  EXPECT_NE(hopper.problem.find("compile with chip=sm_80"), std::string::npos);
}

TEST(Doctor, NoDriverMeansNoJit) {
  MachineFacts facts;
  facts.driverProblem = "no CUDA driver: cannot open libcuda.so.1";
  Diagnosis d = diagnose(facts);
  EXPECT_FALSE(d.jitCanWork);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("fix: install the NVIDIA driver"),
            std::string::npos);
}

TEST(Doctor, PreAmpereOnlyMachineCannotRun) {
  Diagnosis d =
      diagnose(machine({13, 0}, CudaVersion{13, 0}, {{"Tesla T4", {7, 5}}}));
  EXPECT_FALSE(d.jitCanWork);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("needs compute capability 8.0 or newer"),
            std::string::npos);
}

TEST(Doctor, TooOldDriverForHopperKernels) {
  Diagnosis d = diagnose(machine({11, 8}, std::nullopt, {kH100}));
  // sm_80 PTX 7.8 still runs through the driver's JIT; sm_90a cannot.
  EXPECT_TRUE(d.jitCanWork);
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_NE(d.problems[1].find("sm_90a needs PTX ISA 8.6 (CUDA 12.8)"),
            std::string::npos)
      << d.problems[1];
}

TEST(Doctor, ForwardCompatibilityDriversAreRecognized) {
  EXPECT_TRUE(isForwardCompatibilityDriver(
      "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06"));
  EXPECT_FALSE(
      isForwardCompatibilityDriver("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
}

} // namespace
