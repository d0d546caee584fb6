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

void AttentionTensors::setDenseStrides(unsigned headDim) {
  auto dense = [&](int64_t heads, int64_t rows) -> std::array<int64_t, 3> {
    return {heads * rows * headDim, rows * headDim, headDim};
  };
  qStrides = oStrides = dense(queryHeads, querySeq);
  kStrides = vStrides = dense(kvHeads, keySeq);
  lseStrides = {queryHeads * querySeq, querySeq, 1};
}

llvm::Error fmha::checkAttentionSpec(const KernelSpec &spec) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("attention: " + what).str());
  };
  if (spec.kind != OpKind::Attention)
    return fail("the kernel spec is not an attention spec");
  if (spec.elementType == ElementType::F32)
    return fail("q, k, v and o are f16 or bf16, got f32");
  if (!llvm::is_contained(kSupportedHeadDims, int64_t(spec.headDim)))
    return fail(llvm::formatv("headDim is {0}, expected 64, 128 or 256",
                              spec.headDim));
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

llvm::Error fmha::checkAttentionTensors(const KernelSpec &spec,
                                        const AttentionTensors &t) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::make_error<OperandError>(("attention: " + what).str());
  };
  if (llvm::Error err = checkAttentionSpec(spec))
    return err;
  if (!t.q || !t.k || !t.v || !t.o)
    return fail("q, k, v and o must not be null");
  if (spec.withLse != (t.lse != nullptr))
    return fail(spec.withLse
                    ? "the spec has an LSE output but no lse tensor is given"
                    : "an lse tensor is given but the spec has no LSE output "
                      "(set withLse)");
  if (t.batch < 0)
    return fail(llvm::formatv("batch is {0}, expected at least 0", t.batch));
  // Both loops of either kernel count key and query blocks in 32 bits.
  constexpr int64_t kMaxSeq = (int64_t(1) << 31) - 1;
  for (auto [name, value] :
       {std::pair{"querySeq (Sq)", t.querySeq}, {"keySeq (Sk)", t.keySeq}})
    if (value < 1 || value > kMaxSeq)
      return fail(
          llvm::formatv("{0} is {1}, expected 1 to {2}", name, value, kMaxSeq));
  if (t.queryHeads < 1 || t.kvHeads < 1 || t.queryHeads % t.kvHeads != 0)
    return fail(llvm::formatv("queryHeads (Hq) {0} and kvHeads (Hkv) {1}: "
                              "expected both at least 1 and Hq % Hkv == 0",
                              t.queryHeads, t.kvHeads));
  // cp.async, TMA and the output's vector stores move 16-byte chunks.
  constexpr int64_t kAlignment = 16, kElementBytes = 2;
  constexpr const char *kDimensionNames[] = {"batch", "head", "row"};
  struct Operand {
    const char *name;
    const void *data;
    const std::array<int64_t, 3> &strides;
  };
  for (const Operand &operand :
       {Operand{"q", t.q, t.qStrides}, Operand{"k", t.k, t.kStrides},
        Operand{"v", t.v, t.vStrides}, Operand{"o", t.o, t.oStrides}}) {
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
  if (t.lse && !isAligned(t.lse, alignof(float)))
    return fail(llvm::formatv("lse is at {0}, expected a 4-byte aligned "
                              "address",
                              hexAddress(t.lse)));
  return llvm::Error::success();
}

KernelSpec JIT::getAttentionLaunchSpec(const KernelSpec &spec,
                                       std::optional<int64_t> querySeq) const {
  return fmha::getAttentionLaunchSpec(spec, plan.chip, querySeq);
}

AttentionTensors fmha::foldGroupedQueries(const KernelSpec &spec,
                                          const AttentionTensors &t) {
  int64_t group = t.queryHeads / t.kvHeads;
  if (t.querySeq != 1 || group == 1 || spec.window)
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
  return folded;
}

llvm::Error JIT::launchAttention(const KernelSpec &spec,
                                 const AttentionTensors &tensors,
                                 CUstream stream,
                                 const LaunchOptions &options) {
  if (llvm::Error err = checkAttentionTensors(spec, tensors))
    return err;
  // The kernel is the one for the caller's query length (for one query,
  // the non-causal kernel that the folded rows need).
  llvm::Expected<const Kernel &> kernel = getKernel(
      getAttentionLaunchSpec(spec, tensors.querySeq), options.source);
  if (!kernel || options.prepareOnly)
    return kernel.takeError();
  AttentionTensors t = foldGroupedQueries(spec, tensors);
  int64_t headDim = spec.headDim;
  auto tensor = [&](const void *data, int64_t heads, int64_t rows,
                    const std::array<int64_t, 3> &strides) {
    return LaunchOperand{data,
                         {t.batch, heads, rows, headDim},
                         {strides[0], strides[1], strides[2], 1}};
  };
  // The op's operands: q, k, v, o, then lse.
  llvm::SmallVector<LaunchOperand, 5> operands = {
      tensor(t.q, t.queryHeads, t.querySeq, t.qStrides),
      tensor(t.k, t.kvHeads, t.keySeq, t.kStrides),
      tensor(t.v, t.kvHeads, t.keySeq, t.vStrides),
      tensor(t.o, t.queryHeads, t.querySeq, t.oStrides)};
  if (t.lse)
    operands.push_back(LaunchOperand{
        t.lse,
        {t.batch, t.queryHeads, t.querySeq},
        {t.lseStrides[0], t.lseStrides[1], t.lseStrides[2]}});
  if (llvm::Error err = kernel->launch(stream, operands, options.residentCtas))
    return llvm::createStringError("attention: " +
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
