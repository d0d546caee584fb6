//===- TileSchedule.h - which tiles an attention CTA works on ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. How the CTAs of
// an attention kernel divide the (batch, head, row block) tiles among them:
// the part of a kernel's schedule that is the same whatever instructions
// compute a tile. sm_80 launches one CTA per row block (CtaCoordinates);
// sm_90a launches a persistent grid whose CTAs take units of work in turn
// (PersistentTileSchedule).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H
#define LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H

#include "AttentionCommon.h"
#include "KernelBuilder.h"

namespace mlir::fmha {

struct TileCoordinates;

/// Where each batch entry's keys are in k (and its values in v, which
/// shares k's rows): the first Sk rows of its own entry, or, with
/// fmha.attention's page_table (a paged KV cache), the rows of the pages its
/// row of the table lists; key_lengths then limits them per entry.
struct KeyRows {
  /// The kernel's key_lengths ([B] i32) and page_table ([B, P] i32)
  /// parameters, each null without; with a page table, the static rows of
  /// a page (k's dim 2).
  Value keyLengths, pageTable;
  int64_t pageSize = 0;

  /// \p op's, from the parameters of \p func, whose lse is parameter
  /// \p lseArgument (getKeyLengthsArgument, getPageTableArgument).
  static KeyRows get(AttentionOp op, gpu::GPUFuncOp func, unsigned lseArgument);

  /// The most keys a batch entry has (index): k's Sk, or the table's pages
  /// times their rows.
  Value getCapacity(KernelBuilder &b, Value k) const;

  /// The entry of \p k (and v) and the row in it (both i32) that hold key
  /// \p key (i32, below the tile's seqK) of \p tile's batch entry:
  /// (batchIndex, key), or with a page table (the page of the key's table
  /// entry, clamped into k's pages, key % pageSize). Keys below seqK only:
  /// the table's entries of pages past an entry's keys are never read.
  std::pair<Value, Value> locate(KernelBuilder &b, Value k,
                                 const TileCoordinates &tile, Value key) const;
};

/// Where each sequence (batch entry) of fmha.attention is: q's batch entry
/// b, or with query_offsets (sequences packed as q's entry 0) its rows
/// from query_offsets[b]; likewise its keys in k and v with key_offsets.
/// (max_query_length only sizes the grid.)
struct SequenceRows {
  /// The kernel's query_offsets and key_offsets parameters ([B + 1] i32),
  /// each null without.
  Value queryOffsets, keyOffsets;

  /// \p op's, from the parameters of \p func, whose lse is parameter
  /// \p lseArgument.
  static SequenceRows get(AttentionOp op, gpu::GPUFuncOp func,
                          unsigned lseArgument);

  /// The number of sequences (index): q's batch size, or the offsets' size
  /// minus 1.
  Value getCount(KernelBuilder &b, Value q) const;
  /// With offsets, sets \p tile's seqQ (seqK with key_offsets) and where
  /// its rows start (queryBase, keyBase; outputBatch 0, or with
  /// split_keys the tile's split: q's one entry has S in o) for its
  /// batchIndex, loaded from the offsets (getSpans); without, leaves the
  /// batch entry's. Before limitKeys.
  void place(KernelBuilder &b, TileCoordinates &tile, Value q, Value k) const;

  /// Where a sequence's rows are (i32 each): its first row of q and how
  /// many, and with key_offsets likewise of k (null without). Each offset
  /// clamped into [0, T], a length at least 0: rows stay inside q, o and k
  /// whatever the offsets hold.
  struct Spans {
    Value queryFirst, queryRows, keyFirst, keyRows;
    /// As a list (two values, or four with the keys'), to pass through
    /// loops, and back.
    SmallVector<Value> toValues() const;
    static Spans fromValues(ValueRange values);
  };
  /// How many values a sequence's Spans has.
  int64_t getSpanValues() const { return keyOffsets ? 4 : 2; }
  /// Sequence \p sequence's, loaded from the offsets' entries \p sequence
  /// and \p next (index; its + 1, or where a caller past the count clamps
  /// them, another entry).
  Spans getSpans(KernelBuilder &b, Value sequence, Value next, Value q,
                 Value k) const;
  /// place() from spans a caller already has.
  void place(KernelBuilder &b, TileCoordinates &tile, const Spans &spans) const;
  /// Whether \p tile's row block holds a row of its sequence (i1): sm_80's
  /// grid covers max_query_length's row blocks of every sequence, and a
  /// shorter one's last are empty. Null without offsets (every one does).
  Value holdsRows(KernelBuilder &b, const TileCoordinates &tile) const;
};

/// Which rows, head and sizes one CTA of the sm_80 kernel works on: grid x
/// is the row block (longest causal blocks first: block x computes row block
/// gridDim.x - 1 - x), grid y the query head (getRowBlockGrid). With
/// \p packQueryHeads (pack_query_heads), the G x ceil(Sq / block_m) CTAs
/// of a KV head's query heads take the ceil(Sq x G / block_m) row blocks
/// of its packed rows (query head g's CTAs blocks g x ceil(Sq / block_m)
/// on, each head's in reverse as above), head is the KV head, seqQ is Sq x
/// G, queryGroup G, and a CTA past those rows has none (firstRow >= seqQ).
struct CtaCoordinates {
  Value seqQ, seqK, firstRow, head, kvHead, queryGroup;

  /// seqK is the capacity of \p keys (KeyRows::getCapacity).
  static CtaCoordinates compute(KernelBuilder &b, Value q, Value k,
                                const KeyRows &keys, int64_t blockM,
                                bool packQueryHeads = false);
};

/// One tile: block_m query rows from firstRow of one (batch, head), the
/// sizes of its q and k, and the key blocks its rows see. With split_keys
/// (fmha.attention), the tile is one key split of its rows: o's and lse's
/// batch entry outputBatch = split * B + batchIndex, and the range holds
/// that split's blocks only; otherwise outputBatch is batchIndex and split
/// and splits are null. With pack_query_heads, the rows are those of a KV
/// head's group of G query heads packed: head is the KV head, seqQ is
/// Sq x G, and row r is query r / G of query head head x G + r % G
/// (getQueryPosition, getQueryHeadAndRow).
struct TileCoordinates {
  Value batchIndex, outputBatch, head, kvHead, firstRow, seqQ, seqK;
  Value split, splits;
  /// With pack_query_heads, G = Hq / Hkv (index); null without.
  Value queryGroup;
  /// With query_offsets (key_offsets), the row of q, o and lse (of k and
  /// v) that is the sequence's first (index; SequenceRows::place); null
  /// without: rows are the batch entry's own.
  Value queryBase, keyBase;
  KeyBlockRange range;

  /// The batch entry of q that holds the tile's rows: batchIndex, or 0
  /// with query_offsets.
  Value getQueryEntry(KernelBuilder &b) const;
  /// The batch entry of k and v that holds the sequence's keys (without a
  /// page table): batchIndex, or 0 with key_offsets.
  Value getKeyEntry(KernelBuilder &b) const;
  /// Row \p row of the sequence's queries (keys) as a row of q, o and lse
  /// (k and v): itself, or offset by queryBase (keyBase). In \p row's
  /// type (index or i32).
  Value toQueryRow(KernelBuilder &b, Value row) const;
  Value toKeyRow(KernelBuilder &b, Value row) const;
  /// The query position (among the Sq queries: what masks compare) of the
  /// tile's row \p row (index): itself, or with packed heads row / G.
  Value getQueryPosition(KernelBuilder &b, Value row) const;
  /// The query head and the row of q, o and lse (toQueryRow) that hold the
  /// tile's row \p row (index): (head, row), or with packed heads
  /// (head x G + row % G, row / G).
  std::pair<Value, Value> getQueryHeadAndRow(KernelBuilder &b, Value row) const;

  /// Sets batchIndex and outputBatch (index), and split and splits (i32),
  /// from o's batch entry \p outputBatch: without \p splitKeys it is the
  /// batch; with it, B = \p batch (q's) and S = \p entries (o's) / B, only
  /// read with it. All index values; the divisions are in 32 bits (batch
  /// entries fit: TMA coordinates are 32-bit).
  void setOutputBatch(KernelBuilder &b, Value outputBatch, Value batch,
                      Value entries, bool splitKeys);
  /// The sink of row \p row (index) of the tile's head (a row at or past
  /// Sq, which a tile may hold but never stores, reads row Sq - 1's) from
  /// the kernel's \p sinks parameter ([Hq, Sq]), or null without one. With
  /// split_keys, -inf (no sink) in every split but split 0, so that the
  /// merge of the states counts it once.
  Value loadSink(KernelBuilder &b, Value sinks, Value row) const;
  /// With \p keyLengths (the kernel's key_lengths parameter, [B] i32),
  /// limits seqK (k's length) to batchIndex's entry, clamped to [0, seqK];
  /// without, leaves it. Before computeRange, which derives from it.
  void limitKeys(KernelBuilder &b, Value keyLengths);
  /// The key blocks of the tile's rows (KeyBlockRange::compute), restricted
  /// to its split.
  void computeRange(KernelBuilder &b, int64_t blockM, int64_t blockN,
                    const AttentionWindow &window);
};

/// The (block, head) that CTA \p cta of a grid of \p blocks x \p heads
/// one-tile CTAs computes (all i32; \p cta counts blocks fastest, the order
/// CTAs launch in), for work that shrinks as the block grows (the
/// backward's key blocks under a causal mask): the heads in sections of
/// getSm90aGradSectionHeads(blocks), whose CTAs fill at most one wave,
/// each section block by block over its heads (longest first). The
/// longest CTAs then start first, while a head's CTAs still run together
/// and share its rows in L2.
std::pair<Value, Value> getLongestFirstCta(KernelBuilder &b, Value cta,
                                           Value blocks, Value heads);

/// The tile loop of a persistent kernel: CTA x takes the units of work x,
/// x + gridDim.x, ... (pairsAttentionRowBlocks in TileConfig.h: a row
/// block, or a pair of them, of one (batch, head)). Consecutive units share
/// a (batch, head), so its K and V stay in L2; paired, every (batch, head)'s
/// pairs come first and the middle row blocks of an odd count after them
/// all (placeUnit). With query_offsets, the units are every sequence's own,
/// in the same order (getPackedTile; with split_keys each unit's S splits
/// one after the other), the sequences one after the other (without a
/// mask the first 32 longest first: ordersLongestFirst), and the loop runs
/// while a sequence holds the next one (forEachPackedTile).
class PersistentTileSchedule {
public:
  using OrderCache = llvm::function_ref<Value()>;
  /// \p q, \p k and \p o are the kernel's memref parameters, and
  /// \p keys where its batch entries' keys are;
  /// \p pairsRowBlocks is pairsAttentionRowBlocks of the op, \p splitKeys
  /// its split_keys (the units then cover each key split of each batch),
  /// \p packQueryHeads its pack_query_heads (the units are then those of
  /// each KV head's Sq x G packed rows).
  PersistentTileSchedule(KernelBuilder &b, Value q, Value k, Value o,
                         const KeyRows &keys, const SequenceRows &sequences,
                         int64_t blockM, int64_t blockN,
                         const AttentionWindow &window, bool pairsRowBlocks,
                         bool splitKeys, bool packQueryHeads)
      : b(b), q(q), k(k), o(o), keys(keys), sequences(sequences),
        blockM(blockM), blockN(blockN), window(window),
        pairsRowBlocks(pairsRowBlocks), splitKeys(splitKeys),
        packQueryHeads(packQueryHeads) {}

  /// Runs \p body for each tile this CTA computes, carrying a count of the
  /// tiles (\p iteration: the parity of a per-tile barrier) and of the key
  /// blocks passed so far (\p blocks; \p body returns the new count), both
  /// i32, from 0. \p byWarps: whole warps run it convergently, which
  /// packed sequences need (their tiles' sequences are found by the warp's
  /// lanes together). \p holdSequences: with packed sequences, the first 32
  /// sequences' offsets and units are loaded before the loop and held in
  /// registers (about six a thread) across it, so that finding a tile's
  /// sequence among them loads nothing: for roles whose tile start is on
  /// the critical path and that have the registers (the consumers, not the
  /// producer's 24). \p orderCache (without holdSequences) emits, where
  /// it is used, the shared address (i32) of 128 bytes that the walking
  /// warp alone uses, where the first 32 sequences' order is sorted once,
  /// before the loop, rather than for every tile.
  void forEachTile(llvm::function_ref<Value(const TileCoordinates &tile,
                                            Value iteration, Value blocks)>
                       body,
                   bool byWarps = false, bool holdSequences = false,
                   OrderCache orderCache = nullptr);

private:
  Value getRowBlocks();
  /// The tensor whose heads the units cover: q, or with packed heads k.
  Value getHeadsTensor() const { return packQueryHeads ? k : q; }
  /// G = Hq / Hkv (i32), the query heads a tile packs.
  Value getQueryGroup();
  /// With packed heads, \p tile's G and its rows, its Sq queries' times G
  /// (a batch entry's or a packed sequence's); without, leaves them.
  void packQueryRows(TileCoordinates &tile);
  Value getSplits();
  Value getBatchEntries();
  Value getUnitsPerHead();
  /// Where unit \p unit (i32) of \p heads (i32: the (batch, head) pairs
  /// the units cover; read only paired) is: its (batch, head), counted from 0
  /// head fastest, its row block's slot (getTileRowBlock), and, paired, whether
  /// it is a middle row block alone (i1; null unpaired). Paired, the units are
  /// each (batch, head)'s pairs, then one middle row block per (batch, head)
  /// where the count is odd: with the middles among the pairs, units of
  /// two costs alternate with a period that can divide gridDim.x, and then
  /// some CTAs take only pairs and others only middles (32 x 333 queries x
  /// 16 heads, causal: the busiest CTA 1.33x the even share of key blocks;
  /// bench/schedule-model.py).
  struct UnitPlace {
    Value headAndBatch, slot, alone;
  };
  UnitPlace placeUnit(Value unit, Value rowBlocks, Value heads);
  /// The row block of \p place's first tile, or of its second if
  /// \p second (i1).
  Value getTileRowBlock(const UnitPlace &place, Value rowBlocks, Value second);
  TileCoordinates getTile(const UnitPlace &place, Value second);
  int64_t getUnitRows() const;
  Value getLane();

  /// With query_offsets, the sequences' count B (i32), derived anew.
  Value getSequenceCount();
  /// With query_offsets, where sequence \p sequence's rows are (i32; a
  /// sequence past the last of \p count reads the last's).
  SequenceRows::Spans getSequenceSpans(Value sequence, Value count);
  /// Whether the first 32 sequences' units go longest first: without a
  /// mask, whose tiles' costs follow their sequences' lengths alone
  /// (measured: under a causal mask the order gained nothing over mixed
  /// lengths and its search cost 1-2% on short tiles; decode-notes v25).
  bool ordersLongestFirst() const { return !window.left && !window.right; }
  /// With query_offsets, what a warp's lanes know of a chunk of 32
  /// sequences from \p chunk (i32) in the order their units take: the
  /// units of the sequences before place p (lane p's), and of all of them
  /// (every lane); the sequence at place p (i32; null where it is
  /// chunk + p: the index order); and where its rows are.
  struct SequenceChunk {
    Value sequence, before, total;
    SequenceRows::Spans spans;
    SmallVector<Value> toValues() const;
    /// \p placed: whether \p values hold the sequences.
    static SequenceChunk fromValues(ValueRange values, bool placed);
  };
  /// The chunk from \p chunk of \p count sequences whose place p holds
  /// \p sequence (null: chunk + p) and its \p spans.
  SequenceChunk getSequenceChunk(Value chunk, Value sequence,
                                 const SequenceRows::Spans &spans, Value count);
  /// Sequences chunk .. chunk + 31 in index order.
  SequenceChunk getSequenceChunk(Value chunk);
  /// Which of the first 32 sequences place p (lane p) holds (i32) where
  /// lane p's sequence's rows are \p spans: the longest first (by key
  /// blocks), sorted across the warp's lanes.
  Value sortFirstChunk(const SequenceRows::Spans &spans, Value count);
  /// The first 32 sequences in their order: the index order, or the
  /// longest first (ordersLongestFirst), sorted here or, where
  /// \p orderCache is given, as sortFirstChunk stored it there.
  SequenceChunk getFirstChunk(OrderCache orderCache);
  /// Lane p's word of the 32 at shared address \p orderCache (i32).
  Value getOrderSlot(Value orderCache);
  /// The sequence that holds unit \p unit (i32), its first unit and where
  /// its rows are, found by the warp's lanes together, and whether any
  /// sequence holds it (i1: false past every sequence's units). The first
  /// chunk from \p firstChunk where it has one (held across the tile
  /// loop), otherwise from getFirstChunk(\p orderCache).
  struct FoundSequence {
    Value sequence, firstUnit, exists;
    SequenceRows::Spans spans;
  };
  FoundSequence findSequence(Value unit,
                             const std::optional<SequenceChunk> &firstChunk,
                             OrderCache orderCache);
  /// With query_offsets: the tile of unit \p unit (its second row block
  /// if \p second) of sequence \p found, and whether it holds rows of its
  /// sequence (i1).
  std::pair<TileCoordinates, Value> getPackedTile(Value unit, Value second,
                                                  const FoundSequence &found);
  /// forEachTile's loop over packed sequences' tiles: positions from 0,
  /// the unit of each (\p getUnit) and whether it is the second tile of it
  /// (\p isSecond), while a sequence holds the unit; with
  /// \p holdFirstChunk, the first 32 sequences' chunk found once, before
  /// the loop, and held; with \p orderCache, their order sorted once,
  /// before the loop, into it.
  void forEachPackedTile(
      llvm::function_ref<Value(const TileCoordinates &, Value, Value)> body,
      llvm::function_ref<Value(Value)> getUnit,
      llvm::function_ref<Value(Value)> isSecond, bool holdFirstChunk,
      OrderCache orderCache);
  /// Runs \p body on \p tile where \p holds (null: always), from the
  /// tile count and key block count \p carried; returns both updated.
  SmallVector<Value> runTileWhere(
      llvm::function_ref<Value(const TileCoordinates &, Value, Value)> body,
      const TileCoordinates &tile, Value holds, ValueRange carried);
  /// A size of \p tensor computed anew where it is used.
  Value freshDim(Value tensor, int64_t axis);

  KernelBuilder &b;
  Value q, k, o;
  KeyRows keys;
  SequenceRows sequences;
  int64_t blockM, blockN;
  AttentionWindow window;
  bool pairsRowBlocks, splitKeys, packQueryHeads;
};

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H
