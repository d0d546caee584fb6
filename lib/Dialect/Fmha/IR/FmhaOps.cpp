//===- FmhaOps.cpp - fmha operations and their verifiers ------------------===//
//
// Part of FlashCore. The verifiers enforce the op contract of DESIGN.md: each
// diagnostic names the operand, the offending value and what was expected.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::fmha;

#define GET_OP_CLASSES
#include "fmha/FmhaOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Prints a dimension size as it appears in a memref type.
static std::string formatSize(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// Checks that \p value is a memref of rank \p rank; \p layout names the dims.
static LogicalResult checkRank(Operation *op, Value value, StringRef name,
                               int64_t rank, StringRef layout) {
  auto type = cast<MemRefType>(value.getType());
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << name << " must have rank " << rank << " "
                           << layout << ", got " << type;
}

/// Checks that \p value, the operand \p name, has rank \p rank (\p layout)
/// and elements of \p element, which the message calls \p elementName.
static LogicalResult checkRankAndElementType(Operation *op, Value value,
                                             StringRef name, int64_t rank,
                                             StringRef layout, Type element,
                                             StringRef elementName) {
  if (failed(checkRank(op, value, name, rank, layout)))
    return failure();
  Type actual = cast<MemRefType>(value.getType()).getElementType();
  if (actual == element)
    return success();
  return op->emitOpError() << name << " element type must be " << elementName
                           << ", got " << actual;
}

/// Checks that \p value's rows of \p columns elements are dense: strides
/// [?, ..., columns, 1]; \p why follows the expected strides.
static LogicalResult checkDenseRows(Operation *op, Value value, StringRef name,
                                    int64_t columns, StringRef why) {
  auto type = cast<MemRefType>(value.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  int64_t rank = type.getRank();
  if (succeeded(type.getStridesAndOffset(strides, offset)) &&
      strides[rank - 2] == columns && strides[rank - 1] == 1)
    return success();
  InFlightDiagnostic diagnostic =
      op->emitOpError() << name << " must be dense along its rows (strides [";
  for (int64_t i = 0; i < rank - 2; ++i)
    diagnostic << "?, ";
  return diagnostic << columns << ", 1]" << why << "), got " << type;
}

/// Checks that two sizes that must agree are equal where both are static.
static LogicalResult checkSameSize(Operation *op, StringRef what,
                                   int64_t actual, StringRef reference,
                                   int64_t expected) {
  if (ShapedType::isDynamic(actual) || ShapedType::isDynamic(expected) ||
      actual == expected)
    return success();
  return op->emitOpError() << what << " must match " << reference << " ("
                           << expected << "), got " << actual;
}

/// Checks that a sequence or sample count is not statically empty: every op
/// is defined for lengths of at least one.
static LogicalResult checkNonEmpty(Operation *op, StringRef what,
                                   int64_t size) {
  if (size != 0)
    return success();
  return op->emitOpError() << what << " must be at least 1, got 0";
}

/// Checks that \p value's element type is \p expected, which \p reference
/// (the operand that fixed it) has.
static LogicalResult checkElementType(Operation *op, Value value,
                                      StringRef name, Type expected,
                                      StringRef reference) {
  Type actual = cast<MemRefType>(value.getType()).getElementType();
  if (actual == expected)
    return success();
  return op->emitOpError() << name << " element type must match " << reference
                           << " (" << expected << "), got " << actual;
}

static int64_t dim(Value value, unsigned index) {
  return cast<MemRefType>(value.getType()).getDimSize(index);
}

/// Checks the attributes fmha.attention and fmha.attention_grad share:
/// a positive finite scale and softcap, and a window [left, right] of
/// non-negative sides whose right is 0 when causal.
static LogicalResult
checkMaskAttributes(Operation *op, bool causal, std::optional<APFloat> scale,
                    std::optional<ArrayRef<int64_t>> window,
                    std::optional<APFloat> softcap) {
  if (softcap) {
    float c = softcap->convertToFloat();
    if (!(c > 0.0f) || !std::isfinite(c))
      return op->emitOpError("softcap must be a positive finite f32, got ")
             << c;
  }
  if (scale) {
    float value = scale->convertToFloat();
    if (!std::isfinite(value) || value <= 0.0f)
      return op->emitOpError("scale must be a positive finite number, got ")
             << value;
  }
  if (!window)
    return success();
  if (window->size() != 2)
    return op->emitOpError("window must be [left, right], got ")
           << window->size() << " values";
  if ((*window)[0] < 0 || (*window)[1] < 0)
    return op->emitOpError("window sizes must be non-negative, got [")
           << (*window)[0] << ", " << (*window)[1] << "]";
  if (causal && (*window)[1] != 0)
    return op->emitOpError("a causal query sees no later key: window right "
                           "must be 0, got ")
           << (*window)[1];
  return success();
}

/// A [B, H, S, D] operand of an attention op.
struct AttentionTensor {
  Value value;
  StringRef name;
  /// Whether its sizes are k's (key side) rather than q's.
  bool keySide = false;
};

/// Checks what \p tensors (q first) of fmha.attention and
/// fmha.attention_grad share: rank 4, q's element type f16 or bf16 and
/// every other's the same, and static head dims.
static LogicalResult checkAttentionTensors(Operation *op,
                                           ArrayRef<AttentionTensor> tensors) {
  for (const AttentionTensor &t : tensors)
    if (failed(checkRank(op, t.value, t.name, 4, "[B, H, S, D]")))
      return failure();
  auto query = cast<MemRefType>(tensors.front().value.getType());
  Type elementType = query.getElementType();
  if (!elementType.isF16() && !elementType.isBF16())
    return op->emitOpError("q element type must be f16 or bf16, got ")
           << elementType;
  for (const AttentionTensor &t : tensors.drop_front())
    if (failed(checkElementType(op, t.value, t.name, elementType, "q")))
      return failure();
  for (const AttentionTensor &t : tensors)
    if (ShapedType::isDynamic(dim(t.value, 3)))
      return op->emitOpError("head dim (dim 3 of ")
             << t.name
             << ") must be static: kernels are specialized on it, got "
             << t.value.getType();
  return success();
}

/// Checks the head counts and lengths of an attention op's \p q and \p k:
/// Sq, Sk and Hkv at least 1, and Hq a multiple of Hkv (GQA/MQA).
static LogicalResult checkHeadsAndLengths(Operation *op, Value q, Value k) {
  int64_t queryHeads = dim(q, 1), kvHeads = dim(k, 1);
  if (failed(checkNonEmpty(op, "query sequence length Sq", dim(q, 2))) ||
      failed(checkNonEmpty(op, "key sequence length Sk", dim(k, 2))) ||
      failed(checkNonEmpty(op, "key/value head count Hkv", kvHeads)))
    return failure();
  if (!ShapedType::isDynamic(queryHeads) && !ShapedType::isDynamic(kvHeads) &&
      queryHeads % kvHeads != 0)
    return op->emitOpError("query heads Hq (")
           << queryHeads << ") must be a multiple of key/value heads Hkv ("
           << kvHeads << ")";
  return success();
}

/// The softmax scale of an attention op: \p scale, or 1/sqrt(D).
static float getScaleOrDefault(std::optional<APFloat> scale, int64_t headDim) {
  if (scale)
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(headDim));
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

int64_t AttentionOp::getHeadDim() { return dim(getQ(), 3); }

int64_t AttentionOp::getValueHeadDim() { return dim(getV(), 3); }

AttentionHeadDims AttentionOp::getHeadDims() {
  return {static_cast<unsigned>(getHeadDim()),
          static_cast<unsigned>(getValueHeadDim())};
}

float AttentionOp::getScaleOrDefault() {
  return ::getScaleOrDefault(getScale(), getHeadDim());
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  AttentionTensor tensors[] = {
      {getQ(), "q"}, {getK(), "k"}, {getV(), "v"}, {getO(), "o"}};
  if (failed(checkAttentionTensors(op, tensors)))
    return failure();
  Type elementType = getQ().getType().getElementType();
  int64_t headDim = getHeadDim();
  if (!isSupportedAttentionHeadDim(headDim))
    return emitOpError("head dim must be ")
           << kSupportedAttentionHeadDimsText << ", got " << headDim;
  // v's head dim (o's) may differ from q's and k's.
  int64_t valueHeadDim = getValueHeadDim();
  if (!isSupportedAttentionHeadDim(valueHeadDim))
    return emitOpError("v head dim (dim 3 of v) must be ")
           << kSupportedAttentionHeadDimsText << ", got " << valueHeadDim;

  int64_t batch = dim(getQ(), 0), queryHeads = dim(getQ(), 1);
  int64_t querySeq = dim(getQ(), 2), keySeq = dim(getK(), 2);
  int64_t kvHeads = dim(getK(), 1);
  // With a page table, k's and v's entries are pages, not batch entries.
  Value pageTable = getPageTable();
  Type f32 = Float32Type::get(getContext());
  Type i32 = IntegerType::get(getContext(), 32);
  if (failed(verifyPackedSequences()))
    return failure();
  // The sequences: q's batch entries, or with query_offsets (q packed as
  // one entry) the offsets' size minus one.
  int64_t sequences = batch;
  if (Value offsets = getQueryOffsets())
    sequences = ShapedType::isDynamic(dim(offsets, 0)) ? ShapedType::kDynamic
                                                       : dim(offsets, 0) - 1;
  for (const AttentionTensor &t : ArrayRef(tensors).drop_front()) {
    std::string name = t.name.str();
    bool isKeys = t.name != "o";
    bool entries = isKeys ? !pageTable : !getSplitKeys();
    // k and v keep an entry per sequence unless key_offsets packs them.
    bool perSequence = isKeys && !getKeyOffsets();
    if (entries &&
        failed(checkSameSize(op, name + " batch size", dim(t.value, 0),
                             perSequence && getQueryOffsets()
                                 ? "the sequence count (query_offsets' size "
                                   "- 1)"
                                 : "q's",
                             perSequence ? sequences : batch)))
      return failure();
    if (t.name == "k"
            ? failed(checkSameSize(op, "k head dim", dim(t.value, 3), "q's",
                                   headDim))
            : t.name == "o" &&
                  failed(checkSameSize(op, "o head dim", dim(t.value, 3), "v's",
                                       valueHeadDim)))
      return failure();
  }
  if (getSplitKeys()) {
    if (!getLse())
      return emitOpError("split_keys needs an lse: merging the partial "
                         "states weighs them by it");
    for (Value written : {getO(), getLse()}) {
      int64_t entries = dim(written, 0);
      if (!ShapedType::isDynamic(entries) && !ShapedType::isDynamic(batch) &&
          (entries == 0 || entries % batch != 0))
        return emitOpError()
               << (written == getO() ? "o" : "lse")
               << " batch size must be S * B (S >= 1 partial states of each "
                  "of q's "
               << batch << " batch entries) with split_keys, got " << entries;
    }
  }
  if (failed(checkSameSize(op, "o head count", dim(getO(), 1), "q's",
                           queryHeads)) ||
      failed(checkSameSize(op, "o sequence length", dim(getO(), 2), "q's",
                           querySeq)) ||
      failed(
          checkSameSize(op, "v head count", dim(getV(), 1), "k's", kvHeads)) ||
      failed(checkSameSize(op, "v sequence length", dim(getV(), 2), "k's",
                           keySeq)) ||
      failed(checkHeadsAndLengths(op, getQ(), getK())))
    return failure();

  if (Value lse = getLse()) {
    if (failed(checkRankAndElementType(op, lse, "lse", 3, "[B, Hq, Sq]", f32,
                                       "f32")) ||
        failed(checkSameSize(op, "lse batch size", dim(lse, 0), "o's",
                             dim(getO(), 0))) ||
        failed(checkSameSize(op, "lse head count", dim(lse, 1), "q's",
                             queryHeads)) ||
        failed(checkSameSize(op, "lse sequence length", dim(lse, 2), "q's",
                             querySeq)))
      return failure();
  }

  if (failed(checkMaskAttributes(op, getCausal(), getScale(), getWindow(),
                                 getSoftcap())))
    return failure();
  if (Value sinks = getSinks()) {
    if (failed(checkRankAndElementType(op, sinks, "sinks", 2, "[Hq, Sq]", f32,
                                       "f32")) ||
        failed(checkSameSize(op, "sinks head count", dim(sinks, 0), "q's",
                             queryHeads)) ||
        failed(checkSameSize(op, "sinks sequence length", dim(sinks, 1), "q's",
                             querySeq)))
      return failure();
  }
  if (Value lengths = getKeyLengths()) {
    if (failed(checkRankAndElementType(op, lengths, "key_lengths", 1, "[B]",
                                       i32, "i32")) ||
        failed(checkSameSize(op, "key_lengths size", dim(lengths, 0),
                             "the sequence count", sequences)))
      return failure();
  }
  if (pageTable) {
    if (failed(checkRankAndElementType(op, pageTable, "page_table", 2, "[B, P]",
                                       i32, "i32")) ||
        failed(checkSameSize(op, "page_table batch size", dim(pageTable, 0),
                             "the sequence count", sequences)) ||
        failed(checkSameSize(op, "v page count", dim(getV(), 0), "k's",
                             dim(getK(), 0))))
      return failure();
    // The sm_90a kernel loads a page's rows in whole 8-row swizzle atoms.
    for (auto [value, name] : {std::pair{getK(), "k"}, {getV(), "v"}}) {
      int64_t pageSize = dim(value, 2);
      if (ShapedType::isDynamic(pageSize) || pageSize % 8 != 0)
        return emitOpError("with a page_table, ")
               << name
               << "'s page size (dim 2) must be a static multiple of 8, got "
               << cast<MemRefType>(value.getType());
    }
  }

  if (std::optional<TileAttr> tile = getTile()) {
    AttentionTiling tiling = tile->getAttentionTiling();
    unsigned elementBytes = elementType.getIntOrFloatBitWidth() / 8;
    if (llvm::Error err =
            checkAttentionTilingFits(tiling, getHeadDims(), elementBytes))
      return emitOpError() << llvm::toString(std::move(err));
  }
  return success();
}

LogicalResult AttentionOp::verifyPackedSequences() {
  Operation *op = getOperation();
  Value queryOffsets = getQueryOffsets(), keyOffsets = getKeyOffsets();
  if (!queryOffsets) {
    if (keyOffsets)
      return emitOpError("key_offsets needs query_offsets (the sequences "
                         "they delimit)");
    if (getMaxQueryLength())
      return emitOpError("max_query_length without query_offsets: it "
                         "bounds the rows of a packed sequence");
    return success();
  }
  Type i32 = IntegerType::get(getContext(), 32);
  if (failed(checkRankAndElementType(op, queryOffsets, "query_offsets", 1,
                                     "[B + 1]", i32, "i32")))
    return failure();
  if (dim(queryOffsets, 0) == 0)
    return emitOpError("query_offsets must have B + 1 >= 1 entries, got 0");
  if (!getMaxQueryLength())
    return emitOpError("query_offsets needs max_query_length (the most rows "
                       "a sequence has: it sizes the grid)");
  int64_t batch = dim(getQ(), 0);
  if (!ShapedType::isDynamic(batch) && batch != 1)
    return emitOpError("with query_offsets, q's batch size must be 1 (the "
                       "sequences packed as one entry), got ")
           << batch;
  if (!keyOffsets)
    return success();
  if (getPageTable())
    return emitOpError("key_offsets with a page_table: a paged sequence's "
                       "keys are its pages");
  if (failed(checkRankAndElementType(op, keyOffsets, "key_offsets", 1,
                                     "[B + 1]", i32, "i32")))
    return failure();
  return checkSameSize(op, "key_offsets size", dim(keyOffsets, 0),
                       "query_offsets'", dim(queryOffsets, 0));
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

int64_t AttentionGradOp::getHeadDim() { return dim(getQ(), 3); }

int64_t AttentionGradOp::getValueHeadDim() { return dim(getV(), 3); }

float AttentionGradOp::getScaleOrDefault() {
  return ::getScaleOrDefault(getScale(), getHeadDim());
}

LogicalResult AttentionGradOp::verify() {
  Operation *op = getOperation();
  Type f32 = Float32Type::get(getContext());
  AttentionTensor tensors[] = {{getQ(), "q"},          {getK(), "k", true},
                               {getV(), "v", true},    {getO(), "o"},
                               {getDout(), "dout"},    {getDq(), "dq"},
                               {getDk(), "dk", true},  {getDv(), "dv", true}};
  if (failed(checkAttentionTensors(op, tensors)))
    return failure();
  for (auto [value, name] :
       {std::pair{getLse(), "lse"}, std::pair{getDelta(), "delta"}})
    if (failed(checkRank(op, value, name, 3, "[B, Hq, Sq]")))
      return failure();
  for (auto [value, name] :
       {std::pair{getLse(), "lse"}, std::pair{getDelta(), "delta"}}) {
    Type type = cast<MemRefType>(value.getType()).getElementType();
    if (!type.isF32())
      return emitOpError() << name << " element type must be f32, got "
                           << type;
  }

  int64_t headDim = getHeadDim(), valueHeadDim = getValueHeadDim();
  if (!isSupportedAttentionHeadDim(headDim))
    return emitOpError("head dim must be ")
           << kSupportedAttentionHeadDimsText << ", got " << headDim;
  if (!isSupportedAttentionHeadDim(valueHeadDim))
    return emitOpError("v's head dim must be ")
           << kSupportedAttentionHeadDimsText << ", got " << valueHeadDim;

  // v, o, dout and dv (in tensors' order) have v's head dim, the others
  // q's.
  constexpr bool kValueSide[] = {false, false, true,  true,
                                 true,  false, false, true};
  for (auto [t, valueSide] :
       llvm::drop_begin(llvm::zip_equal(tensors, kValueSide))) {
    std::string name = t.name.str();
    Value reference = t.keySide ? getK() : getQ();
    StringRef referenceName = t.keySide ? "k's" : "q's";
    if (failed(checkSameSize(op, name + " batch size", dim(t.value, 0), "q's",
                             dim(getQ(), 0))) ||
        failed(checkSameSize(op, name + " head count", dim(t.value, 1),
                             referenceName, dim(reference, 1))) ||
        failed(checkSameSize(op, name + " sequence length", dim(t.value, 2),
                             referenceName, dim(reference, 2))) ||
        failed(checkSameSize(op, name + " head dim", dim(t.value, 3),
                             valueSide ? "v's" : "q's",
                             valueSide ? valueHeadDim : headDim)))
      return failure();
  }
  for (auto [value, name] :
       {std::pair{getLse(), "lse"}, std::pair{getDelta(), "delta"}}) {
    std::string what = name;
    for (unsigned i = 0; i < 3; ++i) {
      static constexpr const char *kNames[] = {" batch size", " head count",
                                               " sequence length"};
      if (failed(checkSameSize(op, what + kNames[i], dim(value, i), "q's",
                               dim(getQ(), i))))
        return failure();
    }
  }
  if (Value accumulator = getDqAccum()) {
    if (failed(checkRankAndElementType(op, accumulator, "dq_accum", 4,
                                       "[B, Hq, Sq, D]", f32, "f32")))
      return failure();
    static constexpr const char *kNames[] = {
        " batch size", " head count", " sequence length", " head dim"};
    for (unsigned i = 0; i < 4; ++i)
      if (failed(checkSameSize(op, std::string("dq_accum") + kNames[i],
                               dim(accumulator, i), "q's", dim(getQ(), i))))
        return failure();
    // The kernels add a block of rows as one contiguous range.
    if (failed(checkDenseRows(op, accumulator, "dq_accum", headDim,
                              ": a block's rows are one range")))
      return failure();
  }
  if (Value order = getDqOrder()) {
    if (!getDqAccum())
      return emitOpError("dq_order orders the adds into dq_accum: it needs "
                         "dq_accum");
    if (failed(checkRankAndElementType(op, order, "dq_order", 3,
                                       "[B, Hq, ceil(Sq / 64)]",
                                       IntegerType::get(getContext(), 32),
                                       "i32")))
      return failure();
    if (failed(checkSameSize(op, "dq_order batch size", dim(order, 0), "q's",
                             dim(getQ(), 0))) ||
        failed(checkSameSize(op, "dq_order head count", dim(order, 1), "q's",
                             dim(getQ(), 1))))
      return failure();
    int64_t blocks = dim(order, 2), queries = dim(getQ(), 2);
    if (!ShapedType::isDynamic(blocks) && !ShapedType::isDynamic(queries) &&
        blocks * kQueryGradOrderBlock < queries)
      return emitOpError("dq_order has ")
             << blocks << " counters a head, expected ceil(Sq / "
             << kQueryGradOrderBlock
             << ") = " << llvm::divideCeil(queries, kQueryGradOrderBlock)
             << " (one per block of " << kQueryGradOrderBlock << " queries)";
  }
  if (Value partial = getDkvPartial()) {
    if (!getDqAccum())
      return emitOpError("dkv_partial slices the group's query heads of the "
                         "one-pass kernel: it needs dq_accum");
    if (failed(checkRankAndElementType(op, partial, "dkv_partial", 5,
                                       "[S, B, Hkv, Sk, D + Dv]", f32, "f32")))
      return failure();
    static constexpr const char *kNames[] = {" batch size", " head count",
                                             " sequence length"};
    for (unsigned i = 0; i < 3; ++i)
      if (failed(checkSameSize(op, std::string("dkv_partial") + kNames[i],
                               dim(partial, i + 1), "k's", dim(getK(), i))))
        return failure();
    int64_t rowColumns = headDim + valueHeadDim;
    if (failed(checkSameSize(op, "dkv_partial row", dim(partial, 4), "D + Dv",
                             rowColumns)))
      return failure();
    if (failed(checkDenseRows(op, partial, "dkv_partial", rowColumns, "")))
      return failure();
  }
  if (IntegerAttr most = getMaxSharedBytesAttr(); most && most.getInt() <= 0)
    return emitOpError("max_shared_bytes must be positive (the shared memory "
                       "a block may take on the device), got ")
           << most.getInt();
  if (failed(checkHeadsAndLengths(op, getQ(), getK())))
    return failure();
  return checkMaskAttributes(op, getCausal(), getScale(), getWindow(),
                             getSoftcap());
}

//===----------------------------------------------------------------------===//
// MergeAttentionOp
//===----------------------------------------------------------------------===//

int64_t MergeAttentionOp::getHeadDim() { return dim(getOuts(), 4); }

LogicalResult MergeAttentionOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getOuts(), "outs", 5, "[S, B, H, Sq, D]")) ||
      failed(checkRank(op, getLses(), "lses", 4, "[S, B, H, Sq]")) ||
      failed(checkRank(op, getO(), "o", 4, "[B, H, Sq, D]")) ||
      (getLse() && failed(checkRank(op, getLse(), "lse", 3, "[B, H, Sq]"))))
    return failure();
  Type elementType = getOuts().getType().getElementType();
  if (!elementType.isF16() && !elementType.isBF16() && !elementType.isF32())
    return emitOpError("outs element type must be f16, bf16 or f32, got ")
           << elementType;
  if (failed(checkElementType(op, getO(), "o", elementType, "outs")))
    return failure();
  for (auto [value, name] : {std::pair{getLses(), "lses"}, {getLse(), "lse"}})
    if (value && !cast<MemRefType>(value.getType()).getElementType().isF32())
      return emitOpError() << name << " element type must be f32, got "
                           << cast<MemRefType>(value.getType())
                                  .getElementType();
  int64_t headDim = getHeadDim();
  if (ShapedType::isDynamic(headDim) || headDim < 1)
    return emitOpError("head dim (dim 4 of outs) must be static and at "
                       "least 1: kernels are specialized on it, got ")
           << getOuts().getType();
  if (failed(checkNonEmpty(op, "state count S (dim 0 of outs)",
                           dim(getOuts(), 0))) ||
      failed(checkSameSize(op, "lses state count", dim(getLses(), 0),
                           "outs'", dim(getOuts(), 0))) ||
      failed(checkSameSize(op, "o head dim", dim(getO(), 3), "outs'",
                           headDim)))
    return failure();
  static constexpr const char *kNames[] = {"batch size", "head count",
                                           "sequence length"};
  for (int64_t i = 0; i < 3; ++i) {
    int64_t expected = dim(getOuts(), i + 1);
    std::string what = kNames[i];
    if (failed(checkSameSize(op, "lses " + what, dim(getLses(), i + 1),
                             "outs'", expected)) ||
        failed(checkSameSize(op, "o " + what, dim(getO(), i), "outs'",
                             expected)) ||
        (getLse() && failed(checkSameSize(op, "lse " + what,
                                          dim(getLse(), i), "outs'",
                                          expected))))
      return failure();
  }
  if (Value offsets = getQueryOffsets()) {
    if (failed(
            checkRankAndElementType(op, offsets, "query_offsets", 1, "[N + 1]",
                                    IntegerType::get(getContext(), 32), "i32")))
      return failure();
    if (dim(offsets, 0) == 0)
      return emitOpError("query_offsets must have N + 1 >= 1 entries, got 0");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ResampleOp
//===----------------------------------------------------------------------===//

/// Checks that per-row valid lengths are given for every one of
/// \p numStreams streams or for none.
static LogicalResult checkLengthsCount(Operation *op, unsigned numStreams,
                                       size_t numLengths) {
  if (numLengths == 0 || numLengths == numStreams)
    return success();
  return op->emitOpError("lengths must be given for every stream or none: "
                         "expected ")
         << numStreams << ", got " << numLengths;
}

/// Checks stream \p s's timestamps [B, S] (f32, S not empty) and, when
/// given, its valid lengths [B] (i32), against the batch size \p batch of
/// \p batchOwner.
static LogicalResult checkStreamTimes(Operation *op, unsigned s, Value times,
                                      Value lengths, int64_t batch,
                                      StringRef batchOwner) {
  std::string timesName = "times #" + std::to_string(s);
  if (failed(checkRank(op, times, timesName, 2, "[B, S]")))
    return failure();
  Type timeType = cast<MemRefType>(times.getType()).getElementType();
  if (!timeType.isF32())
    return op->emitOpError()
           << timesName << " element type must be f32, got " << timeType;
  if (failed(checkSameSize(op, timesName + " batch size", dim(times, 0),
                           batchOwner, batch)) ||
      failed(checkNonEmpty(op, timesName + " sample count S", dim(times, 1))))
    return failure();
  if (!lengths)
    return success();
  std::string lengthsName = "lengths #" + std::to_string(s);
  if (failed(checkRank(op, lengths, lengthsName, 1, "[B]")))
    return failure();
  Type lengthType = cast<MemRefType>(lengths.getType()).getElementType();
  if (!lengthType.isSignlessInteger(32))
    return op->emitOpError()
           << lengthsName << " element type must be i32, got " << lengthType;
  return checkSameSize(op, lengthsName + " batch size", dim(lengths, 0),
                       batchOwner, batch);
}

LogicalResult ResampleOp::verify() {
  Operation *op = getOperation();
  unsigned numStreams = getTimes().size();
  if (numStreams == 0)
    return emitOpError("needs at least one stream, got none");
  if (getValues().size() != numStreams)
    return emitOpError("each stream needs one times and one values operand, "
                       "got ")
           << numStreams << " times and " << getValues().size() << " values";
  if (failed(checkLengthsCount(op, numStreams, getLengths().size())))
    return failure();

  if (failed(checkRank(op, getTargets(), "targets", 2, "[B, T]")) ||
      failed(checkRank(op, getOut(), "out", 3, "[B, T, D]")))
    return failure();
  Type targetType = getTargets().getType().getElementType();
  if (!targetType.isF32())
    return emitOpError("targets element type must be f32, got ") << targetType;
  Type valueType = getOut().getType().getElementType();
  if (!valueType.isF32() && !valueType.isF16() && !valueType.isBF16())
    return emitOpError("out element type must be f32, f16 or bf16, got ")
           << valueType;
  int64_t batch = dim(getTargets(), 0);
  int64_t numTargets = dim(getTargets(), 1);
  if (failed(checkSameSize(op, "out batch size", dim(getOut(), 0), "targets'",
                           batch)) ||
      failed(checkSameSize(op, "out target count", dim(getOut(), 1), "targets'",
                           numTargets)) ||
      failed(checkNonEmpty(op, "target count T", numTargets)))
    return failure();

  int64_t totalFeatures = 0;
  std::string featureSum;
  for (unsigned s = 0; s < numStreams; ++s) {
    Value timesValue = getTimes()[s], valuesValue = getValues()[s];
    Value lengthsValue = getLengths().empty() ? Value() : getLengths()[s];
    if (failed(checkStreamTimes(op, s, timesValue, lengthsValue, batch,
                                "targets'")))
      return failure();
    std::string times = "times #" + std::to_string(s);
    std::string values = "values #" + std::to_string(s);
    if (failed(checkRank(op, valuesValue, values, 3, "[B, S, D]")) ||
        failed(checkElementType(op, valuesValue, values, valueType, "out's")))
      return failure();
    int64_t features = dim(valuesValue, 2);
    if (ShapedType::isDynamic(features))
      return emitOpError() << values
                           << " feature dim D must be static: kernels are "
                              "specialized on it, got "
                           << valuesValue.getType();
    if (failed(checkSameSize(op, values + " batch size", dim(valuesValue, 0),
                             "targets'", batch)) ||
        failed(checkSameSize(op, values + " sample count", dim(valuesValue, 1),
                             times + "'s", dim(timesValue, 1))) ||
        failed(checkNonEmpty(op, values + " feature dim D", features)))
      return failure();
    totalFeatures += features;
    featureSum += (s ? " + " : "") + std::to_string(features);
  }

  int64_t outFeatures = dim(getOut(), 2);
  if (outFeatures != totalFeatures)
    return emitOpError("out feature dim must be the sum of the streams' (")
           << featureSum << " = " << totalFeatures << "), got "
           << formatSize(outFeatures);
  return success();
}

LogicalResult CheckSortedOp::verify() {
  Operation *op = getOperation();
  unsigned numStreams = getTimes().size();
  if (numStreams == 0)
    return emitOpError("needs at least one stream, got none");
  if (failed(checkLengthsCount(op, numStreams, getLengths().size())))
    return failure();
  if (failed(checkRank(op, getFirst(), "first", 1, "[number of streams]")))
    return failure();
  Type firstType = getFirst().getType().getElementType();
  if (!firstType.isSignlessInteger(64))
    return emitOpError("first element type must be i64, got ") << firstType;
  if (failed(checkSameSize(op, "first size", dim(getFirst(), 0),
                           "the stream count", numStreams)))
    return failure();
  int64_t batch = dim(getTimes()[0], 0);
  for (unsigned s = 0; s < numStreams; ++s)
    if (failed(
            checkStreamTimes(op, s, getTimes()[s],
                             getLengths().empty() ? Value() : getLengths()[s],
                             batch, "times #0's")))
      return failure();
  return success();
}
