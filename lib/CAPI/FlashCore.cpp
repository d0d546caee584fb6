//===- FlashCore.cpp - C API of the FlashCore JIT -------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha-c/FlashCore.h"
#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/DoctorReport.h"
#include "fmha/JIT/JIT.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace mlir;
using namespace mlir::fmha;

struct fmhaJit_ {
  std::unique_ptr<JIT> jit;
};

/// Hands \p text to the caller as a malloc'ed string it owns.
static fmhaStatus report(fmhaStatus status, const std::string &text,
                         char **message) {
  if (message) {
    *message = static_cast<char *>(std::malloc(text.size() + 1));
    if (*message)
      std::memcpy(*message, text.c_str(), text.size() + 1);
  }
  return status;
}

static fmhaStatus report(llvm::Error err, char **message) {
  fmhaStatus status = err.isA<KernelNotLoadedError>() ? FMHA_ERROR_NOT_LOADED
                                                     : FMHA_ERROR_FAILED;
  return report(status, llvm::toString(std::move(err)), message);
}

/// The failure of a call of entry \p entry ("fmhaAttention"): the caller's
/// operands (an OperandError) are FMHA_ERROR_INVALID_ARGUMENT, named after
/// the entry; anything else as report says.
static fmhaStatus reportCall(llvm::StringRef entry, llvm::Error err,
                             char **message) {
  if (err.isA<OperandError>())
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  (entry + ": " + llvm::toString(std::move(err))).str(),
                  message);
  return report(std::move(err), message);
}

static fmhaStatus succeed(char **message) {
  if (message)
    *message = nullptr;
  return FMHA_SUCCESS;
}

const char *fmhaVersion(void) { return getFlashCoreVersion().data(); }

int fmhaDoctor(char **report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  bool jitCanWork = writeDoctorReport(os);
  ::report(FMHA_SUCCESS, text, report);
  return jitCanWork ? 1 : 0;
}

/// The C++ launch options for fmhaCallFlags \p flags, or an error naming
/// an unknown flag.
static llvm::Expected<LaunchOptions> getLaunchOptions(unsigned flags) {
  constexpr unsigned known = FMHA_CALL_LOADED_ONLY | FMHA_CALL_PREPARE_ONLY;
  if (flags & ~known)
    return llvm::createStringError(
        "flags is " + std::to_string(flags) +
        ", expected FMHA_CALL_LOADED_ONLY (1) and FMHA_CALL_PREPARE_ONLY (2) "
        "or'ed");
  LaunchOptions options;
  if (flags & FMHA_CALL_LOADED_ONLY)
    options.source = KernelSource::LoadedOnly;
  options.prepareOnly = flags & FMHA_CALL_PREPARE_ONLY;
  return options;
}

void fmhaJitOptionsInit(fmhaJitOptions *options) {
  if (options)
    *options = fmhaJitOptions{0, nullptr, nullptr, 0, nullptr, nullptr};
}

fmhaStatus fmhaJitCreate(const fmhaJitOptions *options, fmhaJit *jit,
                         char **message) {
  if (!jit)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaJitCreate: jit must not be NULL", message);
  *jit = nullptr;
  JITOptions cppOptions;
  if (options) {
    cppOptions.device = options->device;
    if (options->chip) {
      llvm::Expected<Chip> chip = parseChip(options->chip);
      if (!chip)
        return report(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaJitCreate: " + llvm::toString(chip.takeError()),
                      message);
      cppOptions.chip = *chip;
    }
    if (options->cacheDirectory)
      cppOptions.cacheDirectory = std::string(options->cacheDirectory);
    if (options->cacheMaxBytes)
      cppOptions.cacheMaxBytes = options->cacheMaxBytes;
    if (options->dumpDirectory)
      cppOptions.dumpDirectory = options->dumpDirectory;
    if (options->seedDirectory)
      cppOptions.seedDirectory = options->seedDirectory;
  }
  llvm::Expected<std::unique_ptr<JIT>> created = JIT::create(cppOptions);
  if (!created)
    return report(created.takeError(), message);
  *jit = new fmhaJit_{std::move(*created)};
  return succeed(message);
}

void fmhaJitDestroy(fmhaJit jit) { delete jit; }

fmhaStatus fmhaJitGetKernelFromSource(fmhaJit jit, const char *source,
                                      const char *kernelName,
                                      fmhaKernel *kernel, char **message) {
  if (!jit || !source || !kernelName || !kernel)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaJitGetKernelFromSource: jit, source, kernelName and "
                  "kernel must not be NULL",
                  message);
  llvm::Expected<const Kernel &> found =
      jit->jit->getKernelFromSource(source, kernelName);
  if (!found)
    return report(found.takeError(), message);
  // The C handle is the C++ kernel, which the JIT owns.
  *kernel = reinterpret_cast<fmhaKernel>(const_cast<Kernel *>(&*found));
  return succeed(message);
}

fmhaStatus fmhaKernelLaunch(fmhaKernel kernel, void *stream,
                            const unsigned grid[3], const unsigned block[3],
                            unsigned sharedBytes, void **arguments,
                            char **message) {
  if (!kernel || !grid || !block)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaKernelLaunch: kernel, grid and block must not be NULL",
                  message);
  LaunchConfig config;
  std::copy(grid, grid + 3, config.grid.begin());
  std::copy(block, block + 3, config.block.begin());
  config.sharedBytes = sharedBytes;
  if (llvm::Error err = reinterpret_cast<const Kernel *>(kernel)->launch(
          static_cast<CUstream>(stream), config, arguments))
    return report(std::move(err), message);
  return succeed(message);
}

/// The C element type as the JIT's, or std::nullopt for a value outside
/// the enum.
static std::optional<ElementType> getElementType(fmhaElementType type) {
  switch (type) {
  case FMHA_BF16:
    return ElementType::BF16;
  case FMHA_F16:
    return ElementType::F16;
  case FMHA_F32:
    return ElementType::F32;
  }
  return std::nullopt;
}

void fmhaAttentionDescInit(fmhaAttentionDesc *desc) {
  if (desc)
    *desc = fmhaAttentionDesc{};
}

/// \p desc's sizes as AttentionTensors (strides and pointers too).
static AttentionTensors getTensors(const fmhaAttentionDesc &desc) {
  AttentionTensors tensors;
  tensors.q = desc.q;
  tensors.k = desc.k;
  tensors.v = desc.v;
  tensors.o = desc.o;
  tensors.lse = desc.lse;
  tensors.sinks = desc.sinks;
  tensors.keyLengths = desc.keyLengths;
  tensors.pageTable = desc.pageTable;
  tensors.pages = desc.pages;
  tensors.queryOffsets = desc.queryOffsets;
  tensors.keyOffsets = desc.keyOffsets;
  tensors.maxQueryLength = desc.maxQueryLength;
  tensors.maxKeyLength = desc.maxKeyLength;
  tensors.batch = desc.batch;
  tensors.queryHeads = desc.queryHeads;
  tensors.kvHeads = desc.kvHeads;
  tensors.querySeq = desc.querySeq;
  tensors.keySeq = desc.keySeq;
  for (auto [to, from] : {std::pair{&tensors.qStrides, desc.qStride},
                          {&tensors.kStrides, desc.kStride},
                          {&tensors.vStrides, desc.vStride},
                          {&tensors.oStrides, desc.oStride},
                          {&tensors.lseStrides, desc.lseStride}})
    std::copy(from, from + 3, to->begin());
  tensors.workspace = desc.workspace;
  tensors.workspaceBytes = desc.workspaceBytes;
  return tensors;
}

/// The head dims of \p desc, by the spec's rule for the value head dim (0:
/// headDim).
static AttentionHeadDims getHeadDims(const fmhaAttentionDesc &desc) {
  KernelSpec spec;
  spec.headDim = desc.headDim;
  spec.valueHeadDim = desc.valueHeadDim;
  return spec.getHeadDims();
}

void fmhaAttentionDescSetDenseStrides(fmhaAttentionDesc *desc) {
  if (!desc)
    return;
  AttentionTensors tensors = getTensors(*desc);
  tensors.setDenseStrides(getHeadDims(*desc));
  for (auto [from, to] : {std::pair{&tensors.qStrides, desc->qStride},
                          {&tensors.kStrides, desc->kStride},
                          {&tensors.vStrides, desc->vStride},
                          {&tensors.oStrides, desc->oStride},
                          {&tensors.lseStrides, desc->lseStride}})
    std::copy(from->begin(), from->end(), to);
}

/// The kernel spec of \p desc: its element type, head dim, masks, scale,
/// softcap and whether it has an lse; not yet checked (checkAttentionSpec).
static llvm::Expected<KernelSpec>
getAttentionSpec(const fmhaAttentionDesc &desc) {
  KernelSpec spec;
  spec.kind = OpKind::Attention;
  std::optional<ElementType> elementType = getElementType(desc.elementType);
  if (!elementType || *elementType == ElementType::F32)
    return llvm::createStringError("elementType is " +
                                   std::to_string(desc.elementType) +
                                   ", expected FMHA_BF16 (0) or FMHA_F16 (1)");
  spec.elementType = *elementType;
  spec.headDim = desc.headDim;
  spec.valueHeadDim = desc.valueHeadDim;
  spec.causal = desc.causal != 0;
  spec.withLse = desc.lse != nullptr;
  if (desc.scale != 0.0f)
    spec.scale = desc.scale;
  if (desc.softcap != 0.0f)
    spec.softcap = desc.softcap;
  spec.withSinks = desc.sinks != nullptr;
  spec.withKeyLengths = desc.keyLengths != nullptr;
  if (desc.pageTable)
    spec.pageSize = desc.pageSize;
  spec.withQueryOffsets = desc.queryOffsets != nullptr;
  spec.withKeyOffsets = desc.keyOffsets != nullptr;
  if (desc.hasWindow)
    spec.window = {{desc.windowLeft, desc.windowRight}};
  return spec;
}

fmhaStatus fmhaAttentionPrecompile(fmhaJit jit, const fmhaAttentionDesc *descs,
                                   int count, unsigned threads,
                                   char **message) {
  if (!jit || (count > 0 && !descs) || count < 0)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionPrecompile: jit and descs must not be NULL, "
                  "and count is " +
                      std::to_string(count) + ", expected at least 0",
                  message);
  std::vector<KernelSpec> specs;
  for (int i = 0; i < count; ++i) {
    llvm::Expected<KernelSpec> spec = getAttentionSpec(descs[i]);
    llvm::Error err = spec ? checkAttentionSpec(*spec) : spec.takeError();
    if (err)
      return report(FMHA_ERROR_INVALID_ARGUMENT,
                    "fmhaAttentionPrecompile: descs[" + std::to_string(i) +
                        "]: " + llvm::toString(std::move(err)),
                    message);
    // A packed batch's kernel is the one for its longest sequence.
    int64_t length =
        descs[i].queryOffsets ? descs[i].maxQueryLength : descs[i].querySeq;
    std::optional<int64_t> querySeq;
    if (length > 0)
      querySeq = length;
    // The heads, where given, say whether a launch packs a group's.
    int64_t queryGroup = descs[i].kvHeads > 0 && descs[i].queryHeads > 0
                             ? descs[i].queryHeads / descs[i].kvHeads
                             : 1;
    llvm::append_range(
        specs, getLaunchSpecs(*spec, jit->jit->getLoadPlan().chip, querySeq,
                              queryGroup, jit->jit->getDeviceSharedBytes()));
  }
  if (llvm::Error err = jit->jit->precompile(specs, threads))
    return report(std::move(err), message);
  return succeed(message);
}

/// The backward's spec of \p desc's forward on \p chip; not yet checked
/// (checkAttentionGradTensors).
static llvm::Expected<KernelSpec>
getAttentionGradSpec(const fmhaAttentionBackwardDesc &desc, Chip chip) {
  llvm::Expected<KernelSpec> forward = getAttentionSpec(desc.forward);
  if (!forward)
    return forward.takeError();
  return getAttentionGradSpec(*forward, chip, desc.workspace != nullptr,
                              desc.deterministic != 0);
}

static AttentionGradTensors
getTensors(const fmhaAttentionBackwardDesc &desc) {
  AttentionGradTensors tensors;
  tensors.forward = getTensors(desc.forward);
  tensors.dout = desc.dout;
  tensors.dq = desc.dq;
  tensors.dk = desc.dk;
  tensors.dv = desc.dv;
  tensors.delta = desc.delta;
  tensors.workspace = desc.workspace;
  tensors.workspaceBytes = desc.workspaceBytes;
  for (auto [from, to] : {std::pair{desc.doutStride, &tensors.doutStrides},
                          {desc.dqStride, &tensors.dqStrides},
                          {desc.dkStride, &tensors.dkStrides},
                          {desc.dvStride, &tensors.dvStrides},
                          {desc.deltaStride, &tensors.deltaStrides}})
    std::copy(from, from + 3, to->begin());
  return tensors;
}

void fmhaAttentionBackwardDescSetDenseStrides(fmhaAttentionBackwardDesc *desc) {
  if (!desc)
    return;
  fmhaAttentionDescSetDenseStrides(&desc->forward);
  AttentionGradTensors tensors = getTensors(*desc);
  tensors.setDenseStrides(getHeadDims(desc->forward));
  for (auto [from, to] : {std::pair{&tensors.doutStrides, desc->doutStride},
                          {&tensors.dqStrides, desc->dqStride},
                          {&tensors.dkStrides, desc->dkStride},
                          {&tensors.dvStrides, desc->dvStride},
                          {&tensors.deltaStrides, desc->deltaStride}})
    std::copy(from->begin(), from->end(), to);
}

fmhaStatus fmhaAttentionBackward(fmhaJit jit,
                                 const fmhaAttentionBackwardDesc *desc,
                                 void *stream, unsigned flags,
                                 char **message) {
  if (!jit || !desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackward: jit and desc must not be NULL",
                  message);
  llvm::Expected<LaunchOptions> options = getLaunchOptions(flags);
  if (!options)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackward: " +
                      llvm::toString(options.takeError()),
                  message);
  llvm::Expected<KernelSpec> spec =
      getAttentionGradSpec(*desc, jit->jit->getLoadPlan().chip);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackward: " + llvm::toString(spec.takeError()),
                  message);
  if (llvm::Error err = jit->jit->launchAttentionGrad(
          *spec, getTensors(*desc), static_cast<CUstream>(stream), *options))
    return reportCall("fmhaAttentionBackward", std::move(err), message);
  return succeed(message);
}

fmhaStatus
fmhaAttentionBackwardWorkspaceSize(const fmhaAttentionBackwardDesc *desc,
                                   size_t *bytes, char **message) {
  if (!desc || !bytes)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardWorkspaceSize: desc and bytes must "
                  "not be NULL",
                  message);
  llvm::Expected<KernelSpec> spec = getAttentionSpec(desc->forward);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardWorkspaceSize: " +
                      llvm::toString(spec.takeError()),
                  message);
  const fmhaAttentionDesc &f = desc->forward;
  if (f.batch < 0 || f.queryHeads < 0 || f.querySeq < 0)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardWorkspaceSize: batch, queryHeads and "
                  "querySeq are " +
                      std::to_string(f.batch) + ", " +
                      std::to_string(f.queryHeads) + " and " +
                      std::to_string(f.querySeq) + ", expected at least 0",
                  message);
  // The ordered spec's: the accumulator and its counters, which the other
  // one-pass spec's accumulator fits in.
  *bytes = getAttentionGradWorkspaceBytes(
      getAttentionGradSpec(*spec, /*deterministic=*/true, /*ordered=*/true),
      getTensors(desc->forward));
  return succeed(message);
}

fmhaStatus
fmhaAttentionBackwardFastestWorkspaceSize(fmhaJit jit,
                                          const fmhaAttentionBackwardDesc *desc,
                                          size_t *bytes, char **message) {
  if (!jit || !desc || !bytes)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardFastestWorkspaceSize: jit, desc and "
                  "bytes must not be NULL",
                  message);
  llvm::Expected<KernelSpec> spec = getAttentionSpec(desc->forward);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardFastestWorkspaceSize: " +
                      llvm::toString(spec.takeError()),
                  message);
  // The larger of the two one-pass specs' (the ordered one's accumulator
  // holds more, as fmhaAttentionBackwardWorkspaceSize's; each takes its
  // own slices, in its own CTA order), so that either launch slices as
  // it would.
  *bytes = 0;
  for (bool ordered : {true, false}) {
    llvm::Expected<size_t> fastest =
        jit->jit->getAttentionGradFastestWorkspaceBytes(
            getAttentionGradSpec(*spec, /*deterministic=*/ordered, ordered),
            getTensors(desc->forward));
    if (!fastest)
      return reportCall("fmhaAttentionBackwardFastestWorkspaceSize",
                        fastest.takeError(), message);
    *bytes = std::max(*bytes, *fastest);
  }
  return succeed(message);
}

fmhaStatus
fmhaAttentionBackwardUsesWorkspace(fmhaJit jit,
                                   const fmhaAttentionBackwardDesc *desc,
                                   int *uses, char **message) {
  if (!jit || !desc || !uses)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardUsesWorkspace: jit, desc and uses "
                  "must not be NULL",
                  message);
  const fmhaAttentionDesc &forward = desc->forward;
  *uses = isDefaultAttentionGradOnePass(
      jit->jit->getLoadPlan().chip, jit->jit->getDevice().capability,
      std::max(forward.headDim, forward.valueHeadDim),
      desc->deterministic != 0);
  return succeed(message);
}

fmhaStatus fmhaAttentionBackwardPrecompile(
    fmhaJit jit, const fmhaAttentionBackwardDesc *descs, int count,
    unsigned threads, char **message) {
  if (!jit || (count > 0 && !descs) || count < 0)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionBackwardPrecompile: jit and descs must not be "
                  "NULL, and count is " +
                      std::to_string(count) + ", expected at least 0",
                  message);
  std::vector<KernelSpec> specs;
  for (int i = 0; i < count; ++i) {
    llvm::Expected<KernelSpec> spec =
        getAttentionGradSpec(descs[i], jit->jit->getLoadPlan().chip);
    if (!spec)
      return report(FMHA_ERROR_INVALID_ARGUMENT,
                    "fmhaAttentionBackwardPrecompile: descs[" +
                        std::to_string(i) +
                        "]: " + llvm::toString(spec.takeError()),
                    message);
    // The kernels a launch on this device compiles (its shared memory),
    // and where it groups query heads those that slice the groups.
    Chip chip = jit->jit->getLoadPlan().chip;
    KernelSpec launched = getAttentionGradLaunchSpec(
        *spec, chip, jit->jit->getDeviceSharedBytes());
    specs.push_back(launched);
    const fmhaAttentionDesc &f = descs[i].forward;
    if (canSliceAttentionGradQueryHeads(launched, chip) && f.kvHeads > 0 &&
        f.queryHeads > f.kvHeads) {
      launched.slicedQueryHeads = true;
      specs.push_back(launched);
    }
  }
  if (llvm::Error err = jit->jit->precompile(specs, threads))
    return report(std::move(err), message);
  return succeed(message);
}

fmhaStatus fmhaAttentionCheck(const fmhaAttentionDesc *desc, char **message) {
  if (!desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttention: desc must not be NULL", message);
  llvm::Expected<KernelSpec> spec = getAttentionSpec(*desc);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttention: " + llvm::toString(spec.takeError()),
                  message);
  if (llvm::Error err = checkAttentionTensors(*spec, getTensors(*desc)))
    return reportCall("fmhaAttention", std::move(err), message);
  return succeed(message);
}

fmhaStatus fmhaAttention(fmhaJit jit, const fmhaAttentionDesc *desc,
                         void *stream, char **message) {
  return fmhaAttentionEx(jit, desc, stream, FMHA_CALL_DEFAULT, message);
}

fmhaStatus fmhaAttentionEx(fmhaJit jit, const fmhaAttentionDesc *desc,
                           void *stream, unsigned flags, char **message) {
  if (!jit || !desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttention: jit and desc must not be NULL", message);
  llvm::Expected<LaunchOptions> options = getLaunchOptions(flags);
  if (!options)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttention: " + llvm::toString(options.takeError()),
                  message);
  llvm::Expected<KernelSpec> spec = getAttentionSpec(*desc);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttention: " + llvm::toString(spec.takeError()),
                  message);
  // launchAttention checks the operands (checkAttentionTensors), once.
  if (llvm::Error err = jit->jit->launchAttention(
          *spec, getTensors(*desc), static_cast<CUstream>(stream), *options))
    return reportCall("fmhaAttention", std::move(err), message);
  return succeed(message);
}

fmhaStatus fmhaAttentionWorkspaceSize(fmhaJit jit,
                                      const fmhaAttentionDesc *desc,
                                      size_t *bytes, char **message) {
  if (!jit || !desc || !bytes)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionWorkspaceSize: jit, desc and bytes must not "
                  "be NULL",
                  message);
  llvm::Expected<KernelSpec> spec = getAttentionSpec(*desc);
  if (!spec)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaAttentionWorkspaceSize: " +
                      llvm::toString(spec.takeError()),
                  message);
  llvm::Expected<size_t> needed =
      jit->jit->getAttentionWorkspaceBytes(*spec, getTensors(*desc));
  if (!needed)
    return reportCall("fmhaAttentionWorkspaceSize", needed.takeError(),
                      message);
  *bytes = *needed;
  return succeed(message);
}

/// \p desc's sizes, pointers and strides as MergeTensors.
static MergeTensors getTensors(const fmhaMergeDesc &desc) {
  MergeTensors tensors;
  tensors.outs = desc.outs;
  tensors.lses = desc.lses;
  tensors.o = desc.o;
  tensors.lse = desc.lse;
  tensors.states = desc.states;
  tensors.batch = desc.batch;
  tensors.heads = desc.heads;
  tensors.querySeq = desc.querySeq;
  std::copy(desc.outsStride, desc.outsStride + 4, tensors.outsStrides.begin());
  std::copy(desc.lsesStride, desc.lsesStride + 4, tensors.lsesStrides.begin());
  std::copy(desc.oStride, desc.oStride + 3, tensors.oStrides.begin());
  std::copy(desc.lseStride, desc.lseStride + 3, tensors.lseStrides.begin());
  return tensors;
}

void fmhaMergeDescSetDenseStrides(fmhaMergeDesc *desc) {
  if (!desc)
    return;
  MergeTensors tensors = getTensors(*desc);
  tensors.setDenseStrides(desc->headDim);
  std::copy(tensors.outsStrides.begin(), tensors.outsStrides.end(),
            desc->outsStride);
  std::copy(tensors.lsesStrides.begin(), tensors.lsesStrides.end(),
            desc->lsesStride);
  std::copy(tensors.oStrides.begin(), tensors.oStrides.end(), desc->oStride);
  std::copy(tensors.lseStrides.begin(), tensors.lseStrides.end(),
            desc->lseStride);
}

fmhaStatus fmhaMergeAttention(fmhaJit jit, const fmhaMergeDesc *desc,
                              void *stream, unsigned flags, char **message) {
  if (!jit || !desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaMergeAttention: jit and desc must not be NULL",
                  message);
  llvm::Expected<LaunchOptions> options = getLaunchOptions(flags);
  if (!options)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaMergeAttention: " + llvm::toString(options.takeError()),
                  message);
  std::optional<ElementType> elementType = getElementType(desc->elementType);
  if (!elementType)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaMergeAttention: elementType is " +
                      std::to_string(desc->elementType) +
                      ", expected FMHA_BF16 (0), FMHA_F16 (1) or FMHA_F32 (2)",
                  message);
  KernelSpec spec;
  spec.kind = OpKind::Merge;
  spec.elementType = *elementType;
  spec.headDim = desc->headDim;
  spec.withLse = desc->lse != nullptr;
  if (llvm::Error err = jit->jit->launchMerge(
          spec, getTensors(*desc), static_cast<CUstream>(stream), *options))
    return reportCall("fmhaMergeAttention", std::move(err), message);
  return succeed(message);
}

/// \p desc as the JIT's spec and tensors, not yet checked
/// (checkResampleTensors); the error names a value that has no spec.
static llvm::Error decodeResample(const fmhaResampleDesc &desc,
                                  KernelSpec &spec, ResampleTensors &tensors) {
  if (desc.numStreams < 1)
    return llvm::createStringError("numStreams is " +
                                   std::to_string(desc.numStreams) +
                                   ", expected at least 1");
  if (!desc.streams)
    return llvm::createStringError("streams must not be NULL");
  std::optional<ElementType> elementType = getElementType(desc.elementType);
  if (!elementType)
    return llvm::createStringError(
        "elementType is " + std::to_string(desc.elementType) +
        ", expected FMHA_BF16 (0), FMHA_F16 (1) or FMHA_F32 (2)");
  spec.kind = OpKind::Resample;
  spec.elementType = *elementType;
  switch (desc.mode) {
  case FMHA_LINEAR:
    spec.mode = ResampleMode::linear;
    break;
  case FMHA_NEAREST:
    spec.mode = ResampleMode::nearest;
    break;
  case FMHA_PREVIOUS:
    spec.mode = ResampleMode::previous;
    break;
  default:
    return llvm::createStringError(
        "mode is " + std::to_string(desc.mode) +
        ", expected FMHA_LINEAR (0), FMHA_NEAREST (1) or FMHA_PREVIOUS (2)");
  }
  spec.withLengths = desc.streams[0].lengths != nullptr;
  tensors.batch = desc.batch;
  tensors.targetCount = desc.targetCount;
  tensors.targets = desc.targets;
  tensors.out = desc.out;
  for (const fmhaResampleStream &stream :
       llvm::ArrayRef(desc.streams, desc.numStreams)) {
    spec.streamFeatures.push_back(stream.features);
    tensors.streams.push_back(
        {stream.times, stream.values, stream.lengths, stream.samples});
  }
  return llvm::Error::success();
}

fmhaStatus fmhaResampleCheck(const fmhaResampleDesc *desc, char **message) {
  if (!desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaResample: desc must not be NULL", message);
  KernelSpec spec;
  ResampleTensors tensors;
  if (llvm::Error err = decodeResample(*desc, spec, tensors))
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaResample: " + llvm::toString(std::move(err)), message);
  if (llvm::Error err = checkResampleTensors(spec, tensors))
    return reportCall("fmhaResample", std::move(err), message);
  return succeed(message);
}

fmhaStatus fmhaResample(fmhaJit jit, const fmhaResampleDesc *desc, void *stream,
                        char **message) {
  return fmhaResampleEx(jit, desc, stream, FMHA_CALL_DEFAULT, message);
}

fmhaStatus fmhaResampleEx(fmhaJit jit, const fmhaResampleDesc *desc,
                          void *stream, unsigned flags, char **message) {
  if (!jit || !desc)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaResample: jit and desc must not be NULL", message);
  llvm::Expected<LaunchOptions> options = getLaunchOptions(flags);
  if (!options)
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaResample: " + llvm::toString(options.takeError()),
                  message);
  KernelSpec spec;
  ResampleTensors tensors;
  if (llvm::Error err = decodeResample(*desc, spec, tensors))
    return report(FMHA_ERROR_INVALID_ARGUMENT,
                  "fmhaResample: " + llvm::toString(std::move(err)), message);
  // launchResample checks the operands (checkResampleTensors), once.
  if (llvm::Error err = jit->jit->launchResample(
          spec, tensors, static_cast<CUstream>(stream), *options))
    return reportCall("fmhaResample", std::move(err), message);
  return succeed(message);
}

void fmhaFreeMessage(char *message) { std::free(message); }
