//===- TypedLaunch.cpp - one call from tensors to a kernel launch ---------===//
//
// Part of FlashCore. What every embedder of an fmha kernel would otherwise
// write: the operand checks, and the op's operands in its order as the
// launch operands of the kernel's launch contract, which decides the rest.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/JIT.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fmha;

char OperandError::ID;

static bool isAligned(const void *data, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(data) % alignment == 0;
}

/// \p data as the checks' messages print it ("0x5004").
static llvm::FormattedNumber hexAddress(const void *data) {
  return llvm::format_hex(reinterpret_cast<uintptr_t>(data), 0);
}

void AttentionTensors::setDenseStrides(AttentionHeadDims headDims) {
  auto dense = [&](int64_t heads, int64_t rows,
                   int64_t headDim) -> std::array<int64_t, 3> {
    return {heads * rows * headDim, rows * headDim, headDim};
  };
  qStrides = dense(queryHeads, querySeq, headDims.qk);
  kStrides = dense(kvHeads, keySeq, headDims.qk);
  vStrides = dense(kvHeads, keySeq, headDims.v);
  oStrides = dense(queryHeads, querySeq, headDims.v);
  lseStrides = {queryHeads * querySeq, querySeq, 1};
}

/// The checks an attention spec and its backward's share: the kind, the
/// element type, the head dim (one that \p supported accepts, described as
/// \p expected) and the window.
static llvm::Error checkAttentionAttributes(
    const KernelSpec &spec, OpKind kind, llvm::StringRef op,
    llvm::function_ref<bool(int64_t)> supported, llvm::StringRef expected) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::make_error<OperandError>((op + ": " + what).str());
  };
  if (spec.kind != kind)
    return fail("the kernel spec is not an " + op + " spec");
  if (spec.elementType == ElementType::F32)
    return fail("q, k, v and o are f16 or bf16, got f32");
  if (!supported(int64_t(spec.headDim)))
    return fail(llvm::formatv("headDim is {0}, expected {1}", spec.headDim,
                              expected));
  if (spec.valueHeadDim && !isSupportedAttentionHeadDim(spec.valueHeadDim))
    return fail(llvm::formatv("valueHeadDim is {0}, expected 0 (headDim's) "
                              "or {1}",
                              spec.valueHeadDim,
                              kSupportedAttentionHeadDimsText));
  if (spec.softcap && !(*spec.softcap > 0.0f && std::isfinite(*spec.softcap)))
    return fail(llvm::formatv("softcap is {0:e}, expected a positive finite "
                              "value (0 in the C API: none)",
                              *spec.softcap));
  if (spec.window) {
    auto [left, right] = *spec.window;
    if (left < 0 || right < 0)
      return fail(llvm::formatv("window is [{0}, {1}], expected non-negative "
                                "sizes",
                                left, right));
    if (spec.causal && right != 0)
      return fail(llvm::formatv("window right is {0} with causal, expected 0 "
                                "(a causal query sees no later key)",
                                right));
  }
  return llvm::Error::success();
}

llvm::Error fmha::checkAttentionSpec(const KernelSpec &spec) {
  if (llvm::Error err = checkAttentionAttributes(
          spec, OpKind::Attention, "attention", isSupportedAttentionHeadDim,
          kSupportedAttentionHeadDimsText))
    return err;
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("attention: " + what).str());
  };
  // The sm_90a kernel loads a page's rows in whole 8-row swizzle atoms.
  if (spec.pageSize < 0 || spec.pageSize % 8 != 0)
    return fail(llvm::formatv("pageSize is {0}, expected 0 (no pages) or a "
                              "positive multiple of 8",
                              spec.pageSize));
  if (spec.withKeyOffsets && !spec.withQueryOffsets)
    return fail("the spec has key offsets but no query offsets (packed "
                "keys need packed queries: set withQueryOffsets)");
  if (spec.withKeyOffsets && spec.pageSize)
    return fail("the spec has key offsets and pages: a paged sequence's "
                "keys are its pages (set one of withKeyOffsets, pageSize)");
  if (spec.withQueryOffsets && spec.splitKeys)
    return fail("the spec has query offsets and split keys: a launch of "
                "packed sequences splits their keys itself (decode on "
                "sm_90a, with a workspace); clear splitKeys");
  return llvm::Error::success();
}

/// The checks of the sizes alone (batch, lengths, head counts), which is
/// what a workspace size depends on.
static llvm::Error checkAttentionSizes(const AttentionTensors &t,
                                       llvm::StringRef op = "attention") {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::make_error<OperandError>((op + ": " + what).str());
  };
  if (t.batch < 0)
    return fail(llvm::formatv("batch is {0}, expected at least 0", t.batch));
  // Both loops of either kernel count key and query blocks in 32 bits.
  constexpr int64_t kMaxSeq = (int64_t(1) << 31) - 1;
  for (auto [name, value] :
       {std::pair{"querySeq (Sq)", t.querySeq}, {"keySeq (Sk)", t.keySeq}})
    if (value < 1 || value > kMaxSeq)
      return fail(
          llvm::formatv("{0} is {1}, expected 1 to {2}", name, value, kMaxSeq));
  if (t.maxKeyLength < 0)
    return fail(llvm::formatv("maxKeyLength is {0}, expected 0 (unknown) or "
                              "the most keys a packed sequence has",
                              t.maxKeyLength));
  if (t.queryHeads < 1 || t.kvHeads < 1 || t.queryHeads % t.kvHeads != 0)
    return fail(llvm::formatv("queryHeads (Hq) {0} and kvHeads (Hkv) {1}: "
                              "expected both at least 1 and Hq % Hkv == 0",
                              t.queryHeads, t.kvHeads));
  return llvm::Error::success();
}

namespace {
/// A [B, H, S, D] operand of an attention launch, as the checks see it.
struct TensorOperand {
  const char *name;
  const void *data;
  const std::array<int64_t, 3> &strides;
};
/// An f32 [B, H, S] operand (LSE, delta): only its alignment is checked.
struct RowsOperand {
  const char *name;
  const void *data;
};
} // namespace

/// Checks the alignment and strides of \p tensors (16-byte aligned,
/// strides multiples of 16 bytes: cp.async, TMA and the vector stores move
/// 16-byte chunks) and the 4-byte alignment of \p rows (f32 or i32, where
/// given) for \p op.
static llvm::Error checkAttentionOperands(llvm::StringRef op,
                                          llvm::ArrayRef<TensorOperand> tensors,
                                          llvm::ArrayRef<RowsOperand> rows) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::make_error<OperandError>((op + ": " + what).str());
  };
  constexpr int64_t kAlignment = 16, kElementBytes = 2;
  constexpr const char *kDimensionNames[] = {"batch", "head", "row"};
  for (const TensorOperand &operand : tensors) {
    if (!isAligned(operand.data, kAlignment))
      return fail(llvm::formatv("{0} is at {1}, expected a {2}-byte aligned "
                                "address",
                                operand.name, hexAddress(operand.data),
                                kAlignment));
    for (int d = 0; d < 3; ++d) {
      int64_t stride = operand.strides[d];
      if (stride < 0 || stride * kElementBytes % kAlignment != 0)
        return fail(llvm::formatv(
            "{0}'s {1} stride is {2} elements, expected a non-negative "
            "multiple of {3} (16 bytes; the head dimension is dense)",
            operand.name, kDimensionNames[d], stride,
            kAlignment / kElementBytes));
    }
  }
  for (const RowsOperand &operand : rows)
    if (operand.data && !isAligned(operand.data, alignof(float)))
      return fail(llvm::formatv("{0} is at {1}, expected a 4-byte aligned "
                                "address",
                                operand.name, hexAddress(operand.data)));
  return llvm::Error::success();
}

llvm::Error fmha::checkAttentionTensors(const KernelSpec &spec,
                                        const AttentionTensors &t) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("attention: " + what).str());
  };
  if (llvm::Error err = checkAttentionSpec(spec))
    return err;
  if (!t.q || !t.k || !t.v || !t.o)
    return fail("q, k, v and o must not be null");
  // Each optional operand: in the spec (what it has, the field that sets
  // it) exactly where its tensor is given.
  struct OptionalOperand {
    bool inSpec;
    const void *tensor;
    const char *has, *article, *name, *field;
  };
  for (const OptionalOperand &o :
       {OptionalOperand{spec.withLse, t.lse, "an LSE output", "an", "lse",
                        "withLse"},
        OptionalOperand{spec.withSinks, t.sinks, "sinks", "a", "sinks",
                        "withSinks"},
        OptionalOperand{spec.withKeyLengths, t.keyLengths, "key lengths", "a",
                        "keyLengths", "withKeyLengths"},
        OptionalOperand{spec.pageSize != 0, t.pageTable, "pages", "a",
                        "pageTable", "pageSize"},
        OptionalOperand{spec.withQueryOffsets, t.queryOffsets, "query offsets",
                        "a", "queryOffsets", "withQueryOffsets"},
        OptionalOperand{spec.withKeyOffsets, t.keyOffsets, "key offsets", "a",
                        "keyOffsets", "withKeyOffsets"}}) {
    if (o.inSpec == (o.tensor != nullptr))
      continue;
    // The spec has "an LSE output", or has "no LSE output".
    llvm::StringRef has(o.has);
    llvm::StringRef what = has.starts_with("an ") ? has.drop_front(3) : has;
    if (o.inSpec)
      return fail(llvm::formatv("the spec has {0} but no {1} tensor is given",
                                has, o.name));
    return fail(llvm::formatv("{0} {1} tensor is given but the spec has no "
                              "{2} (set {3})",
                              o.article, o.name, what, o.field));
  }
  if (llvm::Error err = checkAttentionSizes(t))
    return err;
  if (spec.withQueryOffsets &&
      (t.maxQueryLength < 1 ||
       t.maxQueryLength > std::numeric_limits<int32_t>::max()))
    return fail(llvm::formatv("maxQueryLength is {0}, expected 1 to 2^31 - 1 "
                              "(the most rows a packed sequence has)",
                              t.maxQueryLength));
  if (spec.pageSize) {
    if (t.keySeq % spec.pageSize != 0)
      return fail(llvm::formatv("keySeq (Sk) is {0} with pageSize {1}, "
                                "expected a multiple of it (the page "
                                "table's pages per sequence times pageSize)",
                                t.keySeq, spec.pageSize));
    if (t.pages < 1 || t.pages > std::numeric_limits<int32_t>::max())
      return fail(llvm::formatv("pages is {0}, expected 1 to 2^31 - 1 (the "
                                "pages k and v hold; page table entries are "
                                "int32)",
                                t.pages));
  }
  // A packed tensor's batch stride is unread (getAttentionOperands).
  auto unread = [](std::array<int64_t, 3> strides, bool packed) {
    if (packed)
      strides[0] = 0;
    return strides;
  };
  std::array<int64_t, 3> qStrides = unread(t.qStrides, t.queryOffsets),
                         kStrides = unread(t.kStrides, t.keyOffsets),
                         vStrides = unread(t.vStrides, t.keyOffsets),
                         oStrides = unread(t.oStrides, t.queryOffsets);
  if (llvm::Error err =
          checkAttentionOperands("attention",
                                 {{"q", t.q, qStrides},
                                  {"k", t.k, kStrides},
                                  {"v", t.v, vStrides},
                                  {"o", t.o, oStrides}},
                                 {{"lse", t.lse},
                                  {"sinks", t.sinks},
                                  {"keyLengths", t.keyLengths},
                                  {"pageTable", t.pageTable},
                                  {"queryOffsets", t.queryOffsets},
                                  {"keyOffsets", t.keyOffsets}}))
    return err;
  return llvm::Error::success();
}

KernelSpec JIT::getAttentionLaunchSpec(const KernelSpec &spec,
                                       std::optional<int64_t> querySeq,
                                       int64_t queryGroup) const {
  return fmha::getAttentionLaunchSpec(spec, plan.chip, querySeq, queryGroup,
                                      getDeviceSharedBytes());
}

AttentionTensors fmha::foldGroupedQueries(const KernelSpec &spec,
                                          const AttentionTensors &t) {
  int64_t group = t.queryHeads / t.kvHeads;
  // Packed sequences' rows are not one per batch entry.
  if (t.querySeq != 1 || group == 1 || spec.window || spec.withQueryOffsets)
    return t;
  // Query head h = g * group + i of batch b becomes row i of head g.
  auto fold = [&](const std::array<int64_t, 3> &strides) {
    return std::array<int64_t, 3>{strides[0], strides[1] * group,
                                  strides[1]};
  };
  AttentionTensors folded = t;
  folded.queryHeads = t.kvHeads;
  folded.querySeq = group;
  folded.qStrides = fold(t.qStrides);
  folded.oStrides = fold(t.oStrides);
  folded.lseStrides = fold(t.lseStrides);
  folded.sinksStrides = {t.sinksStrides[0] * group, t.sinksStrides[0]};
  return folded;
}

/// q's and o's batch entries: each batch entry's, or the sequences packed as
/// one.
static int64_t getQueryEntries(const AttentionTensors &t) {
  return t.queryOffsets ? 1 : t.batch;
}

namespace {
/// Where a split launch keeps its partial states in the workspace: O
/// [S x B, H, Sq, D] of the element type from 0, then LSE [S x B, H, Sq]
/// f32 from lseOffset, both dense (the folded rows' H and Sq); packed
/// sequences' [S, H, T_q, D] and [S, H, T_q].
struct SplitWorkspace {
  unsigned splits = 1;
  size_t lseOffset = 0, bytes = 0;

  static SplitWorkspace get(const KernelSpec &spec, const AttentionTensors &t,
                            unsigned splits) {
    SplitWorkspace workspace;
    workspace.splits = splits;
    if (splits == 1)
      return workspace;
    size_t rows =
        size_t(splits) * getQueryEntries(t) * t.queryHeads * t.querySeq;
    size_t elementBytes = spec.elementType == ElementType::F32 ? 4 : 2;
    workspace.lseOffset =
        llvm::alignTo(rows * spec.getValueHeadDim() * elementBytes, 16);
    workspace.bytes = workspace.lseOffset + rows * sizeof(float);
    return workspace;
  }
};
} // namespace

namespace {
/// What a launch of attention runs: the spec of its kernel (for the
/// caller's query length), the tensors that kernel sees (a GQA group's
/// decode queries folded into rows), and how it splits its keys.
struct AttentionLaunchPlan {
  KernelSpec launched;
  AttentionTensors tensors;
  SplitWorkspace workspace;
  /// The launch's grid bound (LaunchOptions::residentCtas): per-sequence
  /// key counts launch one CTA per unit of work, since their units differ
  /// in cost by up to the cache length and a persistent grid's fixed
  /// stride leaves the CTAs that drew long ones the last; the hardware
  /// hands each unit to the first SM free.
  std::optional<unsigned> residentCtas;

  static AttentionLaunchPlan get(const JIT &jit, const KernelSpec &spec,
                                 const AttentionTensors &tensors,
                                 const LaunchOptions &options) {
    // A packed batch's tile is chosen for its longest sequence.
    int64_t querySeq =
        spec.withQueryOffsets ? tensors.maxQueryLength : tensors.querySeq;
    AttentionLaunchPlan plan{
        jit.getAttentionLaunchSpec(spec, querySeq,
                                   tensors.queryHeads / tensors.kvHeads),
        foldGroupedQueries(spec, tensors),
        {}};
    // A measurement's choice where packing can apply at all.
    bool folds = plan.tensors.querySeq != tensors.querySeq;
    if (options.packQueryHeads && !folds &&
        tensors.queryHeads > tensors.kvHeads)
      plan.launched.packQueryHeads = *options.packQueryHeads;
    plan.workspace = SplitWorkspace::get(
        spec, plan.tensors,
        plan.getKeySplits(jit, querySeq, options.keySplits));
    plan.residentCtas = options.residentCtas;
    if (!plan.residentCtas && spec.withKeyLengths)
      plan.residentCtas = 0;
    return plan;
  }

private:
  /// getKeySplits (or \p chosen, evened) for the caller's \p querySeq
  /// queries (a packed batch's longest sequence's): decode, and packed
  /// query heads, only, where the chip takes it (canPackOrSplit); packed
  /// sequences where their keys' count is known.
  unsigned getKeySplits(const JIT &jit, int64_t querySeq,
                        std::optional<unsigned> chosen) const {
    if ((querySeq != 1 && !launched.packQueryHeads) || launched.splitKeys ||
        !canPackOrSplit(launched, jit.getLoadPlan().chip))
      return 1;
    const AttentionTensors &t = tensors;
    int64_t keys = t.keySeq;
    if (launched.withQueryOffsets) {
      keys = t.maxKeyLength ? std::min(t.maxKeyLength, t.keySeq)
             : t.keyOffsets ? 0
                            : t.keySeq;
      if (keys < 1)
        return 1;
    }
    AttentionTiling tiling =
        jit.getAttentionTiling(launched, querySeq, t.queryHeads / t.kvHeads);
    int64_t keyBlocks = llvm::divideCeil(keys, tiling.blockN);
    if (chosen)
      return getEvenKeySplits(*chosen, keyBlocks);
    // A sequence's rows (the folded ones of a dense decode; at most the
    // longest sequence's of packed ones); packed, a KV head's Sq x G rows
    // are its tiles'.
    int64_t rows = launched.withQueryOffsets ? querySeq : t.querySeq;
    int64_t heads = t.queryHeads;
    if (launched.packQueryHeads) {
      rows *= t.queryHeads / t.kvHeads;
      heads = t.kvHeads;
    }
    int64_t units = llvm::divideCeil(rows, tiling.blockM) * heads * t.batch;
    return fmha::getKeySplits(units, keyBlocks,
                              jit.getDevice().multiprocessors);
  }
};
} // namespace

llvm::Expected<size_t>
JIT::getAttentionWorkspaceBytes(const KernelSpec &spec,
                                const AttentionTensors &tensors,
                                const LaunchOptions &options) const {
  if (llvm::Error err = checkAttentionSpec(spec))
    return std::move(err);
  if (llvm::Error err = checkAttentionSizes(tensors))
    return std::move(err);
  return AttentionLaunchPlan::get(*this, spec, tensors, options)
      .workspace.bytes;
}

/// Launches \p kernel, a merge of headDim \p headDim, on \p t: the op's
/// operands outs, lses, o, then lse.
static llvm::Error launchMergeKernel(const Kernel &kernel, int64_t headDim,
                                     const MergeTensors &t, CUstream stream) {
  const auto &outs = t.outsStrides, &lses = t.lsesStrides;
  llvm::SmallVector<LaunchOperand, 4> operands = {
      {t.outs,
       {t.states, t.batch, t.heads, t.querySeq, headDim},
       {outs[0], outs[1], outs[2], outs[3], 1}},
      {t.lses,
       {t.states, t.batch, t.heads, t.querySeq},
       {lses[0], lses[1], lses[2], lses[3]}},
      {t.o,
       {t.batch, t.heads, t.querySeq, headDim},
       {t.oStrides[0], t.oStrides[1], t.oStrides[2], 1}}};
  if (t.lse)
    operands.push_back({t.lse,
                        {t.batch, t.heads, t.querySeq},
                        {t.lseStrides[0], t.lseStrides[1], t.lseStrides[2]}});
  if (t.queryOffsets)
    operands.push_back({t.queryOffsets, {t.sequences + 1}, {1}});
  if (llvm::Error err = kernel.launch(stream, operands))
    return llvm::createStringError("merge_attention: " +
                                   llvm::toString(std::move(err)));
  return llvm::Error::success();
}

/// \p strides with the batch stride of a tensor packed as one batch entry of
/// \p heads x \p rows: the caller's is unread, and a tensor map needs one
/// that is a multiple of 16 bytes (the extent of the entry is).
template <size_t N>
static std::array<int64_t, N> packEntry(std::array<int64_t, N> strides,
                                        int64_t heads, int64_t rows) {
  strides[0] = std::max(strides[1] * heads, strides[2] * rows);
  return strides;
}

/// \p strides of q, o or lse of \p t: the caller's, or with query offsets
/// those of the sequences packed as one entry (packEntry).
static std::array<int64_t, 3> getQueryStrides(const AttentionTensors &t,
                                              std::array<int64_t, 3> strides) {
  return t.queryOffsets ? packEntry(strides, t.queryHeads, t.querySeq)
                        : strides;
}

/// The launch operands of attention \p spec on \p t: q, k, v, o, then lse,
/// sinks, key lengths, the page table, the query and key offsets and the
/// longest sequence's rows where given.
static llvm::SmallVector<LaunchOperand, 5>
getAttentionOperands(const KernelSpec &spec, const AttentionTensors &t,
                     int64_t outputEntries) {
  int64_t pageSize = spec.pageSize;
  auto tensor = [&](const void *data, int64_t batch, int64_t heads,
                    int64_t rows, const std::array<int64_t, 3> &strides,
                    int64_t headDim) {
    return LaunchOperand{data,
                         {batch, heads, rows, headDim},
                         {strides[0], strides[1], strides[2], 1}};
  };
  int64_t headDim = spec.headDim, valueHeadDim = spec.getValueHeadDim();
  // q and o: each batch entry's rows, or the sequences packed as one entry.
  int64_t queryEntries = getQueryEntries(t);
  // k and v: each batch entry's keys, the pages of a paged cache, or the
  // sequences' keys packed as one entry.
  int64_t keyEntries = pageSize ? t.pages : t.keyOffsets ? 1 : t.batch;
  int64_t keyRows = pageSize ? pageSize : t.keySeq;
  auto packKeys = [&](const std::array<int64_t, 3> &strides) {
    return t.keyOffsets ? packEntry(strides, t.kvHeads, t.keySeq) : strides;
  };
  llvm::SmallVector<LaunchOperand, 5> operands = {
      tensor(t.q, queryEntries, t.queryHeads, t.querySeq,
             getQueryStrides(t, t.qStrides), headDim),
      tensor(t.k, keyEntries, t.kvHeads, keyRows, packKeys(t.kStrides),
             headDim),
      tensor(t.v, keyEntries, t.kvHeads, keyRows, packKeys(t.vStrides),
             valueHeadDim),
      tensor(t.o, outputEntries, t.queryHeads, t.querySeq,
             getQueryStrides(t, t.oStrides), valueHeadDim)};
  if (t.lse) {
    std::array<int64_t, 3> lseStrides = getQueryStrides(t, t.lseStrides);
    operands.push_back(
        LaunchOperand{t.lse,
                      {outputEntries, t.queryHeads, t.querySeq},
                      {lseStrides[0], lseStrides[1], lseStrides[2]}});
  }
  if (t.sinks)
    operands.push_back(LaunchOperand{t.sinks,
                                     {t.queryHeads, t.querySeq},
                                     {t.sinksStrides[0], t.sinksStrides[1]}});
  if (t.keyLengths)
    operands.push_back(LaunchOperand{t.keyLengths, {t.batch}, {1}});
  if (t.pageTable) {
    int64_t pagesPerSequence = t.keySeq / pageSize;
    operands.push_back(LaunchOperand{
        t.pageTable, {t.batch, pagesPerSequence}, {pagesPerSequence, 1}});
  }
  if (t.queryOffsets)
    operands.push_back(LaunchOperand{t.queryOffsets, {t.batch + 1}, {1}});
  if (t.keyOffsets)
    operands.push_back(LaunchOperand{t.keyOffsets, {t.batch + 1}, {1}});
  // An index operand: its value as its one size.
  if (t.queryOffsets)
    operands.push_back(LaunchOperand{nullptr, {t.maxQueryLength}, {}});
  return operands;
}

llvm::Error JIT::launchAttention(const KernelSpec &spec,
                                 const AttentionTensors &tensors,
                                 CUstream stream,
                                 const LaunchOptions &options) {
  auto launchError = [](llvm::Error err) {
    return llvm::createStringError("attention: " +
                                   llvm::toString(std::move(err)));
  };
  if (llvm::Error err = checkAttentionTensors(spec, tensors))
    return err;
  // The kernel is the one for the caller's query length (for one query,
  // the non-causal kernel that the folded rows need).
  AttentionLaunchPlan plan =
      AttentionLaunchPlan::get(*this, spec, tensors, options);
  const KernelSpec &launched = plan.launched;
  const AttentionTensors &t = plan.tensors;
  const SplitWorkspace &workspace = plan.workspace;
  if (tensors.workspaceBytes && tensors.workspaceBytes < workspace.bytes)
    return llvm::make_error<OperandError>(llvm::formatv(
        "attention: workspaceBytes is {0}, expected 0 (no split) or at least "
        "{1} (getAttentionWorkspaceBytes: {2} key splits)",
        tensors.workspaceBytes, workspace.bytes, workspace.splits));
  if (workspace.splits == 1 || !tensors.workspaceBytes) {
    llvm::Expected<const Kernel &> kernel = getKernel(launched, options.source);
    if (!kernel || options.prepareOnly)
      return kernel.takeError();
    if (llvm::Error err = kernel->launch(
            stream, getAttentionOperands(spec, t, getQueryEntries(t)),
            plan.residentCtas))
      return launchError(std::move(err));
    return llvm::Error::success();
  }

  // Split-KV: each key split's partial state into the workspace, then
  // their merge into o and lse.
  KernelSpec split = launched;
  split.splitKeys = split.withLse = true;
  llvm::Expected<const Kernel &> kernel = getKernel(split, options.source);
  if (!kernel)
    return kernel.takeError();
  KernelSpec mergeSpec = getMergeSpec(spec);
  llvm::Expected<const Kernel &> merge = getKernel(mergeSpec, options.source);
  if (!merge || options.prepareOnly)
    return merge.takeError();
  if (!tensors.workspace || !isAligned(tensors.workspace, 16))
    return llvm::make_error<OperandError>(llvm::formatv(
        "attention: workspace is at {0} with workspaceBytes {1}, expected a "
        "16-byte aligned address",
        hexAddress(tensors.workspace), tensors.workspaceBytes));
  auto *base = static_cast<char *>(tensors.workspace);
  int64_t splits = workspace.splits;
  AttentionTensors partial = t;
  partial.o = base;
  partial.lse = reinterpret_cast<float *>(base + workspace.lseOffset);
  partial.setDenseStrides(spec.getHeadDims());
  // setDenseStrides sets every stride: q, k and v keep the caller's.
  partial.qStrides = t.qStrides;
  partial.kStrides = t.kStrides;
  partial.vStrides = t.vStrides;
  if (llvm::Error err = kernel->launch(
          stream,
          getAttentionOperands(spec, partial, splits * getQueryEntries(t)),
          plan.residentCtas))
    return launchError(std::move(err));

  MergeTensors states;
  states.outs = partial.o;
  states.lses = partial.lse;
  states.o = t.o;
  states.lse = t.lse;
  states.states = splits;
  states.batch = getQueryEntries(t);
  states.heads = t.queryHeads;
  states.querySeq = t.querySeq;
  states.setDenseStrides(spec.getValueHeadDim());
  states.oStrides = getQueryStrides(t, t.oStrides);
  states.lseStrides = getQueryStrides(t, t.lseStrides);
  if (t.queryOffsets) {
    // The packed sequences' rows only: no state was written outside them.
    states.queryOffsets = t.queryOffsets;
    states.sequences = t.batch;
  }
  // The states are the split kernel's: the merge kernel fetched above takes
  // them without checks or a second lookup.
  return launchMergeKernel(*merge, spec.getValueHeadDim(), states, stream);
}

void MergeTensors::setDenseStrides(unsigned headDim) {
  int64_t rows = batch * heads * querySeq;
  outsStrides = {rows * headDim, heads * querySeq * headDim,
                 querySeq * headDim, headDim};
  lsesStrides = {rows, heads * querySeq, querySeq, 1};
  oStrides = {heads * querySeq * headDim, querySeq * headDim, headDim};
  lseStrides = {heads * querySeq, querySeq, 1};
}

llvm::Error fmha::checkMergeTensors(const KernelSpec &spec,
                                    const MergeTensors &t) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(
        ("merge_attention: " + what).str());
  };
  if (spec.kind != OpKind::Merge)
    return fail("the kernel spec is not a merge_attention spec");
  if (spec.headDim < 1)
    return fail(llvm::formatv("headDim is {0}, expected at least 1",
                              spec.headDim));
  if (!t.outs || !t.lses || !t.o)
    return fail("outs, lses and o must not be null");
  if (spec.withLse != (t.lse != nullptr))
    return fail(spec.withLse
                    ? "the spec has an LSE output but no lse tensor is given"
                    : "an lse tensor is given but the spec has no LSE output "
                      "(set withLse)");
  if (spec.withQueryOffsets != (t.queryOffsets != nullptr))
    return fail(spec.withQueryOffsets
                    ? "the spec has query offsets but no queryOffsets are "
                      "given"
                    : "queryOffsets are given but the spec has none (set "
                      "withQueryOffsets)");
  if (t.queryOffsets && t.sequences < 0)
    return fail(
        llvm::formatv("sequences is {0}, expected at least 0", t.sequences));
  if (t.states < 1)
    return fail(llvm::formatv("states (S) is {0}, expected at least 1",
                              t.states));
  for (auto [name, value] : {std::pair{"batch", t.batch},
                             {"heads", t.heads},
                             {"querySeq (Sq)", t.querySeq}})
    if (value < 0)
      return fail(llvm::formatv("{0} is {1}, expected at least 0", name,
                                value));
  size_t elementBytes = spec.elementType == ElementType::F32 ? 4 : 2;
  for (auto [name, data, alignment] :
       {std::tuple{"outs", t.outs, elementBytes},
        {"o", static_cast<const void *>(t.o), elementBytes},
        {"lses", static_cast<const void *>(t.lses), sizeof(float)},
        {"lse", static_cast<const void *>(t.lse), sizeof(float)},
        {"queryOffsets", static_cast<const void *>(t.queryOffsets),
         sizeof(int32_t)}})
    if (data && !isAligned(data, alignment))
      return fail(llvm::formatv("{0} is at {1}, expected a {2}-byte aligned "
                                "address",
                                name, hexAddress(data), alignment));
  return llvm::Error::success();
}

llvm::Error JIT::launchMerge(const KernelSpec &spec, const MergeTensors &t,
                             CUstream stream, const LaunchOptions &options) {
  if (llvm::Error err = checkMergeTensors(spec, t))
    return err;
  llvm::Expected<const Kernel &> kernel = getKernel(spec, options.source);
  if (!kernel || options.prepareOnly)
    return kernel.takeError();
  return launchMergeKernel(*kernel, spec.headDim, t, stream);
}

void AttentionGradTensors::setDenseStrides(AttentionHeadDims headDims) {
  forward.setDenseStrides(headDims);
  // Each gradient like its tensor: dout like o (v's head dim).
  doutStrides = forward.oStrides;
  dqStrides = forward.qStrides;
  dkStrides = forward.kStrides;
  dvStrides = forward.vStrides;
  deltaStrides = forward.lseStrides;
}

/// The bytes of the dq accumulator at the workspace's start; dq_order's
/// counters follow it (at a 16-byte multiple: D >= 64).
static size_t getQueryGradAccumulatorBytes(const KernelSpec &spec,
                                           const AttentionTensors &f) {
  return size_t(f.batch) * f.queryHeads * f.querySeq * spec.headDim *
         sizeof(float);
}

/// dq_order's counters per (batch, query head).
static int64_t getQueryGradOrderBlocks(const AttentionTensors &f) {
  return llvm::divideCeil(f.querySeq, kQueryGradOrderBlock);
}

/// The bytes of the dq accumulator and dq_order's counters.
static size_t getQueryGradWorkspaceBytes(const KernelSpec &spec,
                                         const AttentionTensors &f) {
  size_t bytes = getQueryGradAccumulatorBytes(spec, f);
  if (spec.orderedQueryGrad)
    bytes += size_t(f.batch) * f.queryHeads * getQueryGradOrderBlocks(f) *
             sizeof(int32_t);
  return bytes;
}

/// Where dkv_partial starts in the workspace: after the dq accumulator and
/// dq_order's counters, at a 16-byte multiple (the sum's vector loads).
static size_t getKeyValueGradPartialOffset(const KernelSpec &spec,
                                           const AttentionTensors &f) {
  return llvm::alignTo(getQueryGradWorkspaceBytes(spec, f), 16);
}

size_t fmha::getAttentionGradWorkspaceBytes(const KernelSpec &spec,
                                            const AttentionTensors &f,
                                            unsigned slices) {
  if (!spec.withQueryGradAccumulator())
    return 0;
  if (slices <= 1)
    return getQueryGradWorkspaceBytes(spec, f);
  return getKeyValueGradPartialOffset(spec, f) +
         size_t(slices) * f.batch * f.kvHeads * f.keySeq *
             (spec.headDim + spec.getValueHeadDim()) * sizeof(float);
}

unsigned JIT::getAttentionGradSlices(const KernelSpec &spec,
                                     const AttentionTensors &f) const {
  if (!canSliceAttentionGradQueryHeads(spec, plan.chip) || f.kvHeads <= 0 ||
      f.queryHeads % f.kvHeads)
    return 1;
  return fmha::getAttentionGradSlices(
      f.batch, f.kvHeads, f.queryHeads / f.kvHeads, f.querySeq, f.keySeq,
      getAttentionGradTileColumns(
          std::max(spec.headDim, spec.getValueHeadDim())),
      spec.causal, spec.orderedQueryGrad, getDevice().multiprocessors);
}

llvm::Expected<size_t>
JIT::getAttentionGradFastestWorkspaceBytes(const KernelSpec &spec,
                                           const AttentionTensors &f) const {
  if (llvm::Error err = checkAttentionSizes(f, "attention_grad"))
    return std::move(err);
  return getAttentionGradWorkspaceBytes(spec, f,
                                        getAttentionGradSlices(spec, f));
}

llvm::Error fmha::checkAttentionGradTensors(const KernelSpec &spec,
                                            const AttentionGradTensors &t) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("attention_grad: " + what).str());
  };
  if (llvm::Error err = checkAttentionAttributes(
          spec, OpKind::AttentionGrad, "attention_grad",
          isSupportedAttentionHeadDim, kSupportedAttentionHeadDimsText))
    return err;
  if (spec.withKeyLengths || spec.pageSize)
    return fail(llvm::formatv(
        "the forward has {0} (a KV cache's): the backward takes whole "
        "sequences, without keyLengths or a pageTable",
        spec.withKeyLengths ? "key lengths" : "pages"));
  if (spec.withQueryOffsets)
    return fail("the forward has query offsets (packed sequences): the "
                "backward takes batches of equal lengths (none for packed "
                "ones yet)");
  const AttentionTensors &f = t.forward;
  if (!f.q || !f.k || !f.v || !f.o || !f.lse || !t.dout || !t.dq || !t.dk ||
      !t.dv || !t.delta)
    return fail("q, k, v, o, lse, dout, dq, dk, dv and delta must not be "
                "null (the backward reads the forward's lse)");
  if (llvm::Error err = checkAttentionSizes(f, "attention_grad"))
    return err;
  size_t workspaceBytes = getAttentionGradWorkspaceBytes(spec, f);
  if (workspaceBytes &&
      (!t.workspace || t.workspaceBytes < workspaceBytes ||
       !isAligned(t.workspace, 16)))
    return fail(llvm::formatv(
        "the workspace is {0} bytes at {1}, expected at least {2} bytes "
        "(the f32 dq accumulator of the one-pass backward{3}), 16-byte "
        "aligned",
        t.workspaceBytes, hexAddress(t.workspace), workspaceBytes,
        spec.orderedQueryGrad ? " and its counters" : ""));
  // The sm_90a kernel of that backward reads lse and delta at 32-bit
  // element offsets.
  for (auto [name, strides] : {std::pair{"lse", f.lseStrides},
                               std::pair{"delta", t.deltaStrides}}) {
    if (!workspaceBytes)
      break;
    int64_t last = (f.batch - 1) * strides[0] +
                   (f.queryHeads - 1) * strides[1] +
                   (f.querySeq - 1) * strides[2];
    if (last > std::numeric_limits<int32_t>::max())
      return fail(llvm::formatv(
          "{0}'s last element is {1} elements from its start, expected at "
          "most 2^31 - 1 with a workspace (pass none for the deterministic "
          "backward)",
          name, last));
  }
  return checkAttentionOperands(
      "attention_grad",
      {{"q", f.q, f.qStrides},
       {"k", f.k, f.kStrides},
       {"v", f.v, f.vStrides},
       {"o", f.o, f.oStrides},
       {"dout", t.dout, t.doutStrides},
       {"dq", t.dq, t.dqStrides},
       {"dk", t.dk, t.dkStrides},
       {"dv", t.dv, t.dvStrides}},
      {{"lse", f.lse}, {"delta", t.delta}});
}

llvm::Error JIT::launchAttentionGrad(const KernelSpec &spec,
                                     const AttentionGradTensors &t,
                                     CUstream stream,
                                     const LaunchOptions &options) {
  if (llvm::Error err = checkAttentionGradTensors(spec, t))
    return err;
  if (spec.orderedQueryGrad && plan.chip != Chip::sm_90a)
    return llvm::make_error<OperandError>(llvm::formatv(
        "attention_grad: the spec orders dq's adds (orderedQueryGrad), which "
        "needs chip sm_90a, got {0} (its deterministic backward is the one "
        "without a workspace)",
        stringifyChip(plan.chip)));
  // v's head dim apart from q's: sm_90a's WGMMA kernel alone, which adds
  // dq into the workspace (the mma.sync kernels keep one head dim).
  if (spec.getValueHeadDim() != spec.headDim &&
      (plan.chip != Chip::sm_90a || !spec.withQueryGradAccumulator()))
    return llvm::make_error<OperandError>(llvm::formatv(
        "attention_grad: valueHeadDim is {0} with headDim {1}, which the "
        "backward takes on chip sm_90a with a workspace (its WGMMA kernel), "
        "got chip {2}{3}",
        spec.getValueHeadDim(), spec.headDim, stringifyChip(plan.chip),
        spec.withQueryGradAccumulator() ? "" : " without a workspace"));
  if (!spec.deterministic && plan.chip != Chip::sm_90a &&
      !isSm80OnePassGradHeadDim(spec.headDim))
    return llvm::make_error<OperandError>(llvm::formatv(
        "attention_grad: headDim is {0} with a workspace on chip {1}, "
        "expected at most 128, or 160, 192, 224 or 256, there (the backward "
        "that adds dq into a workspace takes {0} on sm_90a only; pass no "
        "workspace for the deterministic one)",
        spec.headDim, stringifyChip(plan.chip)));
  // Kernels that fit this device's shared memory where the chip's do not
  // (an sm_86 or sm_89 GPU's 99 KB, getSm80GradTiling): their own spec.
  KernelSpec launched =
      getAttentionGradLaunchSpec(spec, plan.chip, getDeviceSharedBytes());
  // Slices of the groups' query heads where they pay and the workspace has
  // room for their partial dk and dv.
  const AttentionTensors &f = t.forward;
  unsigned slices = getAttentionGradSlices(spec, f);
  if (slices > 1 &&
      t.workspaceBytes < getAttentionGradWorkspaceBytes(spec, f, slices))
    slices = 1;
  launched.slicedQueryHeads = slices > 1;
  llvm::SmallVector<const Kernel *, 4> kernels;
  for (llvm::StringRef name : launched.getKernelNames()) {
    llvm::Expected<const Kernel &> kernel =
        getKernel(launched, options.source, name);
    if (!kernel)
      return kernel.takeError();
    kernels.push_back(&*kernel);
  }
  if (options.prepareOnly)
    return llvm::Error::success();
  // The op's operands in order: q, k, v, o, dout, lse, dq, dk, dv, delta,
  // then dq_accum, dq_order and dkv_partial where the spec has them.
  // q, k, dq and dk have the head dim, v, o, dout and dv the value head
  // dim (the tensor maps the kernels encode from these sizes read zeros past
  // them).
  auto tensor = [&](const void *data, bool keys,
                    const std::array<int64_t, 3> &strides,
                    bool valueSide = false) {
    return LaunchOperand{
        data,
        {f.batch, keys ? f.kvHeads : f.queryHeads, keys ? f.keySeq : f.querySeq,
         int64_t(valueSide ? spec.getValueHeadDim() : spec.headDim)},
        {strides[0], strides[1], strides[2], 1}};
  };
  auto rows = [&](const void *data, const std::array<int64_t, 3> &strides) {
    return LaunchOperand{data,
                         {f.batch, f.queryHeads, f.querySeq},
                         {strides[0], strides[1], strides[2]}};
  };
  llvm::SmallVector<LaunchOperand, 12> operands = {
      tensor(f.q, false, f.qStrides),
      tensor(f.k, true, f.kStrides),
      tensor(f.v, true, f.vStrides, /*valueSide=*/true),
      tensor(f.o, false, f.oStrides, /*valueSide=*/true),
      tensor(t.dout, false, t.doutStrides, /*valueSide=*/true),
      rows(f.lse, f.lseStrides),
      tensor(t.dq, false, t.dqStrides),
      tensor(t.dk, true, t.dkStrides),
      tensor(t.dv, true, t.dvStrides, /*valueSide=*/true),
      rows(t.delta, t.deltaStrides)};
  // The dq accumulator, dense [B, Hq, Sq, D] f32, in the workspace, then
  // dq_order's dense [B, Hq, ceil(Sq / 64)] i32.
  if (spec.withQueryGradAccumulator()) {
    int64_t d = spec.headDim;
    operands.push_back(tensor(t.workspace, false,
                              {f.queryHeads * f.querySeq * d, f.querySeq * d,
                               d}));
  }
  if (spec.orderedQueryGrad) {
    int64_t blocks = getQueryGradOrderBlocks(f);
    operands.push_back(LaunchOperand{static_cast<const char *>(t.workspace) +
                                         getQueryGradAccumulatorBytes(spec, f),
                                     {f.batch, f.queryHeads, blocks},
                                     {f.queryHeads * blocks, blocks, 1}});
  }
  // dkv_partial, dense [S, B, Hkv, Sk, D + Dv] f32.
  if (launched.slicedQueryHeads) {
    int64_t row = spec.headDim + spec.getValueHeadDim();
    int64_t sliceElements = f.batch * f.kvHeads * f.keySeq * row;
    operands.push_back(LaunchOperand{
        static_cast<char *>(t.workspace) +
            getKeyValueGradPartialOffset(spec, f),
        {slices, f.batch, f.kvHeads, f.keySeq, row},
        {sliceElements, f.kvHeads * f.keySeq * row, f.keySeq * row, row, 1}});
  }
  for (const Kernel *kernel : kernels)
    if (llvm::Error err = kernel->launch(stream, operands))
      return llvm::createStringError("attention_grad: " +
                                     llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Error fmha::checkResampleTensors(const KernelSpec &spec,
                                       const ResampleTensors &t) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("resample: " + what).str());
  };
  bool checkSorted = spec.kind == OpKind::CheckSorted;
  if (spec.kind != OpKind::Resample && !checkSorted)
    return fail("the kernel spec is not a resample or check_sorted spec");
  if (t.streams.size() != spec.streamFeatures.size())
    return fail(llvm::formatv("{0} streams given, the spec has {1}",
                              t.streams.size(), spec.streamFeatures.size()));
  if (t.batch < 0)
    return fail(llvm::formatv("batch is {0}, expected at least 0", t.batch));
  if (!checkSorted) {
    if (t.targetCount < 1)
      return fail(llvm::formatv("targetCount (T) is {0}, expected at least 1",
                                t.targetCount));
    if (!t.targets || !t.out)
      return fail("targets and out must not be null");
  }
  // The kernels move values and out in 16-byte accesses where the feature
  // counts allow: their rows start 16-byte aligned when the tensor does.
  constexpr uintptr_t kVectorAlignment = 16;
  if (!checkSorted && !isAligned(t.out, kVectorAlignment))
    return fail(llvm::formatv("out is at {0}, expected a 16-byte aligned "
                              "address",
                              hexAddress(t.out)));
  for (auto [index, stream] : llvm::enumerate(t.streams)) {
    if (stream.samples < 1)
      return fail(llvm::formatv("stream {0} has {1} samples, expected at "
                                "least 1",
                                index, stream.samples));
    if (!stream.times || (!checkSorted && !stream.values))
      return fail(llvm::formatv("stream {0}'s times{1} must not be null", index,
                                checkSorted ? "" : " and values"));
    if (spec.withLengths != (stream.lengths != nullptr))
      return fail(llvm::formatv(
          "stream {0}: {1}", index,
          spec.withLengths
              ? "the spec has lengths but the stream has none"
              : "lengths are given but the spec has none (set withLengths)"));
    if (!checkSorted && !isAligned(stream.values, kVectorAlignment))
      return fail(llvm::formatv("stream {0}'s values are at {1}, expected a "
                                "16-byte aligned address",
                                index, hexAddress(stream.values)));
  }
  return llvm::Error::success();
}

/// The times [B, S_s] of every stream, then (\p withValues) the values
/// [B, S_s, D_s], then (\p spec.withLengths) the lengths [B]: the stream
/// operands in the order of both ops.
static llvm::SmallVector<LaunchOperand>
getStreamOperands(const KernelSpec &spec, const ResampleTensors &t,
                  bool withValues) {
  llvm::SmallVector<LaunchOperand> operands;
  for (const ResampleStream &stream : t.streams)
    operands.push_back(
        {stream.times, {t.batch, stream.samples}, {stream.samples, 1}});
  if (withValues)
    for (auto [stream, features] :
         llvm::zip_equal(t.streams, spec.streamFeatures))
      operands.push_back(
          {stream.values,
           {t.batch, stream.samples, features},
           {stream.samples * features, int64_t(features), int64_t(1)}});
  if (spec.withLengths)
    for (const ResampleStream &stream : t.streams)
      operands.push_back({stream.lengths, {t.batch}, {1}});
  return operands;
}

llvm::Error JIT::launchResample(const KernelSpec &spec,
                                const ResampleTensors &t, CUstream stream,
                                const LaunchOptions &options) {
  if (spec.kind != OpKind::Resample)
    return llvm::createStringError(
        "resample: the kernel spec is not a resample spec");
  if (llvm::Error err = checkResampleTensors(spec, t))
    return err;
  llvm::Expected<const Kernel &> kernel = getKernel(spec, options.source);
  if (!kernel || options.prepareOnly)
    return kernel.takeError();
  int64_t totalFeatures = 0;
  for (unsigned features : spec.streamFeatures)
    totalFeatures += features;
  // The op's operands: the streams', then targets and out.
  llvm::SmallVector<LaunchOperand> operands =
      getStreamOperands(spec, t, /*withValues=*/true);
  operands.push_back(
      {t.targets, {t.batch, t.targetCount}, {t.targetCount, 1}});
  operands.push_back({t.out,
                      {t.batch, t.targetCount, totalFeatures},
                      {t.targetCount * totalFeatures, totalFeatures, 1}});
  if (llvm::Error err = kernel->launch(stream, operands))
    return llvm::createStringError("resample: " +
                                   llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Error JIT::launchCheckSorted(const KernelSpec &spec,
                                   const ResampleTensors &t, uint64_t *first,
                                   CUstream stream) {
  if (spec.kind != OpKind::CheckSorted)
    return llvm::createStringError(
        "check_sorted: the kernel spec is not a check_sorted spec");
  if (llvm::Error err = checkResampleTensors(spec, t))
    return err;
  if (!first)
    return llvm::createStringError("check_sorted: first must not be null");
  llvm::Expected<const Kernel &> kernel = getKernel(spec);
  if (!kernel)
    return kernel.takeError();
  // The op's operands: the streams' times and lengths, then first.
  llvm::SmallVector<LaunchOperand> operands =
      getStreamOperands(spec, t, /*withValues=*/false);
  operands.push_back({first, {int64_t(t.streams.size())}, {1}});
  if (llvm::Error err = kernel->launch(stream, operands))
    return llvm::createStringError("check_sorted: " +
                                   llvm::toString(std::move(err)));
  return llvm::Error::success();
}
