//===- fmha-aot.cpp - fmha kernels as cubins plus a C launcher ------------===//
//
// Part of FlashCore. Compiles fmha ops, described by flags (one op) or by a
// .mlir file of func.funcs holding them (one launcher per op: attention,
// attention_grad, resample), for a list of archs, and writes
// DIR/PREFIX.<arch>.cubin, DIR/PREFIX.h and DIR/PREFIX.c: the cubins
// embedded in C with a loader that picks the one matching the current device
// and one launcher per op, which runs the op's kernels (one, or the
// backward's three or four) in order, over the CUDA driver API only.
// How each kernel launches (block, shared memory, grid, parameters) is the
// launch contract that its lowering recorded on it (LaunchContract.h): the
// generated launcher's tables copy it; nothing here re-derives it.
//
// Each arch is lowered with chip sm_90a when it is sm_90a, else with chip
// sm_80 (whose PTX runs on every later GPU); an op without a lowering for
// that chip fails with the compiler's diagnostic. An arch whose GPUs allow
// a block less shared memory than its chip (getArchSharedBytes: sm_86,
// sm_89 and sm_12x, 99 KB against the A100's 163) is lowered for that
// limit, as the JIT does on such a GPU (fmha-materialize-tiles'
// max-shared-bytes). Archs sharing a chip and a limit share one lowering:
// its PTX is compiled once per arch, as a whole program (PtxCompiler.h), as
// the driver's JIT would: nvJitLink's relocatable compile ignores
// setmaxnreg and spills the sm_80 attention kernels.
//
//===----------------------------------------------------------------------===//

#include "AotKernel.h"

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/Passes.h"
#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/InitAll.h"
#include "fmha/JIT/Compile.h"
#include "fmha/JIT/JIT.h"
#include "fmha/Target/PtxCompiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <type_traits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::aot;

namespace cl = llvm::cl;

static cl::OptionCategory opCategory(
    "One op from flags (instead of an input file)",
    "Spelled as fmha-runner spells the problem.");

static cl::opt<std::string>
    inputFile(cl::Positional,
              cl::desc("[<input.mlir>: func.funcs holding fmha ops]"),
              cl::init(""));
static cl::opt<std::string>
    archList("archs", cl::desc("cubin targets, comma separated: sm_80, sm_86, "
                               "sm_90, sm_90a, ... (required)"));
static cl::opt<std::string>
    prefix("name", cl::desc("prefix of the C symbols and the files' base name"),
           cl::init("fmha_kernels"));
static cl::opt<std::string> outputDir("o", cl::desc("output directory"),
                                      cl::init("."));

static cl::opt<std::string>
    opKind("op", cl::desc("attention, attention_grad (its backward) or "
                          "resample"),
           cl::cat(opCategory));
static cl::opt<std::string> dtype("dtype",
                                  cl::desc("f16 or bf16 (resample: also f32)"),
                                  cl::init("bf16"), cl::cat(opCategory));
static cl::opt<unsigned>
    headDim("head-dim",
            cl::desc("attention and attention_grad: a multiple of 8 from "
                     "32 to 256"),
            cl::init(128), cl::cat(opCategory));
static cl::opt<unsigned> valueHeadDim(
    "value-head-dim",
    cl::desc("v's and o's head dim where it differs from --head-dim "
             "(DeepSeek's 192 and 128; attention_grad: sm_90a with "
             "--deterministic=false); 0: --head-dim"),
    cl::init(0), cl::cat(opCategory));
static cl::opt<bool> causal("causal",
                            cl::desc("attention(_grad): causal mask"),
                            cl::cat(opCategory));
static cl::opt<bool> lse("lse", cl::desc("attention: also write the LSE"),
                         cl::cat(opCategory));
static cl::opt<bool> sinks(
    "sinks",
    cl::desc("attention: attention sinks, an f32 logit per query row [Hq, "
             "Sq] that joins its softmax denominator"),
    cl::cat(opCategory));
static cl::opt<bool> keyLengths(
    "key-lengths",
    cl::desc("attention: int32 keys per batch entry [B] (a KV cache's "
             "filled lengths)"),
    cl::cat(opCategory));
static cl::opt<unsigned> pageSize(
    "page-size",
    cl::desc("attention: a paged KV cache of pages of this many rows (a "
             "multiple of 8) and an int32 page table [B, pages per "
             "sequence]; 0: not paged"),
    cl::init(0), cl::cat(opCategory));
static cl::opt<bool> packQueryHeads(
    "pack-query-heads",
    cl::desc("attention: a KV head's group of query heads as one tile's "
             "rows (pack_query_heads: decode with a few queries and GQA)"),
    cl::cat(opCategory));
static cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("attention_grad: the same bits every run (dq by blocks of "
             "queries); =false adds dq's parts into an f32 dq_accum the "
             "caller passes, one pass faster"),
    cl::init(true), cl::cat(opCategory));
static cl::opt<bool> dqOrder(
    "dq-order",
    cl::desc("attention_grad, deterministic: dq's parts added into an f32 "
             "dq_accum in a fixed order that an i32 dq_order of counters "
             "keeps (FlashAttention-3's deterministic mode, one pass; "
             "sm_90a only) rather than dq by blocks of queries"),
    cl::cat(opCategory));
static cl::opt<std::string>
    window("window", cl::desc("attention(_grad): sliding window LEFT,RIGHT"),
           cl::cat(opCategory));
static cl::opt<float> scale("scale",
                            cl::desc("attention(_grad): softmax scale "
                                     "(default 1/sqrt(head dim))"),
                            cl::cat(opCategory));
static cl::opt<float> softcap("softcap",
                              cl::desc("attention(_grad): logit softcapping "
                                       "c * tanh(x / c) (positive)"),
                              cl::cat(opCategory));
static cl::opt<std::string> mode("mode",
                                 cl::desc("resample: linear, nearest or "
                                          "previous"),
                                 cl::init("linear"), cl::cat(opCategory));
static cl::opt<std::string>
    features("features",
             cl::desc("resample: features of each stream, e.g. 6,32"),
             cl::cat(opCategory));
static cl::opt<bool> lengths("lengths",
                             cl::desc("resample: per-row valid lengths"),
                             cl::cat(opCategory));
static cl::opt<std::string>
    tile("tile", cl::desc("the tile instead of the chip's default: attention "
                          "block_m,block_n,warps,stages; resample "
                          "block_t,threads"),
         cl::cat(opCategory));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fmha-aot") << message << "\n";
  return 1;
}

/// "1,2,3" -> {1, 2, 3}; fails naming \p flag and the bad item.
static llvm::Expected<llvm::SmallVector<int64_t>>
parseIntegers(llvm::StringRef flag, llvm::StringRef text, size_t count) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  llvm::SmallVector<int64_t> values;
  for (llvm::StringRef item : items) {
    int64_t value;
    if (item.trim().getAsInteger(10, value))
      return llvm::createStringError(
          llvm::formatv("--{0}: '{1}' is not an integer (in '{2}')", flag,
                        item, text));
    values.push_back(value);
  }
  if (count && values.size() != count)
    return llvm::createStringError(
        llvm::formatv("--{0} expects {1} comma-separated integers, got '{2}'",
                      flag, count, text));
  return values;
}

/// The op of the flags as a KernelSpec (its tile's chip is set per arch).
static llvm::Expected<KernelSpec> getSpecFromFlags() {
  KernelSpec spec;
  if (opKind == "attention")
    spec.kind = OpKind::Attention;
  else if (opKind == "attention_grad")
    spec.kind = OpKind::AttentionGrad;
  else if (opKind == "resample")
    spec.kind = OpKind::Resample;
  else
    return llvm::createStringError(
        "--op must be attention, attention_grad or resample, got '" + opKind +
        "'");
  bool grad = spec.kind == OpKind::AttentionGrad;
  bool attention = spec.kind == OpKind::Attention || grad;
  if (dtype == "bf16")
    spec.elementType = ElementType::BF16;
  else if (dtype == "f16")
    spec.elementType = ElementType::F16;
  else if (dtype == "f32" && !attention)
    spec.elementType = ElementType::F32;
  else
    return llvm::createStringError(
        llvm::formatv("--dtype must be {0}, got '{1}'",
                      attention ? "bf16 or f16" : "bf16, f16 or f32", dtype));

  // Flags of the other op are mistakes, not options to ignore.
  auto misplaced = [&](llvm::ArrayRef<cl::Option *> options,
                       llvm::StringRef op) -> llvm::Error {
    for (cl::Option *option : options)
      if (option->getNumOccurrences())
        return llvm::createStringError(llvm::formatv(
            "--{0} applies to --op={1} only", option->ArgStr, op));
    return llvm::Error::success();
  };
  if (attention) {
    if (llvm::Error err = misplaced({&mode, &features, &lengths}, "resample"))
      return std::move(err);
    if (llvm::Error err =
            grad ? misplaced({&lse, &tile, &packQueryHeads, &sinks, &keyLengths,
                              &pageSize},
                             "attention")
                 : misplaced({&deterministic, &dqOrder}, "attention_grad"))
      return std::move(err);
    if (dqOrder && !deterministic)
      return llvm::createStringError(
          "--dq-order orders the adds into dq_accum so that the backward is "
          "deterministic: it cannot go with --deterministic=false");
    spec.headDim = headDim;
    spec.valueHeadDim = valueHeadDim;
    spec.causal = causal;
    spec.withLse = lse;
    spec.packQueryHeads = packQueryHeads;
    spec.withSinks = sinks;
    spec.withKeyLengths = keyLengths;
    spec.pageSize = pageSize;
    spec.deterministic = deterministic;
    spec.orderedQueryGrad = dqOrder;
    if (scale.getNumOccurrences())
      spec.scale = scale;
    if (softcap.getNumOccurrences())
      spec.softcap = softcap;
    if (!window.empty()) {
      auto sides = parseIntegers("window", window, 2);
      if (!sides)
        return sides.takeError();
      spec.window = {{(*sides)[0], (*sides)[1]}};
    }
    if (!tile.empty()) {
      auto values = parseIntegers("tile", tile, 4);
      if (!values)
        return values.takeError();
      spec.attentionTile =
          AttentionTiling{Chip::sm_80, unsigned((*values)[0]),
                          unsigned((*values)[1]), unsigned((*values)[2]),
                          unsigned((*values)[3])};
    }
    return spec;
  }
  if (llvm::Error err =
          misplaced({&headDim, &causal, &window, &scale, &softcap},
                    "attention or attention_grad"))
    return std::move(err);
  if (llvm::Error err = misplaced({&lse, &valueHeadDim, &packQueryHeads, &sinks,
                                   &keyLengths, &pageSize},
                                  "attention"))
    return std::move(err);
  if (llvm::Error err = misplaced({&deterministic, &dqOrder}, "attention_grad"))
    return std::move(err);
  if (mode == "linear")
    spec.mode = ResampleMode::linear;
  else if (mode == "nearest")
    spec.mode = ResampleMode::nearest;
  else if (mode == "previous")
    spec.mode = ResampleMode::previous;
  else
    return llvm::createStringError(
        "--mode must be linear, nearest or previous, got '" + mode + "'");
  if (features.empty())
    return llvm::createStringError(
        "--op=resample needs --features (the features of each stream, e.g. "
        "--features=6,32)");
  auto counts = parseIntegers("features", features, 0);
  if (!counts)
    return counts.takeError();
  for (int64_t count : *counts) {
    if (count < 1)
      return llvm::createStringError(llvm::formatv(
          "--features: every stream needs >= 1 feature, got {0}", count));
    spec.streamFeatures.push_back(static_cast<unsigned>(count));
  }
  spec.withLengths = lengths;
  if (!tile.empty()) {
    auto values = parseIntegers("tile", tile, 2);
    if (!values)
      return values.takeError();
    spec.resampleTile = ResampleTiling{Chip::sm_80, unsigned((*values)[0]),
                                       unsigned((*values)[1])};
  }
  return spec;
}

/// An arch the tool can link for: sm_XY or sm_XYa, 8.0 or newer.
static llvm::Error checkArch(llvm::StringRef arch) {
  llvm::StringRef digits = arch;
  if (!digits.consume_front("sm_"))
    return llvm::createStringError(
        "--archs: '" + arch +
        "' is not a cubin arch: expected sm_XY or sm_XYa (e.g. sm_80, sm_90a)");
  digits.consume_back("a");
  unsigned version;
  if (digits.size() < 2 || digits.getAsInteger(10, version))
    return llvm::createStringError(
        "--archs: '" + arch +
        "' is not a cubin arch: expected sm_XY or sm_XYa (e.g. sm_80, sm_90a)");
  if (version < 80)
    return llvm::createStringError(
        "--archs: " + arch +
        " is too old: the kernels need sm_80 or newer (mma.sync, ldmatrix, "
        "cp.async)");
  return llvm::Error::success();
}

/// The chip an arch is lowered for: the Hopper lowering (WGMMA, TMA) runs
/// on sm_90a only; the sm_80 lowering runs on every arch since.
static Chip getChipForArch(llvm::StringRef arch) {
  return arch == "sm_90a" ? Chip::sm_90a : Chip::sm_80;
}

/// The shared memory a block may take on \p arch's GPUs where it is less
/// than its chip's (0 elsewhere): compute capability 8.6, 8.9 (RTX 30/40,
/// A10, A40, L4, L40) and 12.x (RTX 50) allow 99 KB, where sm_80's tiles
/// are sized for the A100's 163.
static uint64_t getArchSharedBytes(llvm::StringRef arch) {
  llvm::StringRef digits = arch.drop_front(3); // checkArch: sm_XY[a]
  digits.consume_back("a");
  unsigned version = 0;
  if (digits.getAsInteger(10, version))
    return 0;
  return version == 86 || version == 89 || version / 10 == 12
             ? kSm8xSharedBytesPerBlock
             : 0;
}

/// \p name made a C identifier.
static std::string toIdentifier(llvm::StringRef name) {
  std::string result;
  for (char c : name)
    result += llvm::isAlnum(c) || c == '_' ? c : '_';
  if (result.empty() || llvm::isDigit(result.front()))
    result.insert(result.begin(), '_');
  return result;
}

static llvm::StringRef getElementTypeName(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  return "";
}

/// The operand as the launcher must pass it. \p alignBytes: what the
/// kernel's accesses assume of its base and row starts.
static llvm::Expected<MemRefOperand>
describeOperand(llvm::StringRef name, llvm::ArrayRef<llvm::StringRef> dims,
                Value value, unsigned alignBytes) {
  MemRefOperand operand;
  operand.name = name.str();
  for (llvm::StringRef dim : dims)
    operand.dimNames.push_back(dim.str());
  // An index (max_query_length): a value, passed as the size of its one
  // dimension.
  if (value.getType().isIndex()) {
    operand.isIndex = true;
    operand.rank = 1;
    operand.elementBytes = operand.alignBytes = 8;
    operand.identityLayout = true;
    operand.sizes = {kDynamic};
    operand.strides = {1};
    return operand;
  }
  auto type = cast<MemRefType>(value.getType());
  operand.rank = type.getRank();
  operand.elementBytes = type.getElementTypeBitWidth() / 8;
  operand.alignBytes = std::max(alignBytes, operand.elementBytes);
  operand.identityLayout = type.getLayout().isIdentity();
  if (operand.rank != dims.size())
    return llvm::createStringError(
        llvm::formatv("operand {0} has rank {1}, expected {2}", name,
                      operand.rank, dims.size()));
  for (int64_t size : type.getShape())
    operand.sizes.push_back(ShapedType::isDynamic(size) ? kDynamic : size);
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return llvm::createStringError(
        llvm::formatv("operand {0} has a layout that is not strided", name));
  // The launcher passes each pointer as the descriptor's aligned pointer
  // with offset 0: the data starts at the pointer.
  if (!ShapedType::isDynamic(offset) && offset != 0) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << type;
    return llvm::createStringError(llvm::formatv(
        "operand {0} has type {1} with a static offset of {2}: the "
        "generated launcher takes pointers to the first element (offset 0 "
        "or ?)",
        name, text, offset));
  }
  for (int64_t stride : strides)
    operand.strides.push_back(ShapedType::isDynamic(stride) ? kDynamic
                                                            : stride);
  return operand;
}

/// cp.async, ldmatrix and the output's vector stores move 16-byte chunks.
static constexpr unsigned kVectorBytes = 16;

/// The dimensions of attention's operands: of the queries' side, of the
/// keys' side, and of a per-row f32 (lse, delta).
static constexpr llvm::StringRef kQueryDims[] = {"batch", "q_heads", "q_seq",
                                                 "head_dim"};
static constexpr llvm::StringRef kKeyDims[] = {"batch", "kv_heads", "k_seq",
                                               "head_dim"};
static constexpr llvm::StringRef kRowDims[] = {"batch", "q_heads", "q_seq"};
/// fmha.attention_grad's dq_order: a counter per block of
/// kQueryGradOrderBlock queries.
static constexpr llvm::StringRef kOrderDims[] = {"batch", "q_heads",
                                                 "q_blocks"};
/// v's and o's dimensions where their head dim differs from q's and k's.
static constexpr llvm::StringRef kValueKeyDims[] = {"batch", "kv_heads",
                                                    "k_seq", "value_head_dim"};
static constexpr llvm::StringRef kValueQueryDims[] = {
    "batch", "q_heads", "q_seq", "value_head_dim"};
/// A paged KV cache's k and v: pools of pages.
static constexpr llvm::StringRef kPagedKeyDims[] = {"pages", "kv_heads",
                                                    "page_size", "head_dim"};
static constexpr llvm::StringRef kPagedValueKeyDims[] = {
    "pages", "kv_heads", "page_size", "value_head_dim"};
static constexpr llvm::StringRef kSinkDims[] = {"q_heads", "q_seq"};
/// A split_keys attention's o and lse: the partial states of each batch
/// entry's key splits.
static constexpr llvm::StringRef kSplitQueryDims[] = {"entries", "q_heads",
                                                      "q_seq", "head_dim"};
static constexpr llvm::StringRef kSplitValueQueryDims[] = {
    "entries", "q_heads", "q_seq", "value_head_dim"};
static constexpr llvm::StringRef kSplitRowDims[] = {"entries", "q_heads",
                                                    "q_seq"};
/// fmha.merge_attention's operands.
static constexpr llvm::StringRef kStateDims[] = {"states", "batch", "heads",
                                                 "q_seq", "head_dim"};
static constexpr llvm::StringRef kStateRowDims[] = {"states", "batch", "heads",
                                                    "q_seq"};
static constexpr llvm::StringRef kMergedDims[] = {"batch", "heads", "q_seq",
                                                  "head_dim"};
static constexpr llvm::StringRef kMergedRowDims[] = {"batch", "heads", "q_seq"};
/// Its query_offsets: the packed sequences' (whose states are one batch
/// entry's rows).
static constexpr llvm::StringRef kSequenceOffsetDims[] = {"sequences + 1"};
static constexpr llvm::StringRef kLengthDims[] = {"batch"};
static constexpr llvm::StringRef kTableDims[] = {"batch", "pages_per_sequence"};
static constexpr llvm::StringRef kOffsetDims[] = {"batch + 1"};
static constexpr llvm::StringRef kMaxQueryLengthDims[] = {"max_query_length"};

/// One operand of an attention op or its backward: a name, its dimensions,
/// and the alignment its kernels' accesses need.
struct AttentionOperand {
  llvm::StringRef name;
  llvm::ArrayRef<llvm::StringRef> dims;
  Value value;
  unsigned alignBytes;
};

/// \p operands, those with a value, described (describeOperand).
static llvm::Expected<std::vector<MemRefOperand>>
describeOperands(llvm::ArrayRef<AttentionOperand> operands) {
  std::vector<MemRefOperand> described;
  for (const AttentionOperand &o : operands) {
    if (!o.value)
      continue;
    auto operand = describeOperand(o.name, o.dims, o.value, o.alignBytes);
    if (!operand)
      return operand.takeError();
    described.push_back(std::move(*operand));
  }
  return described;
}

/// The operands of \p op in kernel order (the lowerings' ABI: the op's
/// memref operands in order).
static llvm::Expected<std::vector<MemRefOperand>>
describeOperands(AttentionOp op) {
  bool apart = op.getValueHeadDim() != op.getHeadDim();
  bool paged = static_cast<bool>(op.getPageTable());
  llvm::ArrayRef<llvm::StringRef> keyDims = paged ? kPagedKeyDims : kKeyDims;
  llvm::ArrayRef<llvm::StringRef> valueDims =
      apart ? (paged ? kPagedValueKeyDims : kValueKeyDims) : keyDims;
  bool split = op.getSplitKeys();
  llvm::ArrayRef<llvm::StringRef> outDims =
      split ? (apart ? kSplitValueQueryDims : kSplitQueryDims)
            : (apart ? kValueQueryDims : kQueryDims);
  return describeOperands(
      {{"q", kQueryDims, op.getQ(), kVectorBytes},
       {"k", keyDims, op.getK(), kVectorBytes},
       {"v", valueDims, op.getV(), kVectorBytes},
       {"o", outDims, op.getO(), kVectorBytes},
       {"lse", split ? kSplitRowDims : kRowDims, op.getLse(), 0},
       {"sinks", kSinkDims, op.getSinks(), 0},
       {"key_lengths", kLengthDims, op.getKeyLengths(), 0},
       {"page_table", kTableDims, op.getPageTable(), 0},
       {"query_offsets", kOffsetDims, op.getQueryOffsets(), 0},
       {"key_offsets", kOffsetDims, op.getKeyOffsets(), 0},
       {"max_query_length", kMaxQueryLengthDims, op.getMaxQueryLength(), 0}});
}

/// fmha.merge_attention's: its kernel reads and writes one element at a
/// time (MergeToGPU.cpp), so each operand needs its elements' alignment.
static llvm::Expected<std::vector<MemRefOperand>>
describeOperands(MergeAttentionOp op) {
  return describeOperands(
      {{"outs", kStateDims, op.getOuts(), 0},
       {"lses", kStateRowDims, op.getLses(), 0},
       {"o", kMergedDims, op.getO(), 0},
       {"lse", kMergedRowDims, op.getLse(), 0},
       {"query_offsets", kSequenceOffsetDims, op.getQueryOffsets(), 0}});
}

static llvm::Expected<std::vector<MemRefOperand>>
describeOperands(AttentionGradOp op) {
  // v, o, dout and dv have v's head dim.
  bool apart = op.getValueHeadDim() != op.getHeadDim();
  llvm::ArrayRef<llvm::StringRef> valueKeyDims =
      apart ? kValueKeyDims : kKeyDims;
  llvm::ArrayRef<llvm::StringRef> valueQueryDims =
      apart ? kValueQueryDims : kQueryDims;
  return describeOperands(
      {{"q", kQueryDims, op.getQ(), kVectorBytes},
       {"k", kKeyDims, op.getK(), kVectorBytes},
       {"v", valueKeyDims, op.getV(), kVectorBytes},
       {"o", valueQueryDims, op.getO(), kVectorBytes},
       {"dout", valueQueryDims, op.getDout(), kVectorBytes},
       {"lse", kRowDims, op.getLse(), 0},
       {"dq", kQueryDims, op.getDq(), kVectorBytes},
       {"dk", kKeyDims, op.getDk(), kVectorBytes},
       {"dv", valueKeyDims, op.getDv(), kVectorBytes},
       {"delta", kRowDims, op.getDelta(), 0},
       {"dq_accum", kQueryDims, op.getDqAccum(), kVectorBytes},
       {"dq_order", kOrderDims, op.getDqOrder(), 0}});
}

static llvm::Expected<std::vector<MemRefOperand>>
describeOperands(ResampleOp op) {
  // A stream's values and the output are read and written in 16-byte
  // vectors when both are contiguous and the stream's features, the output's
  // features and the stream's offset in them are multiples of a vector
  // (ResampleToGPU.cpp, getVectorWidth): then both bases must be 16-byte
  // aligned; other accesses are per element.
  auto outType = cast<MemRefType>(op.getOut().getType());
  unsigned elementBytes = outType.getElementTypeBitWidth() / 8;
  int64_t width = kVectorBytes / elementBytes;
  bool anyVector = false;
  llvm::SmallVector<bool> vector;
  int64_t offset = 0;
  for (Value values : op.getValues()) {
    auto type = cast<MemRefType>(values.getType());
    bool vectorized = type.getLayout().isIdentity() &&
                      outType.getLayout().isIdentity() &&
                      type.getDimSize(2) % width == 0 &&
                      outType.getDimSize(2) % width == 0 && offset % width == 0;
    vector.push_back(vectorized);
    anyVector |= vectorized;
    offset += type.getDimSize(2);
  }

  std::vector<MemRefOperand> operands;
  auto add = [&](llvm::StringRef name, Value value,
                 unsigned alignBytes) -> llvm::Error {
    // Times, values and lengths: [batch, samples, features]; targets and
    // out: [batch, targets, features].
    bool target = name == "targets" || name == "out";
    llvm::StringRef dims[] = {"batch", target ? "targets" : "samples",
                              "features"};
    unsigned rank = cast<MemRefType>(value.getType()).getRank();
    auto operand = describeOperand(
        name, llvm::ArrayRef(dims).take_front(std::min(rank, 3u)), value,
        alignBytes);
    if (!operand)
      return operand.takeError();
    operands.push_back(std::move(*operand));
    return llvm::Error::success();
  };
  unsigned streams = op.getNumStreams();
  for (unsigned s = 0; s < streams; ++s)
    if (llvm::Error err = add("times" + std::to_string(s), op.getTimes()[s], 0))
      return std::move(err);
  for (unsigned s = 0; s < streams; ++s)
    if (llvm::Error err = add("values" + std::to_string(s), op.getValues()[s],
                              vector[s] ? kVectorBytes : 0))
      return std::move(err);
  for (unsigned s = 0; s < op.getLengths().size(); ++s)
    if (llvm::Error err =
            add("lengths" + std::to_string(s), op.getLengths()[s], 0))
      return std::move(err);
  if (llvm::Error err = add("targets", op.getTargets(), 0))
    return std::move(err);
  if (llvm::Error err = add("out", op.getOut(), anyVector ? kVectorBytes : 0))
    return std::move(err);
  return operands;
}

/// What fmha.attention and its backward share into \p kernel: the element
/// type, head dim, mask, scale and the operands.
template <typename Op>
static llvm::Error describeAttention(Op op, AotKernel &kernel) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  kernel.elementType = getElementTypeName(qType.getElementType()).str();
  kernel.headDim = op.getHeadDim();
  kernel.valueHeadDim = op.getValueHeadDim();
  if constexpr (std::is_same_v<Op, AttentionOp>)
    kernel.packQueryHeads = op.getPackQueryHeads();
  kernel.causal = op.getCausal();
  kernel.scale = op.getScaleOrDefault();
  kernel.scaleIsDefault = !op.getScale();
  if (std::optional<APFloat> softcap = op.getSoftcap())
    kernel.softcap = softcap->convertToFloat();
  if (std::optional<ArrayRef<int64_t>> sides = op.getWindow())
    kernel.window = {{(*sides)[0], (*sides)[1]}};
  auto operands = describeOperands(op);
  if (!operands)
    return operands.takeError();
  kernel.operands = std::move(*operands);
  return llvm::Error::success();
}

/// The kernels of \p source lowered for \p chip (on a GPU that allows a
/// block \p maxSharedBytes, where nonzero): the ops with their tiles
/// (what fmha-materialize-tiles picks for them, or their own), and the
/// module with the tiles attached, which is what gets compiled. The
/// variants get their functions and launch contracts from the compilation.
struct ChipAnalysis {
  std::vector<AotKernel> kernels;
  std::vector<KernelVariant> variants;
  /// How many kernel functions each op lowers to.
  std::vector<unsigned> functionCounts;
  std::string materialized;
};

static llvm::Expected<ChipAnalysis> analyze(llvm::StringRef source,
                                            llvm::StringRef sourceName,
                                            Chip chip,
                                            uint64_t maxSharedBytes) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnosticStream);
  auto fail = [&](llvm::StringRef what) {
    return llvm::createStringError(
        (what + (diagnostics.empty() ? "" : ":\n") + diagnostics).str());
  };
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, sourceName), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("invalid MLIR source");
  PassManager pm(&context);
  FmhaMaterializeTilesOptions options;
  options.chip = stringifyChip(chip).str();
  options.maxSharedBytes = maxSharedBytes;
  pm.addPass(createFmhaMaterializeTiles(options));
  if (failed(pm.run(*module)))
    return fail(llvm::formatv("choosing tiles for {0} failed",
                              stringifyChip(chip))
                    .str());

  ChipAnalysis analysis;
  std::map<Operation *, unsigned> opsPerFunc;
  llvm::SmallVector<Operation *> ops;
  // The walk order of convert-fmha-to-nvgpu, which creates the kernels in it.
  module->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp, MergeAttentionOp, ResampleOp>(op)) {
      ops.push_back(op);
      ++opsPerFunc[op->getParentOfType<func::FuncOp>()];
    }
  });
  if (ops.empty())
    return llvm::createStringError("no fmha.attention, fmha.attention_grad, "
                                   "fmha.merge_attention or fmha.resample op "
                                   "in " +
                                   sourceName);
  std::map<Operation *, unsigned> seen;
  for (Operation *op : ops) {
    AotKernel kernel;
    KernelVariant variant;
    auto func = op->getParentOfType<func::FuncOp>();
    std::string funcName = func ? func.getSymName().str() : "kernel";
    kernel.name = toIdentifier(funcName);
    if (opsPerFunc[func] > 1)
      kernel.name += "_" + std::to_string(seen[func]++);
    kernel.origin = "@" + funcName;
    if (auto location = dyn_cast<FileLineColLoc>(op->getLoc()))
      kernel.origin += llvm::formatv(
          " ({0}:{1}:{2})", llvm::sys::path::filename(location.getFilename()),
          location.getLine(), location.getColumn());

    unsigned functions = 1;
    if (auto grad = dyn_cast<AttentionGradOp>(op)) {
      kernel.kind = AotKernel::Kind::AttentionGrad;
      kernel.withDqAccum = static_cast<bool>(grad.getDqAccum());
      kernel.withDqOrder = static_cast<bool>(grad.getDqOrder());
      if (llvm::Error err = describeAttention(grad, kernel))
        return std::move(err);
      llvm::SmallVector<AttentionGradKernel, 4> gradKernels =
          getAttentionGradKernels(kernel.headDim, kernel.withDqAccum);
      functions = gradKernels.size();
      variant.tile =
          "kernels " +
          llvm::join(llvm::map_range(gradKernels,
                                     [](AttentionGradKernel k) {
                                       return getAttentionGradKernelName(k);
                                     }),
                     ", ");
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      kernel.withQueryOffsets = static_cast<bool>(attention.getQueryOffsets());
      kernel.withKeyOffsets = static_cast<bool>(attention.getKeyOffsets());
      kernel.withSinks = static_cast<bool>(attention.getSinks());
      kernel.withKeyLengths = static_cast<bool>(attention.getKeyLengths());
      if (attention.getPageTable())
        kernel.pageSize =
            cast<MemRefType>(attention.getK().getType()).getDimSize(2);
      kernel.kind = AotKernel::Kind::Attention;
      kernel.withLse = static_cast<bool>(attention.getLse());
      kernel.splitKeys = attention.getSplitKeys();
      if (llvm::Error err = describeAttention(attention, kernel))
        return std::move(err);
      AttentionTiling tiling = attention.getTile()->getAttentionTiling();
      variant.tile = llvm::formatv("tile {0}: block_m {1}, block_n {2}, "
                                   "{3} warps, {4} stage(s)",
                                   stringifyChip(tiling.chip), tiling.blockM,
                                   tiling.blockN, tiling.warps, tiling.stages);
    } else if (auto merge = dyn_cast<MergeAttentionOp>(op)) {
      kernel.kind = AotKernel::Kind::Merge;
      kernel.withQueryOffsets = static_cast<bool>(merge.getQueryOffsets());
      auto outType = cast<MemRefType>(merge.getO().getType());
      kernel.elementType = getElementTypeName(outType.getElementType()).str();
      kernel.headDim = kernel.valueHeadDim = outType.getDimSize(3);
      kernel.withLse = static_cast<bool>(merge.getLse());
      auto operands = describeOperands(merge);
      if (!operands)
        return operands.takeError();
      kernel.operands = std::move(*operands);
      variant.tile = "one kernel";
    } else {
      auto resample = cast<ResampleOp>(op);
      kernel.kind = AotKernel::Kind::Resample;
      auto outType = cast<MemRefType>(resample.getOut().getType());
      kernel.elementType = getElementTypeName(outType.getElementType()).str();
      kernel.mode = stringifyResampleMode(resample.getMode()).str();
      for (Value values : resample.getValues()) {
        int64_t d = cast<MemRefType>(values.getType()).getDimSize(2);
        if (ShapedType::isDynamic(d))
          return llvm::createStringError(
              "fmha.resample in " + kernel.origin +
              ": the features of each stream must be static");
        kernel.streamFeatures.push_back(static_cast<unsigned>(d));
      }
      kernel.withLengths = !resample.getLengths().empty();
      auto operands = describeOperands(resample);
      if (!operands)
        return operands.takeError();
      kernel.operands = std::move(*operands);
      ResampleTileAttr tile = *resample.getTile();
      variant.tile = llvm::formatv("tile {0}: block_t {1}, {2} threads",
                                   stringifyChip(tile.getChip()),
                                   tile.getBlockT(), tile.getThreads());
    }
    analysis.kernels.push_back(std::move(kernel));
    analysis.variants.push_back(std::move(variant));
    analysis.functionCounts.push_back(functions);
  }
  llvm::StringSet<> names;
  for (const AotKernel &kernel : analysis.kernels)
    if (!names.insert(kernel.name).second)
      return llvm::createStringError(
          "two kernels would both be named '" + kernel.name +
          "' in C (from func names that differ only in characters C does "
          "not allow): rename one");

  llvm::raw_string_ostream os(analysis.materialized);
  module->print(os);
  return analysis;
}

/// Writes \p contents to \p path.
static llvm::Error writeFile(llvm::StringRef path, llvm::StringRef contents) {
  std::error_code ec;
  llvm::ToolOutputFile output(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + ec.message());
  output.os() << contents;
  output.os().flush();
  if (output.os().has_error())
    return llvm::createStringError("cannot write '" + path + "'");
  output.keep();
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "FlashCore ahead-of-time compiler: fmha ops to cubins plus a C header "
      "and source that embed them and launch them with the CUDA driver API\n\n"
      "  fmha-aot --op=attention --dtype=bf16 --head-dim=128 --causal \\\n"
      "      --archs=sm_80,sm_90 --name=my_attention -o out/\n"
      "  fmha-aot --op=attention_grad --head-dim=128 --causal \\\n"
      "      --archs=sm_80,sm_90a --name=my_attention_grad -o out/\n"
      "  fmha-aot kernels.mlir --archs=sm_80,sm_90a --name=my_kernels -o out/\n");

  // The op: from a file, or from the flags.
  bool fromFlags = opKind.getNumOccurrences() != 0;
  std::string source, sourceName;
  if (!inputFile.empty()) {
    for (cl::Option *option : std::initializer_list<cl::Option *>{
             &opKind, &dtype, &headDim, &valueHeadDim, &causal, &lse,
             &deterministic, &dqOrder, &window, &scale, &softcap, &mode,
             &features, &lengths, &tile})
      if (option->getNumOccurrences())
        return fail("--" + option->ArgStr +
                    " describes an op, but the ops come from '" + inputFile +
                    "': give one or the other");
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> input =
        llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
    if (!input)
      return fail("cannot read '" + inputFile +
                  "': " + input.getError().message());
    source = (*input)->getBuffer().str();
    sourceName = inputFile;
  } else if (!fromFlags) {
    return fail("no op: give an input .mlir file or "
                "--op=attention|attention_grad|resample (see --help)");
  }
  std::optional<KernelSpec> spec;
  if (fromFlags) {
    llvm::Expected<KernelSpec> parsed = getSpecFromFlags();
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    spec = std::move(*parsed);
  }

  // The archs, and the chip each is lowered for.
  if (archList.empty())
    return fail("--archs is required: the cubin targets, e.g. "
                "--archs=sm_80,sm_90");
  llvm::SmallVector<llvm::StringRef> archNames;
  llvm::StringRef(archList).split(archNames, ',');
  llvm::StringSet<> seenArchs;
  for (llvm::StringRef &arch : archNames) {
    arch = arch.trim();
    if (llvm::Error err = checkArch(arch))
      return fail(llvm::toString(std::move(err)));
    if (!seenArchs.insert(arch).second)
      return fail("--archs names " + arch + " twice");
  }
  if (prefix.empty() || toIdentifier(prefix) != prefix)
    return fail("--name must be a C identifier (letters, digits, '_', not "
                "starting with a digit), got '" +
                prefix + "'");

  AotFile file;
  file.prefix = prefix;
  file.source = fromFlags ? "flags" : inputFile.getValue();
  file.command = "fmha-aot";
  for (int i = 1; i < argc; ++i)
    file.command += std::string(" ") + argv[i];

  // One lowering per chip and shared-memory limit, one whole-program
  // compile per arch.
  using Lowering = std::pair<Chip, uint64_t>;
  std::map<Lowering, ChipAnalysis> analyses;
  std::map<Lowering, std::string> ptxByLowering;
  std::optional<std::vector<AotKernel>> kernels;
  for (llvm::StringRef arch : archNames) {
    Chip chip = getChipForArch(arch);
    uint64_t sharedBytes = getArchSharedBytes(arch);
    Lowering lowering{chip, sharedBytes};
    std::string context =
        llvm::formatv("--archs={0} (lowered for chip {1}{2})", arch,
                      stringifyChip(chip),
                      sharedBytes ? llvm::formatv(", {0} bytes of shared "
                                                  "memory a block",
                                                  sharedBytes)
                                        .str()
                                  : std::string())
            .str();
    auto found = analyses.find(lowering);
    if (found == analyses.end()) {
      std::string chipSource = source;
      if (spec) {
        KernelSpec chipSpec = *spec;
        if (chipSpec.attentionTile)
          chipSpec.attentionTile->chip = chip;
        if (chipSpec.resampleTile)
          chipSpec.resampleTile->chip = chip;
        chipSource = chipSpec.toMLIR();
      }
      llvm::Expected<ChipAnalysis> analysis = analyze(
          chipSource, fromFlags ? "<flags>" : sourceName, chip, sharedBytes);
      if (!analysis)
        return fail(context + ": " + llvm::toString(analysis.takeError()));
      found = analyses.emplace(lowering, std::move(*analysis)).first;
    }
    ChipAnalysis &analysis = found->second;

    llvm::Expected<PtxIsa> isa = selectPtxCompilerIsa(chip);
    if (!isa)
      return fail(context + ": " + llvm::toString(isa.takeError()));
    CompileOptions options;
    options.sourceName = fromFlags ? "<flags>" : sourceName;
    options.chip = chip;
    options.ptxIsa = *isa;
    AotCubin cubin;
    cubin.arch = arch.str();
    cubin.chip = stringifyChip(chip).str();
    auto ptx = ptxByLowering.find(lowering);
    if (ptx == ptxByLowering.end()) {
      llvm::Expected<CompiledModule> compiled =
          compileModule(analysis.materialized, options);
      if (!compiled)
        return fail(context + ": " + llvm::toString(compiled.takeError()));
      // The lowering creates each op's kernels in walk order, and an op's
      // in their launch order: op i's are the next functionCounts[i].
      unsigned expected = 0;
      for (unsigned count : analysis.functionCounts)
        expected += count;
      if (compiled->kernelNames.size() != expected)
        return fail(llvm::formatv("{0}: {1} fmha ops became {2} kernels; "
                                  "expected {3}",
                                  context, analysis.kernels.size(),
                                  compiled->kernelNames.size(), expected));
      // Each kernel's launch is the contract its lowering recorded on it.
      llvm::ArrayRef<std::string> names = compiled->kernelNames;
      for (auto [kernel, variant, count] :
           llvm::zip(analysis.kernels, analysis.variants,
                     analysis.functionCounts)) {
        for (const std::string &name : names.take_front(count)) {
          auto contract = compiled->contracts.find(name);
          if (contract == compiled->contracts.end())
            return fail(llvm::formatv("{0}: kernel {1} ({2}) has no launch "
                                      "contract (fmha.launch)",
                                      context, name, kernel.origin));
          if (llvm::Error err = checkLaunchContract(kernel, contract->second))
            return fail(context + ": " + llvm::toString(std::move(err)));
          variant.launches.push_back({name, contract->second});
        }
        names = names.drop_front(count);
      }
      ptx = ptxByLowering.emplace(lowering, std::move(compiled->ptx)).first;
    }
    llvm::Expected<LinkedCubin> compiled =
        compilePtxWholeProgram(ptx->second, arch);
    if (!compiled)
      return fail(context + ": " + llvm::toString(compiled.takeError()));
    cubin.image = std::move(compiled->cubin);
    file.cubins.push_back(std::move(cubin));

    // The same ops in the same order for every chip: only the variants
    // (functions, tile, launch contracts) differ, not how many functions
    // an op launches (the generated tables have one row per function).
    if (!kernels)
      kernels = analysis.kernels;
    for (auto [kernel, variant] : llvm::zip(*kernels, analysis.variants)) {
      if (!kernel.variants.empty() &&
          kernel.variants.front().launches.size() != variant.launches.size())
        return fail(llvm::formatv(
            "{0}: {1} ({2}) lowers to {3} kernels, for {4} to {5}; the "
            "generated launcher needs the same number for every arch",
            context, kernel.name, kernel.origin, variant.launches.size(),
            file.cubins.front().arch, kernel.variants.front().launches.size()));
      kernel.variants.push_back(variant);
    }
  }
  file.kernels = std::move(*kernels);
  if (fromFlags)
    for (AotKernel &kernel : file.kernels)
      kernel.origin = "the flags";

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create '" + outputDir + "': " + ec.message());
  auto path = [&](llvm::StringRef name) {
    llvm::SmallString<256> result(outputDir);
    llvm::sys::path::append(result, name);
    return std::string(result);
  };
  for (const AotCubin &cubin : file.cubins)
    if (llvm::Error err =
            writeFile(path(prefix + "." + cubin.arch + ".cubin"), cubin.image))
      return fail(llvm::toString(std::move(err)));
  std::string header, sourceText;
  llvm::raw_string_ostream headerStream(header), sourceStream(sourceText);
  if (llvm::Error err = emitHeader(file, headerStream))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = emitSource(file, sourceStream))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = writeFile(path(prefix + ".h"), header))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = writeFile(path(prefix + ".c"), sourceText))
    return fail(llvm::toString(std::move(err)));
  return 0;
}
