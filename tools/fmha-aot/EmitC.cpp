//===- EmitC.cpp - the C header and source fmha-aot writes ----------------===//
//
// Part of FlashCore. The generated code is C99 (and C++ through extern "C")
// over cuda.h and libcuda only: the projects that build it in have no MLIR,
// no LLVM and no FlashCore library. It holds no logic that depends on the
// kernel beyond tables: the launch constants, the operand layouts and the
// cubins are data that fmha-aot.cpp computed; the code that reads them is
// the same for every kernel.
//
// Text in the templates below: `@p` is the symbol prefix, `@P` the prefix in
// upper case (macros).
//
//===----------------------------------------------------------------------===//

#include "AotKernel.h"

#include "fmha/Dialect/Fmha/TileConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir::fmha;
using namespace mlir::fmha::aot;

/// \p text with `@p` replaced by \p prefix and `@P` by its upper case.
static std::string expand(llvm::StringRef text, llvm::StringRef prefix) {
  std::string upper = prefix.upper();
  std::string result;
  result.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '@' && i + 1 < text.size() &&
        (text[i + 1] == 'p' || text[i + 1] == 'P')) {
      result += text[i + 1] == 'p' ? prefix.str() : upper;
      ++i;
      continue;
    }
    result += text[i];
  }
  return result;
}

/// A C string literal for \p text.
static std::string quote(llvm::StringRef text) {
  std::string result = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      result += '\\';
    if (c == '\n') {
      result += "\\n";
      continue;
    }
    result += c;
  }
  return result + "\"";
}

/// A float as a C literal that reads back to the same float.
static std::string floatLiteral(float value) {
  return llvm::formatv("{0:e9}f", static_cast<double>(value)).str();
}

/// The archs of \p file, comma separated.
static std::string getArchList(const AotFile &file) {
  return llvm::join(llvm::map_range(file.cubins,
                                    [](const AotCubin &c) { return c.arch; }),
                    ", ");
}

/// One line describing what \p kernel computes, for comments and tables.
static std::string describe(const AotKernel &kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (kernel.kind == AotKernel::Kind::Attention) {
    os << "fmha.attention " << kernel.elementType << ", head dim "
       << kernel.headDim << (kernel.causal ? ", causal" : "")
       << (kernel.withLse ? ", lse" : "") << ", scale "
       << llvm::format("%.7g", kernel.scale)
       << (kernel.scaleIsDefault ? " (1/sqrt(D))" : "");
    if (kernel.window)
      os << ", window [" << (*kernel.window)[0] << ", " << (*kernel.window)[1]
         << "]";
  } else {
    os << "fmha.resample " << kernel.mode << " " << kernel.elementType << ", "
       << kernel.streamFeatures.size() << " stream(s) of "
       << llvm::join(llvm::map_range(kernel.streamFeatures,
                                     [](unsigned d) { return std::to_string(d); }),
                     ", ")
       << " features" << (kernel.withLengths ? ", lengths" : "");
  }
  return text;
}

/// The operand's sizes as the header documents them (`?` is dynamic).
static std::string describeOperand(const MemRefOperand &operand) {
  std::string text = operand.name + " [";
  for (unsigned d = 0; d < operand.rank; ++d) {
    if (d)
      text += ", ";
    text += operand.sizes[d] == kDynamic ? "?" : std::to_string(operand.sizes[d]);
  }
  text += "]";
  if (operand.identityLayout) {
    text += " contiguous (row-major)";
  } else {
    bool anyStatic = llvm::any_of(
        operand.strides, [](int64_t s) { return s != kDynamic; });
    if (anyStatic) {
      text += " strides [";
      for (unsigned d = 0; d < operand.rank; ++d) {
        if (d)
          text += ", ";
        text += operand.strides[d] == kDynamic
                    ? "any"
                    : std::to_string(operand.strides[d]);
      }
      text += "]";
    } else {
      text += " any strides";
    }
  }
  text += llvm::formatv(", {0}-byte aligned", operand.alignBytes).str();
  return text;
}

/// Replaces each `@KEY` of \p values in \p text.
static std::string
substitute(std::string text,
           llvm::ArrayRef<std::pair<llvm::StringRef, std::string>> values) {
  for (const auto &[key, value] : values) {
    std::string token = "@" + key.str();
    for (size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  return text;
}

static size_t countSlots(const AotKernel &kernel) {
  size_t slots = 0;
  for (const MemRefOperand &operand : kernel.operands)
    slots += 3 + 2 * operand.rank;
  return slots;
}

//===----------------------------------------------------------------------===//
// The header
//===----------------------------------------------------------------------===//

static const char kHeaderTop[] = R"c(
#ifndef @P_H
#define @P_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What every function returns. After a failure, the module's message says
 *  what failed, with the values involved. */
typedef enum @p_status {
  @P_SUCCESS = 0,
  /** No cubin in this file runs on the current device (@p_load). */
  @P_ERROR_NO_CUBIN = 1,
  /** A CUDA driver call failed; the message names it and its CUresult. */
  @P_ERROR_CUDA = 2,
  /** An argument does not fit the kernel: a size, stride, alignment, or an
   *  operand the kernel was (or was not) generated with. */
  @P_ERROR_INVALID_ARGUMENT = 3,
  /** A launch on a module that @p_load has not loaded. */
  @P_ERROR_NOT_LOADED = 4
} @p_status;

enum {
  @P_NUM_CUBINS = @NUM_CUBINS,
  @P_NUM_KERNELS = @NUM_KERNELS,
  @P_MESSAGE_SIZE = 512
};

/** The kernels of this file, loaded into one CUDA context by @p_load.
 *  Launches record their failures in `message`, so give each thread that
 *  launches concurrently its own module (loading is cheap). */
typedef struct @p_module {
  CUmodule module;                       /* NULL until loaded */
  int cubin;                             /* index in @p_archs of the cubin */
  CUfunction functions[@P_NUM_KERNELS];  /* in the order of @p_kernels */
  int multiprocessors;                   /* the device's SMs */
  char message[@P_MESSAGE_SIZE];         /* why the last call failed */
} @p_module;

/** The archs of the embedded cubins ("sm_80", "sm_90a", ...). */
extern const char *const @p_archs[@P_NUM_CUBINS];

/** Picks the cubin for a device of compute capability major.minor and
 *  returns its index in @p_archs: an sm_XYa cubin runs only on X.Y exactly
 *  (and is preferred there), an sm_XY cubin on X.y for every y >= Y (the
 *  closest one preferred). Returns -1 when none runs there, after writing
 *  why (the capability, the archs held, the --archs that would) to
 *  `message` (`size` bytes; may be NULL). Calls no CUDA function. */
int @p_select_cubin(int major, int minor, char *message, size_t size);

/** Loads the cubin for the device of the current CUDA context (see
 *  @p_select_cubin) and prepares every kernel (dynamic shared memory).
 *  Initializes all of *module; its kernels launch in this context only.
 *  Fails with @P_ERROR_NO_CUBIN when no cubin runs on the device, or
 *  @P_ERROR_CUDA (no current context, a load failure). */
@p_status @p_load(@p_module *module);

/** Unloads the module; the context it was loaded in must be current. */
@p_status @p_unload(@p_module *module);

/** The operands of an fmha.attention kernel: Q [B, Hq, Sq, D], K and V
 *  [B, Hkv, Sk, D], O [B, Hq, Sq, D] (written), LSE [B, Hq, Sq] f32
 *  (written; only for kernels generated with lse, else NULL). Pointers are
 *  device pointers; strides are in elements, ordered like the sizes
 *  (batch, head, sequence, head dim), so BHSD and BSHD layouts both work;
 *  the head dim's stride must be 1. */
typedef struct @p_attention_args {
  const void *q, *k, *v;
  void *o;
  float *lse;
  int64_t batch, q_heads, kv_heads, q_seq, k_seq;
  int64_t q_strides[4], k_strides[4], v_strides[4], o_strides[4];
  int64_t lse_strides[3];
} @p_attention_args;

/** One source stream of an fmha.resample kernel: times [B, S] (f32,
 *  non-decreasing per row), values [B, S, D], lengths [B] (valid samples
 *  per row; only for kernels generated with lengths, else NULL). Strides
 *  are in elements. */
typedef struct @p_resample_stream {
  const float *times;
  const void *values;
  const int32_t *lengths;
  int64_t samples;
  int64_t times_strides[2], values_strides[3];
} @p_resample_stream;

/** The operands of an fmha.resample kernel: `num_streams` streams,
 *  target times [B, T] (f32) and out [B, T, sum of the streams' D]
 *  (written). Strides are in elements. */
typedef struct @p_resample_args {
  int64_t batch, targets;
  int num_streams;
  const @p_resample_stream *streams;
  const float *target_times;
  int64_t target_strides[2];
  void *out;
  int64_t out_strides[3];
} @p_resample_args;

/** What each kernel computes, to pick one at run time. */
typedef struct @p_kernel_info {
  const char *name;  /* the launcher is @p_launch_<name> */
  const char *op;    /* "attention" or "resample" */
  const char *dtype; /* "f16", "bf16" or "f32" */
  /* fmha.attention */
  int head_dim, causal, lse, has_window;
  int64_t window[2]; /* keys visible left and right of the diagonal */
  float scale;
  /* fmha.resample */
  const char *mode; /* "linear", "nearest" or "previous" */
  int num_streams;
  const int *features; /* D of each stream */
  int lengths;
  /* the launcher of the kernel's op; the other one is NULL */
  @p_status (*launch_attention)(@p_module *module,
                                const @p_attention_args *args,
                                CUstream stream);
  @p_status (*launch_resample)(@p_module *module,
                               const @p_resample_args *args,
                               CUstream stream);
} @p_kernel_info;

/** The kernels of this file, in the order of @p_module's functions. */
extern const @p_kernel_info @p_kernels[@P_NUM_KERNELS];
)c";

static const char kLaunchDoc[] = R"c(
/** Launches the kernel on `stream`: grid, block and dynamic shared memory
 *  follow from the sizes and the loaded cubin's tile; an empty problem
 *  launches nothing. Checks every size, stride and pointer against what the
 *  kernel was generated for first, and fails with
 *  @P_ERROR_INVALID_ARGUMENT (the message names the operand, the value and
 *  what was expected); @P_ERROR_CUDA when cuLaunchKernel fails. Errors
 *  inside the kernel surface at the next synchronization, as usual. */
)c";

void aot::emitHeader(const AotFile &file, llvm::raw_ostream &os) {
  os << llvm::formatv("/*===- {0}.h - generated by fmha-aot: do not edit "
                      "-------------------*- C -*-===*\\\n",
                      file.prefix);
  os << " *\n * FlashCore kernels compiled ahead of time, for the CUDA driver "
        "API only:\n * compile "
     << file.prefix << ".c with any C99 or C++ compiler and link libcuda.\n"
     << " *\n * Generated from: " << file.source << "\n * Command: "
     << file.command << "\n * Cubins: " << getArchList(file) << "\n *\n"
     << " * Usage, in a thread with a current CUDA context:\n"
     << " *   " << file.prefix << "_module m;\n"
     << " *   if (" << file.prefix << "_load(&m) != " << llvm::StringRef(file.prefix).upper()
     << "_SUCCESS) fprintf(stderr, \"%s\\n\", m.message);\n"
     << " *   " << file.prefix << "_launch_<kernel>(&m, &args, stream);\n"
     << "\\*===------------------------------------------------------------"
        "----------===*/\n";
  os << substitute(expand(kHeaderTop, file.prefix),
                   {{"NUM_CUBINS", std::to_string(file.cubins.size())},
                    {"NUM_KERNELS", std::to_string(file.kernels.size())}});

  for (const AotKernel &kernel : file.kernels) {
    os << expand(kLaunchDoc, file.prefix);
    os << "/* " << kernel.name << ": " << describe(kernel) << ".\n";
    os << " * From " << kernel.origin << ". Operands:\n";
    for (const MemRefOperand &operand : kernel.operands)
      os << " *   " << describeOperand(operand) << "\n";
    for (auto [cubin, variant] : llvm::zip(file.cubins, kernel.variants))
      os << " * " << cubin.arch << ": " << variant.tile << ", "
         << variant.threads << " threads, " << variant.sharedBytes
         << " bytes of dynamic shared memory\n";
    os << " */\n";
    bool attention = kernel.kind == AotKernel::Kind::Attention;
    os << expand(llvm::formatv("@p_status @p_launch_{0}(@p_module *module,\n"
                               "    const @p_{1}_args *args, CUstream stream);\n",
                               kernel.name,
                               attention ? "attention" : "resample")
                     .str(),
                 file.prefix);
  }
  os << R"c(
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
)c";
}

//===----------------------------------------------------------------------===//
// The source
//===----------------------------------------------------------------------===//

// The device selection, the loader and the operand checks: the same for every
// kernel, driven by the tables before them.
static const char kSourceCommon[] = R"c(
const char *const @p_archs[@P_NUM_CUBINS] = {@ARCHS};

int @p_select_cubin(int major, int minor, char *message, size_t size) {
  int best = -1, i;
  for (i = 0; i < @P_NUM_CUBINS; ++i) {
    const @p_target *target = &@p_targets[i];
    /* SASS runs on its major version only, on minor versions >= its own;
       an arch-specific (sm_XYa) cubin on exactly its version. */
    if (target->major != major || target->minor > minor)
      continue;
    if (target->specific) {
      if (target->minor == minor)
        return i;
      continue;
    }
    if (best < 0 || target->minor > @p_targets[best].minor)
      best = i;
  }
  if (best >= 0)
    return best;
  if (message && size) {
    char fix[64];
    if (major < 8)
      snprintf(fix, sizeof fix, "%s", "the kernels need compute "
               "capability 8.0 or newer");
    else if (major == 9 && minor == 0)
      snprintf(fix, sizeof fix, "regenerate with --archs=sm_90a or sm_90");
    else if (minor != 0)
      snprintf(fix, sizeof fix, "regenerate with --archs=sm_%d%d or sm_%d0",
               major, minor, major);
    else
      snprintf(fix, sizeof fix, "regenerate with --archs=sm_%d0", major);
    snprintf(message, size, "no cubin for compute capability %d.%d in @p: "
             "holds %s; %s", major, minor, "@ARCH_LIST", fix);
  }
  return -1;
}

static @p_status @p_cuda_failed(@p_module *module, const char *call,
                                CUresult result) {
  const char *name = NULL;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "an unknown CUresult";
  snprintf(module->message, sizeof module->message, "@p: %s failed: %s (%d)",
           call, name, (int)result);
  return @P_ERROR_CUDA;
}

@p_status @p_load(@p_module *module) {
  CUdevice device;
  CUmodule loaded;
  CUresult result;
  int major = 0, minor = 0, index, k;
  if (!module)
    return @P_ERROR_INVALID_ARGUMENT;
  memset(module, 0, sizeof *module);
  module->cubin = -1;
  result = cuCtxGetDevice(&device);
  if (result != CUDA_SUCCESS) {
    @p_cuda_failed(module, "cuCtxGetDevice", result);
    strncat(module->message, ": make a CUDA context current in this thread "
            "first (cuCtxCreate, cuDevicePrimaryCtxRetain + cuCtxSetCurrent, "
            "or any CUDA runtime call)",
            sizeof module->message - strlen(module->message) - 1);
    return @P_ERROR_CUDA;
  }
  result = cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (result == CUDA_SUCCESS)
    result = cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (result != CUDA_SUCCESS)
    return @p_cuda_failed(module, "cuDeviceGetAttribute(compute capability)",
                          result);
  index = @p_select_cubin(major, minor, module->message,
                          sizeof module->message);
  if (index < 0)
    return @P_ERROR_NO_CUBIN;
  result = cuDeviceGetAttribute(&module->multiprocessors,
                                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                device);
  if (result != CUDA_SUCCESS)
    return @p_cuda_failed(module, "cuDeviceGetAttribute(multiprocessors)",
                          result);
  result = cuModuleLoadData(&loaded, @p_cubins[index]);
  if (result != CUDA_SUCCESS) {
    char call[64];
    snprintf(call, sizeof call, "cuModuleLoadData(%s cubin)",
             @p_archs[index]);
    return @p_cuda_failed(module, call, result);
  }
  for (k = 0; k < @P_NUM_KERNELS; ++k) {
    const @p_variant *variant = &@p_variants[k][index];
    result = cuModuleGetFunction(&module->functions[k], loaded,
                                 variant->function);
    if (result != CUDA_SUCCESS) {
      cuModuleUnload(loaded);
      return @p_cuda_failed(module, "cuModuleGetFunction", result);
    }
    /* The default limit (48 KB) counts static shared memory too, so any
       dynamic size is opted into; the size is fixed per kernel, so once. */
    if (variant->shared_bytes > 0) {
      result = cuFuncSetAttribute(module->functions[k],
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  (int)variant->shared_bytes);
      if (result != CUDA_SUCCESS) {
        int allowed = 0;
        cuDeviceGetAttribute(
            &allowed, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device);
        cuModuleUnload(loaded);
        snprintf(module->message, sizeof module->message,
                 "@p: kernel %s needs %u bytes of dynamic shared memory; "
                 "this device allows %d per block (cuFuncSetAttribute: %d)",
                 @p_kernels[k].name, variant->shared_bytes, allowed,
                 (int)result);
        return @P_ERROR_CUDA;
      }
    }
  }
  module->module = loaded;
  module->cubin = index;
  return @P_SUCCESS;
}

@p_status @p_unload(@p_module *module) {
  CUresult result;
  if (!module || !module->module)
    return @P_ERROR_NOT_LOADED;
  result = cuModuleUnload(module->module);
  module->module = NULL;
  module->cubin = -1;
  if (result != CUDA_SUCCESS)
    return @p_cuda_failed(module, "cuModuleUnload", result);
  return @P_SUCCESS;
}

static @p_status @p_invalid(@p_module *module, const char *kernel,
                            const char *what) {
  snprintf(module->message, sizeof module->message, "@p_launch_%s: %s",
           kernel, what);
  return @P_ERROR_INVALID_ARGUMENT;
}

/* Checks one operand against its table entry and appends its memref
   descriptor (allocated and aligned pointer, offset, sizes, strides) to
   `slots`. Strides the type fixes are checked on dimensions of more than
   one element and passed as the type has them. */
static @p_status @p_add_operand(@p_module *module, const char *kernel,
                                const @p_operand *operand, const void *data,
                                const int64_t *sizes, const int64_t *strides,
                                int64_t *slots, int *count) {
  char what[256];
  int64_t required[4], expected = 1, elements = 1;
  int d, rank = operand->rank;
  for (d = rank - 1; d >= 0; --d) {
    if (sizes[d] < 0) {
      snprintf(what, sizeof what, "%s: %s must be >= 0, got %lld",
               operand->name, operand->dims[d], (long long)sizes[d]);
      return @p_invalid(module, kernel, what);
    }
    if (operand->sizes[d] >= 0 && sizes[d] != operand->sizes[d]) {
      snprintf(what, sizeof what, "%s: %s is %lld in the kernel's type, "
               "got %lld", operand->name, operand->dims[d],
               (long long)operand->sizes[d], (long long)sizes[d]);
      return @p_invalid(module, kernel, what);
    }
    required[d] = operand->identity ? expected : operand->strides[d];
    expected *= sizes[d];
    elements *= sizes[d];
  }
  for (d = 0; d < rank; ++d) {
    if (strides[d] < 0) {
      snprintf(what, sizeof what, "%s: the stride of %s must be >= 0, got "
               "%lld", operand->name, operand->dims[d], (long long)strides[d]);
      return @p_invalid(module, kernel, what);
    }
    if (required[d] >= 0 && sizes[d] > 1 && strides[d] != required[d]) {
      snprintf(what, sizeof what, "%s: the stride of %s must be %lld (%s), "
               "got %lld", operand->name, operand->dims[d], (long long)required[d],
               operand->identity ? "the kernel's type is contiguous"
                                 : "fixed by the kernel's type",
               (long long)strides[d]);
      return @p_invalid(module, kernel, what);
    }
  }
  if (elements > 0) {
    if (!data) {
      snprintf(what, sizeof what, "%s is NULL", operand->name);
      return @p_invalid(module, kernel, what);
    }
    if ((uintptr_t)data % (uintptr_t)operand->align_bytes != 0) {
      snprintf(what, sizeof what, "%s (%p) must be %d-byte aligned",
               operand->name, data, operand->align_bytes);
      return @p_invalid(module, kernel, what);
    }
    for (d = 0; d + 1 < rank; ++d) {
      if (sizes[d] > 1 &&
          strides[d] * operand->element_bytes % operand->align_bytes != 0) {
        snprintf(what, sizeof what, "%s: the stride of %s (%lld elements) must "
                 "keep rows %d-byte aligned: a multiple of %d elements",
                 operand->name, operand->dims[d], (long long)strides[d],
                 operand->align_bytes,
                 operand->align_bytes / operand->element_bytes);
        return @p_invalid(module, kernel, what);
      }
    }
  }
  slots[(*count)++] = (int64_t)(intptr_t)data; /* allocated */
  slots[(*count)++] = (int64_t)(intptr_t)data; /* aligned */
  slots[(*count)++] = 0;                       /* offset */
  for (d = 0; d < rank; ++d)
    slots[(*count)++] = sizes[d];
  for (d = 0; d < rank; ++d)
    slots[(*count)++] = required[d] >= 0 ? required[d] : strides[d];
  return @P_SUCCESS;
}

/* Launches kernel k of the loaded module with `leading` parameters already
   in `params` (tensor maps) and then the packed slots; a grid with no
   blocks launches nothing. */
static @p_status @p_launch(@p_module *module, int k, const int64_t grid[3],
                           int64_t *slots, void **params, int leading,
                           int count, CUstream stream) {
  const @p_variant *variant = &@p_variants[k][module->cubin];
  CUresult result;
  int i;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return @P_SUCCESS;
  if (grid[0] > 2147483647 || grid[1] > 65535 || grid[2] > 65535) {
    char what[160];
    snprintf(what, sizeof what, "the grid (%lld, %lld, %lld) exceeds CUDA's "
             "limits (2147483647, 65535, 65535)", (long long)grid[0],
             (long long)grid[1], (long long)grid[2]);
    return @p_invalid(module, @p_kernels[k].name, what);
  }
  for (i = 0; i < count; ++i)
    params[leading + i] = &slots[i];
  result = cuLaunchKernel(module->functions[k], (unsigned)grid[0],
                          (unsigned)grid[1], (unsigned)grid[2],
                          variant->threads, 1, 1, variant->shared_bytes,
                          stream, params, NULL);
  if (result != CUDA_SUCCESS)
    return @p_cuda_failed(module, "cuLaunchKernel", result);
  return @P_SUCCESS;
}

static int64_t @p_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t @p_min(int64_t a, int64_t b) { return a < b ? a : b; }

static @p_status @p_check_loaded(@p_module *module, const char *kernel,
                                 const void *args) {
  if (!module)
    return @P_ERROR_INVALID_ARGUMENT;
  if (!module->module) {
    snprintf(module->message, sizeof module->message,
             "@p_launch_%s: the module is not loaded (call @p_load first)",
             kernel);
    return @P_ERROR_NOT_LOADED;
  }
  if (!args)
    return @p_invalid(module, kernel, "args is NULL");
  return @P_SUCCESS;
}
)c";

// fmha.attention: the operands q, k, v, o[, lse] in kernel order. The grid is
// getAttentionLaunchConfig's (lib/JIT/JIT.cpp): (ceil(Sq / block_m), Hq,
// min(B, @MAX_GRID_Y)), the kernel striding over batches past that.
static const char kAttentionLauncher[] = R"c(
@p_status @p_launch_@NAME(@p_module *module, const @p_attention_args *a,
                          CUstream stream) {
  static const char kernel[] = "@NAME";
  const @p_operand *ops = @p_operands_@INDEX;
  int64_t slots[@SLOTS];
  void *params[@SLOTS + 3];
  int64_t grid[3], sizes[4];
  int count = 0, leading = 0;
  @p_status status = @p_check_loaded(module, kernel, a);
  if (status != @P_SUCCESS)
    return status;
  if (a->batch < 0 || a->q_heads < 0 || a->kv_heads < 0 || a->q_seq < 0 ||
      a->k_seq < 0)
    return @p_invalid(module, kernel, "batch, q_heads, kv_heads, q_seq and "
                      "k_seq must be >= 0");
  if (a->q_heads > 0 && (a->kv_heads < 1 || a->q_heads % a->kv_heads != 0)) {
    char what[128];
    snprintf(what, sizeof what, "q_heads (%lld) must be a multiple of "
             "kv_heads (%lld)", (long long)a->q_heads, (long long)a->kv_heads);
    return @p_invalid(module, kernel, what);
  }
  if (a->batch > 0 && a->q_heads > 0 && a->q_seq > 0 && a->k_seq < 1)
    return @p_invalid(module, kernel, "k_seq must be >= 1 when there are "
                      "queries");
  if (@LSE && !a->lse)
    return @p_invalid(module, kernel, "lse is NULL: the kernel was generated "
                      "with lse and writes it");
  if (!@LSE && a->lse)
    return @p_invalid(module, kernel, "lse must be NULL: the kernel was "
                      "generated without lse (regenerate with --lse)");
  sizes[0] = a->batch; sizes[1] = a->q_heads; sizes[2] = a->q_seq;
  sizes[3] = @HEAD_DIM;
  if ((status = @p_add_operand(module, kernel, &ops[0], a->q, sizes,
                               a->q_strides, slots, &count)) != @P_SUCCESS)
    return status;
  sizes[1] = a->kv_heads; sizes[2] = a->k_seq;
  if ((status = @p_add_operand(module, kernel, &ops[1], a->k, sizes,
                               a->k_strides, slots, &count)) != @P_SUCCESS)
    return status;
  if ((status = @p_add_operand(module, kernel, &ops[2], a->v, sizes,
                               a->v_strides, slots, &count)) != @P_SUCCESS)
    return status;
  sizes[1] = a->q_heads; sizes[2] = a->q_seq;
  if ((status = @p_add_operand(module, kernel, &ops[3], a->o, sizes,
                               a->o_strides, slots, &count)) != @P_SUCCESS)
    return status;
  if (@LSE && (status = @p_add_operand(module, kernel, &ops[4], a->lse, sizes,
                                       a->lse_strides, slots, &count)) !=
                  @P_SUCCESS)
    return status;
  grid[0] = @p_ceil_div(a->q_seq, @p_variants[@INDEX][module->cubin].grid_tile);
  grid[1] = a->q_heads;
  grid[2] = @p_min(a->batch, @MAX_GRID_Y);@TENSOR_MAPS
  return @p_launch(module, @INDEX, grid, slots, params, leading, count,
                   stream);
}
)c";

// The part of an attention launcher for its sm_90a variant (getAttention-
// LaunchConfig and addAttentionTensorMap in lib/JIT/JIT.cpp): the TMA tensor
// maps of q, k and v, from their memref descriptors in `slots` (11 each),
// go first, and one CTA per SM takes the units of work in turn.
static const char kAttentionTensorMaps[] = R"c(
  if (@p_variants[@INDEX][module->cubin].key_rows) {
    const @p_variant *variant = &@p_variants[@INDEX][module->cubin];
    @P_MAP_ALIGNED CUtensorMap maps[3];
    int64_t row_blocks = @p_ceil_div(a->q_seq, variant->grid_tile);
    int64_t units = a->batch * a->q_heads *
                    (variant->pairs ? @p_ceil_div(row_blocks, 2) : row_blocks);
    static const char *const names[3] = {"q", "k", "v"};
    int m;
    if (units == 0)
      return @P_SUCCESS;
    for (m = 0; m < 3; ++m) {
      status = @p_encode_map(module, kernel, names[m], @TMA_TYPE,
                             slots + 11 * m,
                             m == 0 ? variant->grid_tile : variant->key_rows,
                             &maps[m]);
      if (status != @P_SUCCESS)
        return status;
      params[m] = &maps[m];
    }
    leading = 3;
    grid[0] = @p_min(@p_min(units, module->multiprocessors), 2147483647);
    grid[1] = grid[2] = 1;
  })c";

// The tensor-map encoder of the sm_90a attention launchers.
static const char kTensorMapEncoder[] = R"c(
#if defined(__GNUC__) || defined(__clang__)
#define @P_MAP_ALIGNED __attribute__((aligned(64)))
#elif defined(_MSC_VER)
#define @P_MAP_ALIGNED __declspec(align(64))
#else
#define @P_MAP_ALIGNED
#endif

/* The TMA tensor map of an attention operand from its memref descriptor
   (allocated, aligned, offset, sizes, strides; rank 4, 16-bit elements):
   innermost first (D, S, H, B), boxes of 64 x rows x 1 x 1 elements, 128-byte
   swizzle, zeros past the bounds (AttentionToGPUSm90.cpp's ABI). */
static @p_status @p_encode_map(@p_module *module, const char *kernel,
                               const char *operand, CUtensorMapDataType type,
                               const int64_t *descriptor, unsigned rows,
                               CUtensorMap *map) {
  static const char *const dim_names[3] = {"batch", "head", "sequence"};
  const int64_t *sizes = descriptor + 3, *strides = descriptor + 7;
  cuuint64_t dims[4], byte_strides[3];
  cuuint32_t box[4] = {64, 1, 1, 1}, element_strides[4] = {1, 1, 1, 1};
  CUresult result;
  int d;
  /* The TMA takes every stride, also of dimensions of one element (which
     the operand checks let through). */
  for (d = 0; d < 3; ++d)
    if (strides[d] % 8 != 0) {
      char what[192];
      snprintf(what, sizeof what, "%s: the stride of %s (%lld elements) must "
               "be a multiple of 8 elements (16 bytes) for the TMA of the "
               "sm_90a kernel, even where the size is 1", operand,
               dim_names[d], (long long)strides[d]);
      return @p_invalid(module, kernel, what);
    }
  for (d = 0; d < 4; ++d)
    dims[d] = (cuuint64_t)sizes[3 - d];
  for (d = 0; d < 3; ++d)
    byte_strides[d] = (cuuint64_t)strides[2 - d] * 2;
  box[1] = rows;
  result = cuTensorMapEncodeTiled(
      map, type, 4, (void *)(intptr_t)descriptor[1], dims, byte_strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    char call[256];
    snprintf(call, sizeof call, "cuTensorMapEncodeTiled(%s: sizes [%lld, "
             "%lld, %lld, %lld], strides [%lld, %lld, %lld, 1] elements; the "
             "base must be 16-byte aligned and every stride a multiple of 16 "
             "bytes)", operand, (long long)sizes[0], (long long)sizes[1],
             (long long)sizes[2], (long long)sizes[3], (long long)strides[0],
             (long long)strides[1], (long long)strides[2]);
    return @p_cuda_failed(module, call, result);
  }
  return @P_SUCCESS;
}
)c";

// fmha.resample: the operands times..., values..., lengths..., targets, out in
// kernel order. The grid is getResampleLaunchConfig's (lib/JIT/JIT.cpp):
// (ceil(T / block_t), min(B, @MAX_GRID_Y), 1), rows striding past that.
static const char kResampleLauncher[] = R"c(
@p_status @p_launch_@NAME(@p_module *module, const @p_resample_args *a,
                          CUstream stream) {
  static const char kernel[] = "@NAME";
  enum { STREAMS = @STREAMS };
  const @p_operand *ops = @p_operands_@INDEX;
  int64_t slots[@SLOTS];
  void *params[@SLOTS];
  int64_t grid[3], sizes[3], strides[1] = {1}, features = 0;
  int count = 0, s;
  @p_status status = @p_check_loaded(module, kernel, a);
  if (status != @P_SUCCESS)
    return status;
  if (a->num_streams != STREAMS || !a->streams) {
    char what[128];
    snprintf(what, sizeof what, "the kernel resamples %d stream(s), got "
             "num_streams %d (streams %s)", STREAMS, a->num_streams,
             a->streams ? "set" : "NULL");
    return @p_invalid(module, kernel, what);
  }
  if (a->batch < 0 || a->targets < 0)
    return @p_invalid(module, kernel, "batch and targets must be >= 0");
  for (s = 0; s < STREAMS; ++s) {
    char what[160];
    if (a->batch > 0 && a->targets > 0 && a->streams[s].samples < 1) {
      snprintf(what, sizeof what, "stream %d: samples must be >= 1, got %lld",
               s, (long long)a->streams[s].samples);
      return @p_invalid(module, kernel, what);
    }
    if (@LENGTHS != (a->streams[s].lengths != NULL)) {
      snprintf(what, sizeof what, "stream %d: lengths %s", s,
               @LENGTHS ? "is NULL: the kernel was generated with lengths"
                        : "must be NULL: the kernel was generated without "
                          "lengths (regenerate with --lengths)");
      return @p_invalid(module, kernel, what);
    }
  }
  sizes[0] = a->batch;
  for (s = 0; s < STREAMS; ++s) {
    sizes[1] = a->streams[s].samples;
    if ((status = @p_add_operand(module, kernel, &ops[s], a->streams[s].times,
                                 sizes, a->streams[s].times_strides, slots,
                                 &count)) != @P_SUCCESS)
      return status;
  }
  for (s = 0; s < STREAMS; ++s) {
    sizes[1] = a->streams[s].samples;
    sizes[2] = ops[STREAMS + s].sizes[2];
    features += sizes[2];
    if ((status = @p_add_operand(module, kernel, &ops[STREAMS + s],
                                 a->streams[s].values, sizes,
                                 a->streams[s].values_strides, slots,
                                 &count)) != @P_SUCCESS)
      return status;
  }
  for (s = 0; @LENGTHS && s < STREAMS; ++s)
    if ((status = @p_add_operand(module, kernel, &ops[2 * STREAMS + s],
                                 a->streams[s].lengths, sizes, strides, slots,
                                 &count)) != @P_SUCCESS)
      return status;
  sizes[1] = a->targets;
  if ((status = @p_add_operand(module, kernel, &ops[@TARGETS], a->target_times,
                               sizes, a->target_strides, slots, &count)) !=
      @P_SUCCESS)
    return status;
  sizes[2] = features;
  if ((status = @p_add_operand(module, kernel, &ops[@TARGETS + 1], a->out,
                               sizes, a->out_strides, slots, &count)) !=
      @P_SUCCESS)
    return status;
  grid[0] = @p_ceil_div(a->targets, @p_variants[@INDEX][module->cubin].grid_tile);
  grid[1] = @p_min(a->batch, @MAX_GRID_Y);
  grid[2] = 1;
  return @p_launch(module, @INDEX, grid, slots, params, 0, count, stream);
}
)c";

/// The bytes of \p image as the initializer of an unsigned char array.
static void emitBytes(llvm::StringRef image, llvm::raw_ostream &os) {
  for (size_t i = 0; i < image.size(); ++i) {
    if (i % 16 == 0)
      os << (i ? "\n  " : "  ");
    os << static_cast<unsigned>(static_cast<unsigned char>(image[i])) << ",";
  }
  os << "\n";
}

/// "sm_86" -> {8, 6, false}; "sm_90a" -> {9, 0, true}; "sm_100" -> {10, 0}.
static std::string getTargetInitializer(llvm::StringRef arch) {
  llvm::StringRef digits = arch.drop_front(3);
  bool specific = digits.consume_back("a");
  return llvm::formatv("{{{0}, {1}, {2}}", digits.drop_back(1),
                       digits.take_back(1), specific ? 1 : 0)
      .str();
}

void aot::emitSource(const AotFile &file, llvm::raw_ostream &os) {
  const std::string &p = file.prefix;
  os << llvm::formatv("/*===- {0}.c - generated by fmha-aot: do not edit "
                      "-------------------*- C -*-===*\\\n",
                      p)
     << " *\n * Generated from: " << file.source << "\n * Command: "
     << file.command << "\n * Needs cuda.h and libcuda only.\n"
     << "\\*===------------------------------------------------------------"
        "----------===*/\n\n";
  os << "#include \"" << p << ".h\"\n\n#include <stdio.h>\n#include "
                              "<string.h>\n\n";
  // cuModuleLoadData reads an ELF image: keep it aligned like nvcc's
  // embedded fatbins.
  os << expand(R"c(#if defined(__GNUC__) || defined(__clang__)
#define @P_ALIGNED __attribute__((aligned(8)))
#else
#define @P_ALIGNED
#endif

)c",
               p);
  for (auto [index, cubin] : llvm::enumerate(file.cubins)) {
    os << "/* " << cubin.arch << " (lowered for chip " << cubin.chip
       << "), cubin, " << cubin.image.size() << " bytes. */\n";
    os << "static const unsigned char " << p << "_cubin_" << index << "["
       << cubin.image.size() << "] " << llvm::StringRef(p).upper()
       << "_ALIGNED = {\n";
    emitBytes(cubin.image, os);
    os << "};\n\n";
  }
  os << "static const unsigned char *const " << p << "_cubins["
     << llvm::StringRef(p).upper() << "_NUM_CUBINS] = {";
  for (size_t i = 0; i < file.cubins.size(); ++i)
    os << (i ? ", " : "") << p << "_cubin_" << i;
  os << "};\n\n";

  os << expand(R"c(/* The compute capability each cubin was linked for; specific: sm_XYa. */
typedef struct @p_target {
  int major, minor, specific;
} @p_target;
static const @p_target @p_targets[@P_NUM_CUBINS] = {)c",
               p);
  for (auto [index, cubin] : llvm::enumerate(file.cubins))
    os << (index ? ", " : "") << getTargetInitializer(cubin.arch);
  os << "};\n\n";

  os << expand(
      R"c(/* One kernel in one cubin: its symbol and the launch constants of the
   tile it was compiled with (grid_tile: query rows or targets per block;
   key_rows: block_n of an sm_90a attention kernel, which takes tensor maps
   and a persistent grid over units of one row block, or two when pairs). */
typedef struct @p_variant {
  const char *function;
  unsigned threads, shared_bytes, grid_tile, key_rows, pairs;
} @p_variant;
static const @p_variant @p_variants[@P_NUM_KERNELS][@P_NUM_CUBINS] = {
)c",
      p);
  for (const AotKernel &kernel : file.kernels) {
    os << "  {";
    for (auto [index, variant] : llvm::enumerate(kernel.variants))
      os << (index ? ", " : "")
         << llvm::formatv(
                "{{{0}, {1}, {2}, {3}, {4}, {5}}", quote(variant.function),
                variant.threads, variant.sharedBytes, variant.gridTile,
                variant.tensorMapKeyRows, variant.pairsRowBlocks ? 1 : 0);
    os << "}, /* " << kernel.name << " */\n";
  }
  os << "};\n\n";

  os << expand(R"c(/* A memref operand: what its type fixes (-1: dynamic), and the alignment
   of its base and rows that the kernel's accesses assume. */
typedef struct @p_operand {
  const char *name;
  const char *dims[4];
  int rank, element_bytes, align_bytes, identity;
  int64_t sizes[4], strides[4];
} @p_operand;
)c",
               p);
  for (auto [index, kernel] : llvm::enumerate(file.kernels)) {
    os << "static const " << p << "_operand " << p << "_operands_" << index
       << "[] = {\n";
    for (const MemRefOperand &operand : kernel.operands) {
      auto list = [&](llvm::ArrayRef<int64_t> values) {
        return "{" +
               llvm::join(llvm::map_range(values,
                                          [](int64_t v) {
                                            return std::to_string(v);
                                          }),
                          ", ") +
               "}";
      };
      os << llvm::formatv("  {{{0}, {{{1}}, {2}, {3}, {4}, {5}, {6}, {7}},\n",
                          quote(operand.name),
                          llvm::join(llvm::map_range(operand.dimNames, quote),
                                     ", "),
                          operand.rank,
                          operand.elementBytes, operand.alignBytes,
                          operand.identityLayout ? 1 : 0, list(operand.sizes),
                          list(operand.strides));
    }
    os << "};\n";
  }

  os << substitute(expand(kSourceCommon, p),
                   {{"ARCHS",
                     llvm::join(llvm::map_range(file.cubins,
                                                [](const AotCubin &c) {
                                                  return quote(c.arch);
                                                }),
                                ", ")},
                    {"ARCH_LIST", getArchList(file)}});

  auto takesTensorMaps = [](const AotKernel &kernel) {
    return llvm::any_of(kernel.variants, [](const KernelVariant &variant) {
      return variant.tensorMapKeyRows > 0;
    });
  };
  if (llvm::any_of(file.kernels, takesTensorMaps))
    os << expand(kTensorMapEncoder, p);

  std::string maxGridY = std::to_string(kMaxGridDimY);
  for (auto [index, kernel] : llvm::enumerate(file.kernels)) {
    bool attention = kernel.kind == AotKernel::Kind::Attention;
    size_t streams = kernel.streamFeatures.size();
    std::string launcher =
        attention ? substitute(
                        kAttentionLauncher,
                        {{"TENSOR_MAPS",
                          takesTensorMaps(kernel) ? kAttentionTensorMaps : ""}})
                  : kResampleLauncher;
    os << substitute(
        expand(launcher, p),
        {{"NAME", kernel.name},
         {"INDEX", std::to_string(index)},
         {"SLOTS", std::to_string(countSlots(kernel))},
         {"LSE", kernel.withLse ? "1" : "0"},
         {"LENGTHS", kernel.withLengths ? "1" : "0"},
         {"HEAD_DIM", std::to_string(kernel.headDim)},
         {"STREAMS", std::to_string(streams)},
         {"TARGETS", std::to_string((kernel.withLengths ? 3 : 2) * streams)},
         {"MAX_GRID_Y", maxGridY},
         {"TMA_TYPE", kernel.elementType == "f16"
                          ? "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
                          : "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"}});
  }

  for (auto [index, kernel] : llvm::enumerate(file.kernels))
    if (!kernel.streamFeatures.empty())
      os << "static const int " << p << "_features_" << index << "[] = {"
         << llvm::join(llvm::map_range(kernel.streamFeatures,
                                       [](unsigned d) {
                                         return std::to_string(d);
                                       }),
                       ", ")
         << "};\n";
  os << "\n" << expand("const @p_kernel_info @p_kernels[@P_NUM_KERNELS] = {\n", p);
  for (auto [index, kernel] : llvm::enumerate(file.kernels)) {
    bool attention = kernel.kind == AotKernel::Kind::Attention;
    std::array<int64_t, 2> window = kernel.window.value_or(
        std::array<int64_t, 2>{0, 0});
    os << "  {" << quote(kernel.name) << ", "
       << quote(attention ? "attention" : "resample") << ", "
       << quote(kernel.elementType) << ",\n   "
       << llvm::formatv("{0}, {1}, {2}, {3}, {{{4}, {5}}, {6},\n   ",
                        kernel.headDim, kernel.causal ? 1 : 0,
                        kernel.withLse ? 1 : 0, kernel.window ? 1 : 0,
                        window[0], window[1], floatLiteral(kernel.scale))
       << (attention ? "NULL" : quote(kernel.mode)) << ", "
       << kernel.streamFeatures.size() << ", "
       << (attention ? "NULL" : p + "_features_" + std::to_string(index))
       << ", " << (kernel.withLengths ? 1 : 0) << ",\n   "
       << (attention ? p + "_launch_" + kernel.name : "NULL") << ", "
       << (attention ? "NULL" : p + "_launch_" + kernel.name) << "},\n";
  }
  os << "};\n";
}
