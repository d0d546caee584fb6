//===- InputsTest.cpp - the harness's random inputs -----------------------===//
//
// Part of FlashCore. fillNormal draws on all cores; a seed printed in a GPU
// log must replay to the same inputs on any machine, and the inputs must be
// the normal(0, 1) values of the element type that the checks assume.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace fmha_harness;

namespace {

/// Three chunks of 2^20 and a partial one.
constexpr size_t kManyChunks = 3 * (size_t(1) << 20) + 12345;

std::vector<float> draw(size_t count, uint64_t seed, uint64_t stream,
                        fmhaRefDType dtype = FMHA_REF_BF16) {
  std::vector<float> values(count);
  fillNormal(values, seed, stream, dtype);
  return values;
}

TEST(HarnessInputs, TheSeedAndTensorDecideTheValues) {
  std::vector<float> values = draw(kManyChunks, 7, 0);
  EXPECT_EQ(values, draw(kManyChunks, 7, 0));
  EXPECT_NE(values, draw(kManyChunks, 7, 1));
  EXPECT_NE(values, draw(kManyChunks, 8, 0));
  // Chunks are fixed, so a shorter tensor is a prefix of a longer one.
  std::vector<float> shorter = draw(1000, 7, 0);
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), values.begin()));
}

TEST(HarnessInputs, NormalValuesOfTheElementType) {
  for (fmhaRefDType dtype : {FMHA_REF_BF16, FMHA_REF_F16, FMHA_REF_F32}) {
    std::vector<float> values = draw(kManyChunks, 3, 2, dtype);
    double sum = 0, squares = 0;
    size_t exact = 0;
    for (float x : values) {
      sum += x;
      squares += double(x) * x;
      exact += quantize(x, dtype) == x;
    }
    double mean = sum / values.size();
    EXPECT_NEAR(mean, 0.0, 0.01) << dtypeName(dtype);
    EXPECT_NEAR(squares / values.size() - mean * mean, 1.0, 0.01)
        << dtypeName(dtype);
    EXPECT_EQ(exact, values.size()) << dtypeName(dtype);
  }
}

TEST(HarnessInputs, EncodeRoundTripsAcrossChunks) {
  for (fmhaRefDType dtype : {FMHA_REF_BF16, FMHA_REF_F16, FMHA_REF_F32}) {
    std::vector<float> values = draw(kManyChunks, 5, 0, dtype);
    std::vector<uint8_t> bytes = encode(values, dtype);
    EXPECT_EQ(bytes.size(), values.size() * elementBytes(dtype));
    EXPECT_EQ(decode(bytes, dtype), values) << dtypeName(dtype);
  }
}

} // namespace
