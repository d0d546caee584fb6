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

/// An sm_80-like contract of a variable-length attention: the grid's row
/// blocks come from the index operand max_query_length (passed as its
/// value, sizes {value}), its z from query_offsets' size (B + 1), and the
/// index is the last kernel parameter.
LaunchContract packedContract() {
  LaunchContract contract;
  contract.operands = {"q", "k", "v", "o", "query_offsets", "max_query_length"};
  contract.threads = 128;
  contract.sharedBytes = 49152;
  contract.grid = {GridAxis{{{5, 0, 128}}}, GridAxis{{{0, 1}}},
                   GridAxis{{{4, 0}}, kMaxGridDimY}};
  for (unsigned operand = 0; operand < 6; ++operand) {
    KernelParameter parameter;
    parameter.operand = operand;
    if (operand == 5)
      parameter.kind = KernelParameter::Kind::Index;
    contract.parameters.push_back(parameter);
  }
  return contract;
}

/// \p contract as the JIT's disk cache writes it (LaunchContract::toJSON).
std::string toJsonText(const LaunchContract &contract) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << contract.toJSON();
  return text;
}

/// Expects \p text (toJsonText) to read back as \p contract.
void expectReadsBack(llvm::StringRef text, const LaunchContract &contract) {
  llvm::Expected<LaunchContract> back = LaunchContract::parseJSON(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, contract);
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
  expectReadsBack(toJsonText(contract), contract);
}

// A kernel that waits for the grids before it prints dependent_launch
// after the grid, and keeps it through JSON.
TEST(LaunchContract, DependentLaunch) {
  LaunchContract contract = persistentContract();
  contract.persistent = false;
  contract.dependentLaunch = true;
  EXPECT_NE(contract.str().find("1, 1], dependent_launch, parameters = ["),
            std::string::npos)
      << contract.str();
  std::string text = toJsonText(contract);
  EXPECT_NE(text.find(R"("dependent_launch":true)"), std::string::npos) << text;
  expectReadsBack(text, contract);
}

// A tensor map's L2 promotion prints where it is not the default 128
// bytes, and keeps through JSON; the verifier takes 0, 64, 128 or 256.
TEST(LaunchContract, L2Promotion) {
  LaunchContract contract = persistentContract();
  EXPECT_EQ(contract.parameters[0].l2PromotionBytes, 128u);
  contract.parameters[1].l2PromotionBytes = 256;
  EXPECT_EQ(verifyError(contract), "");
  EXPECT_NE(contract.str().find("tensor_map(k, f16, box = [128, 64], "
                                "swizzle = 128, l2_promotion = 256)"),
            std::string::npos)
      << contract.str();
  std::string text = toJsonText(contract);
  EXPECT_NE(text.find(R"("l2_promotion":256)"), std::string::npos) << text;
  expectReadsBack(text, contract);
  contract.parameters[1].l2PromotionBytes = 32;
  EXPECT_EQ(verifyError(contract),
            "invalid launch contract: parameter 1: l2_promotion is 32 bytes, "
            "expected 0, 64, 128 or 256");
}

// An index parameter prints as index(name), has JSON kind "index" and
// reads back; a grid factor reads its value as dimension 0.
TEST(LaunchContract, IndexParameters) {
  LaunchContract contract = packedContract();
  EXPECT_EQ(verifyError(contract), "");
  EXPECT_EQ(contract.str(),
            "operands = [q, k, v, o, query_offsets, max_query_length], "
            "threads = 128, shared_bytes = 49152, grid = "
            "[ceildiv(max_query_length[0], 128), q[1], "
            "min(query_offsets[0], 65535)], parameters = [q, k, v, o, "
            "query_offsets, index(max_query_length)]");
  EXPECT_EQ(contract.getLeadingTensorMaps(), 0u);

  std::string text = toJsonText(contract);
  EXPECT_NE(text.find(R"({"kind":"index","operand":5})"), std::string::npos)
      << text;
  llvm::Expected<LaunchContract> back = LaunchContract::parseJSON(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, contract);
  EXPECT_EQ(back->parameters[5].kind, KernelParameter::Kind::Index);
  EXPECT_EQ(back->parameters[4].kind, KernelParameter::Kind::MemRef);

  // 5 sequences of at most 300 rows over Hq = 8: ceil(300 / 128) row
  // blocks, 8 heads, the offsets' 6 entries.
  llvm::SmallVector<int64_t> q = {1, 8, 1000, 64}, k = {5, 2, 700, 64};
  llvm::SmallVector<int64_t> offsets = {6}, longest = {300};
  llvm::Expected<std::array<unsigned, 3>> extents =
      contract.computeGrid({q, k, k, q, offsets, longest}, 0);
  ASSERT_TRUE(static_cast<bool>(extents))
      << llvm::toString(extents.takeError());
  EXPECT_EQ(*extents, (std::array<unsigned, 3>{3, 8, 6}));

  // An index parameter also reads back from the attribute's JSON written by
  // hand, and an index factor past dimension 0 is an error that names it.
  llvm::Expected<LaunchContract> parsed = LaunchContract::parseJSON(
      R"({"operands": ["q", "m"], "threads": 32, "shared_bytes": 0,
          "persistent": true, "dependent_launch": false,
          "grid": [{"factors": [{"operand": 1, "dim": 0, "divisor": 64},
                                {"operand": 0, "dim": 1, "divisor": 1}],
                    "max": 2147483647},
                   {"factors": [], "max": 0}, {"factors": [], "max": 0}],
          "parameters": [{"kind": "memref", "operand": 0},
                         {"kind": "index", "operand": 1}]})");
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(parsed->str(),
            "operands = [q, m], threads = 32, shared_bytes = 0, grid = "
            "[min(ceildiv(m[0], 64) * q[1], 2147483647), 1, 1], persistent, "
            "parameters = [q, index(m)]");
  llvm::SmallVector<int64_t> value = {129};
  extents = parsed->computeGrid({q, value}, 0);
  ASSERT_TRUE(static_cast<bool>(extents))
      << llvm::toString(extents.takeError());
  EXPECT_EQ(*extents, (std::array<unsigned, 3>{3 * 8, 1, 1}));
  parsed->grid[0].factors[0].dim = 1;
  extents = parsed->computeGrid({q, value}, 0);
  ASSERT_FALSE(static_cast<bool>(extents));
  EXPECT_EQ(llvm::toString(extents.takeError()),
            "operand m has 1 dimensions, the grid reads dimension 1");
}

TEST(LaunchContract, JsonErrorsNameTheField) {
  auto error = [](llvm::StringRef text) {
    llvm::Expected<LaunchContract> contract = LaunchContract::parseJSON(text);
    return contract ? std::string("<none>")
                    : llvm::toString(contract.takeError());
  };
  EXPECT_NE(error("{").find("launch contract JSON"), std::string::npos);
  EXPECT_EQ(error(R"({"operands": ["q"], "shared_bytes": 0, "persistent":
                     false, "dependent_launch": false, "grid": [], "parameters": []})"),
            "launch contract JSON: contract.threads is missing or not a "
            "non-negative integer");
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false, "dependent_launch": false, "parameters": [],
                     "grid": [{"factors": [], "max": 0}]})"),
            "launch contract JSON: contract.grid has 1 axes, expected 3");
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false, "dependent_launch": false,
                     "grid": [{"factors": [], "max": 0},
                              {"factors": [], "max": 0},
                              {"factors": [], "max": 0}],
                     "parameters": [{"kind": "texture", "operand": 0}]})"),
            "launch contract JSON: contract.parameters[0].kind is missing or "
            "not memref, tensor_map or index");
  // A well-formed document of an invalid contract fails verify().
  EXPECT_EQ(error(R"({"operands": ["q"], "threads": 32, "shared_bytes": 0,
                     "persistent": false, "dependent_launch": false,
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
