//===- TypedLaunchTest.cpp - the typed launches' operand checks -----------===//
//
// Part of FlashCore. What checkAttentionGradTensors accepts and refuses,
// with stand-in pointers (nothing is launched, no GPU needed).
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/JIT.h"
#include "fmha/JIT/KernelSpec.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir::fmha;

namespace {

/// 16-byte aligned stand-ins for device pointers: only their values are
/// checked.
alignas(16) char standIn[16];

/// Dense bf16 tensors for a GQA 2:1 backward of B=2, Hq=4, Sq=77, Sk=130,
/// D=128, with a dq workspace of the size the spec asks for.
AttentionGradTensors getTensors(const KernelSpec &grad) {
  AttentionGradTensors t;
  AttentionTensors &f = t.forward;
  f.q = f.k = f.v = standIn;
  f.o = standIn;
  f.lse = reinterpret_cast<float *>(standIn);
  f.batch = 2;
  f.queryHeads = 4;
  f.kvHeads = 2;
  f.querySeq = 77;
  f.keySeq = 130;
  t.dout = standIn;
  t.dq = t.dk = t.dv = standIn;
  t.delta = reinterpret_cast<float *>(standIn);
  t.setDenseStrides(grad.headDim);
  t.workspace = standIn;
  t.workspaceBytes = getAttentionGradWorkspaceBytes(grad, f);
  return t;
}

KernelSpec getGradSpec(bool deterministic) {
  KernelSpec spec;
  spec.headDim = 128;
  spec.causal = true;
  spec.withLse = true;
  return getAttentionGradSpec(spec, deterministic);
}

std::string check(const KernelSpec &grad, const AttentionGradTensors &t) {
  llvm::Error err = checkAttentionGradTensors(grad, t);
  return err ? llvm::toString(std::move(err)) : std::string();
}

/// A d128 forward with an LSE, whose tensors are getTensors' forward.
KernelSpec getForwardSpec() {
  KernelSpec spec;
  spec.headDim = 128;
  spec.withLse = true;
  return spec;
}

std::string checkForward(const KernelSpec &spec, const AttentionTensors &t) {
  llvm::Error err = checkAttentionTensors(spec, t);
  return err ? llvm::toString(std::move(err)) : std::string();
}

} // namespace

TEST(TypedLaunch, BackwardWorkspaceIsTheDqAccumulator) {
  KernelSpec fast = getGradSpec(/*deterministic=*/false);
  EXPECT_EQ(getAttentionGradWorkspaceBytes(fast, getTensors(fast).forward),
            size_t(2 * 4 * 77 * 128 * sizeof(float)));
  KernelSpec deterministic = getGradSpec(/*deterministic=*/true);
  EXPECT_EQ(getAttentionGradWorkspaceBytes(deterministic,
                                           getTensors(deterministic).forward),
            0u);
  EXPECT_EQ(check(fast, getTensors(fast)), "");
  AttentionGradTensors shortOne = getTensors(fast);
  shortOne.workspaceBytes -= 4;
  EXPECT_NE(check(fast, shortOne).find("expected at least 315392 bytes"),
            std::string::npos)
      << check(fast, shortOne);
}

// The sm_90a kernel reads lse and delta at 32-bit element offsets: with a
// workspace, tensors that span more are refused, naming the tensor; the
// deterministic backward takes them.
TEST(TypedLaunch, BackwardWithAWorkspaceRefusesRowTermsPast31Bits) {
  KernelSpec fast = getGradSpec(/*deterministic=*/false);
  KernelSpec deterministic = getGradSpec(/*deterministic=*/true);
  for (bool delta : {false, true}) {
    AttentionGradTensors t = getTensors(fast);
    std::array<int64_t, 3> &strides =
        delta ? t.deltaStrides : t.forward.lseStrides;
    strides[0] = int64_t(1) << 31;
    std::string message = check(fast, t);
    std::string expected =
        std::string(delta ? "delta" : "lse") +
        "'s last element is 2147483955 elements from its start, expected at "
        "most 2^31 - 1 with a workspace";
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.rfind("attention_grad: ", 0), 0u) << message;
    t.workspace = nullptr;
    t.workspaceBytes = 0;
    EXPECT_EQ(check(deterministic, t), "");
  }
}

// A softcapped forward's backward is refused by name, never run without
// the cap (which would be a wrong gradient).
TEST(TypedLaunch, BackwardOfASoftcappedForwardIsRefused) {
  KernelSpec forward;
  forward.headDim = 128;
  forward.withLse = true;
  forward.softcap = 30.0f;
  for (bool deterministic : {true, false}) {
    KernelSpec grad = getAttentionGradSpec(forward, deterministic);
    EXPECT_EQ(
        check(grad, getTensors(grad)),
        "attention_grad: softcap is 3.000000e+01: logit softcapping has no "
        "backward yet (the forward has)");
  }
}

// Key lengths (a KV cache's): the tensor and the spec agree, the lengths
// are 4-byte aligned, and a backward of such a forward is refused by name.
TEST(TypedLaunch, KeyLengthsAreCheckedAndHaveNoBackward) {
  KernelSpec forward = getForwardSpec();
  AttentionTensors t = getTensors(getGradSpec(true)).forward;
  alignas(4) static int32_t lengths[2] = {130, 7};
  t.keyLengths = lengths;
  EXPECT_EQ(checkForward(forward, t),
            "attention: a keyLengths tensor is given but the spec has no key "
            "lengths (set withKeyLengths)");
  forward.withKeyLengths = true;
  EXPECT_EQ(checkForward(forward, t), "");
  t.keyLengths = reinterpret_cast<const int32_t *>(standIn + 2);
  EXPECT_NE(checkForward(forward, t).find("attention: keyLengths is at 0x"),
            std::string::npos);
  t.keyLengths = nullptr;
  EXPECT_EQ(checkForward(forward, t),
            "attention: the spec has key lengths but no keyLengths tensor is "
            "given");

  KernelSpec grad = getAttentionGradSpec(forward, /*deterministic=*/true);
  EXPECT_EQ(check(grad, getTensors(grad)),
            "attention_grad: the forward has key lengths (a KV cache's): the "
            "backward takes whole sequences, without keyLengths or a "
            "pageTable");
}

// A page table (a paged KV cache): the tensor and the spec agree, the page
// size is a multiple of 8 that divides Sk (the table's pages per sequence
// times it), there is a page, and a backward of such a forward is refused
// by name.
TEST(TypedLaunch, PageTablesAreCheckedAndHaveNoBackward) {
  KernelSpec forward = getForwardSpec();
  AttentionTensors t = getTensors(getGradSpec(true)).forward;
  alignas(4) static int32_t table[2] = {0, 1};
  t.pageTable = table;
  t.pages = 2;
  EXPECT_EQ(checkForward(forward, t),
            "attention: a pageTable tensor is given but the spec has no "
            "pages (set pageSize)");
  forward.pageSize = 12;
  EXPECT_EQ(checkForward(forward, t),
            "attention: pageSize is 12, expected 0 (no pages) or a positive "
            "multiple of 8");
  forward.pageSize = 16;
  EXPECT_EQ(checkForward(forward, t),
            "attention: keySeq (Sk) is 130 with pageSize 16, expected a "
            "multiple of it (the page table's pages per sequence times "
            "pageSize)");
  t.keySeq = 128;
  EXPECT_EQ(checkForward(forward, t), "");
  t.pages = 0;
  EXPECT_NE(checkForward(forward, t).find("attention: pages is 0, expected 1"),
            std::string::npos);
  t.pages = 2;
  t.pageTable = reinterpret_cast<const int32_t *>(standIn + 2);
  EXPECT_NE(checkForward(forward, t).find("attention: pageTable is at 0x"),
            std::string::npos);
  t.pageTable = nullptr;
  EXPECT_EQ(checkForward(forward, t),
            "attention: the spec has pages but no pageTable tensor is given");

  KernelSpec grad = getAttentionGradSpec(forward, /*deterministic=*/true);
  EXPECT_EQ(check(grad, getTensors(grad)),
            "attention_grad: the forward has pages (a KV cache's): the "
            "backward takes whole sequences, without keyLengths or a "
            "pageTable");
}
