//===- KernelSpec.cpp - the static description of an fmha op --------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/KernelSpec.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/JIT/Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>

using namespace mlir;
using namespace mlir::fmha;

static llvm::StringRef getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  }
  llvm_unreachable("unknown element type");
}

llvm::StringRef KernelSpec::getKernelName() const {
  // The lowerings name each kernel after its op.
  switch (kind) {
  case OpKind::Attention:
    return "attention";
  case OpKind::AttentionGrad:
    return getKernelNames().front();
  case OpKind::Merge:
    return "merge_attention";
  case OpKind::Resample:
    return "resample";
  case OpKind::CheckSorted:
    return "check_sorted";
  }
  llvm_unreachable("unknown op kind");
}

llvm::SmallVector<llvm::StringRef, 4> KernelSpec::getKernelNames() const {
  if (kind != OpKind::AttentionGrad)
    return {getKernelName()};
  llvm::SmallVector<llvm::StringRef, 4> names;
  for (AttentionGradKernel kernel : getAttentionGradKernels(
           headDim, withQueryGradAccumulator(), slicedQueryHeads))
    names.push_back(getAttentionGradKernelName(kernel));
  return names;
}

std::string KernelSpec::getKey() const {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << (kind == OpKind::AttentionGrad ? "attention_grad" : getKernelName())
     << ' ' << getElementTypeName(elementType);
  if (kind == OpKind::Attention || kind == OpKind::AttentionGrad) {
    bool grad = kind == OpKind::AttentionGrad;
    os << " d" << headDim;
    if (getValueHeadDim() != headDim)
      os << " dv" << getValueHeadDim();
    os << (causal ? " causal" : "") << (withLse && !grad ? " lse" : "");
    if (window)
      os << " window " << (*window)[0] << ',' << (*window)[1];
    // The bits of the scale: two scales that print alike are not alike.
    if (scale)
      os << llvm::formatv(" scale {0:x8}", llvm::bit_cast<uint32_t>(*scale));
    if (softcap)
      os << llvm::formatv(" softcap {0:x8}",
                          llvm::bit_cast<uint32_t>(*softcap));
    if (withSinks)
      os << " sinks";
    if (grad) {
      if (!deterministic)
        os << " atomic";
      else if (orderedQueryGrad)
        os << " ordered";
      if (slicedQueryHeads)
        os << " sliced";
      if (maxSharedBytes)
        os << " max_shared_bytes " << maxSharedBytes;
      return key;
    }
    if (attentionTile)
      os << " tile " << stringifyChip(attentionTile->chip) << ','
         << attentionTile->blockM << ',' << attentionTile->blockN << ','
         << attentionTile->warps << ',' << attentionTile->stages;
    if (withKeyLengths)
      os << " key_lengths";
    if (pageSize)
      os << " page_size " << pageSize;
    if (withQueryOffsets)
      os << " query_offsets";
    if (withKeyOffsets)
      os << " key_offsets";
    if (splitKeys)
      os << " split_keys";
    if (packQueryHeads)
      os << " pack_query_heads";
    return key;
  }
  if (kind == OpKind::Merge) {
    os << " d" << headDim << (withLse ? " lse" : "")
       << (withQueryOffsets ? " query_offsets" : "");
    return key;
  }
  if (kind == OpKind::Resample)
    os << ' ' << stringifyResampleMode(mode);
  os << " streams";
  for (unsigned features : streamFeatures)
    os << ' ' << features;
  if (withLengths)
    os << " lengths";
  if (kind == OpKind::Resample && resampleTile)
    os << " tile " << stringifyChip(resampleTile->chip) << ','
       << resampleTile->blockT << ',' << resampleTile->threads;
  return key;
}

static Type getElementType(OpBuilder &b, ElementType type) {
  switch (type) {
  case ElementType::F16:
    return b.getF16Type();
  case ElementType::BF16:
    return b.getBF16Type();
  case ElementType::F32:
    return b.getF32Type();
  }
  llvm_unreachable("unknown element type");
}

/// A memref of \p shape whose strides and offset are all dynamic but the
/// innermost stride, 1 when \p denseInnermost.
static MemRefType getStridedType(ArrayRef<int64_t> shape, Type element,
                                 bool denseInnermost) {
  SmallVector<int64_t> strides(shape.size(), ShapedType::kDynamic);
  if (denseInnermost)
    strides.back() = 1;
  return MemRefType::get(shape, element,
                         StridedLayoutAttr::get(element.getContext(),
                                                ShapedType::kDynamic, strides));
}

/// Adds `func.func @name(types...)` at \p b's insertion point and moves
/// \p b into its body; returns its arguments.
static ValueRange createFunc(OpBuilder &b, StringRef name, TypeRange types) {
  auto func = func::FuncOp::create(b, b.getUnknownLoc(), name,
                                   b.getFunctionType(types, {}));
  b.setInsertionPointToStart(func.addEntryBlock());
  return func.getArguments();
}

OwningOpRef<ModuleOp> fmha::buildKernelSpecModule(const KernelSpec &spec,
                                                  MLIRContext &context) {
  context.getOrLoadDialect<FmhaDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type element = getElementType(b, spec.elementType);
  constexpr int64_t kDynamic = ShapedType::kDynamic;

  if (spec.kind == OpKind::Attention) {
    // Any strides with a dense head dimension: BHSD and BSHD alike.
    // q and k of headDim, v and o of the value head dim.
    auto tensor = [&](unsigned headDim) {
      return getStridedType({kDynamic, kDynamic, kDynamic, int64_t(headDim)},
                            element, /*denseInnermost=*/true);
    };
    SmallVector<Type> types = {tensor(spec.headDim), tensor(spec.headDim),
                               tensor(spec.getValueHeadDim()),
                               tensor(spec.getValueHeadDim())};
    // A paged k and v: [pages, Hkv, page size, D], the page size static.
    if (spec.pageSize)
      for (auto [i, headDim] :
           {std::pair{1, spec.headDim}, {2, spec.getValueHeadDim()}})
        types[i] = getStridedType(
            {kDynamic, kDynamic, spec.pageSize, int64_t(headDim)}, element,
            /*denseInnermost=*/true);
    if (spec.withLse)
      types.push_back(getStridedType({kDynamic, kDynamic, kDynamic},
                                     b.getF32Type(),
                                     /*denseInnermost=*/false));
    // sinks [Hq, Sq]: any strides (a launch passes the caller's [Hq] with a
    // row stride of 0, or folded decode's view).
    if (spec.withSinks)
      types.push_back(getStridedType({kDynamic, kDynamic}, b.getF32Type(),
                                     /*denseInnermost=*/false));
    // key_lengths [B]: dense (the C API's and torch's are).
    if (spec.withKeyLengths)
      types.push_back(MemRefType::get({kDynamic}, b.getI32Type()));
    // page_table [B, P]: dense, as key_lengths.
    if (spec.pageSize)
      types.push_back(MemRefType::get({kDynamic, kDynamic}, b.getI32Type()));
    // query_offsets and key_offsets [B + 1]: dense, as key_lengths; then
    // max_query_length.
    if (spec.withQueryOffsets)
      types.push_back(MemRefType::get({kDynamic}, b.getI32Type()));
    if (spec.withKeyOffsets)
      types.push_back(MemRefType::get({kDynamic}, b.getI32Type()));
    if (spec.withQueryOffsets)
      types.push_back(b.getIndexType());
    ValueRange arguments = createFunc(b, "attention", types);
    unsigned optional = 4;
    auto takeIf = [&](bool present) {
      return present ? arguments[optional++] : Value();
    };
    Value lse = takeIf(spec.withLse);
    Value sinks = takeIf(spec.withSinks);
    Value keyLengths = takeIf(spec.withKeyLengths);
    Value pageTable = takeIf(spec.pageSize != 0);
    Value queryOffsets = takeIf(spec.withQueryOffsets);
    Value keyOffsets = takeIf(spec.withKeyOffsets);
    Value maxQueryLength = takeIf(spec.withQueryOffsets);
    TileAttr tile;
    if (const std::optional<AttentionTiling> &t = spec.attentionTile)
      tile = TileAttr::get(&context, t->chip, t->blockM, t->blockN, t->warps,
                           t->stages);
    AttentionOp::create(
        b, loc, arguments[0], arguments[1], arguments[2], arguments[3], lse,
        sinks, keyLengths, pageTable, queryOffsets, keyOffsets, maxQueryLength,
        spec.causal, spec.scale ? b.getF32FloatAttr(*spec.scale) : FloatAttr(),
        spec.window ? b.getDenseI64ArrayAttr(*spec.window)
                    : DenseI64ArrayAttr(),
        tile, spec.splitKeys,
        spec.softcap ? b.getF32FloatAttr(*spec.softcap) : FloatAttr(),
        spec.packQueryHeads);
    func::ReturnOp::create(b, loc);
    return module;
  }

  if (spec.kind == OpKind::AttentionGrad) {
    // q, k, v, o, dout, then lse, then dq, dk, dv, then delta: any strides
    // with a dense head dimension; v, o, dout and dv of the value head dim.
    auto tensor = [&](unsigned headDim) {
      return getStridedType({kDynamic, kDynamic, kDynamic, int64_t(headDim)},
                            element, /*denseInnermost=*/true);
    };
    MemRefType keySide = tensor(spec.headDim),
               valueSide = tensor(spec.getValueHeadDim());
    MemRefType rows = getStridedType({kDynamic, kDynamic, kDynamic},
                                     b.getF32Type(), /*denseInnermost=*/false);
    SmallVector<Type> types = {keySide,   keySide, valueSide, valueSide,
                               valueSide, rows,    keySide,   keySide,
                               valueSide, rows};
    // dq_accum: dense rows (the op's contract), any batch and head strides.
    if (spec.withQueryGradAccumulator())
      types.push_back(MemRefType::get(
          {kDynamic, kDynamic, kDynamic, int64_t(spec.headDim)},
          b.getF32Type(),
          StridedLayoutAttr::get(
              &context, kDynamic,
              {kDynamic, kDynamic, int64_t(spec.headDim), 1})));
    // dq_order: any strides.
    if (spec.orderedQueryGrad)
      types.push_back(getStridedType({kDynamic, kDynamic, kDynamic},
                                     b.getI32Type(),
                                     /*denseInnermost=*/false));
    // dkv_partial: dense rows of D + Dv, any other strides.
    int64_t partialRow = spec.headDim + spec.getValueHeadDim();
    if (spec.slicedQueryHeads)
      types.push_back(MemRefType::get(
          {kDynamic, kDynamic, kDynamic, kDynamic, partialRow}, b.getF32Type(),
          StridedLayoutAttr::get(
              &context, kDynamic,
              {kDynamic, kDynamic, kDynamic, partialRow, 1})));
    ValueRange a = createFunc(b, "attention_grad", types);
    // The optional operands, in order, of those the spec has.
    ValueRange optional = a.drop_front(10);
    auto next = [&](bool present) {
      if (!present)
        return Value();
      Value value = optional.front();
      optional = optional.drop_front();
      return value;
    };
    Value dqAccum = next(spec.withQueryGradAccumulator());
    Value dqOrder = next(spec.orderedQueryGrad);
    Value dkvPartial = next(spec.slicedQueryHeads);
    AttentionGradOp::create(
        b, loc, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
        dqAccum, dqOrder, dkvPartial, spec.causal,
        spec.scale ? b.getF32FloatAttr(*spec.scale) : FloatAttr(),
        spec.window ? b.getDenseI64ArrayAttr(*spec.window)
                    : DenseI64ArrayAttr(),
        spec.softcap ? b.getF32FloatAttr(*spec.softcap) : FloatAttr(),
        spec.maxSharedBytes ? b.getI64IntegerAttr(spec.maxSharedBytes)
                            : IntegerAttr());
    func::ReturnOp::create(b, loc);
    return module;
  }

  if (spec.kind == OpKind::Merge) {
    // Any strides with a dense head dimension (MergeTensors): the states
    // may be slices of bigger tensors.
    int64_t headDim = spec.headDim;
    SmallVector<Type> types = {
        getStridedType({kDynamic, kDynamic, kDynamic, kDynamic, headDim},
                       element, /*denseInnermost=*/true),
        getStridedType({kDynamic, kDynamic, kDynamic, kDynamic},
                       b.getF32Type(), /*denseInnermost=*/false),
        getStridedType({kDynamic, kDynamic, kDynamic, headDim}, element,
                       /*denseInnermost=*/true)};
    if (spec.withLse)
      types.push_back(getStridedType({kDynamic, kDynamic, kDynamic},
                                     b.getF32Type(),
                                     /*denseInnermost=*/false));
    if (spec.withQueryOffsets)
      types.push_back(MemRefType::get({kDynamic}, b.getI32Type()));
    ValueRange arguments = createFunc(b, "merge_attention", types);
    MergeAttentionOp::create(b, loc, arguments[0], arguments[1], arguments[2],
                             spec.withLse ? arguments[3] : Value(),
                             spec.withQueryOffsets ? arguments.back()
                                                   : Value());
    func::ReturnOp::create(b, loc);
    return module;
  }

  // Streams' operands in the ops' order: times, values, lengths.
  auto timesType = MemRefType::get({kDynamic, kDynamic}, b.getF32Type());
  auto lengthsType = MemRefType::get({kDynamic}, b.getI32Type());
  unsigned streams = spec.streamFeatures.size();
  bool checkSorted = spec.kind == OpKind::CheckSorted;
  SmallVector<Type> types(streams, timesType);
  unsigned totalFeatures = 0;
  if (!checkSorted)
    for (unsigned features : spec.streamFeatures) {
      types.push_back(MemRefType::get(
          {kDynamic, kDynamic, int64_t(features)}, element));
      totalFeatures += features;
    }
  if (spec.withLengths)
    types.append(streams, lengthsType);
  if (checkSorted) {
    types.push_back(MemRefType::get({int64_t(streams)}, b.getI64Type()));
    ValueRange arguments = createFunc(b, "check_sorted", types);
    CheckSortedOp::create(
        b, loc, arguments.take_front(streams),
        spec.withLengths ? arguments.slice(streams, streams) : ValueRange(),
        arguments.back());
    func::ReturnOp::create(b, loc);
    return module;
  }
  types.push_back(timesType);
  types.push_back(MemRefType::get(
      {kDynamic, kDynamic, int64_t(totalFeatures)}, element));
  ValueRange arguments = createFunc(b, "resample", types);
  ResampleTileAttr tile;
  if (const std::optional<ResampleTiling> &t = spec.resampleTile)
    tile = ResampleTileAttr::get(&context, t->chip, t->blockT, t->threads);
  unsigned lengthsStart = 2 * streams;
  ResampleOp::create(
      b, loc, ResampleModeAttr::get(&context, spec.mode),
      arguments.take_front(streams),
      arguments.slice(streams, streams),
      spec.withLengths ? arguments.slice(lengthsStart, streams) : ValueRange(),
      arguments[arguments.size() - 2], arguments.back(), tile);
  func::ReturnOp::create(b, loc);
  return module;
}

std::string KernelSpec::toMLIR() const {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  OwningOpRef<ModuleOp> module = buildKernelSpecModule(*this, context);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

bool fmha::canPackOrSplit(const KernelSpec &spec, Chip chip) {
  return !spec.withQueryOffsets || chip == Chip::sm_90a;
}

bool fmha::shouldPackQueryHeads(const KernelSpec &spec, int64_t querySeq,
                                int64_t queryGroup, int64_t blockM) {
  // One query without a window folds the group's heads with a view
  // (foldGroupedQueries); with a window, or in packed sequences (which no
  // view folds; \p querySeq is then their longest), it packs them.
  if (queryGroup <= 1 || querySeq < 1 ||
      (querySeq == 1 && !spec.window && !spec.withQueryOffsets) || blockM <= 0)
    return false;
  auto filled = [&](int64_t rows) {
    return double(rows) / double(llvm::divideCeil(rows, blockM) * blockM);
  };
  // And where packing at least halves a KV head's tiles: at 77 queries of
  // GQA 4:1 (3 packed tiles against 4) the packed kernel was 1.36x slower
  // on the H100, at 4 and 16 (1 against 4) 1.3-2x faster.
  int64_t packedTiles = llvm::divideCeil(querySeq * queryGroup, blockM);
  int64_t tiles = queryGroup * llvm::divideCeil(querySeq, blockM);
  return filled(querySeq) < 0.9 * filled(querySeq * queryGroup) &&
         2 * packedTiles <= tiles;
}

bool fmha::isDefaultAttentionGradOnePass(Chip chip, ComputeCapability device,
                                         unsigned headDim, bool deterministic) {
  if (chip == Chip::sm_90a)
    return true;
  bool measuredFaster =
      device.minor == 0 && (device.major == 8 || device.major == 9);
  return measuredFaster && !deterministic && headDim >= 64 &&
         isSm80OnePassGradHeadDim(headDim);
}

llvm::SmallVector<int64_t, 4>
fmha::getAttentionQueryLengthClasses(int64_t queryGroup) {
  llvm::SmallVector<int64_t, 4> lengths = {1, 2};
  int64_t pastDecodeTile =
      kDecodeTileQueryRows / std::max<int64_t>(queryGroup, 1) + 1;
  if (pastDecodeTile > 2)
    lengths.push_back(pastDecodeTile);
  lengths.push_back(kShortAttentionQueries + 1);
  lengths.push_back(kLongAttentionQueries);
  return lengths;
}

KernelSpec fmha::getAttentionLaunchSpec(const KernelSpec &spec, Chip chip,
                                        std::optional<int64_t> querySeq,
                                        int64_t queryGroup,
                                        uint64_t deviceSharedBytes) {
  // A tile for this query length (and device) that is not the chip's one
  // for every length becomes the spec's own (a second kernel, compiled
  // once); otherwise the spec stays as given and shares its kernel with
  // every other length.
  KernelSpec launched = spec;
  if (querySeq == 1 && spec.causal && !spec.window)
    launched.causal = false;
  AttentionTiling tiling =
      spec.attentionTile
          ? *spec.attentionTile
          : getDefaultAttentionTiling(chip, launched.getHeadDims(),
                                      launched.causal, querySeq, queryGroup,
                                      spec.pageSize != 0, deviceSharedBytes);
  AttentionTiling everyLength =
      getDefaultAttentionTiling(chip, launched.getHeadDims(), launched.causal);
  if (!spec.attentionTile && tiling != everyLength)
    launched.attentionTile = tiling;
  if (querySeq && canPackOrSplit(spec, chip) &&
      shouldPackQueryHeads(launched, *querySeq, queryGroup, tiling.blockM))
    launched.packQueryHeads = true;
  return launched;
}

unsigned fmha::getKeySplits(int64_t units, int64_t keyBlocks,
                            int64_t multiprocessors) {
  if (units <= 0 || multiprocessors <= 0 ||
      units * 10 >= multiprocessors * 8 || keyBlocks <= 4)
    return 1;
  int64_t most = std::min<int64_t>({128, multiprocessors, keyBlocks});
  // The time of S splits, in unsplit tiles: the waves of units x S CTAs
  // over the SMs (the persistent grid takes them in turn), each CTA doing
  // 1 / S of a tile's keys.
  auto time = [&](int64_t splits) {
    return double(llvm::divideCeil(units * splits, multiprocessors)) /
           double(splits);
  };
  double best = 1;
  for (int64_t splits = 1; splits <= most; ++splits)
    best = std::min(best, time(splits));
  int64_t splits = 1;
  while (splits < most && time(splits) > 1.05 * best)
    ++splits;
  return getEvenKeySplits(splits, keyBlocks);
}

unsigned fmha::getEvenKeySplits(int64_t splits, int64_t keyBlocks) {
  if (splits <= 1 || keyBlocks <= 1)
    return 1;
  int64_t perSplit = (keyBlocks + splits - 1) / splits;
  return static_cast<unsigned>((keyBlocks + perSplit - 1) / perSplit);
}

bool fmha::canSliceAttentionGradQueryHeads(const KernelSpec &spec, Chip chip) {
  return chip == Chip::sm_90a && spec.withQueryGradAccumulator() &&
         !spec.window;
}

/// The time of sm_90a's dk/dv kernel in getAttentionGradSlices' model: its
/// CTAs taken in launch order, each by the SM that frees first.
static double simulateAttentionGradCtas(int64_t batch, int64_t kvHeads,
                                        int64_t group, int64_t slices,
                                        int64_t querySeq, int64_t keySeq,
                                        int64_t tileColumns, bool causal,
                                        bool ordered, int64_t multiprocessors) {
  AttentionGradBlocks blocks = getSm90aAttentionGradBlocks(tileColumns);
  int64_t keyBlocks = llvm::divideCeil(keySeq, blocks.keys);
  int64_t queryBlocks = llvm::divideCeil(querySeq, blocks.queries);
  int64_t heads = batch * kvHeads * slices;
  int64_t headsPerSlice = llvm::divideCeil(group, slices);
  int64_t fixed = slices > 1 ? 5 : 2;
  // The query blocks key block n sees: all, or under a causal mask
  // (bottom-right aligned) those from the one holding its first key's
  // diagonal.
  auto cost = [&](int64_t n) {
    int64_t seen = queryBlocks;
    if (causal) {
      int64_t diagonal = n * blocks.keys + querySeq - keySeq;
      seen = std::max<int64_t>(
          queryBlocks - (diagonal <= 0 ? 0 : diagonal / blocks.queries), 0);
    }
    return double(seen * headsPerSlice + fixed);
  };
  // Launch order: CTA c's key block (getLongestFirstCta's order: sections
  // of heads, each block by block over its heads; or the grid's: key blocks
  // fastest, from the last where ordered).
  bool longestFirst = causal && !ordered;
  int64_t sectionHeads = getSm90aGradSectionHeads(keyBlocks);
  auto keyBlockOf = [&](int64_t cta) {
    if (longestFirst) {
      int64_t firstHead = cta / (sectionHeads * keyBlocks) * sectionHeads;
      return cta % (sectionHeads * keyBlocks) /
             std::min(sectionHeads, heads - firstHead);
    }
    int64_t n = cta % keyBlocks;
    return ordered ? keyBlocks - 1 - n : n;
  };
  std::priority_queue<double, std::vector<double>, std::greater<double>> free;
  for (int64_t sm = 0; sm < multiprocessors; ++sm)
    free.push(0.0);
  double end = 0.0;
  for (int64_t cta = 0; cta < keyBlocks * heads; ++cta) {
    double done = free.top() + cost(keyBlockOf(cta));
    free.pop();
    free.push(done);
    end = std::max(end, done);
  }
  if (slices > 1)
    end += 3.0 * keyBlocks * heads / multiprocessors + 1.0;
  return end;
}

unsigned fmha::getAttentionGradSlices(int64_t batch, int64_t kvHeads,
                                      int64_t group, int64_t querySeq,
                                      int64_t keySeq, int64_t tileColumns,
                                      bool causal, bool ordered,
                                      int64_t multiprocessors) {
  if (group <= 1 || multiprocessors <= 0 || batch <= 0 || kvHeads <= 0 ||
      querySeq <= 0 || keySeq <= 0)
    return 1;
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         bool, bool, int64_t>;
  Key key{batch,       kvHeads, group,   querySeq,       keySeq,
          tileColumns, causal,  ordered, multiprocessors};
  static std::mutex mutex;
  static std::map<Key, unsigned> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end())
      return it->second;
  }
  int64_t units =
      batch * kvHeads *
      llvm::divideCeil(keySeq, getSm90aAttentionGradBlocks(tileColumns).keys);
  auto time = [&](int64_t slices) {
    return simulateAttentionGradCtas(batch, kvHeads, group, slices, querySeq,
                                     keySeq, tileColumns, causal, ordered,
                                     multiprocessors);
  };
  unsigned best = 1;
  double unsliced = time(1), bestTime = unsliced;
  for (int64_t slices = 2; slices <= group; ++slices) {
    if (group % slices || units * slices > 16 * multiprocessors)
      continue;
    if (double t = time(slices); t < 0.9 * unsliced && t < bestTime) {
      best = static_cast<unsigned>(slices);
      bestTime = t;
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, best);
  return best;
}

KernelSpec fmha::getAttentionGradSpec(const KernelSpec &spec,
                                      bool deterministic, bool ordered) {
  KernelSpec grad;
  grad.kind = OpKind::AttentionGrad;
  grad.elementType = spec.elementType;
  grad.headDim = spec.headDim;
  grad.valueHeadDim = spec.valueHeadDim;
  grad.causal = spec.causal;
  grad.window = spec.window;
  grad.scale = spec.scale;
  grad.softcap = spec.softcap;
  grad.withKeyLengths = spec.withKeyLengths;
  grad.pageSize = spec.pageSize;
  grad.withQueryOffsets = spec.withQueryOffsets;
  grad.withKeyOffsets = spec.withKeyOffsets;
  grad.deterministic = deterministic;
  grad.orderedQueryGrad = deterministic && ordered;
  return grad;
}

KernelSpec fmha::getAttentionGradSpec(const KernelSpec &spec, Chip chip,
                                      bool withWorkspace, bool deterministic) {
  return getAttentionGradSpec(spec, !withWorkspace || deterministic,
                              /*ordered=*/withWorkspace &&
                                  chip == Chip::sm_90a);
}

KernelSpec fmha::getAttentionGradLaunchSpec(const KernelSpec &spec, Chip chip,
                                            uint64_t deviceSharedBytes) {
  KernelSpec launched = spec;
  if (!spec.maxSharedBytes)
    launched.maxSharedBytes =
        getAttentionGradSharedLimit(chip, spec.headDim,
                                    spec.withQueryGradAccumulator(),
                                    deviceSharedBytes)
            .value_or(0);
  return launched;
}

KernelSpec fmha::getMergeSpec(const KernelSpec &spec) {
  KernelSpec merge;
  merge.kind = OpKind::Merge;
  merge.elementType = spec.elementType;
  merge.headDim = spec.getValueHeadDim();
  merge.withLse = spec.withLse;
  // Packed sequences' states exist only inside the sequences' rows.
  merge.withQueryOffsets = spec.withQueryOffsets;
  return merge;
}

std::vector<KernelSpec> fmha::getLaunchSpecs(const KernelSpec &spec, Chip chip,
                                             std::optional<int64_t> querySeq,
                                             int64_t queryGroup,
                                             uint64_t deviceSharedBytes) {
  if (spec.kind == OpKind::AttentionGrad)
    return {getAttentionGradLaunchSpec(spec, chip, deviceSharedBytes)};
  if (spec.kind != OpKind::Attention)
    return {spec};
  std::vector<KernelSpec> specs;
  std::vector<std::string> keys;
  auto add = [&](KernelSpec launched) {
    std::string key = launched.getKey();
    if (llvm::is_contained(keys, key))
      return;
    keys.push_back(std::move(key));
    specs.push_back(std::move(launched));
  };
  // Decode, and packed query heads, split their keys (canPackOrSplit).
  auto addSplit = [&](KernelSpec launched) {
    if (spec.splitKeys || !canPackOrSplit(spec, chip))
      return;
    launched.splitKeys = launched.withLse = true;
    add(launched);
    add(getMergeSpec(spec));
  };
  llvm::SmallVector<int64_t, 4> lengths =
      querySeq ? llvm::SmallVector<int64_t, 4>{*querySeq}
               : getAttentionQueryLengthClasses(queryGroup);
  llvm::SmallVector<KernelSpec, 4> launched;
  for (auto [index, length] : llvm::enumerate(lengths)) {
    launched.push_back(getAttentionLaunchSpec(spec, chip, length, queryGroup,
                                              deviceSharedBytes));
    add(launched.back());
    // A class whose longest length fills its tiles unpacked (the middle
    // class, not the few queries on decode's tile; the long class is judged
    // by its first) has both kernels.
    if (querySeq || !launched.back().packQueryHeads)
      continue;
    int64_t longest =
        index + 1 < lengths.size() ? lengths[index + 1] - 1 : length;
    int64_t blockM = launched.back()
                         .attentionTile
                         .value_or(getDefaultAttentionTiling(
                             chip, spec.getHeadDims(), launched.back().causal))
                         .blockM;
    if (!shouldPackQueryHeads(spec, longest, queryGroup, blockM)) {
      KernelSpec unpacked = launched.back();
      unpacked.packQueryHeads = false;
      add(unpacked);
    }
  }
  for (auto [length, kernel] : llvm::zip(lengths, launched))
    if (length == 1 || kernel.packQueryHeads)
      addSplit(kernel);
  return specs;
}
