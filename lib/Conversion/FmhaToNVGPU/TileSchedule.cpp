//===- TileSchedule.cpp - which tiles an attention CTA works on -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "TileSchedule.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;

KeyRows KeyRows::get(AttentionOp op, gpu::GPUFuncOp func,
                     unsigned lseArgument) {
  KeyRows keys;
  if (op.getKeyLengths())
    keys.keyLengths = func.getArgument(getKeyLengthsArgument(op, lseArgument));
  if (op.getPageTable()) {
    keys.pageTable = func.getArgument(getPageTableArgument(op, lseArgument));
    keys.pageSize = cast<MemRefType>(op.getK().getType()).getDimSize(2);
  }
  return keys;
}

Value KeyRows::getCapacity(KernelBuilder &b, Value k) const {
  if (!pageTable)
    return memref::DimOp::create(b, k, 2);
  return b.mul(memref::DimOp::create(b, pageTable, 1), b.index(pageSize));
}

std::pair<Value, Value> KeyRows::locate(KernelBuilder &b, Value k,
                                        const TileCoordinates &tile,
                                        Value key) const {
  if (!pageTable)
    return {b.word(tile.getKeyEntry(b)), tile.toKeyRow(b, key)};
  // In 32 bits, as TMA coordinates; the division by the static page size
  // is a shift or a multiply.
  Value column = b.udiv(key, b.i32(pageSize));
  Value entry = memref::LoadOp::create(
      b, pageTable, ValueRange{tile.batchIndex, b.toIndex(column)});
  Value pages = b.word(hideFromHoisting(b, memref::DimOp::create(b, k, 0)));
  Value page = b.clamp(entry, b.i32(0), b.sub(pages, b.i32(1)));
  return {page, b.urem(key, b.i32(pageSize))};
}

SequenceRows SequenceRows::get(AttentionOp op, gpu::GPUFuncOp func,
                               unsigned lseArgument) {
  SequenceRows sequences;
  if (op.getQueryOffsets())
    sequences.queryOffsets =
        func.getArgument(getQueryOffsetsArgument(op, lseArgument));
  if (op.getKeyOffsets())
    sequences.keyOffsets =
        func.getArgument(getKeyOffsetsArgument(op, lseArgument));
  return sequences;
}

Value SequenceRows::getCount(KernelBuilder &b, Value q) const {
  if (!queryOffsets)
    return memref::DimOp::create(b, q, 0);
  return b.sub(memref::DimOp::create(b, queryOffsets, 0), b.index(1));
}

/// The clamped start (i32) and length (i32, at least 0) of the rows from
/// offset \p start to \p end (i32 as loaded) of a tensor of \p rows rows:
/// in 32 bits (signed: a negative offset counts as 0), as TMA coordinates.
static std::pair<Value, Value> clampSpan(KernelBuilder &b, Value start,
                                         Value end, Value rows) {
  Value total = b.word(rows);
  Value first = b.clamp(start, b.i32(0), total);
  Value last = b.clamp(end, b.i32(0), total);
  return {first, b.smax(b.sub(last, first), b.i32(0))};
}

SequenceRows::Spans SequenceRows::getSpans(KernelBuilder &b, Value sequence,
                                           Value next, Value q, Value k) const {
  Spans spans;
  auto span = [&](Value offsets, Value rows, Value &first, Value &length) {
    std::tie(first, length) =
        clampSpan(b, memref::LoadOp::create(b, offsets, ValueRange{sequence}),
                  memref::LoadOp::create(b, offsets, ValueRange{next}), rows);
  };
  span(queryOffsets, memref::DimOp::create(b, q, 2), spans.queryFirst,
       spans.queryRows);
  if (keyOffsets)
    span(keyOffsets, memref::DimOp::create(b, k, 2), spans.keyFirst,
         spans.keyRows);
  return spans;
}

SmallVector<Value> SequenceRows::Spans::toValues() const {
  SmallVector<Value> values{queryFirst, queryRows};
  if (keyRows)
    values.append({keyFirst, keyRows});
  return values;
}

SequenceRows::Spans SequenceRows::Spans::fromValues(ValueRange values) {
  Spans spans{values[0], values[1]};
  if (values.size() == 4) {
    spans.keyFirst = values[2];
    spans.keyRows = values[3];
  }
  return spans;
}

void SequenceRows::place(KernelBuilder &b, TileCoordinates &tile, Value q,
                         Value k) const {
  if (!queryOffsets)
    return;
  Value next = b.add(tile.batchIndex, b.index(1));
  place(b, tile, getSpans(b, tile.batchIndex, next, q, k));
}

void SequenceRows::place(KernelBuilder &b, TileCoordinates &tile,
                         const Spans &spans) const {
  // o's entry: the tile's key split's (q's one entry per split).
  tile.outputBatch = tile.split ? b.toIndex(tile.split) : b.index(0);
  tile.seqQ = b.toIndex(spans.queryRows);
  tile.queryBase = b.toIndex(spans.queryFirst);
  if (!spans.keyRows)
    return;
  tile.seqK = b.toIndex(spans.keyRows);
  tile.keyBase = b.toIndex(spans.keyFirst);
}

Value SequenceRows::holdsRows(KernelBuilder &b,
                              const TileCoordinates &tile) const {
  if (!queryOffsets)
    return Value();
  return b.slt(tile.firstRow, tile.seqQ);
}

CtaCoordinates CtaCoordinates::compute(KernelBuilder &b, Value q, Value k,
                                       const KeyRows &keys, int64_t blockM,
                                       bool packQueryHeads) {
  CtaCoordinates cta;
  cta.seqQ = memref::DimOp::create(b, q, 2);
  cta.seqK = keys.getCapacity(b, k);
  Value reversed =
      b.sub(b.sub(gpu::GridDimOp::create(b, gpu::Dimension::x), b.index(1)),
            gpu::BlockIdOp::create(b, gpu::Dimension::x));
  cta.firstRow = b.mul(reversed, b.index(blockM));
  cta.head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  if (!packQueryHeads) {
    cta.kvHead = getKvHead(b, q, k, cta.head);
    return cta;
  }
  // Query head h = hk x G + g and reversed row block x: packed row block
  // g x R + x of KV head hk (R = gridDim.x = ceil(Sq / block_m), so the
  // G x R blocks cover ceil(Sq x G / block_m)), in 32 bits.
  Value group = getQueryGroup(b, q, k);
  Value head = b.word(cta.head);
  Value member = b.urem(head, group);
  Value rowBlocks = b.word(gpu::GridDimOp::create(b, gpu::Dimension::x));
  Value block = b.add(b.mul(member, rowBlocks), b.word(reversed));
  cta.queryGroup = b.toIndex(group);
  cta.head = cta.kvHead = b.toIndex(b.udiv(head, group));
  cta.firstRow = b.toIndex(b.mul(block, b.i32(blockM)));
  cta.seqQ = b.toIndex(b.mul(b.word(cta.seqQ), group));
  return cta;
}

Value TileCoordinates::getQueryEntry(KernelBuilder &b) const {
  return queryBase ? b.index(0) : batchIndex;
}

Value TileCoordinates::getKeyEntry(KernelBuilder &b) const {
  return keyBase ? b.index(0) : batchIndex;
}

/// \p row plus \p base (index) where there is one, in \p row's type.
static Value offsetRow(KernelBuilder &b, Value row, Value base) {
  if (!base)
    return row;
  return b.add(row, row.getType().isIndex() ? base : b.word(base));
}

Value TileCoordinates::toQueryRow(KernelBuilder &b, Value row) const {
  return offsetRow(b, row, queryBase);
}

Value TileCoordinates::toKeyRow(KernelBuilder &b, Value row) const {
  return offsetRow(b, row, keyBase);
}

Value TileCoordinates::getQueryPosition(KernelBuilder &b, Value row) const {
  return queryGroup ? divideWords(b, row, queryGroup) : row;
}

std::pair<Value, Value> TileCoordinates::getQueryHeadAndRow(KernelBuilder &b,
                                                            Value row) const {
  if (!queryGroup)
    return {head, toQueryRow(b, row)};
  Value member = b.toIndex(b.urem(b.word(row), b.word(queryGroup)));
  return {b.add(b.mul(head, queryGroup), member),
          toQueryRow(b, divideWords(b, row, queryGroup))};
}

void TileCoordinates::setOutputBatch(KernelBuilder &b, Value entry,
                                     Value batch, Value entries,
                                     bool splitKeys) {
  outputBatch = batchIndex = entry;
  if (!splitKeys)
    return;
  Value word = b.word(entry), batchWord = b.word(batch);
  batchIndex = b.toIndex(b.urem(word, batchWord));
  split = b.udiv(word, batchWord);
  splits = b.udiv(b.word(entries), batchWord);
}

Value TileCoordinates::loadSink(KernelBuilder &b, Value sinks,
                                Value row) const {
  if (!sinks)
    return Value();
  auto [queryHead, inside] =
      getQueryHeadAndRow(b, b.smin(row, b.sub(seqQ, b.index(1))));
  Value sink = memref::LoadOp::create(b, sinks, ValueRange{queryHead, inside});
  if (!split)
    return sink;
  return b.select(b.eq(split, b.i32(0)), sink,
                  b.f32(-std::numeric_limits<float>::infinity()));
}

void TileCoordinates::limitKeys(KernelBuilder &b, Value keyLengths) {
  if (!keyLengths)
    return;
  // In 32 bits (signed: a negative length counts as 0), as TMA coordinates.
  Value length = memref::LoadOp::create(b, keyLengths, ValueRange{batchIndex});
  seqK = b.toIndex(b.clamp(length, b.i32(0), b.word(seqK)));
}

void TileCoordinates::computeRange(KernelBuilder &b, int64_t blockM,
                                   int64_t blockN,
                                   const AttentionWindow &window) {
  range = KeyBlockRange::compute(b, seqQ, seqK, firstRow, blockM, blockN,
                                 window, queryGroup);
  if (splits)
    range.restrictToSplit(b, seqK, blockN, split, splits);
}

// The unit loop runs in 32 bits, as TMA coordinates do: there are at most as
// many units as rows of q, each of at least 128 bytes, and 2^31 of them would
// be a 256 GB q.
void PersistentTileSchedule::forEachTile(
    llvm::function_ref<Value(const TileCoordinates &tile, Value iteration,
                             Value blocks)>
        body,
    bool byWarps, bool holdSequences, OrderCache orderCache) {
  assert((byWarps || !sequences.queryOffsets) &&
         "packed tiles are found by whole warps");
  int64_t tilesPerUnit = pairsRowBlocks ? 2 : 1;
  // Whether tile \p position (i32) of this CTA is its unit's second.
  auto isSecond = [&](Value position) {
    return b.ne(b.urem(position, b.i32(tilesPerUnit)), b.i32(0));
  };
  if (sequences.queryOffsets) {
    // Tile \p position's unit, x + (position / tiles per unit) x gridDim.x,
    // with the CTA's place in the grid read anew where it is used: two
    // registers fewer held across the tile loop, where the sm_90a producer
    // has 24 (the dense loop's ptxas keeps as they are).
    auto getUnit = [&](Value position) {
      return b.add(readSpecialRegister(b, "%ctaid.x"),
                   b.mul(b.udiv(position, b.i32(tilesPerUnit)),
                         readSpecialRegister(b, "%nctaid.x")));
    };
    forEachPackedTile(body, getUnit, isSecond, holdSequences, orderCache);
    return;
  }
  Value units =
      b.mul(b.mul(getUnitsPerHead(),
                  b.word(memref::DimOp::create(b, getHeadsTensor(), 1))),
            b.word(getBatchEntries()));
  Value first = b.word(gpu::BlockIdOp::create(b, gpu::Dimension::x));
  Value step = b.word(gpu::GridDimOp::create(b, gpu::Dimension::x));
  // This CTA's units, each one tile or (paired) two, in one flat loop:
  // fewer values live across it than in nested ones (the sm_90a producer
  // has 24 registers).
  Value count = b.ceilDivU(b.sub(b.umax(units, first), first), step);
  count = b.mul(count, b.i32(tilesPerUnit));
  auto loop = scf::ForOp::create(b, b.i32(0), count, b.i32(1),
                                 ValueRange{b.i32(0), b.i32(0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value position = loop.getInductionVar();
  Value unit = b.add(first, b.mul(b.udiv(position, b.i32(tilesPerUnit)), step));
  Value second = isSecond(position);
  ValueRange carried = loop.getRegionIterArgs();
  auto runTile = [&](const TileCoordinates &tile, Value holds) {
    return runTileWhere(body, tile, holds, carried);
  };
  // Paired, placeUnit counts the (batch, head) pairs (o's entries with
  // split_keys); single row blocks do not need them.
  Value heads;
  if (pairsRowBlocks)
    heads = b.mul(b.word(freshDim(getHeadsTensor(), 1)),
                  b.word(hideFromHoisting(b, getBatchEntries())));
  UnitPlace place = placeUnit(unit, getRowBlocks(), heads);
  if (!pairsRowBlocks) {
    scf::YieldOp::create(b, runTile(getTile(place, second), Value()));
    return;
  }
  // The middle row block of an odd count has no partner: no second tile.
  Value alone = b.and_(second, place.alone);
  auto tile = scf::IfOp::create(
      b, alone,
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, carried); },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, runTile(getTile(place, second), Value()));
      });
  scf::YieldOp::create(b, tile.getResults());
}

SmallVector<Value> PersistentTileSchedule::runTileWhere(
    llvm::function_ref<Value(const TileCoordinates &, Value, Value)> body,
    const TileCoordinates &tile, Value holds, ValueRange carried) {
  // Every role skips alike, so the per-tile barrier parities stay in step.
  auto run = [&]() {
    Value blocks = body(tile, carried[0], carried[1]);
    return SmallVector<Value>{b.add(carried[0], b.i32(1)), blocks};
  };
  if (!holds)
    return run();
  auto skip = scf::IfOp::create(
      b, holds, [&](OpBuilder &, Location) { scf::YieldOp::create(b, run()); },
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, carried); });
  return SmallVector<Value>(skip.getResults());
}

// Packed sequences: the loop runs while the search finds a sequence for the
// tile's unit, so neither the units' total nor a trip count is computed or
// held across it (with both held, the producer of a paged, causal d128
// kernel with packed query heads spilled them); a role that holds the
// first chunk (the consumers) holds only its 32 sequences' sums and spans.
void PersistentTileSchedule::forEachPackedTile(
    llvm::function_ref<Value(const TileCoordinates &, Value, Value)> body,
    llvm::function_ref<Value(Value)> getUnit,
    llvm::function_ref<Value(Value)> isSecond, bool holdFirstChunk,
    OrderCache orderCache) {
  Type i32 = b.getI32Type();
  std::optional<SequenceChunk> firstChunk;
  if (holdFirstChunk) {
    firstChunk = getFirstChunk(nullptr);
  } else if (orderCache && ordersLongestFirst()) {
    // The warp's own buffer: its lanes' stores, then every lane's loads.
    Value count = getSequenceCount();
    LLVM::StoreOp::create(
        b, sortFirstChunk(getSequenceSpans(getLane(), count), count),
        getOrderSlot(orderCache()), /*alignment=*/4);
    NVVM::SyncWarpOp::create(b, b.i32(-1));
  }
  // The position, tile and block counts, then the unit, its sequence and
  // first unit, and the sequence's spans.
  SmallVector<Type> carriedTypes(6 + sequences.getSpanValues(), i32);
  auto loop = scf::WhileOp::create(
      b, carriedTypes, ValueRange{b.i32(0), b.i32(0), b.i32(0)},
      [&](OpBuilder &, Location, ValueRange carried) {
        Value unit = getUnit(carried[0]);
        FoundSequence found = findSequence(unit, firstChunk, orderCache);
        SmallVector<Value> forwarded{carried[0],     carried[1],
                                     carried[2],     unit,
                                     found.sequence, found.firstUnit};
        forwarded.append(found.spans.toValues());
        scf::ConditionOp::create(b, found.exists, forwarded);
      },
      [&](OpBuilder &, Location, ValueRange carried) {
        Value position = carried[0];
        FoundSequence found{
            carried[4], carried[5], Value(),
            SequenceRows::Spans::fromValues(carried.drop_front(6))};
        auto [tile, holds] =
            getPackedTile(carried[3], isSecond(position), found);
        SmallVector<Value> next =
            runTileWhere(body, tile, holds, carried.slice(1, 2));
        scf::YieldOp::create(
            b, ValueRange{b.add(position, b.i32(1)), next[0], next[1]});
      });
  b.setInsertionPointAfter(loop);
}

Value PersistentTileSchedule::getRowBlocks() {
  Value rows = b.word(freshDim(q, 2));
  if (packQueryHeads)
    rows = b.mul(rows, getQueryGroup());
  return b.ceilDivU(rows, b.i32(blockM));
}

void PersistentTileSchedule::packQueryRows(TileCoordinates &tile) {
  if (!packQueryHeads)
    return;
  Value group = getQueryGroup();
  tile.queryGroup = b.toIndex(group);
  tile.seqQ = b.toIndex(b.mul(b.word(tile.seqQ), group));
}

Value PersistentTileSchedule::getQueryGroup() {
  return fmha::getQueryGroup(b, q, k, /*fresh=*/true);
}

/// With query_offsets and split_keys, S, the key splits (i32): o's entries,
/// q having one.
Value PersistentTileSchedule::getSplits() { return b.word(freshDim(o, 0)); }

/// The units' batch entries: q's (o's entries with split_keys).
Value PersistentTileSchedule::getBatchEntries() {
  return memref::DimOp::create(b, splitKeys ? o : q, 0);
}

/// Units per (batch, head): pairs of row blocks, or single ones.
Value PersistentTileSchedule::getUnitsPerHead() {
  Value rowBlocks = getRowBlocks();
  return pairsRowBlocks ? b.ceilDivU(rowBlocks, b.i32(2)) : rowBlocks;
}

PersistentTileSchedule::UnitPlace
PersistentTileSchedule::placeUnit(Value unit, Value rowBlocks, Value heads) {
  if (!pairsRowBlocks)
    return {b.udiv(unit, rowBlocks), b.urem(unit, rowBlocks), Value()};
  Value pairsPerHead = b.lshr(rowBlocks, b.i32(1));
  Value pairs = b.mul(pairsPerHead, heads);
  Value paired = b.slt(unit, pairs);
  // One row block has no pairs: its units are all middles (the divisor
  // only keeps the unselected division defined).
  Value divisor = b.umax(pairsPerHead, b.i32(1));
  return {b.select(paired, b.udiv(unit, divisor), b.sub(unit, pairs)),
          b.select(paired, b.urem(unit, divisor), pairsPerHead),
          b.xor_(paired, arith::ConstantIntOp::create(b, 1, 1))};
}

/// Slot i of a (batch, head) is row block R - 1 - i (the longest first),
/// then, paired, row block i; a middle's slot is (R - 1) / 2, both.
Value PersistentTileSchedule::getTileRowBlock(const UnitPlace &place,
                                              Value rowBlocks, Value second) {
  Value longer = b.sub(b.sub(rowBlocks, b.i32(1)), place.slot);
  return b.select(second, place.slot, longer);
}

/// The tile of the unit at \p place, its second row block if \p second
/// (i1).
TileCoordinates PersistentTileSchedule::getTile(const UnitPlace &place,
                                                Value second) {
  TileCoordinates tile;
  Value headAndBatch = place.headAndBatch;
  Value heads = b.word(freshDim(getHeadsTensor(), 1));
  tile.head = b.toIndex(b.urem(headAndBatch, heads));
  // The sizes only a split needs, only there (a fresh size is an
  // instruction of its own).
  Value batch, entries;
  if (splitKeys) {
    batch = freshDim(q, 0);
    entries = freshDim(o, 0);
  }
  tile.setOutputBatch(b, b.toIndex(b.udiv(headAndBatch, heads)), batch,
                      entries, splitKeys);
  tile.kvHead = packQueryHeads ? tile.head : getKvHead(b, q, k, tile.head);
  Value rowBlock = getTileRowBlock(place, getRowBlocks(), second);
  tile.firstRow = b.toIndex(b.mul(rowBlock, b.i32(blockM)));
  tile.seqQ = freshDim(q, 2);
  packQueryRows(tile);
  tile.seqK = hideFromHoisting(b, keys.getCapacity(b, k));
  tile.limitKeys(b, keys.keyLengths);
  tile.computeRange(b, blockM, blockN, window);
  return tile;
}

// Packed sequences: the units are the sequences' one after the other,
// sequence b's Hq x ceil(L_b / R) (R the rows of a unit; head by head, as
// a batch entry's in the dense kernel; with packed query heads Hkv x
// ceil(L_b x G / R)), so the CTAs stride over a stream of real tiles, as
// FA3's varlen scheduler walks them. Without a mask the first 32
// sequences' longest (by key blocks: a tile's cost) go first, so that the
// last wave holds the shortest tiles; in index order a long sequence drawn
// late ended the launch (docs/decode-notes.md v24, v25); later chunks of
// 32, and every chunk under a mask (ordersLongestFirst), keep the index
// order. A warp's lanes find a unit's sequence together,
// 32 sequences a step: lane p takes the chunk's p-th sequence in that
// order, they sum the units by shuffles up, and a ballot finds the place
// whose units hold the unit; one load's latency for B <= 32. The first
// chunk's order is sorted once a role (a bitonic network across the
// lanes): the consumers hold the chunk across their tile loop, and the
// producer, which has not the registers, keeps the order in a shared
// buffer of its warp's own (forEachTile's orderCache). The counts are at
// least 0 and the order is total, so every role's warps find the same
// sequence for a unit and run the same tiles.
// (Units of B x ceil(max_query_length / R) per head left each shorter
// sequence's tail empty, and slots b + floor(query_offsets[b] / R) one
// empty per sequence, which the CTAs' fixed stride met in step: a third
// of some CTAs' units empty, none of others'; docs/decode-notes.md, v7.)

/// This thread's lane (i32), read from %laneid where it is used: one
/// register fewer held across the tile loop, which the producer's 24 could
/// not spare.
Value PersistentTileSchedule::getLane() {
  return readSpecialRegister(b, "%laneid");
}

/// The rows of a unit: a row block, or (paired) two.
int64_t PersistentTileSchedule::getUnitRows() const {
  return blockM * (pairsRowBlocks ? 2 : 1);
}

Value PersistentTileSchedule::getSequenceCount() {
  return b.word(hideFromHoisting(b, sequences.getCount(b, q)));
}

SequenceRows::Spans PersistentTileSchedule::getSequenceSpans(Value sequence,
                                                             Value count) {
  // Entries at and after the sequence, inside the offsets' B + 1 even
  // where B is 0 (the tile loop's first search runs whatever B is).
  Value at = b.smin(sequence, b.smax(b.sub(count, b.i32(1)), b.i32(0)));
  return sequences.getSpans(
      b, b.toIndex(at), b.toIndex(b.smin(b.add(at, b.i32(1)), count)), q, k);
}

PersistentTileSchedule::SequenceChunk
PersistentTileSchedule::getSequenceChunk(Value chunk, Value sequence,
                                         const SequenceRows::Spans &spans,
                                         Value count) {
  SequenceChunk result{sequence, Value(), Value(), spans};
  Value lane = getLane();
  Value rows = spans.queryRows;
  // Every head's units of the sequence: of each query head, or with packed
  // heads of each KV head, whose G x L rows the units hold.
  Value heads = b.word(freshDim(getHeadsTensor(), 1));
  if (packQueryHeads)
    rows = b.mul(rows, getQueryGroup());
  Value units = b.mul(b.ceilDivU(rows, b.i32(getUnitRows())), heads);
  if (splitKeys)
    units = b.mul(units, getSplits());
  // Places past the sequences are the chunk's last in either order.
  units = b.select(b.slt(b.add(chunk, lane), count), units, b.i32(0));
  // An inclusive sum over the lanes, by shuffles up.
  Value sum = units;
  for (int64_t offset = 1; offset < kThreadsPerWarp; offset *= 2) {
    Value lower = gpu::ShuffleOp::create(b, sum, offset, kThreadsPerWarp,
                                         gpu::ShuffleMode::UP)
                      .getShuffleResult();
    sum = b.select(b.sle(b.i32(offset), lane), b.add(sum, lower), sum);
  }
  result.before = b.sub(sum, units);
  result.total = gpu::ShuffleOp::create(b, sum, kThreadsPerWarp - 1,
                                        kThreadsPerWarp, gpu::ShuffleMode::IDX)
                     .getShuffleResult();
  return result;
}

PersistentTileSchedule::SequenceChunk
PersistentTileSchedule::getSequenceChunk(Value chunk) {
  Value count = getSequenceCount();
  return getSequenceChunk(
      chunk, Value(), getSequenceSpans(b.add(chunk, getLane()), count), count);
}

/// \p key (i32, at least 0, distinct in every lane) of each lane, sorted
/// across the warp's lanes from the largest in lane 0: a bitonic network,
/// 15 exchanges by shuffles, straight-line code that holds one value.
static Value sortAcrossLanesDescending(KernelBuilder &b, Value key,
                                       Value lane) {
  for (int64_t run = 2; run <= kThreadsPerWarp; run *= 2)
    for (int64_t stride = run / 2; stride > 0; stride /= 2) {
      Value partner = gpu::ShuffleOp::create(b, key, stride, kThreadsPerWarp,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult();
      // The lower lane of a pair keeps the larger key in a run that
      // descends (run bit clear), the smaller in one that ascends.
      Value descending = b.eq(b.and_(lane, b.i32(run)), b.i32(0));
      Value lower = b.eq(b.and_(lane, b.i32(stride)), b.i32(0));
      Value keepsLarger = b.eq(descending, lower);
      key = b.select(keepsLarger, b.smax(key, partner), b.smin(key, partner));
    }
  return key;
}

Value PersistentTileSchedule::sortFirstChunk(const SequenceRows::Spans &spans,
                                             Value count) {
  Value lane = getLane();
  // The order: a tile's cost, its key blocks (its query rows' where the
  // keys are not packed), the most first, the earlier sequence first among
  // equals; lanes past the sequences last (after sequences without keys,
  // which sort by lane too). The key holds the blocks above 31 - lane (a
  // length below 2^31 has fewer than 2^26 blocks of 32 or more keys).
  assert(blockN >= kThreadsPerWarp && "the sort key's blocks fit 26 bits");
  Value rows = spans.keyRows ? spans.keyRows : spans.queryRows;
  Value blocks =
      b.select(b.slt(lane, count), b.ceilDivU(rows, b.i32(blockN)), b.i32(0));
  Value key = b.or_(b.mul(blocks, b.i32(kThreadsPerWarp)),
                    b.sub(b.i32(kThreadsPerWarp - 1), lane));
  key = sortAcrossLanesDescending(b, key, lane);
  return b.sub(b.i32(kThreadsPerWarp - 1),
               b.and_(key, b.i32(kThreadsPerWarp - 1)));
}

PersistentTileSchedule::SequenceChunk
PersistentTileSchedule::getFirstChunk(OrderCache orderCache) {
  Value zero = b.i32(0);
  if (!ordersLongestFirst())
    return getSequenceChunk(zero);
  Value count = getSequenceCount();
  if (orderCache) {
    Value placed = LLVM::LoadOp::create(
        b, b.getI32Type(), getOrderSlot(orderCache()), /*alignment=*/4);
    return getSequenceChunk(zero, placed, getSequenceSpans(placed, count),
                            count);
  }
  // Sorted here; each place's spans from the lane that loaded them.
  SequenceRows::Spans spans = getSequenceSpans(getLane(), count);
  Value placed = sortFirstChunk(spans, count);
  SmallVector<Value> placedSpans;
  for (Value value : spans.toValues())
    placedSpans.push_back(gpu::ShuffleOp::create(b, value, placed,
                                                 b.i32(kThreadsPerWarp),
                                                 gpu::ShuffleMode::IDX)
                              .getShuffleResult());
  return getSequenceChunk(zero, placed,
                          SequenceRows::Spans::fromValues(placedSpans), count);
}

Value PersistentTileSchedule::getOrderSlot(Value orderCache) {
  Value address = b.add(orderCache, b.mul(getLane(), b.i32(4)));
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

SmallVector<Value> PersistentTileSchedule::SequenceChunk::toValues() const {
  SmallVector<Value> values{before, total};
  if (sequence)
    values.push_back(sequence);
  values.append(spans.toValues());
  return values;
}

PersistentTileSchedule::SequenceChunk
PersistentTileSchedule::SequenceChunk::fromValues(ValueRange values,
                                                  bool placed) {
  Value sequence = placed ? values[2] : Value();
  return {sequence, values[0], values[1],
          SequenceRows::Spans::fromValues(values.drop_front(placed ? 3 : 2))};
}

PersistentTileSchedule::FoundSequence PersistentTileSchedule::findSequence(
    Value unit, const std::optional<SequenceChunk> &firstChunk,
    OrderCache orderCache) {
  Value count = getSequenceCount();
  Type i32 = b.getI32Type();
  // With the longest first, the first chunk's places name their sequences
  // (the later chunks' too, as chunk + lane, so that the chunks' values
  // are alike).
  bool placed = ordersLongestFirst();
  // The chunk, its base, then the owner's sequence, first unit and spans.
  SmallVector<Type> results(4 + sequences.getSpanValues(), i32);
  auto search = scf::WhileOp::create(
      b, results, ValueRange{b.i32(0), b.i32(0)},
      [&](OpBuilder &, Location, ValueRange carried) {
        Value chunk = carried[0], base = carried[1];
        SequenceChunk sequencesHere;
        if (!placed && !firstChunk) {
          sequencesHere = getSequenceChunk(chunk);
        } else {
          // The first chunk held, or found here; the later ones in index
          // order.
          SmallVector<Type> types(
              2 + (placed ? 1 : 0) + sequences.getSpanValues(), i32);
          auto pick = scf::IfOp::create(b, types, b.eq(chunk, b.i32(0)),
                                        /*addThenBlock=*/true,
                                        /*addElseBlock=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(pick.thenBlock());
          scf::YieldOp::create(b, firstChunk
                                      ? firstChunk->toValues()
                                      : getFirstChunk(orderCache).toValues());
          b.setInsertionPointToStart(pick.elseBlock());
          SequenceChunk later = getSequenceChunk(chunk);
          if (placed)
            later.sequence = b.add(chunk, getLane());
          scf::YieldOp::create(b, later.toValues());
          b.setInsertionPointAfter(pick);
          sequencesHere = SequenceChunk::fromValues(pick.getResults(), placed);
        }
        // The units before each place rise with the place, and the places
        // past the sequences come last: the owner is the last place that
        // starts at or before the unit.
        Value first = b.add(base, sequencesHere.before);
        Value starts =
            b.and_(b.slt(b.add(chunk, getLane()), count), b.sle(first, unit));
        Value lanes = NVVM::VoteSyncOp::create(b, i32, b.i32(-1), starts,
                                               NVVM::VoteSyncKind::ballot);
        Value found = LLVM::CtPopOp::create(b, lanes);
        // Place 0's sequence starts at `base`, at or before the unit (the
        // search passes a chunk only where the unit is past its units).
        Value owner = b.smax(b.sub(found, b.i32(1)), b.i32(0));
        auto fromOwner = [&](Value value) {
          return gpu::ShuffleOp::create(b, value, owner, b.i32(kThreadsPerWarp),
                                        gpu::ShuffleMode::IDX)
              .getShuffleResult();
        };
        Value next = b.add(chunk, b.i32(kThreadsPerWarp));
        Value nextBase = b.add(base, sequencesHere.total);
        Value more = b.and_(b.sle(nextBase, unit), b.slt(next, count));
        Value sequence = sequencesHere.sequence
                             ? fromOwner(sequencesHere.sequence)
                             : b.add(chunk, owner);
        SmallVector<Value> forwarded{next, nextBase, sequence,
                                     fromOwner(first)};
        for (Value value : sequencesHere.spans.toValues())
          forwarded.push_back(fromOwner(value));
        scf::ConditionOp::create(b, more, forwarded);
      },
      [&](OpBuilder &, Location, ValueRange carried) {
        scf::YieldOp::create(b, carried.take_front(2));
      });
  // The search stops at the chunk that holds the unit, or after the last:
  // the unit exists where it is below the units up to where it stopped.
  return {search.getResult(2), search.getResult(3),
          b.slt(unit, search.getResult(1)),
          SequenceRows::Spans::fromValues(search.getResults().drop_front(4))};
}

std::pair<TileCoordinates, Value>
PersistentTileSchedule::getPackedTile(Value unit, Value second,
                                      const FoundSequence &found) {
  TileCoordinates tile;
  tile.setOutputBatch(b, b.toIndex(found.sequence), Value(), Value(),
                      /*splitKeys=*/false);
  // The unit's place among its sequence's: a head's units, then the next
  // head's, as a batch entry's in the dense kernel; with split_keys each of
  // those S times, a split after another.
  Value place = b.sub(unit, found.firstUnit);
  if (splitKeys) {
    tile.splits = getSplits();
    tile.split = b.urem(place, tile.splits);
    place = b.udiv(place, tile.splits);
  }
  tile.seqK = hideFromHoisting(b, keys.getCapacity(b, k));
  sequences.place(b, tile, found.spans);
  tile.limitKeys(b, keys.keyLengths);
  packQueryRows(tile);
  Value rows = b.word(tile.seqQ);
  // A sequence without rows holds no units, so the search finds none of
  // its; the bound keeps the divisions defined all the same.
  Value rowBlocks = b.umax(b.ceilDivU(rows, b.i32(blockM)), b.i32(1));
  Value heads = b.word(freshDim(getHeadsTensor(), 1));
  UnitPlace unitPlace = placeUnit(place, rowBlocks, heads);
  tile.head = b.toIndex(unitPlace.headAndBatch);
  tile.kvHead = packQueryHeads ? tile.head : getKvHead(b, q, k, tile.head);
  Value rowBlock = getTileRowBlock(unitPlace, rowBlocks, second);
  Value holds = b.and_(b.sgt(rows, b.i32(0)), b.slt(b.word(tile.head), heads));
  // The middle row block of an odd count has no partner: no second tile.
  if (pairsRowBlocks)
    holds = b.and_(holds, b.xor_(b.and_(second, unitPlace.alone),
                                 arith::ConstantIntOp::create(b, 1, 1)));
  tile.firstRow = b.toIndex(b.mul(b.smax(rowBlock, b.i32(0)), b.i32(blockM)));
  tile.computeRange(b, blockM, blockN, window);
  return {tile, holds};
}

std::pair<Value, Value> fmha::getLongestFirstCta(KernelBuilder &b, Value cta,
                                                 Value blocks, Value heads) {
  // getSm90aGradSectionHeads, on the grid's block count.
  Value sectionHeads =
      b.umax(b.udiv(b.i32(kSm90aGradSectionCtas), blocks), b.i32(1));
  Value sectionCtas = b.mul(sectionHeads, blocks);
  Value firstHead = b.mul(b.udiv(cta, sectionCtas), sectionHeads);
  // The last section may hold fewer heads.
  Value inSection = b.smin(sectionHeads, b.sub(heads, firstHead));
  Value place = b.urem(cta, sectionCtas);
  return {b.udiv(place, inSection), b.add(firstHead, b.urem(place, inSection))};
}

/// What derives from the size per tile is not hoisted out of the tile
/// loop, where it would hold registers (the sm_90a producer has 24) across
/// the whole kernel.
Value PersistentTileSchedule::freshDim(Value tensor, int64_t axis) {
  return hideFromHoisting(b, memref::DimOp::create(b, tensor, axis));
}
