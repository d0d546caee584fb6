//===- AsyncCopy.cpp - sm_80 attention: cp.async tile copies --------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm80/AsyncCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/bit.h"

#include <cassert>
#include <tuple>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

void AsyncCopy::copyTile(const Lanes &lanes, const TileCoordinates &tile,
                         Value global, Value headIndex, Value first,
                         Value valid, Value shared, int64_t rows, bool bounded,
                         bool keyRows) {
  if (!bounded) {
    emitTileCopy(lanes, tile, global, headIndex, first, valid, shared, rows,
                 /*bounded=*/false, keyRows);
    return;
  }
  Value inside = b.sle(b.add(first, b.index(rows)), valid);
  scf::IfOp::create(
      b, inside,
      [&](OpBuilder &, Location) {
        emitTileCopy(lanes, tile, global, headIndex, first, valid, shared, rows,
                     /*bounded=*/false, keyRows);
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        emitTileCopy(lanes, tile, global, headIndex, first, valid, shared, rows,
                     /*bounded=*/true, keyRows);
        scf::YieldOp::create(b);
      });
}

void AsyncCopy::emitTileCopy(const Lanes &lanes, const TileCoordinates &tile,
                             Value global, Value headIndex, Value first,
                             Value valid, Value shared, int64_t rows,
                             bool bounded, bool keyRows) {
  // Each thread copies one chunk column of rows tid / rowChunks + i *
  // rowsPerPass: whole rows per pass, and, when rowsPerPass is a multiple
  // of the swizzle period, one swizzled column for all of them.
  // The chunks of the shared tile's rows and of the tensor's head dim (q's
  // and k's, or v's); the copy fills whole 16-column MMA steps, a head
  // dim of 8 mod 16 its last step's second chunk with zeros (Q K^T's last k
  // step reads it).
  int64_t rowChunks =
      cast<MemRefType>(shared.getType()).getDimSize(1) / shape.chunkElements;
  int64_t headChunks =
      cast<MemRefType>(global.getType()).getDimSize(3) / shape.chunkElements;
  int64_t filledChunks = llvm::alignTo(headChunks, kMmaK / shape.chunkElements);
  // A pass covers whole rows, a power of two of them: where the threads
  // are not a multiple of a row's chunks (rows of 192 columns: 24), the
  // threads past those rows copy nothing.
  int64_t threads = shape.warps * kThreadsPerWarp;
  int64_t rowsPerPass =
      llvm::bit_floor(static_cast<uint64_t>(threads / rowChunks));
  assert(rowsPerPass > 0 && "a pass covers whole rows");
  int64_t copyingThreads = rowsPerPass * rowChunks;
  Value firstLocalRow = b.udiv(lanes.tid, b.i32(rowChunks));
  Value chunk = b.urem(lanes.tid, b.i32(rowChunks));
  Value column = b.toIndex(b.mul(chunk, b.i32(shape.chunkElements)));
  // The zero-filled chunk reads nothing: its source is the row's first.
  Value pastHead;
  if (headChunks < filledChunks) {
    pastHead = b.sle(b.i32(headChunks), chunk);
    column = b.select(pastHead, b.index(0), column);
  }
  Value lastValid = b.sub(valid, b.index(1));
  Value sameSwizzle = rowsPerPass % kSwizzleRows == 0
                          ? swizzle(b, shape, firstLocalRow, chunk)
                          : Value();
  // Where the accumulators leave registers to spare (copyPassesShareBase),
  // every pass derives from one hidden copy of the thread's row, its
  // source row a constant past the first, which LLVM and ptxas fold into
  // immediate offsets (one 64-bit base per two passes in the d64 SASS,
  // where each pass took five instructions). Elsewhere each pass starts from
  // its own hidden copy, so that its address arithmetic stays between the
  // previous pass's copy and its own: with one base, ptxas carries the
  // passes' addresses through the key loop, and d128 (128x64, 4 warps)
  // spills 36 bytes in it.
  // Where the tile is wider than that, the threads of the chunks past it
  // copy nothing (those columns are never read).
  Value copying;
  if (filledChunks < rowChunks)
    copying = b.slt(chunk, b.i32(filledChunks));
  if (copyingThreads < threads) {
    Value inPass = b.slt(lanes.tid, b.i32(copyingThreads));
    copying = copying ? b.and_(copying, inPass) : inPass;
  }
  scf::IfOp insideHead;
  if (copying) {
    insideHead = scf::IfOp::create(b, copying, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&insideHead.getThenRegion().front());
  }
  Value sharedRow, sharedSourceRow;
  if (shape.copyPassesShareBase) {
    sharedRow = hideFromHoisting(b, firstLocalRow);
    sharedSourceRow = b.add(first, b.toIndex(sharedRow));
  }
  for (int64_t pass = 0; pass * rowsPerPass < rows; ++pass) {
    Value row =
        b.add(sharedRow ? sharedRow : hideFromHoisting(b, firstLocalRow),
              b.i32(pass * rowsPerPass));
    Value sourceRow = sharedRow
                          ? b.add(sharedSourceRow, b.index(pass * rowsPerPass))
                          : b.add(first, b.toIndex(row));
    Value sourceElements;
    if (bounded) {
      Value inBounds = b.slt(sourceRow, valid);
      sourceRow = b.select(inBounds, sourceRow, lastValid);
      sourceElements =
          b.select(inBounds, b.index(shape.chunkElements), b.index(0));
    }
    if (pastHead)
      sourceElements = b.select(pastHead, b.index(0),
                                sourceElements ? sourceElements
                                               : b.index(shape.chunkElements));
    Value entry;
    if (keyRows && keys.pageTable) {
      // Each pass finds its page from its own hidden copy of its row: from
      // one, the d128 kernel spilled 4 bytes.
      auto [page, pageRow] =
          keys.locate(b, global, tile, hideFromHoisting(b, b.word(sourceRow)));
      entry = b.toIndex(page);
      sourceRow = b.toIndex(pageRow);
    } else if (keyRows && tile.keyBase) {
      // Packed keys: \p global is k's or v's viewRowsAsEntries, whose entry
      // is a packed sequence's first key row, from a hidden copy as a batch
      // index is (a base added to each copy row, held across the key loop,
      // spilled 20 bytes of the d128 kernel).
      entry = hideFromHoisting(b, tile.keyBase);
    } else {
      entry = hideFromHoisting(b, keyRows ? tile.getKeyEntry(b)
                                          : tile.getQueryEntry(b));
      if (!keyRows && tile.queryBase)
        sourceRow = b.add(sourceRow, hideFromHoisting(b, tile.queryBase));
    }
    Value sourceHead = headIndex;
    // Packed query heads: the row's own head and query.
    if (!keyRows && tile.queryGroup)
      std::tie(sourceHead, sourceRow) = tile.getQueryHeadAndRow(b, sourceRow);
    SmallVector<Value, 4> source = {entry, sourceHead, sourceRow, column};
    SmallVector<Value, 2> destination = {
        b.toIndex(row),
        b.toIndex(sameSwizzle ? sameSwizzle : swizzle(b, shape, row, chunk))};
    nvgpu::DeviceAsyncCopyOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), shared,
        destination, global, source, b.getIndexAttr(shape.chunkElements),
        sourceElements, b.getUnitAttr());
  }
  if (insideHead)
    b.setInsertionPointAfter(insideHead);
}

void AsyncCopy::copyKeyBlock(const Lanes &lanes, const TileCoordinates &tile,
                             Value global, Value shared, Value block,
                             bool bounded) {
  // The (batch, head) part of the source address derives from hidden
  // copies (here and in emitTileCopy): hoisted out of the key loops, it
  // is a 64-bit register pair per copy held across the GEMMs.
  copyTile(lanes, tile, global, hideFromHoisting(b, tile.kvHead),
           b.toIndex(b.mul(block, b.i32(shape.blockN))), tile.seqK, shared,
           shape.blockN, bounded, /*keyRows=*/true);
}

Value AsyncCopy::viewRowsAsEntries(KernelBuilder &b, Value tensor) {
  auto type = cast<MemRefType>(tensor.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tensor);
  ValueRange sizes = metadata.getSizes();
  ValueRange strides = metadata.getStrides();
  constexpr int64_t kDynamic = ShapedType::kDynamic;
  auto viewType = MemRefType::get(
      {kDynamic, kDynamic, kDynamic, type.getDimSize(3)}, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), kDynamic,
                             {kDynamic, kDynamic, kDynamic, 1}));
  SmallVector<OpFoldResult, 4> viewSizes = {sizes[2], sizes[1], sizes[2],
                                            b.getIndexAttr(type.getDimSize(3))};
  SmallVector<OpFoldResult, 4> viewStrides = {strides[2], strides[1],
                                              strides[2], b.getIndexAttr(1)};
  return memref::ReinterpretCastOp::create(b, viewType, tensor,
                                           OpFoldResult(metadata.getOffset()),
                                           viewSizes, viewStrides);
}

void AsyncCopy::commit() {
  nvgpu::DeviceAsyncCreateGroupOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
}

void AsyncCopy::copyElement(Value global, ValueRange source, Value shared,
                            ValueRange destination, Value inBounds) {
  // The element as a memref<1> of unit stride, which the copy needs of its
  // source's innermost dimension (lse's and delta's are strided).
  Value element = viewRun(b, global, source, 1);
  // 4 bytes: cp.async.ca (the .cg form, bypassing L1, takes only 16).
  nvgpu::DeviceAsyncCopyOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), shared, destination,
      element, ValueRange{b.index(0)}, b.getIndexAttr(1),
      b.select(inBounds, b.index(1), b.index(0)), UnitAttr());
}

// nvgpu.device_async_wait needs the token of the group it waits for, which
// was created in the previous iteration; the wait for all groups needs none.
void AsyncCopy::waitForAll() {
  NVVM::CpAsyncWaitGroupOp::create(b, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b);
}
