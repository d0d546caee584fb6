//===- PtxIsaTest.cpp - PTX ISA choice ------------------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/PtxIsa.h"

#include "gtest/gtest.h"

using namespace mlir::fmha;

namespace {

TEST(PtxIsa, NewestAcceptedFollowsTheReleaseNotes) {
  EXPECT_EQ(getNewestPtxIsa({11, 8}), (PtxIsa{7, 8}));
  EXPECT_EQ(getNewestPtxIsa({12, 0}), (PtxIsa{8, 0}));
  EXPECT_EQ(getNewestPtxIsa({12, 4}), (PtxIsa{8, 4}));
  EXPECT_EQ(getNewestPtxIsa({12, 6}), (PtxIsa{8, 5}));
  EXPECT_EQ(getNewestPtxIsa({12, 9}), (PtxIsa{8, 8}));
  EXPECT_EQ(getNewestPtxIsa({13, 0}), (PtxIsa{9, 0}));
  // A release newer than the table accepts at least its newest entry.
  EXPECT_EQ(getNewestPtxIsa({14, 2}), (PtxIsa{9, 1}));
}

TEST(PtxIsa, DriverEncodingAndPrinting) {
  CudaVersion version = CudaVersion::fromDriverEncoding(12040);
  EXPECT_EQ(version, (CudaVersion{12, 4}));
  EXPECT_EQ(version.str(), "12.4");
  EXPECT_EQ((PtxIsa{9, 0}).feature(), "+ptx90");
  EXPECT_EQ((PtxIsa{8, 4}).str(), "8.4");
}

TEST(PtxIsa, ParsesBothSpellings) {
  EXPECT_EQ(*parsePtxIsa("9.0"), (PtxIsa{9, 0}));
  EXPECT_EQ(*parsePtxIsa("87"), (PtxIsa{8, 7}));
  llvm::Expected<PtxIsa> bad = parsePtxIsa("nine");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "invalid PTX ISA version 'nine'; expected major.minor such as 9.0");
}

TEST(PtxIsa, SelectionIsCappedAtWhatLlvmEmits) {
  llvm::Expected<PtxIsa> isa = selectPtxIsa(Chip::sm_90a, {13, 1}, "x");
  ASSERT_TRUE(static_cast<bool>(isa));
  EXPECT_EQ(*isa, kNewestLlvmPtxIsa);
}

TEST(PtxIsa, SelectionUsesTheConsumersNewest) {
  llvm::Expected<PtxIsa> isa =
      selectPtxIsa(Chip::sm_80, {12, 4}, "the driver (CUDA 12.4)");
  ASSERT_TRUE(static_cast<bool>(isa));
  EXPECT_EQ(*isa, (PtxIsa{8, 4}));
}

TEST(PtxIsa, TooOldForTheChipNamesBothSidesAndTheFix) {
  llvm::Expected<PtxIsa> isa =
      selectPtxIsa(Chip::sm_90a, {11, 8}, "the driver (CUDA 11.8)");
  ASSERT_FALSE(static_cast<bool>(isa));
  EXPECT_EQ(llvm::toString(isa.takeError()),
            "sm_90a needs PTX ISA 8.6 (CUDA 12.8), but the driver (CUDA 11.8) "
            "accepts PTX ISA up to 7.8: install CUDA 12.8 or newer there");
}

} // namespace
