//===- TileSchedule.cpp - which tiles an attention CTA works on -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "TileSchedule.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
  if (op.getMaxQueryLength())
    sequences.maxQueryLength =
        func.getArgument(getMaxQueryLengthArgument(op, lseArgument));
  return sequences;
}

Value SequenceRows::getCount(KernelBuilder &b, Value q) const {
  if (!queryOffsets)
    return memref::DimOp::create(b, q, 0);
  return b.sub(memref::DimOp::create(b, queryOffsets, 0), b.index(1));
}

Value SequenceRows::getMaxQueryRows(KernelBuilder &b, Value q) const {
  if (!maxQueryLength)
    return memref::DimOp::create(b, q, 2);
  return maxQueryLength;
}

void SequenceRows::place(KernelBuilder &b, TileCoordinates &tile, Value q,
                         Value k) const {
  if (!queryOffsets)
    return;
  // In 32 bits (signed: a negative offset counts as 0), as TMA coordinates.
  Value next = b.add(tile.batchIndex, b.index(1));
  auto span = [&](Value offsets, Value rows, Value &base) {
    Value total = b.word(rows);
    Value start =
        b.clamp(memref::LoadOp::create(b, offsets, ValueRange{tile.batchIndex}),
                b.i32(0), total);
    Value end = b.clamp(memref::LoadOp::create(b, offsets, ValueRange{next}),
                        b.i32(0), total);
    base = b.toIndex(start);
    return b.toIndex(b.smax(b.sub(end, start), b.i32(0)));
  };
  tile.outputBatch = b.index(0);
  tile.seqQ =
      span(queryOffsets, memref::DimOp::create(b, q, 2), tile.queryBase);
  if (keyOffsets)
    tile.seqK = span(keyOffsets, memref::DimOp::create(b, k, 2), tile.keyBase);
}

Value SequenceRows::holdsRows(KernelBuilder &b,
                              const TileCoordinates &tile) const {
  if (!queryOffsets)
    return Value();
  return b.slt(tile.firstRow, tile.seqQ);
}

CtaCoordinates CtaCoordinates::compute(KernelBuilder &b, Value q, Value k,
                                       const KeyRows &keys, int64_t blockM) {
  CtaCoordinates cta;
  cta.seqQ = memref::DimOp::create(b, q, 2);
  cta.seqK = keys.getCapacity(b, k);
  Value reversed =
      b.sub(b.sub(gpu::GridDimOp::create(b, gpu::Dimension::x), b.index(1)),
            gpu::BlockIdOp::create(b, gpu::Dimension::x));
  cta.firstRow = b.mul(reversed, b.index(blockM));
  cta.head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  cta.kvHead = getKvHead(b, q, k, cta.head);
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
  Value inside = toQueryRow(b, b.smin(row, b.sub(seqQ, b.index(1))));
  Value sink = memref::LoadOp::create(b, sinks, ValueRange{head, inside});
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
                                 window);
  if (splits)
    range.restrictToSplit(b, seqK, blockN, split, splits);
}

// The unit loop runs in 32 bits, as TMA coordinates do: there are at most as
// many units as rows of q, each of at least 128 bytes, and 2^31 of them would
// be a 256 GB q.
void PersistentTileSchedule::forEachTile(
    llvm::function_ref<Value(const TileCoordinates &tile, Value iteration,
                             Value blocks)>
        body) {
  Value units =
      b.mul(b.mul(getUnitsPerHead(), b.word(memref::DimOp::create(b, q, 1))),
            b.word(getSequences()));
  Value first = b.word(gpu::BlockIdOp::create(b, gpu::Dimension::x));
  Value step = b.word(gpu::GridDimOp::create(b, gpu::Dimension::x));
  // This CTA's units, each one tile or (paired) two, in one flat loop:
  // fewer values live across it than in nested ones (the sm_90a producer
  // has 24 registers).
  Value count = b.ceilDivU(b.sub(b.umax(units, first), first), step);
  int64_t tilesPerUnit = pairsRowBlocks ? 2 : 1;
  count = b.mul(count, b.i32(tilesPerUnit));
  auto loop = scf::ForOp::create(b, b.i32(0), count, b.i32(1),
                                 ValueRange{b.i32(0), b.i32(0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value position = loop.getInductionVar();
  Value unit = b.add(first, b.mul(b.udiv(position, b.i32(tilesPerUnit)), step));
  Value second = b.ne(b.urem(position, b.i32(tilesPerUnit)), b.i32(0));
  ValueRange carried = loop.getRegionIterArgs();
  auto runTile = [&]() {
    TileCoordinates tile = getTile(unit, second);
    auto run = [&]() {
      Value blocks = body(tile, carried[0], carried[1]);
      return SmallVector<Value>{b.add(carried[0], b.i32(1)), blocks};
    };
    // A row block past a packed sequence's rows is no tile: every role
    // skips it alike, so the per-tile barrier parities stay in step.
    Value holdsRows = sequences.holdsRows(b, tile);
    if (!holdsRows)
      return run();
    auto skip = scf::IfOp::create(
        b, holdsRows,
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, run()); },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, carried); });
    return SmallVector<Value>(skip.getResults());
  };
  if (!pairsRowBlocks) {
    scf::YieldOp::create(b, runTile());
    return;
  }
  // The middle row block of an odd count has no partner: no second tile.
  Value slot = b.urem(unit, getUnitsPerHead());
  Value alone = b.and_(second, b.eq(getLongerRowBlock(slot), slot));
  auto tile = scf::IfOp::create(
      b, alone,
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, carried); },
      [&](OpBuilder &, Location) { scf::YieldOp::create(b, runTile()); });
  scf::YieldOp::create(b, tile.getResults());
}

Value PersistentTileSchedule::getRowBlocks() {
  Value rows = sequences.maxQueryLength
                   ? hideFromHoisting(b, sequences.maxQueryLength)
                   : freshDim(q, 2);
  return b.ceilDivU(b.word(rows), b.i32(blockM));
}

/// The units' batch entries: the sequences (o's entries with split_keys).
Value PersistentTileSchedule::getSequences() {
  if (splitKeys)
    return memref::DimOp::create(b, o, 0);
  if (sequences.queryOffsets)
    return sequences.getCount(b, q);
  return memref::DimOp::create(b, q, 0);
}

/// Units per (batch, head): pairs of row blocks, or single ones.
Value PersistentTileSchedule::getUnitsPerHead() {
  Value rowBlocks = getRowBlocks();
  return pairsRowBlocks ? b.ceilDivU(rowBlocks, b.i32(2)) : rowBlocks;
}

/// Slot i of a (batch, head) is row block R - 1 - i (the longest first),
/// then, paired, row block i.
Value PersistentTileSchedule::getLongerRowBlock(Value slot) {
  return b.sub(b.sub(getRowBlocks(), b.i32(1)), slot);
}

/// The tile of unit \p unit (i32), its second row block if \p second (i1).
TileCoordinates PersistentTileSchedule::getTile(Value unit, Value second) {
  TileCoordinates tile;
  Value perHead = getUnitsPerHead();
  Value slot = b.urem(unit, perHead);
  Value headAndBatch = b.udiv(unit, perHead);
  Value heads = b.word(freshDim(q, 1));
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
  tile.kvHead = getKvHead(b, q, k, tile.head);
  Value rowBlock = b.select(second, slot, getLongerRowBlock(slot));
  tile.firstRow = b.toIndex(b.mul(rowBlock, b.i32(blockM)));
  tile.seqQ = freshDim(q, 2);
  tile.seqK = hideFromHoisting(b, keys.getCapacity(b, k));
  sequences.place(b, tile, q, k);
  tile.limitKeys(b, keys.keyLengths);
  tile.computeRange(b, blockM, blockN, window);
  return tile;
}

/// What derives from the size per tile is not hoisted out of the tile
/// loop, where it would hold registers (the sm_90a producer has 24) across
/// the whole kernel.
Value PersistentTileSchedule::freshDim(Value tensor, int64_t axis) {
  return hideFromHoisting(b, memref::DimOp::create(b, tensor, axis));
}
