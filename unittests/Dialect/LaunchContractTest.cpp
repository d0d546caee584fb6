//===- LaunchContractTest.cpp - a kernel's launch contract ----------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/LaunchContract.h"

#include "gtest/gtest.h"

using namespace mlir::fmha;

namespace {

/// An sm_90a-like contract: two tensor maps, a persistent grid over pairs
/// of 128-row blocks of every (batch, head).
LaunchContract persistentContract() {
  LaunchContract contract;
  contract.operands = {"q", "k", "o"};
  contract.threads = 384;
  contract.sharedBytes = 164944;
  contract.grid = {GridAxis{{{0, 2, 256}, {0, 1}, {0, 0}}, kMaxGridDimX},
                   GridAxis{}, GridAxis{}};
  contract.persistent = true;
  KernelParameter map;
  map.kind = KernelParameter::Kind::TensorMap;
  map.element = TensorMapElement::F16;
  map.box = {128, 64};
  map.swizzleBytes = 128;
  contract.parameters.push_back(map);
  map.operand = 1;
  contract.parameters.push_back(map);
  for (unsigned operand = 0; operand < 3; ++operand) {
    KernelParameter memref;
    memref.operand = operand;
    contract.parameters.push_back(memref);
  }
  return contract;
}

std::string verifyError(const LaunchContract &contract) {
  llvm::Error err = contract.verify();
  return err ? llvm::toString(std::move(err)) : "";
}

TEST(LaunchContract, PrintsAsTheAttributeReadsIt) {
  EXPECT_EQ(persistentContract().str(),
            "operands = [q, k, o], threads = 384, shared_bytes = 164944, "
            "grid = [min(ceildiv(q[2], 256) * q[1] * q[0], 2147483647), 1, 1], "
            "persistent, parameters = [tensor_map(q, f16, box = [128, 64], "
            "swizzle = 128), tensor_map(k, f16, box = [128, 64], swizzle = "
            "128), q, k, o]");
}

TEST(LaunchContract, JsonRoundTrip) {
  LaunchContract contract = persistentContract();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << contract.toJSON();
  llvm::Expected<LaunchContract> back = LaunchContract::parseJSON(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, contract);
}

TEST(LaunchContract, JsonErrorsNameTheField) {
  auto error = [](llvm::StringRef text) {
    llvm::Expected<LaunchContract> contract = LaunchContract::parseJSON(text);
    return contract ? std::string("<none>")
                    : llvm::toString(contract.takeError());
  };
  EXPECT_NE(error("{").find("launch contract JSON"), std::string::npos);
  EXPECT_EQ(error(R"({"operands": ["q"], "shared_bytes": 0, "persistent":
                     false, "grid": [], "parameters": []})"),
            "launch contract JSON: contract.threads is missing or not a "
            "non-negative integer");
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false, "parameters": [],
                     "grid": [{"factors": [], "max": 0}]})"),
            "launch contract JSON: contract.grid has 1 axes, expected 3");
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false,
                     "grid": [{"factors": [], "max": 0},
                              {"factors": [], "max": 0},
                              {"factors": [], "max": 0}],
                     "parameters": [{"kind": "texture", "operand": 0}]})"),
            "launch contract JSON: contract.parameters[0].kind is missing or "
            "not memref or tensor_map");
  // A well-formed document of an invalid contract fails verify().
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false,
                     "grid": [{"factors": [], "max": 0},
                              {"factors": [], "max": 0},
                              {"factors": [], "max": 0}],
                     "parameters": [{"kind": "memref", "operand": 3}]})"),
            "invalid launch contract: parameter 0 names operand 3, but there "
            "are 1");
}

TEST(LaunchContract, VerifyNamesTheBadPart) {
  EXPECT_EQ(verifyError(persistentContract()), "");
  LaunchContract contract = persistentContract();
  contract.threads = 0;
  EXPECT_EQ(verifyError(contract),
            "invalid launch contract: threads is 0, expected 1 to 1024");
  contract = persistentContract();
  contract.grid[1].max = 70000;
  EXPECT_EQ(verifyError(contract), "invalid launch contract: grid y is "
                                   "clamped to 70000, expected 1 to 65535");
  contract = persistentContract();
  contract.grid[0].factors[0].divisor = 0;
  EXPECT_EQ(verifyError(contract),
            "invalid launch contract: grid x divides by 0");
  contract = persistentContract();
  contract.parameters[0].swizzleBytes = 16;
  EXPECT_EQ(verifyError(contract),
            "invalid launch contract: parameter 0: swizzle is 16 bytes, "
            "expected 0, 32, 64 or 128");
}

TEST(LaunchContract, GridFromOperandSizes) {
  LaunchContract contract = persistentContract();
  llvm::SmallVector<int64_t> q = {3, 32, 1000, 64}, k = {3, 8, 1000, 64};
  auto grid = [&](unsigned resident) {
    llvm::Expected<std::array<unsigned, 3>> extents =
        contract.computeGrid({q, k, q}, resident);
    EXPECT_TRUE(static_cast<bool>(extents));
    return extents ? *extents : std::array<unsigned, 3>{};
  };
  // ceil(1000 / 256) = 4 units per (batch, head).
  EXPECT_EQ(grid(0), (std::array<unsigned, 3>{4 * 32 * 3, 1, 1}));
  // Persistent: no more CTAs than run at once, and none idle.
  EXPECT_EQ(grid(132), (std::array<unsigned, 3>{132, 1, 1}));
  q = {1, 2, 100, 64};
  EXPECT_EQ(grid(132), (std::array<unsigned, 3>{2, 1, 1}));
  // Nothing to do: an empty grid.
  q = {0, 2, 100, 64};
  EXPECT_EQ(grid(132), (std::array<unsigned, 3>{0, 1, 1}));

  // Clamped axes stay at their bound; an unclamped one past CUDA's limit
  // is an error that names the operand dimensions.
  LaunchContract rows;
  rows.operands = {"x"};
  rows.threads = 128;
  rows.grid = {GridAxis{{{0, 1, 64}}}, GridAxis{{{0, 0}}, kMaxGridDimY},
               GridAxis{{{0, 2}}}};
  llvm::SmallVector<int64_t> x = {100000, 129, 7};
  llvm::Expected<std::array<unsigned, 3>> extents = rows.computeGrid({x}, 0);
  ASSERT_TRUE(static_cast<bool>(extents));
  EXPECT_EQ(*extents, (std::array<unsigned, 3>{3, 65535, 7}));
  x = {1, 1, 70000};
  extents = rows.computeGrid({x}, 0);
  ASSERT_FALSE(static_cast<bool>(extents));
  EXPECT_EQ(llvm::toString(extents.takeError()),
            "grid z extent from x[2] is 70000, CUDA allows at most 65535");
  extents = rows.computeGrid({}, 0);
  ASSERT_FALSE(static_cast<bool>(extents));
  EXPECT_EQ(llvm::toString(extents.takeError()),
            "the launch has 0 operands, the kernel takes 1");
}

} // namespace
