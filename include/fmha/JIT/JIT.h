//===- JIT.h - the FlashCore JIT embedding API ------------------*- C++ -*-===//
//
// Part of FlashCore. Describe an op (the static part: op kind, element type,
// head dim, causality, mode, tile), or hand over a gpu.module, get a kernel
// handle, launch it on a CUstream with device pointers, sizes and strides.
// Compiled kernels are cached in memory and on disk. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_JIT_H
#define FMHA_JIT_JIT_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Dialect/Fmha/LaunchContract.h"
#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/DiskCache.h"
#include "fmha/JIT/KernelSpec.h"
#include "fmha/Runtime/CudaDriver.h"
#include "fmha/Runtime/LoadPlan.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha {

struct CompileOptions;
struct CompiledModule;

/// Grid, block and dynamic shared memory of one launch.
struct LaunchConfig {
  std::array<unsigned, 3> grid = {1, 1, 1};
  std::array<unsigned, 3> block = {1, 1, 1};
  unsigned sharedBytes = 0;
  /// With programmatic stream serialization: only for a kernel that waits
  /// for the previous grid itself (LaunchContract::dependentLaunch).
  bool dependentLaunch = false;
};

/// Kernel parameters in the convention of the fmha lowerings: every memref
/// operand is an MLIR memref descriptor (allocated pointer, aligned pointer,
/// offset, then one size and one stride per dimension, all 64-bit); a TMA
/// tensor map is one 128-byte parameter.
class KernelArguments {
public:
  void addMemRef(const void *data, llvm::ArrayRef<int64_t> sizes,
                 llvm::ArrayRef<int64_t> strides);
  void addTensorMap(const CUtensorMap &map);
  /// An index parameter (64 bits).
  void addInteger(int64_t value);
  /// One pointer per kernel parameter, as cuLaunchKernel takes them. Valid
  /// until the next add.
  void **get();

private:
  std::vector<int64_t> slots;
  /// The first slot of each parameter.
  std::vector<size_t> parameters;
  std::vector<void *> pointers;
};

/// One launch operand as the host passes it: a device pointer, and the
/// sizes and strides (in elements) of its dimensions, outermost first.
struct LaunchOperand {
  const void *data = nullptr;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;
};

/// Appends the kernel parameters \p contract lists for \p operands (the
/// launch operands, in the contract's order): memref descriptors, and TMA
/// tensor maps encoded through the driver (the error names the operand and
/// the shape when the driver refuses one).
llvm::Error addKernelParameters(KernelArguments &arguments,
                                const LaunchContract &contract,
                                llvm::ArrayRef<LaunchOperand> operands);

/// Checks that kernel \p kernelName's \p sharedBytes of dynamic shared
/// memory a block fit \p device's opt-in limit (where the device reports
/// one), before the JIT opts the kernel into them: the error names the
/// kernel, both sizes and the device, and what would fit (sm_80's tiles are
/// sized for an A100's 163 KB; sm_86 and sm_89 allow 99 KB).
llvm::Error checkSharedBytesFit(llvm::StringRef kernelName,
                                uint64_t sharedBytes, const DeviceInfo &device);

/// What fmha.check_sorted's `first` holds for a stream before the launch,
/// and still after it when the stream's times are sorted.
inline constexpr uint64_t kTimesSorted = ~uint64_t(0);

/// A stream's first out-of-order timestamps: times[row, sample] is not at or
/// before times[row, sample + 1].
struct UnsortedTimes {
  int64_t row = 0;
  int64_t sample = 0;
};

/// Decodes one entry of fmha.check_sorted's `first` operand: std::nullopt
/// for kTimesSorted.
std::optional<UnsortedTimes> decodeCheckSorted(uint64_t first);

/// The operands of one fmha.attention launch (the op's contract in
/// FmhaOps.td): q and o [B, Hq, Sq, D], k and v [B, Hkv, Sk, D] of the
/// spec's element type, lse [B, Hq, Sq] f32. Strides are in elements, of
/// the batch, head and row dimensions; the head dimension is dense. Device
/// pointers.
struct AttentionTensors {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void *o = nullptr;
  /// Only with KernelSpec::withLse.
  float *lse = nullptr;
  /// Only with KernelSpec::withSinks: queryHeads f32 logits, dense, which
  /// the kernel reads as [Hq, Sq] with strides sinksStrides (a row stride
  /// of 0: every row of a head has its sink).
  const float *sinks = nullptr;
  std::array<int64_t, 2> sinksStrides = {1, 0};
  /// Only with KernelSpec::withKeyLengths: batch int32 key counts, dense
  /// (a KV cache's filled lengths): batch entry b attends to its first
  /// keyLengths[b] keys (clamped to [0, keySeq]), its mask aligned to them.
  const int32_t *keyLengths = nullptr;
  /// Only with KernelSpec::pageSize (a paged KV cache): k and v hold
  /// `pages` pages of pageSize rows, [pages, Hkv, pageSize, D] with kStrides
  /// and vStrides their page, head and row strides, and pageTable is
  /// [batch, keySeq / pageSize] int32, dense: key j of batch entry b is row
  /// j % pageSize of page pageTable[b][j / pageSize]. keySeq, a multiple of
  /// pageSize, is then the most keys an entry has; keyLengths may limit it.
  const int32_t *pageTable = nullptr;
  int64_t pages = 0;
  /// Only with KernelSpec::withQueryOffsets (variable-length batches,
  /// FlashAttention's cu_seqlens_q and max_seqlen_q): batch + 1 int32
  /// offsets, dense. q and o (and lse) then hold the batch's sequences
  /// packed, [querySeq, Hq, D] (querySeq: the total rows) with the head
  /// and row strides of qStrides (oStrides, lseStrides) and the batch
  /// strides unread; sequence b is their rows queryOffsets[b] to
  /// queryOffsets[b + 1], at most maxQueryLength (>= 1) of them (a row
  /// past it may be left uncomputed).
  const int32_t *queryOffsets = nullptr;
  int64_t maxQueryLength = 0;
  /// Only with KernelSpec::withKeyOffsets (cu_seqlens_k, with
  /// queryOffsets): k and v hold the sequences' keys packed, [keySeq, Hkv,
  /// D], sequence b's from row keyOffsets[b] to keyOffsets[b + 1].
  const int32_t *keyOffsets = nullptr;
  /// Only with withQueryOffsets (FlashAttention's max_seqlen_k): the most
  /// keys a sequence attends to, or 0 where unknown. A decode launch of
  /// packed sequences on sm_90a whose tiles would leave SMs idle splits
  /// each sequence's keys by it (as a dense decode does by keySeq); 0
  /// splits by keySeq where k and v hold an entry (or pages) per sequence,
  /// and not at all with keyOffsets.
  int64_t maxKeyLength = 0;
  int64_t batch = 0, queryHeads = 0, kvHeads = 0, querySeq = 0, keySeq = 0;
  std::array<int64_t, 3> qStrides = {}, kStrides = {}, vStrides = {},
                         oStrides = {}, lseStrides = {};
  /// Device memory the launch may split the keys of decode with
  /// (JIT::getAttentionWorkspaceBytes): with at least that many bytes, a
  /// launch that would leave SMs idle splits each row's keys over several
  /// CTAs and merges their partial states; without, it does not split.
  /// 16-byte aligned. A prepareOnly launch reads only workspaceBytes.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;

  /// Sets every stride for dense [B, H, S, D] tensors (and [B, Hq, Sq] LSE)
  /// of the sizes above: D q's and k's head dim, v's and o's the value one.
  void setDenseStrides(AttentionHeadDims headDims);
};

/// The tensors a launch of attention \p spec on \p t runs on: \p t itself,
/// or, for decode (one query, no window) with GQA groups of G > 1 query
/// heads, the G query heads that share a KV head as the G rows of one head
/// (q and o viewed [B, Hkv, G, D], lse [B, Hkv, G]), so that each K and V
/// block is read once per group rather than G times (sinks viewed [Hkv, G]
/// alike). The rows see every key
/// as the one query did (getAttentionLaunchSpec launches the non-causal
/// kernel for one query). FlashAttention-2's seqlenq_ngroups_swapped
/// (KERNELS.md section 7).
AttentionTensors foldGroupedQueries(const KernelSpec &spec,
                                    const AttentionTensors &t);

/// An operand or attribute a typed launch refuses (checkAttentionSpec,
/// checkAttentionTensors, checkResampleTensors): the caller's mistake, not
/// a failure of the JIT or the driver. The message names the offending
/// value and what was expected.
class OperandError : public llvm::ErrorInfo<OperandError> {
public:
  static char ID;
  explicit OperandError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string message;
};

/// Checks attention \p spec alone: the element type, the head dim, the
/// window. The error (an OperandError) names the offending value and what
/// was expected.
llvm::Error checkAttentionSpec(const KernelSpec &spec);

/// Checks \p spec (checkAttentionSpec) and \p tensors against it: sizes and
/// head ratio, the LSE operand's presence, and the 16-byte alignment of
/// pointers and strides the kernels copy with. The error names the
/// offending value and what was expected.
llvm::Error checkAttentionTensors(const KernelSpec &spec,
                                  const AttentionTensors &tensors);

/// The operands of one fmha.attention_grad launch (FmhaOps.td): the
/// forward's q, k, v, o and lse (required), with its sizes and strides, in
/// \p forward (its workspace is not read); dout, the gradient of o (o's
/// shape); dq (q's shape), dk and dv (k's shape), written; and delta
/// [B, Hq, Sq] f32, scratch that receives rowsum(dout * o). Strides in
/// elements, of the batch, head and row dimensions; device pointers.
struct AttentionGradTensors {
  AttentionTensors forward;
  const void *dout = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  float *delta = nullptr;
  std::array<int64_t, 3> doutStrides = {}, dqStrides = {}, dkStrides = {},
                         dvStrides = {}, deltaStrides = {};
  /// Device memory (16-byte aligned) for the f32 dq accumulator of a spec
  /// that adds into one (withQueryGradAccumulator), and after it the
  /// counters that order the adds of an orderedQueryGrad spec: of
  /// getAttentionGradWorkspaceBytes bytes; not read by the deterministic
  /// spec without orderedQueryGrad.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;

  /// Sets every stride (the forward's too) for dense tensors of the sizes
  /// in forward: q, k, dq and dk of headDims.qk, v, o, dout and dv of
  /// headDims.v.
  void setDenseStrides(AttentionHeadDims headDims);
};

/// The bytes of workspace attention_grad \p spec needs on tensors of the
/// sizes of \p forward: B x Hq x Sq x D f32 for the dq accumulator where
/// the spec has one (withQueryGradAccumulator), then with
/// orderedQueryGrad B x Hq x ceil(Sq / 64) i32 counters; else 0. With
/// \p slices of each group's query heads (JIT::getAttentionGradSlices),
/// after those, from a 16-byte multiple, S x B x Hkv x Sk x (D + Dv) f32
/// of dkv_partial.
size_t getAttentionGradWorkspaceBytes(const KernelSpec &spec,
                                      const AttentionTensors &forward,
                                      unsigned slices = 1);

/// Checks attention_grad \p spec and \p tensors against it as
/// checkAttentionTensors does the forward's (an OperandError naming the
/// offending value and what was expected).
llvm::Error checkAttentionGradTensors(const KernelSpec &spec,
                                      const AttentionGradTensors &tensors);

/// The operands of one fmha.merge_attention launch: outs [S, B, H, Sq, D]
/// and o [B, H, Sq, D] of the spec's element type, lses [S, B, H, Sq] and
/// lse [B, H, Sq] f32 (only with KernelSpec::withLse). Strides in elements,
/// of every dimension but the head dimension, which is dense. Device
/// pointers.
struct MergeTensors {
  const void *outs = nullptr;
  const float *lses = nullptr;
  void *o = nullptr;
  float *lse = nullptr;
  /// Only with KernelSpec::withQueryOffsets: sequences + 1 int32 offsets
  /// (fmha.attention's, of packed sequences), dense; only the rows from
  /// queryOffsets[0] to queryOffsets[sequences] (clamped into [0, querySeq])
  /// are merged and written.
  const int32_t *queryOffsets = nullptr;
  int64_t sequences = 0;
  int64_t states = 0, batch = 0, heads = 0, querySeq = 0;
  std::array<int64_t, 4> outsStrides = {}, lsesStrides = {};
  std::array<int64_t, 3> oStrides = {}, lseStrides = {};

  /// Sets every stride for dense tensors of the sizes above.
  void setDenseStrides(unsigned headDim);
};

/// Checks merge \p spec and \p tensors against it: sizes, the LSE
/// operand's presence and alignment. The error (an OperandError) names the
/// offending value and what was expected.
llvm::Error checkMergeTensors(const KernelSpec &spec,
                              const MergeTensors &tensors);

/// One stream of an fmha.resample or fmha.check_sorted launch: times
/// [B, S] f32, values [B, S, D] of the spec's element type (D is the
/// stream's KernelSpec::streamFeatures; check_sorted reads no values),
/// lengths [B] i32 (only with KernelSpec::withLengths). Dense, device
/// pointers.
struct ResampleStream {
  const float *times = nullptr;
  const void *values = nullptr;
  const int32_t *lengths = nullptr;
  int64_t samples = 0;
};

/// The operands of one fmha.resample launch: the streams in the spec's
/// order, targets [B, T] f32 and out [B, T, sum of D] of the element type.
/// Dense: the JIT's resample kernels are compiled for dense tensors (their
/// 16-byte accesses rely on it).
struct ResampleTensors {
  std::vector<ResampleStream> streams;
  const float *targets = nullptr;
  void *out = nullptr;
  int64_t batch = 0, targetCount = 0;
};

/// Checks \p tensors against \p spec (a resample or check_sorted spec):
/// one stream per spec stream, sizes, the lengths' presence, alignment.
/// The error names the offending value and what was expected.
llvm::Error checkResampleTensors(const KernelSpec &spec,
                                 const ResampleTensors &tensors);

/// A loaded kernel. Owned by its JIT and valid as long as it.
class Kernel {
public:
  /// Launches on \p stream; \p arguments follow cuLaunchKernel (one pointer
  /// per kernel parameter). A grid with no blocks launches nothing; dynamic
  /// shared memory is opted into on first use.
  llvm::Error launch(CUstream stream, const LaunchConfig &config,
                     void **arguments) const;
  /// Launches on \p stream as the kernel's launch contract says, with
  /// \p operands in the contract's order: its block and shared memory, the
  /// grid its rule gives for the operands' sizes (a persistent grid at most
  /// \p residentCtas CTAs, by default one per SM; 0: one per unit of work),
  /// the parameters it lists. Needs a contract (every kernel of an fmha op
  /// has one).
  llvm::Error launch(CUstream stream, llvm::ArrayRef<LaunchOperand> operands,
                     std::optional<unsigned> residentCtas = std::nullopt) const;
  llvm::StringRef getName() const { return name; }
  CUfunction getFunction() const { return function; }
  /// The launch contract, or nullptr for a kernel written by hand.
  const LaunchContract *getContract() const {
    return contract ? &*contract : nullptr;
  }

private:
  friend class JIT;
  std::string name;
  CUfunction function = nullptr;
  CudaDriver *driver = nullptr;
  int device = 0;
  std::optional<LaunchContract> contract;
  /// CTAs of a persistent kernel that run at once: one per SM.
  unsigned residentCtas = 0;
  /// The dynamic shared memory this kernel has been allowed so far. Set on
  /// the first launch that uses any: the default limit (48 KB) also counts
  /// the kernel's static shared memory, so no size is safe without it.
  mutable std::atomic<unsigned> sharedBytesAllowed{0};
};

/// How a typed launch gets its kernel.
enum class KernelSource {
  /// From this JIT's memory, else the disk cache, else compiled (and cached).
  CompileOnMiss,
  /// Only a kernel this JIT has loaded already (by an earlier launch or by
  /// LaunchOptions::prepareOnly). For launches inside CUDA graph capture,
  /// where loading a module is not allowed and a compile would stall the
  /// capture; a miss is a KernelNotLoadedError.
  LoadedOnly,
};

/// What a typed launch (launchAttention, launchResample) may do besides
/// launching.
struct LaunchOptions {
  KernelSource source = KernelSource::CompileOnMiss;
  /// Get the kernel ready (compiled, loaded, its shared memory opted into)
  /// and launch nothing: a precompile. The tensors' sizes, strides and which
  /// optional operands are present are checked; no pointer is dereferenced.
  bool prepareOnly = false;
  /// Replaces a persistent grid's one CTA per SM, or per-sequence key
  /// counts' one CTA per unit of work (a measurement or a test of the
  /// persistent grid; 0: one CTA per unit of work).
  std::optional<unsigned> residentCtas;
  /// Replaces getKeySplits's count for a decode launch that may split its
  /// keys (a measurement or a test of split-KV), evened out so that no
  /// split is empty; the workspace must hold what
  /// getAttentionWorkspaceBytes with the same options says.
  std::optional<unsigned> keySplits;
  /// Replaces shouldPackQueryHeads's choice for a grouped-query launch (a
  /// measurement of packing; true still needs the group's heads to fold
  /// nowhere else: not for one query without a window; and packed
  /// sequences need sm_90a, whose lowering alone takes them).
  std::optional<bool> packQueryHeads;
};

/// A launch with KernelSource::LoadedOnly whose kernel was not loaded.
class KernelNotLoadedError : public llvm::ErrorInfo<KernelNotLoadedError> {
public:
  static char ID;
  explicit KernelNotLoadedError(std::string specKey)
      : specKey(std::move(specKey)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  const std::string &getSpecKey() const { return specKey; }

private:
  std::string specKey;
};

struct JITOptions {
  /// The CUDA device ordinal.
  int device = 0;
  /// The chip to compile for; default: getPreferredChip(device).
  std::optional<Chip> chip;
  /// The disk cache; std::nullopt: DiskCache::getDefaultDirectory(); an
  /// empty string disables it.
  std::optional<std::string> cacheDirectory;
  uint64_t cacheMaxBytes = DiskCache::getDefaultMaxBytes();
  /// When set, each compilation dumps its stages under
  /// <dumpDirectory>/<cache key>/.
  std::string dumpDirectory;
  /// When set, a directory of disk cache entries shipped with the program
  /// (fmha-seed's; the Python wheel's flashcore/kernels), read after a miss
  /// of the disk cache and never written: kernels found there load without
  /// a compile in a process whose own cache is empty.
  std::string seedDirectory;
};

/// Where kernels came from since the JIT was created.
struct JITStats {
  unsigned compiled = 0;
  unsigned diskHits = 0;
  /// Modules found in JITOptions::seedDirectory.
  unsigned seedHits = 0;
  unsigned memoryHits = 0;
};

class JIT {
public:
  /// Opens the driver and the device and plans how kernels will load there
  /// (a whole-program cubin from the PTX compiler library, the driver's PTX
  /// JIT, or nvJitLink: planLoad). Fails with the reason when there
  /// is no driver, no such device, or the chip cannot run on it.
  static llvm::Expected<std::unique_ptr<JIT>>
  create(const JITOptions &options = {});
  ~JIT();

  /// The kernel for \p spec: from memory, else (with
  /// KernelSource::CompileOnMiss) disk, else compiled. \p kernelName picks
  /// one of spec.getKernelNames() (default: the first).
  llvm::Expected<const Kernel &>
  getKernel(const KernelSpec &spec,
            KernelSource source = KernelSource::CompileOnMiss,
            llvm::StringRef kernelName = {});
  /// The kernel \p kernelName of \p source, a module holding one gpu.module
  /// written in upstream dialects (or fmha ops).
  llvm::Expected<const Kernel &>
  getKernelFromSource(llvm::StringRef source, llvm::StringRef kernelName);

  /// getAttentionLaunchSpec on this JIT's chip and device.
  KernelSpec getAttentionLaunchSpec(const KernelSpec &spec,
                                    std::optional<int64_t> querySeq,
                                    int64_t queryGroup = 1) const;
  /// Gets ready the kernel of each of \p specs (loaded from the disk cache
  /// or compiled, then loaded), \p threads at a time (0: one per hardware
  /// thread), so that no later launch that uses them, inside CUDA graph
  /// capture or not, compiles: getLaunchSpecs lists the kernels launches of
  /// a spec use. Launches nothing. The error names each spec that failed.
  llvm::Error precompile(llvm::ArrayRef<KernelSpec> specs,
                         unsigned threads = 0);
  /// Runs \p spec's attention on \p tensors on \p stream: checks them
  /// (checkAttentionTensors), gets the kernel, and passes what it takes on
  /// this chip (TMA tensor maps on sm_90a, memref descriptors) with its
  /// launch contract. A spec without a tile runs with the chip's default
  /// for the query length (getAttentionTiling with Sq).
  llvm::Error launchAttention(const KernelSpec &spec,
                              const AttentionTensors &tensors, CUstream stream,
                              const LaunchOptions &options = {});
  /// The bytes of workspace with which launchAttention of \p spec on
  /// \p tensors splits its keys (AttentionTensors::workspace): 0 where it
  /// would not split. Decode only (one query per row), where batch x heads
  /// leave SMs idle; the count is getKeySplits's. Reads the spec and the
  /// sizes (checked), not the pointers.
  llvm::Expected<size_t>
  getAttentionWorkspaceBytes(const KernelSpec &spec,
                             const AttentionTensors &tensors,
                             const LaunchOptions &options = {}) const;
  /// How many slices of each group's query heads a launch of
  /// attention_grad \p spec on tensors of \p forward's sizes takes on
  /// this JIT's GPU, given the room in its workspace
  /// (getAttentionGradWorkspaceBytes): fmha::getAttentionGradSlices with
  /// sm_90a's kernel and a dq workspace, without a window; else 1.
  unsigned getAttentionGradSlices(const KernelSpec &spec,
                                  const AttentionTensors &forward) const;
  /// The workspace with which attention_grad \p spec runs fastest on
  /// tensors of \p forward's sizes on this JIT's GPU:
  /// getAttentionGradWorkspaceBytes with getAttentionGradSlices' slices.
  /// A launch given less (but getAttentionGradWorkspaceBytes without
  /// slices) runs unsliced.
  llvm::Expected<size_t>
  getAttentionGradFastestWorkspaceBytes(const KernelSpec &spec,
                                        const AttentionTensors &forward) const;
  /// Runs the backward of attention: \p spec is getAttentionGradSpec of
  /// the forward's; \p tensors are checked by checkAttentionGradTensors.
  /// Three kernels, one after the other on \p stream (getKernelNames);
  /// nothing is allocated. A deterministic spec reduces nothing across
  /// CTAs, or with orderedQueryGrad (sm_90a) adds dq in the workspace in a
  /// fixed order: the same bits every run; the other adds dq in the
  /// workspace in any order.
  llvm::Error launchAttentionGrad(const KernelSpec &spec,
                                  const AttentionGradTensors &tensors,
                                  CUstream stream,
                                  const LaunchOptions &options = {});
  /// Runs \p spec's merge of partial attention states on \p tensors on
  /// \p stream, checked as checkMergeTensors does.
  llvm::Error launchMerge(const KernelSpec &spec, const MergeTensors &tensors,
                          CUstream stream, const LaunchOptions &options = {});
  /// Runs \p spec's resample on \p tensors on \p stream, checked as
  /// checkResampleTensors does.
  llvm::Error launchResample(const KernelSpec &spec,
                             const ResampleTensors &tensors, CUstream stream,
                             const LaunchOptions &options = {});
  /// Runs \p spec's fmha.check_sorted over the times (and lengths) of
  /// \p tensors' streams: \p first (device, one u64 per stream, each
  /// kTimesSorted before the launch) receives each stream's first pair out
  /// of order (decodeCheckSorted). The targets and out are not read.
  llvm::Error launchCheckSorted(const KernelSpec &spec,
                                const ResampleTensors &tensors,
                                uint64_t *first, CUstream stream);

  /// The tiling \p spec compiles with on this JIT's chip: its own, or the
  /// chip's default (what fmha-materialize-tiles picks; for attention, the
  /// default for \p querySeq queries with \p queryGroup query heads per KV
  /// head where that is known, as launchAttention does, and one that fits
  /// the device's shared memory where the chip's does not).
  ResampleTiling getResampleTiling(const KernelSpec &spec) const;
  AttentionTiling
  getAttentionTiling(const KernelSpec &spec,
                     std::optional<int64_t> querySeq = std::nullopt,
                     int64_t queryGroup = 1) const;

  const LoadPlan &getLoadPlan() const { return plan; }
  const DeviceInfo &getDevice() const { return device; }
  /// The shared memory a block may opt into on this JIT's device, in bytes
  /// (0 where the driver did not say): what the default tiles must fit.
  uint64_t getDeviceSharedBytes() const {
    return static_cast<uint64_t>(std::max(device.maxSharedBytesPerBlock, 0));
  }
  /// The disk cache directory, or "" when disabled.
  llvm::StringRef getCacheDirectory() const;
  JITStats getStats() const;

private:
  JIT() = default;
  /// The disk cache key of a module under this JIT's plan and versions:
  /// \p what it is compiled from ("source" text or a "spec" key) and
  /// \p identity, that text or key.
  std::string getKey(llvm::StringRef what, llvm::StringRef identity) const;
  /// A loaded module and the launch contracts of its kernels.
  struct LoadedModule {
    CUmodule module = nullptr;
    std::map<std::string, LaunchContract> contracts;
  };
  using CompileFn = llvm::function_ref<llvm::Expected<CompiledModule>(
      const CompileOptions &)>;
  /// The module under disk cache key \p key: loaded already, else from
  /// the disk cache, else compiled by \p compile. Holds the key's lock (so
  /// that a module compiles once) and the mutex only to read and publish.
  llvm::Expected<const LoadedModule &> loadOrCompile(const std::string &key,
                                                     CompileFn compile);
  /// The kernel \p kernelName of the module under \p key, loaded (or
  /// compiled) as loadOrCompile does.
  llvm::Expected<std::unique_ptr<Kernel>>
  loadKernel(const std::string &key, llvm::StringRef kernelName,
             CompileFn compile);
  /// The lock that serializes loading the module under \p key.
  std::shared_ptr<std::mutex> getKeyLock(const std::string &key);
  /// Increments \p counter, one of stats', under the mutex.
  void countIn(unsigned &counter);

  CudaDriver *driver = nullptr;
  DeviceInfo device;
  LoadPlan plan;
  std::optional<DiskCache> diskCache;
  std::string dumpDirectory;
  /// Entries shipped with the program (JITOptions::seedDirectory).
  std::optional<DiskCache> seedCache;
  /// What turns the plan's PTX into code, with its version
  /// (getImageMaker): part of every cache key.
  std::string imageMaker;

  /// Guards the maps and stats below; never held while compiling or
  /// loading, so that independent modules compile in parallel.
  mutable std::mutex mutex;
  /// One lock per module cache key, held while that module loads.
  llvm::StringMap<std::shared_ptr<std::mutex>> keyLocks;
  /// Loaded modules by cache key.
  llvm::StringMap<LoadedModule> modules;
  /// Kernels by source, then name, and by spec key: a hit costs one hash
  /// of the text or key, not the SHA-256 of the disk cache key.
  llvm::StringMap<llvm::StringMap<std::unique_ptr<Kernel>>> sourceKernels;
  llvm::StringMap<std::unique_ptr<Kernel>> specKernels;
  JITStats stats;
};

/// FlashCore's version as recorded at configure time (git describe).
llvm::StringRef getFlashCoreVersion();

/// What makes the images of load path \p path, with \p version, the CUDA
/// version of that maker ("ptx-compiler 13.0", "nvjitlink 12.8",
/// "driver-jit 13.0": the driver's own compile): part of every disk cache
/// key, since a cubin loads only on drivers as new as its compiler.
std::string getImageMaker(LoadPath path, CudaVersion version);

/// The disk cache key of a module compiled from \p what ("spec" or
/// "source") \p identity (a KernelSpec::getKey or the source text) under
/// \p plan by \p imageMaker: FlashCore's and LLVM's versions, the maker,
/// the PTX ISA, the chip and the arch are all part of it. The JIT's key, and
/// fmha-seed's.
std::string getModuleCacheKey(const LoadPlan &plan, llvm::StringRef imageMaker,
                              llvm::StringRef what, llvm::StringRef identity);

} // namespace mlir::fmha

#endif // FMHA_JIT_JIT_H
