//===- TypedLaunchTest.cpp - the typed launches' operand checks -----------===//
//
// Part of FlashCore. What checkAttentionGradTensors accepts and refuses,
// with stand-in pointers, and checkSharedBytesFit with a stand-in device
// (nothing is launched, no GPU needed).
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
  t.setDenseStrides(grad.getHeadDims());
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

/// check() of the backward of \p forward on getTensors' tensors.
std::string checkBackwardOf(const KernelSpec &forward, bool deterministic) {
  KernelSpec grad = getAttentionGradSpec(forward, deterministic);
  return check(grad, getTensors(grad));
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

// With slices of the groups' query heads the workspace adds their f32 dk
// and dv after the ordered spec's counters, from a 16-byte multiple:
// 2 x 4 x 77 x 128 x 4 + 64 bytes of counters is one, then 3 slices x
// 2 x 2 x 130 x (128 + 128) x 4.
TEST(TypedLaunch, SlicedBackwardWorkspaceAddsThePartials) {
  KernelSpec forward = getForwardSpec();
  KernelSpec ordered =
      getAttentionGradSpec(forward, /*deterministic=*/true, /*ordered=*/true);
  const AttentionTensors f = getTensors(ordered).forward;
  size_t queryGrad = 2 * 4 * 77 * 128 * sizeof(float) + 2 * 4 * 2 * 4;
  EXPECT_EQ(getAttentionGradWorkspaceBytes(ordered, f, 1), queryGrad);
  EXPECT_EQ(getAttentionGradWorkspaceBytes(ordered, f, 3),
            queryGrad + size_t(3) * 2 * 2 * 130 * 256 * sizeof(float));
  // The atomic spec's partials start after its accumulator alone.
  KernelSpec fast = getGradSpec(/*deterministic=*/false);
  EXPECT_EQ(getAttentionGradWorkspaceBytes(fast, f, 3),
            size_t(2 * 4 * 77 * 128 * sizeof(float)) +
                size_t(3) * 2 * 2 * 130 * 256 * sizeof(float));
  EXPECT_EQ(getAttentionGradWorkspaceBytes(getGradSpec(true), f, 3), 0u);
}

// The ordered (deterministic one-pass) backward's workspace: the dq
// accumulator, then a 32-bit counter per 64 queries of each (batch, query
// head): ceil(77 / 64) = 2 of them for each of 2 x 4.
TEST(TypedLaunch, OrderedBackwardWorkspaceAddsItsCounters) {
  KernelSpec forward = getForwardSpec();
  forward.causal = true;
  KernelSpec ordered =
      getAttentionGradSpec(forward, /*deterministic=*/true, /*ordered=*/true);
  EXPECT_TRUE(ordered.deterministic);
  EXPECT_TRUE(ordered.withQueryGradAccumulator());
  EXPECT_EQ(ordered.getKernelNames(),
            getGradSpec(/*deterministic=*/false).getKernelNames());
  EXPECT_EQ(
      getAttentionGradWorkspaceBytes(ordered, getTensors(ordered).forward),
      size_t(2 * 4 * 77 * 128 * sizeof(float) + 2 * 4 * 2 * 4));
  // Three specs, three kernels: ordered, in any order, by query blocks.
  KernelSpec fast = getGradSpec(/*deterministic=*/false);
  KernelSpec twoPass = getGradSpec(/*deterministic=*/true);
  EXPECT_NE(ordered.getKey(), fast.getKey());
  EXPECT_NE(ordered.getKey(), twoPass.getKey());
  // Ordered means deterministic: the atomic spec ignores it.
  EXPECT_FALSE(
      getAttentionGradSpec(forward, /*deterministic=*/false, /*ordered=*/true)
          .orderedQueryGrad);
  EXPECT_EQ(check(ordered, getTensors(ordered)), "");
  AttentionGradTensors shortOne = getTensors(ordered);
  shortOne.workspaceBytes -= 4;
  EXPECT_NE(check(ordered, shortOne)
                .find("(the f32 dq accumulator of the "
                      "one-pass backward and its "
                      "counters)"),
            std::string::npos)
      << check(ordered, shortOne);
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

// A softcapped forward's backward takes its cap (a kernel of its own: the
// cap is in the key), and a bad one is refused by name.
TEST(TypedLaunch, BackwardOfASoftcappedForwardTakesTheCap) {
  KernelSpec forward;
  forward.headDim = 128;
  forward.withLse = true;
  forward.softcap = 30.0f;
  for (bool deterministic : {true, false}) {
    KernelSpec grad = getAttentionGradSpec(forward, deterministic);
    EXPECT_EQ(check(grad, getTensors(grad)), "");
    EXPECT_NE(grad.getKey(), getGradSpec(deterministic).getKey());
    grad.softcap = -1.0f;
    EXPECT_EQ(check(grad, getTensors(grad)),
              "attention_grad: softcap is -1.000000e+00, expected a positive "
              "finite value (0 in the C API: none)");
  }
}

// A forward whose v head dim differs from q's (DeepSeek's 192/128) has a
// backward whose spec keeps it (the chip's refusal, sm_80 or no workspace,
// comes with the launch plan); an unsupported one is refused by name.
TEST(TypedLaunch, BackwardOfADifferentValueHeadDimKeepsIt) {
  KernelSpec forward;
  forward.headDim = 128;
  forward.valueHeadDim = 64;
  forward.withLse = true;
  EXPECT_EQ(checkForward(forward, getTensors(getGradSpec(true)).forward), "");
  for (bool deterministic : {true, false}) {
    KernelSpec grad = getAttentionGradSpec(forward, deterministic);
    EXPECT_EQ(grad.getValueHeadDim(), 64u);
    EXPECT_NE(grad.getKey(),
              getAttentionGradSpec(getForwardSpec(), deterministic).getKey());
  }
  KernelSpec grad = getAttentionGradSpec(forward, /*deterministic=*/true);
  grad.valueHeadDim = 52;
  EXPECT_EQ(check(grad, getTensors(grad)),
            "attention_grad: valueHeadDim is 52, expected 0 (headDim's) or a "
            "multiple of 8 from 32 to 256");
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

  EXPECT_EQ(checkBackwardOf(forward, /*deterministic=*/true),
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

  EXPECT_EQ(checkBackwardOf(forward, /*deterministic=*/true),
            "attention_grad: the forward has pages (a KV cache's): the "
            "backward takes whole sequences, without keyLengths or a "
            "pageTable");
}

namespace {

/// getTensors' forward as a variable-length batch of 2 sequences of 30 and
/// 47 queries packed into q and o (querySeq: their 77 rows; the strides of
/// the [T, Hq, D] layout FlashAttention packs them in), with 130 keys each
/// in k and v's per-sequence entries.
AttentionTensors getPackedTensors() {
  AttentionTensors t = getTensors(getGradSpec(true)).forward;
  alignas(4) static int32_t offsets[3] = {0, 30, 77};
  t.queryOffsets = offsets;
  t.maxQueryLength = 47;
  t.qStrides = t.oStrides = {0, 128, 4 * 128};
  t.lseStrides = {0, 77, 1};
  return t;
}

} // namespace

// Variable-length batches (query offsets): the tensor and the spec agree,
// maxQueryLength is given (1 to 2^31 - 1), the offsets are 4-byte aligned,
// split keys are refused, and a backward of such a forward is refused by
// name.
TEST(TypedLaunch, QueryOffsetsAreCheckedAndHaveNoBackward) {
  KernelSpec forward = getForwardSpec();
  AttentionTensors t = getPackedTensors();
  EXPECT_EQ(checkForward(forward, t),
            "attention: a queryOffsets tensor is given but the spec has no "
            "query offsets (set withQueryOffsets)");
  forward.withQueryOffsets = true;
  EXPECT_EQ(checkForward(forward, t), "");
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(forward)));
  // The longest sequence, which sizes the grid, is required.
  for (int64_t length : {int64_t(0), int64_t(-3), int64_t(1) << 31}) {
    t.maxQueryLength = length;
    EXPECT_EQ(checkForward(forward, t),
              "attention: maxQueryLength is " + std::to_string(length) +
                  ", expected 1 to 2^31 - 1 (the most rows a packed sequence "
                  "has)");
  }
  t.maxQueryLength = (int64_t(1) << 31) - 1;
  EXPECT_EQ(checkForward(forward, t), "");
  t.maxQueryLength = 1;
  EXPECT_EQ(checkForward(forward, t), "");
  // Without query offsets maxQueryLength is unread.
  AttentionTensors plain = getTensors(getGradSpec(true)).forward;
  plain.maxQueryLength = -1;
  EXPECT_EQ(checkForward(getForwardSpec(), plain), "");

  t = getPackedTensors();
  t.queryOffsets = reinterpret_cast<const int32_t *>(standIn + 2);
  EXPECT_NE(checkForward(forward, t).find("attention: queryOffsets is at 0x"),
            std::string::npos)
      << checkForward(forward, t);
  t.queryOffsets = nullptr;
  EXPECT_EQ(checkForward(forward, t),
            "attention: the spec has query offsets but no queryOffsets tensor "
            "is given");

  // A launch of packed sequences splits their keys itself.
  KernelSpec split = forward;
  split.splitKeys = true;
  const char *splitError =
      "attention: the spec has query offsets and split keys: a launch of "
      "packed sequences splits their keys itself (decode on sm_90a, with a "
      "workspace); clear splitKeys";
  EXPECT_EQ(llvm::toString(checkAttentionSpec(split)), splitError);
  EXPECT_EQ(checkForward(split, getPackedTensors()), splitError);
  // And a known longest key count is at least 0.
  AttentionTensors negative = getPackedTensors();
  negative.maxKeyLength = -1;
  EXPECT_EQ(checkForward(forward, negative),
            "attention: maxKeyLength is -1, expected 0 (unknown) or the most "
            "keys a packed sequence has");

  // Query offsets over key lengths and over a paged cache are fine.
  KernelSpec cached = forward;
  cached.withKeyLengths = true;
  cached.pageSize = 16;
  t = getPackedTensors();
  alignas(4) static int32_t lengths[2] = {130, 7};
  alignas(4) static int32_t table[2 * 8] = {};
  t.keyLengths = lengths;
  t.pageTable = table;
  t.pages = 16;
  t.keySeq = 128;
  EXPECT_EQ(checkForward(cached, t), "");

  EXPECT_TRUE(getAttentionGradSpec(forward).withQueryOffsets);
  for (bool deterministic : {true, false})
    EXPECT_EQ(checkBackwardOf(forward, deterministic),
              "attention_grad: the forward has query offsets (packed "
              "sequences): the backward takes batches of equal lengths (none "
              "for packed ones yet)");
}

// Packed keys (key offsets): only with query offsets and without pages;
// the tensor and the spec agree, and the offsets are 4-byte aligned.
TEST(TypedLaunch, KeyOffsetsAreChecked) {
  KernelSpec forward = getForwardSpec();
  forward.withKeyOffsets = true;
  EXPECT_EQ(llvm::toString(checkAttentionSpec(forward)),
            "attention: the spec has key offsets but no query offsets (packed "
            "keys need packed queries: set withQueryOffsets)");
  AttentionTensors t = getPackedTensors();
  alignas(4) static int32_t keyOffsets[3] = {0, 100, 260};
  t.keyOffsets = keyOffsets;
  t.keySeq = 260;
  t.kStrides = t.vStrides = {0, 128, 2 * 128};
  EXPECT_EQ(checkForward(forward, t),
            "attention: the spec has key offsets but no query offsets (packed "
            "keys need packed queries: set withQueryOffsets)");
  forward.withQueryOffsets = true;
  EXPECT_EQ(checkForward(forward, t), "");

  KernelSpec paged = forward;
  paged.pageSize = 16;
  EXPECT_EQ(llvm::toString(checkAttentionSpec(paged)),
            "attention: the spec has key offsets and pages: a paged "
            "sequence's keys are its pages (set one of withKeyOffsets, "
            "pageSize)");

  KernelSpec unpacked = forward;
  unpacked.withKeyOffsets = false;
  EXPECT_EQ(checkForward(unpacked, t),
            "attention: a keyOffsets tensor is given but the spec has no key "
            "offsets (set withKeyOffsets)");
  t.keyOffsets = reinterpret_cast<const int32_t *>(standIn + 1);
  EXPECT_NE(checkForward(forward, t).find("attention: keyOffsets is at 0x"),
            std::string::npos)
      << checkForward(forward, t);
  t.keyOffsets = nullptr;
  EXPECT_EQ(checkForward(forward, t),
            "attention: the spec has key offsets but no keyOffsets tensor is "
            "given");

  // With key lengths too (each limits its sequence's keys).
  forward.withKeyLengths = true;
  t.keyOffsets = keyOffsets;
  alignas(4) static int32_t lengths[2] = {50, 160};
  t.keyLengths = lengths;
  EXPECT_EQ(checkForward(forward, t), "");

  KernelSpec grad = getAttentionGradSpec(forward, /*deterministic=*/true);
  EXPECT_TRUE(grad.withKeyOffsets);
}

// Query and key offsets are in the kernel key (they change the kernel's
// parameters), in the op the spec builds, and keep a spec from the split-KV
// decode kernels and the GQA decode fold.
TEST(TypedLaunch, OffsetsAreInTheKernelKey) {
  KernelSpec plain = getForwardSpec();
  KernelSpec packed = plain;
  packed.withQueryOffsets = true;
  KernelSpec keys = packed;
  keys.withKeyOffsets = true;
  EXPECT_EQ(plain.getKey().find("offsets"), std::string::npos)
      << plain.getKey();
  EXPECT_NE(packed.getKey().find(" query_offsets"), std::string::npos)
      << packed.getKey();
  EXPECT_EQ(packed.getKey().find("key_offsets"), std::string::npos)
      << packed.getKey();
  EXPECT_NE(keys.getKey().find(" query_offsets key_offsets"), std::string::npos)
      << keys.getKey();
  EXPECT_NE(packed.getKey(), plain.getKey());
  EXPECT_NE(keys.getKey(), packed.getKey());

  // The op: query_offsets, key_offsets and max_query_length (an index).
  std::string text = keys.toMLIR();
  EXPECT_NE(text.find("query_offsets("), std::string::npos) << text;
  EXPECT_NE(text.find("key_offsets("), std::string::npos) << text;
  EXPECT_NE(text.find("max_query_length("), std::string::npos) << text;
  EXPECT_NE(text.find(": index"), std::string::npos) << text;
  text = packed.toMLIR();
  EXPECT_NE(text.find("query_offsets("), std::string::npos) << text;
  EXPECT_EQ(text.find("key_offsets("), std::string::npos) << text;

  // Packed sequences split their keys on sm_90a only: one spec for one
  // query on sm_80 (no split kernel, no merge); on sm_90a its split_keys
  // kernel and the merge of the sequences' rows too.
  std::vector<KernelSpec> specs = getLaunchSpecs(packed, Chip::sm_80, 1);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_FALSE(specs[0].splitKeys);
  EXPECT_TRUE(specs[0].withQueryOffsets);
  for (const KernelSpec &spec : getLaunchSpecs(keys, Chip::sm_80)) {
    EXPECT_EQ(spec.kind, OpKind::Attention) << spec.getKey();
    EXPECT_FALSE(spec.splitKeys) << spec.getKey();
    EXPECT_TRUE(spec.withQueryOffsets && spec.withKeyOffsets) << spec.getKey();
  }
  specs = getLaunchSpecs(packed, Chip::sm_90a, 1);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_TRUE(specs[1].splitKeys && specs[1].withQueryOffsets);
  EXPECT_TRUE(specs[2].kind == OpKind::Merge && specs[2].withQueryOffsets);
  // No GQA decode fold: a packed batch's rows are not one per entry.
  AttentionTensors t = getPackedTensors();
  t.querySeq = 1;
  t.maxQueryLength = 1;
  AttentionTensors same = foldGroupedQueries(packed, t);
  EXPECT_EQ(same.queryHeads, t.queryHeads);
  EXPECT_EQ(same.querySeq, 1);
  EXPECT_EQ(same.qStrides, t.qStrides);
  EXPECT_EQ(foldGroupedQueries(plain, t).querySeq, 2); // GQA 2:1 folds
}

// JIT.h: with query offsets the batch strides of q and o (and lse) are
// unread, as are k's and v's with key offsets: one that no tensor could
// have (3 elements) passes.
TEST(TypedLaunch, PackedBatchStridesAreUnread) {
  KernelSpec forward = getForwardSpec();
  forward.withQueryOffsets = forward.withKeyOffsets = true;
  AttentionTensors t = getPackedTensors();
  alignas(4) static int32_t keyOffsets[3] = {0, 100, 260};
  t.keyOffsets = keyOffsets;
  t.keySeq = 260;
  t.kStrides = t.vStrides = {3, 128, 2 * 128};
  t.qStrides[0] = t.oStrides[0] = 3;
  EXPECT_EQ(checkForward(forward, t), "");
}

// A kernel whose shared memory passes the device's opt-in limit is refused
// at load, by name, with both sizes and the device (an sm_80 backward
// kernel sized for an A100 on an sm_89 GPU); one that fits, or a device
// that reports no limit, passes.
TEST(KernelLoad, SharedMemoryPastTheDeviceLimitNamesBoth) {
  DeviceInfo device;
  device.ordinal = 1;
  device.name = "NVIDIA GeForce RTX 4090";
  device.capability = {8, 9};
  device.maxSharedBytesPerBlock = 101376;
  llvm::Error error = checkSharedBytesFit("attention_grad_dkv", 164864, device);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "kernel 'attention_grad_dkv' needs 164864 bytes of shared memory "
            "a block, and device 1 (NVIDIA GeForce RTX 4090, sm_89) allows "
            "101376: sm_80's tiles are sized for an A100 (163 KB); run it "
            "there or on an H100/H200, or ask for less (fmhaAttention: a "
            "smaller tile; fmhaAttentionBackward: no workspace, whose kernels "
            "fit 99 KB)");
  EXPECT_FALSE(static_cast<bool>(
      checkSharedBytesFit("attention_grad_dkv", 101376, device)));
  device.maxSharedBytesPerBlock = 0;
  EXPECT_FALSE(static_cast<bool>(
      checkSharedBytesFit("attention_grad_dkv", 164864, device)));
}
