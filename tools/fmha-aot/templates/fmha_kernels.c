/* fmha-aot:begin banner */
/*===- fmha_kernels.c - the template of fmha-aot's source ---------*- C -*-===*\
 *
 * Part of FlashCore. fmha-aot writes PREFIX.c from this file as it writes
 * PREFIX.h from fmha_kernels.h: the embedded cubins and, for every kernel
 * and cubin, the launch contract that the compiler recorded on the kernel
 * (#fmha.launch) become the tables; the code after them reads the tables
 * and is the same for every kernel. As it stands the tables are
 * placeholders, two fake cubins and three kernels (one of two functions)
 * whose variants exercise each rule, so that test/fmha-aot/template.test
 * compiles it on its own and runs it against Inputs/fake-cuda.c.
 *
 * C99 (and C++ through extern "C") over cuda.h and libcuda only: the
 * projects that build it in have no MLIR, no LLVM and no FlashCore library.
\*===----------------------------------------------------------------------===*/
/* fmha-aot:end banner */

#include "fmha_kernels.h"

#include <stdio.h>
#include <string.h>

/* cuModuleLoadData reads an ELF image: keep it aligned like nvcc's embedded
   fatbins. cuTensorMapEncodeTiled writes a map only at a 64-byte aligned
   address. */
#if defined(__GNUC__) || defined(__clang__)
#define FMHA_KERNELS_ALIGNED __attribute__((aligned(8)))
#define FMHA_KERNELS_MAP_ALIGNED __attribute__((aligned(64)))
#elif defined(_MSC_VER)
#define FMHA_KERNELS_ALIGNED
#define FMHA_KERNELS_MAP_ALIGNED __declspec(align(64))
#else
#define FMHA_KERNELS_ALIGNED
#define FMHA_KERNELS_MAP_ALIGNED
#endif

/*===----------------------------------------------------------------------===*
 * The tables' types
 *===----------------------------------------------------------------------===*/

/* The operands of the fmha ops have at most 5 dimensions (merge_attention's
   partial outputs). */
enum { FMHA_KERNELS_MAX_RANK = 5 };

/* The compute capability each cubin was compiled for; specific: sm_XYa. */
typedef struct fmha_kernels_target {
  int major, minor, specific;
} fmha_kernels_target;

/* A launch operand of a kernel: what its type fixes (-1: dynamic), and the
   alignment of its base and rows that the kernel's accesses assume. The
   launch operands are the op's operands, in its order. */
typedef struct fmha_kernels_operand {
  const char *name;
  const char *dims[FMHA_KERNELS_MAX_RANK];
  int rank, element_bytes, align_bytes, identity;
  int64_t sizes[FMHA_KERNELS_MAX_RANK], strides[FMHA_KERNELS_MAX_RANK];
  /* an index (its value the tensor's size 0), not a tensor */
  int index;
} fmha_kernels_operand;

/* A kernel: its launch operands, and its functions, which it launches in
   order: rows first_function... of fmha_kernels_variants (and of the
   module's functions). */
typedef struct fmha_kernels_kernel_table {
  int num_operands;
  const fmha_kernels_operand *operands;
  int first_function, num_functions;
} fmha_kernels_kernel_table;

/* One factor of a grid extent: ceil(size / divisor), where size is
   dimension `dim` of launch operand `operand`. */
typedef struct fmha_kernels_grid_factor {
  int operand, dim;
  int64_t divisor;
} fmha_kernels_grid_factor;

typedef enum fmha_kernels_parameter_kind {
  FMHA_KERNELS_MEMREF,
  FMHA_KERNELS_TENSOR_MAP,
  FMHA_KERNELS_INDEX
} fmha_kernels_parameter_kind;

/* One kernel parameter, made from launch operand `operand`: its MLIR memref
   descriptor (allocated and aligned pointer, offset, sizes, strides: one
   64-bit parameter each), or a TMA tensor map of it passed by value, of
   `element`s (`element_bytes` each), whose box covers the innermost
   `box_rank` dimensions as `box` lists them (outermost first; 1 in the
   others), swizzled as `swizzle` says, with L2 fills of `promotion`. */
typedef struct fmha_kernels_parameter {
  fmha_kernels_parameter_kind kind;
  int operand;
  CUtensorMapDataType element;
  int element_bytes, box_rank;
  cuuint32_t box[FMHA_KERNELS_MAX_RANK];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion promotion;
} fmha_kernels_parameter;

/* One function in one cubin, as its launch contract says: the symbol, the
   block (threads x 1 x 1), the dynamic shared memory, the grid and the
   parameters in order. Grid axis a (x, y, z) is the product of the next
   grid_factors[a] entries of `factors` (1 without any), clamped to
   grid_max[a] when that is not 0; a persistent kernel takes its units of
   work in turn (CTA x takes x, x + gridDim.x, ...), so its x extent is at
   most the CTAs resident at once: one per SM (but one per unit of work
   over per-sequence key lengths: fmha_kernels_launch_attention_kernel's
   call). A dependent_launch kernel waits for the previous grid itself
   (griddepcontrol.wait), so it is launched with programmatic stream
   serialization: its launch overlaps the previous kernel's tail
   (merge_attention after a split, on sm_90a). */
typedef struct fmha_kernels_variant {
  const char *function;
  unsigned threads, shared_bytes;
  int grid_factors[3];
  int64_t grid_max[3];
  int persistent;
  int dependent_launch;
  const fmha_kernels_grid_factor *factors;
  int num_parameters;
  const fmha_kernels_parameter *parameters;
} fmha_kernels_variant;

/*===----------------------------------------------------------------------===*
 * The tables
 *===----------------------------------------------------------------------===*/

/* fmha-aot:begin tables */
/* Which op launchers the kernels need, and the largest launch of any
   function: launch operands, memref descriptor fields, tensor maps (at least
   1, the size of an array); the most functions one kernel launches. */
#define FMHA_KERNELS_ATTENTION_KERNELS 1
#define FMHA_KERNELS_ATTENTION_GRAD_KERNELS 1
#define FMHA_KERNELS_RESAMPLE_KERNELS 1
#define FMHA_KERNELS_MERGE_ATTENTION_KERNELS 0
enum {
  FMHA_KERNELS_MAX_OPERANDS = 11,
  FMHA_KERNELS_MAX_SLOTS = 117,
  FMHA_KERNELS_MAX_MAPS = 3,
  FMHA_KERNELS_MAX_LAUNCHES = 2
};

/* Placeholder cubins: the ELF magic, which is all the fake libcuda reads. */
static const unsigned char fmha_kernels_cubin_0[4] FMHA_KERNELS_ALIGNED = {
  127, 69, 76, 70,
};
static const unsigned char fmha_kernels_cubin_1[4] FMHA_KERNELS_ALIGNED = {
  127, 69, 76, 70,
};
static const unsigned char *const fmha_kernels_cubins[FMHA_KERNELS_NUM_CUBINS] = {fmha_kernels_cubin_0, fmha_kernels_cubin_1};
static const fmha_kernels_target fmha_kernels_targets[FMHA_KERNELS_NUM_CUBINS] = {{8, 0, 0}, {9, 0, 1}};
const char *const fmha_kernels_archs[FMHA_KERNELS_NUM_CUBINS] = {"sm_80", "sm_90a"};

/* attention: q, k, v, o, lse. */
static const fmha_kernels_operand fmha_kernels_operands_0[] = {
  {"q", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"k", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"v", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"o", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"lse", {"batch", "q_heads", "q_seq"}, 3, 4, 4, 0, {-1, -1, -1}, {-1, -1, -1}, 0},
};
/* attention on sm_80: grid (ceildiv(q[2], 128), q[1], min(q[0], 65535)),
   the memref descriptors of q, k, v, o, lse. */
static const fmha_kernels_grid_factor fmha_kernels_grid_0_0[] = {{0, 2, 128}, {0, 1, 1}, {0, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_0_0[] = {
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 4, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};
/* attention on sm_90a: a persistent grid (min(ceildiv(q[2], 256) * q[1] *
   q[0], 2147483647), 1, 1); tensor maps of q, k and v, each with its own
   box and swizzle, then the memref descriptors. */
static const fmha_kernels_grid_factor fmha_kernels_grid_0_1[] = {{0, 2, 256}, {0, 1, 1}, {0, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_0_1[] = {
  {FMHA_KERNELS_TENSOR_MAP, 0, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2, {128, 64}, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_TENSOR_MAP, 1, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2, {64, 64}, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_TENSOR_MAP, 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2, {64, 32}, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 4, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};

/* resample: times0, values0, targets, out. */
static const fmha_kernels_operand fmha_kernels_operands_1[] = {
  {"times0", {"batch", "samples"}, 2, 4, 4, 1, {-1, -1}, {-1, 1}, 0},
  {"values0", {"batch", "samples", "features"}, 3, 4, 16, 1, {-1, -1, 8}, {-1, 8, 1}, 0},
  {"targets", {"batch", "targets"}, 2, 4, 4, 1, {-1, -1}, {-1, 1}, 0},
  {"out", {"batch", "targets", "features"}, 3, 4, 16, 1, {-1, -1, 8}, {-1, 8, 1}, 0},
};
/* resample on sm_80: grid (ceildiv(targets[1], 256), min(targets[0],
   65535), 1), the memref descriptors. */
static const fmha_kernels_grid_factor fmha_kernels_grid_1_0[] = {{2, 1, 256}, {2, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_1_0[] = {
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};
/* resample on sm_90a: a persistent grid (ceildiv(targets[1], 64) *
   targets[0], 1, 1) without a clamp; a tensor map of values0 (f32, box
   16 x 8, 32-byte swizzle) between the memref descriptors. */
static const fmha_kernels_grid_factor fmha_kernels_grid_1_1[] = {{2, 1, 64}, {2, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_1_1[] = {
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_TENSOR_MAP, 1, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, 2, {16, 8}, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};

/* attention_grad: q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum;
   two functions, launched in order. */
static const fmha_kernels_operand fmha_kernels_operands_2[] = {
  {"q", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"k", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"v", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"o", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"dout", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"lse", {"batch", "q_heads", "q_seq"}, 3, 4, 4, 0, {-1, -1, -1}, {-1, -1, -1}, 0},
  {"dq", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"dk", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"dv", {"batch", "kv_heads", "k_seq", "head_dim"}, 4, 2, 16, 0, {-1, -1, -1, 64}, {-1, -1, -1, 1}, 0},
  {"delta", {"batch", "q_heads", "q_seq"}, 3, 4, 4, 0, {-1, -1, -1}, {-1, -1, -1}, 0},
  {"dq_accum", {"batch", "q_heads", "q_seq", "head_dim"}, 4, 4, 16, 0, {-1, -1, -1, 64}, {-1, -1, 64, 1}, 0},
};
/* The first function, the same symbol and contract in both cubins: a grid
   (min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1) over the rows, the
   descriptors of all 11 operands. */
static const fmha_kernels_grid_factor fmha_kernels_grid_2_0[] = {{3, 2, 8}, {3, 1, 1}, {3, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_2_0[] = {
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 4, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 5, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 6, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 7, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 8, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 9, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 10, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};
/* The second function on sm_80: grid (ceildiv(k[2], 64), k[1], min(k[0],
   65535)), the descriptors (the first function's parameters). */
static const fmha_kernels_grid_factor fmha_kernels_grid_3_0[] = {{1, 2, 64}, {1, 1, 1}, {1, 0, 1}};
/* The second function on sm_90a: grid (ceildiv(k[2], 128), k[1], min(k[0],
   65535)), maps of q and k, then the descriptors. */
static const fmha_kernels_grid_factor fmha_kernels_grid_3_1[] = {{1, 2, 128}, {1, 1, 1}, {1, 0, 1}};
static const fmha_kernels_parameter fmha_kernels_parameters_3_1[] = {
  {FMHA_KERNELS_TENSOR_MAP, 0, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2, {64, 64}, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_TENSOR_MAP, 1, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, 2, {128, 64}, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
  {FMHA_KERNELS_MEMREF, 0, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 4, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 5, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 6, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 7, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 8, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 9, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
  {FMHA_KERNELS_MEMREF, 10, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {0}, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE},
};

static const fmha_kernels_kernel_table fmha_kernels_kernel_tables[FMHA_KERNELS_NUM_KERNELS] = {
  {5, fmha_kernels_operands_0, 0, 1},
  {4, fmha_kernels_operands_1, 1, 1},
  {11, fmha_kernels_operands_2, 2, 2},
};
static const fmha_kernels_variant fmha_kernels_variants[FMHA_KERNELS_NUM_FUNCTIONS][FMHA_KERNELS_NUM_CUBINS] = {
  { /* attention */
    {"attention_sm80", 128, 32768, {1, 1, 1}, {0, 0, 65535}, 0, 0, fmha_kernels_grid_0_0, 5, fmha_kernels_parameters_0_0},
    {"attention_sm90a", 384, 83024, {3, 0, 0}, {2147483647, 0, 0}, 1, 0, fmha_kernels_grid_0_1, 8, fmha_kernels_parameters_0_1},
  },
  { /* resample */
    {"resample_sm80", 256, 0, {1, 1, 0}, {0, 65535, 0}, 0, 0, fmha_kernels_grid_1_0, 4, fmha_kernels_parameters_1_0},
    {"resample_sm90a", 128, 4096, {2, 0, 0}, {0, 0, 0}, 1, 0, fmha_kernels_grid_1_1, 5, fmha_kernels_parameters_1_1},
  },
  { /* attention_grad */
    {"attention_grad_rows", 256, 0, {3, 0, 0}, {2147483647, 0, 0}, 0, 0, fmha_kernels_grid_2_0, 11, fmha_kernels_parameters_2_0},
    {"attention_grad_rows", 256, 0, {3, 0, 0}, {2147483647, 0, 0}, 0, 0, fmha_kernels_grid_2_0, 11, fmha_kernels_parameters_2_0},
  },
  { /* attention_grad */
    {"attention_grad_keys_sm80", 128, 99328, {1, 1, 1}, {0, 0, 65535}, 0, 0, fmha_kernels_grid_3_0, 11, fmha_kernels_parameters_2_0},
    {"attention_grad_keys_sm90a", 384, 215088, {1, 1, 1}, {0, 0, 65535}, 0, 0, fmha_kernels_grid_3_1, 13, fmha_kernels_parameters_3_1},
  },
};
/* fmha-aot:end tables */

/*===----------------------------------------------------------------------===*
 * Device selection and loading
 *===----------------------------------------------------------------------===*/

int fmha_kernels_select_cubin(int major, int minor, char *message, size_t size) {
  char held[160] = "", fix[64];
  int best = -1, i;
  for (i = 0; i < FMHA_KERNELS_NUM_CUBINS; ++i) {
    const fmha_kernels_target *target = &fmha_kernels_targets[i];
    /* SASS runs on its major version only, on minor versions >= its own;
       an arch-specific (sm_XYa) cubin on exactly its version. */
    if (target->major != major || target->minor > minor)
      continue;
    if (target->specific) {
      if (target->minor == minor)
        return i;
      continue;
    }
    if (best < 0 || target->minor > fmha_kernels_targets[best].minor)
      best = i;
  }
  if (best >= 0)
    return best;
  if (!message || !size)
    return -1;
  for (i = 0; i < FMHA_KERNELS_NUM_CUBINS; ++i) {
    if (i)
      strncat(held, ", ", sizeof held - strlen(held) - 1);
    strncat(held, fmha_kernels_archs[i], sizeof held - strlen(held) - 1);
  }
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
  snprintf(message, size, "no cubin for compute capability %d.%d in "
           "fmha_kernels: holds %s; %s", major, minor, held, fix);
  return -1;
}

static fmha_kernels_status fmha_kernels_cuda_failed(
    fmha_kernels_module *module, const char *call, CUresult result) {
  const char *name = NULL;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "an unknown CUresult";
  snprintf(module->message, sizeof module->message,
           "fmha_kernels: %s failed: %s (%d)", call, name, (int)result);
  return FMHA_KERNELS_ERROR_CUDA;
}

fmha_kernels_status fmha_kernels_load(fmha_kernels_module *module) {
  CUdevice device;
  CUmodule loaded;
  CUresult result;
  int major = 0, minor = 0, index, f;
  if (!module)
    return FMHA_KERNELS_ERROR_INVALID_ARGUMENT;
  memset(module, 0, sizeof *module);
  module->cubin = -1;
  result = cuCtxGetDevice(&device);
  if (result != CUDA_SUCCESS) {
    fmha_kernels_cuda_failed(module, "cuCtxGetDevice", result);
    strncat(module->message, ": make a CUDA context current in this thread "
            "first (cuCtxCreate, cuDevicePrimaryCtxRetain + cuCtxSetCurrent, "
            "or any CUDA runtime call)",
            sizeof module->message - strlen(module->message) - 1);
    return FMHA_KERNELS_ERROR_CUDA;
  }
  result = cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (result == CUDA_SUCCESS)
    result = cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (result != CUDA_SUCCESS)
    return fmha_kernels_cuda_failed(
        module, "cuDeviceGetAttribute(compute capability)", result);
  index = fmha_kernels_select_cubin(
      major, minor, module->message, sizeof module->message);
  if (index < 0)
    return FMHA_KERNELS_ERROR_NO_CUBIN;
  /* A persistent grid launches one CTA per SM. */
  result = cuDeviceGetAttribute(&module->multiprocessors,
                                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                device);
  if (result != CUDA_SUCCESS)
    return fmha_kernels_cuda_failed(
        module, "cuDeviceGetAttribute(multiprocessors)", result);
  result = cuModuleLoadData(&loaded, fmha_kernels_cubins[index]);
  if (result != CUDA_SUCCESS) {
    char call[64];
    snprintf(call, sizeof call, "cuModuleLoadData(%s cubin)",
             fmha_kernels_archs[index]);
    return fmha_kernels_cuda_failed(module, call, result);
  }
  for (f = 0; f < FMHA_KERNELS_NUM_FUNCTIONS; ++f) {
    const fmha_kernels_variant *variant = &fmha_kernels_variants[f][index];
    result = cuModuleGetFunction(&module->functions[f], loaded,
                                 variant->function);
    if (result != CUDA_SUCCESS) {
      cuModuleUnload(loaded);
      return fmha_kernels_cuda_failed(module, "cuModuleGetFunction", result);
    }
    /* The default limit (48 KB) counts static shared memory too, so any
       dynamic size is opted into; the size is fixed per kernel, so once. */
    if (variant->shared_bytes > 0) {
      result = cuFuncSetAttribute(
          module->functions[f], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          (int)variant->shared_bytes);
      if (result != CUDA_SUCCESS) {
        int allowed = 0;
        cuDeviceGetAttribute(
            &allowed, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device);
        cuModuleUnload(loaded);
        snprintf(module->message, sizeof module->message,
                 "fmha_kernels: kernel function %s needs %u bytes of dynamic "
                 "shared memory; this device allows %d per block "
                 "(cuFuncSetAttribute: %d)",
                 variant->function, variant->shared_bytes, allowed,
                 (int)result);
        return FMHA_KERNELS_ERROR_CUDA;
      }
    }
  }
  module->module = loaded;
  module->cubin = index;
  return FMHA_KERNELS_SUCCESS;
}

fmha_kernels_status fmha_kernels_unload(fmha_kernels_module *module) {
  CUresult result;
  if (!module || !module->module)
    return FMHA_KERNELS_ERROR_NOT_LOADED;
  result = cuModuleUnload(module->module);
  module->module = NULL;
  module->cubin = -1;
  if (result != CUDA_SUCCESS)
    return fmha_kernels_cuda_failed(module, "cuModuleUnload", result);
  return FMHA_KERNELS_SUCCESS;
}

/*===----------------------------------------------------------------------===*
 * The launch: the same for every kernel, driven by its variant's tables
 *===----------------------------------------------------------------------===*/

/* One launch operand as the caller passes it: sizes and strides (in
   elements) ordered like the operand's dimensions. */
typedef struct fmha_kernels_tensor {
  const void *data;
  int64_t sizes[FMHA_KERNELS_MAX_RANK];
  const int64_t *strides;
} fmha_kernels_tensor;

static fmha_kernels_status fmha_kernels_invalid(
    fmha_kernels_module *module, const char *kernel, const char *what) {
  snprintf(module->message, sizeof module->message,
           "fmha_kernels_launch_%s: %s", kernel, what);
  return FMHA_KERNELS_ERROR_INVALID_ARGUMENT;
}

static fmha_kernels_status fmha_kernels_check_loaded(
    fmha_kernels_module *module, const char *kernel, const void *args) {
  if (!module)
    return FMHA_KERNELS_ERROR_INVALID_ARGUMENT;
  if (!module->module) {
    snprintf(module->message, sizeof module->message,
             "fmha_kernels_launch_%s: the module is not loaded (call "
             "fmha_kernels_load first)", kernel);
    return FMHA_KERNELS_ERROR_NOT_LOADED;
  }
  if (!args)
    return fmha_kernels_invalid(module, kernel, "args is NULL");
  return FMHA_KERNELS_SUCCESS;
}

/* Checks a launch operand against its table entry and writes the strides
   the kernel gets to `passed`: those the type fixes are checked on
   dimensions of more than one element and passed as the type has them. */
static fmha_kernels_status fmha_kernels_check_operand(
    fmha_kernels_module *module, const char *kernel,
    const fmha_kernels_operand *operand, const fmha_kernels_tensor *tensor,
    int64_t *passed) {
  char what[256];
  const int64_t *sizes = tensor->sizes, *strides = tensor->strides;
  int64_t expected = 1, elements = 1;
  int d, rank = operand->rank;
  if (operand->index) {
    if (sizes[0] < 0) {
      snprintf(what, sizeof what, "%s must be >= 0, got %lld", operand->name,
               (long long)sizes[0]);
      return fmha_kernels_invalid(module, kernel, what);
    }
    return FMHA_KERNELS_SUCCESS;
  }
  for (d = rank - 1; d >= 0; --d) {
    if (sizes[d] < 0) {
      snprintf(what, sizeof what, "%s: %s must be >= 0, got %lld",
               operand->name, operand->dims[d], (long long)sizes[d]);
      return fmha_kernels_invalid(module, kernel, what);
    }
    if (operand->sizes[d] >= 0 && sizes[d] != operand->sizes[d]) {
      snprintf(what, sizeof what, "%s: %s is %lld in the kernel's type, "
               "got %lld", operand->name, operand->dims[d],
               (long long)operand->sizes[d], (long long)sizes[d]);
      return fmha_kernels_invalid(module, kernel, what);
    }
    passed[d] = operand->identity ? expected : operand->strides[d];
    expected *= sizes[d];
    elements *= sizes[d];
  }
  for (d = 0; d < rank; ++d) {
    if (strides[d] < 0) {
      snprintf(what, sizeof what, "%s: the stride of %s must be >= 0, got "
               "%lld", operand->name, operand->dims[d], (long long)strides[d]);
      return fmha_kernels_invalid(module, kernel, what);
    }
    if (passed[d] >= 0 && sizes[d] > 1 && strides[d] != passed[d]) {
      snprintf(what, sizeof what, "%s: the stride of %s must be %lld (%s), "
               "got %lld", operand->name, operand->dims[d],
               (long long)passed[d],
               operand->identity ? "the kernel's type is contiguous"
                                 : "fixed by the kernel's type",
               (long long)strides[d]);
      return fmha_kernels_invalid(module, kernel, what);
    }
    if (passed[d] < 0)
      passed[d] = strides[d];
  }
  if (elements == 0)
    return FMHA_KERNELS_SUCCESS;
  if (!tensor->data) {
    snprintf(what, sizeof what, "%s is NULL", operand->name);
    return fmha_kernels_invalid(module, kernel, what);
  }
  if ((uintptr_t)tensor->data % (uintptr_t)operand->align_bytes != 0) {
    snprintf(what, sizeof what, "%s (%p) must be %d-byte aligned",
             operand->name, tensor->data, operand->align_bytes);
    return fmha_kernels_invalid(module, kernel, what);
  }
  for (d = 0; d + 1 < rank; ++d) {
    if (sizes[d] > 1 &&
        strides[d] * operand->element_bytes % operand->align_bytes != 0) {
      snprintf(what, sizeof what, "%s: the stride of %s (%lld elements) must "
               "keep rows %d-byte aligned: a multiple of %d elements",
               operand->name, operand->dims[d], (long long)strides[d],
               operand->align_bytes,
               operand->align_bytes / operand->element_bytes);
      return fmha_kernels_invalid(module, kernel, what);
    }
  }
  return FMHA_KERNELS_SUCCESS;
}

/* The grid of `variant` for launch operands `tensors` on a device with
   `resident` CTAs at once (0: no cap). Products saturate: an extent past
   CUDA's limits only needs to stay past them. */
static void fmha_kernels_grid(
    const fmha_kernels_variant *variant, const fmha_kernels_tensor *tensors,
    int64_t resident, int64_t grid[3]) {
  const int64_t saturated = (int64_t)1 << 62;
  const fmha_kernels_grid_factor *factor = variant->factors;
  int axis, f;
  for (axis = 0; axis < 3; ++axis) {
    int64_t extent = 1;
    for (f = 0; f < variant->grid_factors[axis]; ++f, ++factor) {
      int64_t size = tensors[factor->operand].sizes[factor->dim];
      int64_t term = size / factor->divisor + (size % factor->divisor != 0);
      extent = term != 0 && extent > saturated / term ? saturated
                                                      : extent * term;
    }
    if (variant->grid_max[axis] > 0 && extent > variant->grid_max[axis])
      extent = variant->grid_max[axis];
    if (axis == 0 && variant->persistent && resident > 0 && extent > resident)
      extent = resident;
    grid[axis] = extent;
  }
}

/* Encodes the TMA tensor map `parameter` describes of a launch operand with
   strides `strides`: dimensions innermost first (the sizes reversed), the
   byte strides of the outer ones, the box reversed and padded with 1s,
   element strides 1, no interleave, the parameter's L2 promotion, zeros
   past the bounds (the tensor-map ABI of LaunchContract.h). */
static fmha_kernels_status fmha_kernels_encode_map(
    fmha_kernels_module *module, const char *kernel,
    const fmha_kernels_operand *operand,
    const fmha_kernels_parameter *parameter,
    const fmha_kernels_tensor *tensor, const int64_t *strides,
    CUtensorMap *map) {
  const char *arch = fmha_kernels_archs[module->cubin];
  int rank = operand->rank, bytes = parameter->element_bytes, d;
  cuuint64_t dims[FMHA_KERNELS_MAX_RANK], byte_strides[FMHA_KERNELS_MAX_RANK];
  cuuint32_t box[FMHA_KERNELS_MAX_RANK];
  cuuint32_t element_strides[FMHA_KERNELS_MAX_RANK];
  char what[256];
  CUresult result;
  if (strides[rank - 1] != 1) {
    snprintf(what, sizeof what, "%s: the stride of %s must be 1 for the TMA "
             "of the %s kernel, got %lld", operand->name,
             operand->dims[rank - 1], arch, (long long)strides[rank - 1]);
    return fmha_kernels_invalid(module, kernel, what);
  }
  /* The TMA takes every stride, also of dimensions of one element (which
     the operand checks let through). */
  for (d = 0; d + 1 < rank; ++d)
    if (strides[d] * bytes % 16 != 0) {
      snprintf(what, sizeof what, "%s: the stride of %s (%lld elements) must "
               "be a multiple of %d elements (16 bytes) for the TMA of the %s "
               "kernel, even where the size is 1", operand->name,
               operand->dims[d], (long long)strides[d], 16 / bytes, arch);
      return fmha_kernels_invalid(module, kernel, what);
    }
  for (d = 0; d < rank; ++d) {
    dims[d] = (cuuint64_t)tensor->sizes[rank - 1 - d];
    box[d] = d < parameter->box_rank
                 ? parameter->box[parameter->box_rank - 1 - d]
                 : 1;
    element_strides[d] = 1;
  }
  for (d = 0; d + 1 < rank; ++d)
    byte_strides[d] = (cuuint64_t)(strides[rank - 2 - d] * bytes);
  result = cuTensorMapEncodeTiled(
      map, parameter->element, (cuuint32_t)rank,
      (void *)(uintptr_t)tensor->data, dims, byte_strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, parameter->swizzle,
      parameter->promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    char call[256];
    int length = snprintf(call, sizeof call, "cuTensorMapEncodeTiled(%s: "
                          "sizes [", operand->name);
    for (d = 0; d < rank && length < (int)sizeof call; ++d)
      length += snprintf(call + length, sizeof call - length, "%s%lld",
                         d ? ", " : "", (long long)tensor->sizes[d]);
    for (d = 0; d < rank && length < (int)sizeof call; ++d)
      length += snprintf(call + length, sizeof call - length, "%s%lld",
                         d ? ", " : "], strides [", (long long)strides[d]);
    if (length < (int)sizeof call)
      snprintf(call + length, sizeof call - length, "] elements; the base "
               "must be 16-byte aligned and every stride a multiple of 16 "
               "bytes)");
    return fmha_kernels_cuda_failed(module, call, result);
  }
  return FMHA_KERNELS_SUCCESS;
}

/* One function's launch: its grid, and its parameters (pointers into
   `slots` and `maps`, which hold the memref descriptors' fields and the
   tensor maps; NULL-terminated, which the driver does not need but a fake
   one can read). */
typedef struct fmha_kernels_launch {
  int64_t grid[3];
  int64_t slots[FMHA_KERNELS_MAX_SLOTS];
  FMHA_KERNELS_MAP_ALIGNED CUtensorMap maps[FMHA_KERNELS_MAX_MAPS];
  void *params[FMHA_KERNELS_MAX_SLOTS + FMHA_KERNELS_MAX_MAPS + 1];
} fmha_kernels_launch;

/* Makes the parameters of `variant` in its order, a memref descriptor or a
   tensor map each, from the launch operands and the strides they get. */
static fmha_kernels_status fmha_kernels_make_parameters(
    fmha_kernels_module *module, const char *kernel,
    const fmha_kernels_kernel_table *table,
    const fmha_kernels_variant *variant, const fmha_kernels_tensor *tensors,
    int64_t strides[][FMHA_KERNELS_MAX_RANK], fmha_kernels_launch *launch) {
  int i, d, count = 0, slot = 0, map = 0;
  fmha_kernels_status status;
  for (i = 0; i < variant->num_parameters; ++i) {
    const fmha_kernels_parameter *parameter = &variant->parameters[i];
    const fmha_kernels_operand *operand =
        &table->operands[parameter->operand];
    const fmha_kernels_tensor *tensor = &tensors[parameter->operand];
    const int64_t *passed = strides[parameter->operand];
    if (parameter->kind == FMHA_KERNELS_INDEX) {
      launch->slots[slot] = tensor->sizes[0];
      launch->params[count++] = &launch->slots[slot++];
      continue;
    }
    if (parameter->kind == FMHA_KERNELS_TENSOR_MAP) {
      status = fmha_kernels_encode_map(module, kernel, operand, parameter,
                                       tensor, passed, &launch->maps[map]);
      if (status != FMHA_KERNELS_SUCCESS)
        return status;
      launch->params[count++] = &launch->maps[map++];
      continue;
    }
    /* The pointer is the allocated and the aligned one, at offset 0. */
    launch->slots[slot] = (int64_t)(intptr_t)tensor->data;
    launch->slots[slot + 1] = launch->slots[slot];
    launch->slots[slot + 2] = 0;
    for (d = 0; d < operand->rank; ++d) {
      launch->slots[slot + 3 + d] = tensor->sizes[d];
      launch->slots[slot + 3 + operand->rank + d] = passed[d];
    }
    for (d = 0; d < 3 + 2 * operand->rank; ++d)
      launch->params[count++] = &launch->slots[slot++];
  }
  launch->params[count] = NULL;
  return FMHA_KERNELS_SUCCESS;
}

/* Launches kernel k of the loaded module on its launch operands: checks
   each operand, then evaluates each function's grid (as the loaded cubin's
   variant says, a persistent one capped at `resident` CTAs; 0: one CTA per
   unit of work) and makes its parameters, and only then launches the
   functions in order, skipping those with an empty grid. */
static fmha_kernels_status fmha_kernels_launch_kernel(
    fmha_kernels_module *module, int k, const fmha_kernels_tensor *tensors,
    int64_t resident, CUstream stream) {
  const fmha_kernels_kernel_table *table = &fmha_kernels_kernel_tables[k];
  const char *kernel = fmha_kernels_kernels[k].name;
  int64_t strides[FMHA_KERNELS_MAX_OPERANDS][FMHA_KERNELS_MAX_RANK];
  fmha_kernels_launch launches[FMHA_KERNELS_MAX_LAUNCHES];
  int i, f;
  fmha_kernels_status status;
  CUresult result;
  for (i = 0; i < table->num_operands; ++i) {
    status = fmha_kernels_check_operand(
        module, kernel, &table->operands[i], &tensors[i], strides[i]);
    if (status != FMHA_KERNELS_SUCCESS)
      return status;
  }
  for (f = 0; f < table->num_functions; ++f) {
    const fmha_kernels_variant *variant =
        &fmha_kernels_variants[table->first_function + f][module->cubin];
    int64_t *grid = launches[f].grid;
    fmha_kernels_grid(variant, tensors, resident, grid);
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
      continue;
    if (grid[0] > 2147483647 || grid[1] > 65535 || grid[2] > 65535) {
      char what[224];
      snprintf(what, sizeof what, "the grid (%lld, %lld, %lld) of %s "
               "exceeds CUDA's limits (2147483647, 65535, 65535)",
               (long long)grid[0], (long long)grid[1], (long long)grid[2],
               variant->function);
      return fmha_kernels_invalid(module, kernel, what);
    }
    status = fmha_kernels_make_parameters(module, kernel, table, variant,
                                          tensors, strides, &launches[f]);
    if (status != FMHA_KERNELS_SUCCESS)
      return status;
  }
  for (f = 0; f < table->num_functions; ++f) {
    const fmha_kernels_variant *variant =
        &fmha_kernels_variants[table->first_function + f][module->cubin];
    const int64_t *grid = launches[f].grid;
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
      continue;
    if (variant->dependent_launch) {
      CUlaunchAttribute attribute;
      CUlaunchConfig config;
      memset(&attribute, 0, sizeof attribute);
      memset(&config, 0, sizeof config);
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      config.gridDimX = (unsigned)grid[0];
      config.gridDimY = (unsigned)grid[1];
      config.gridDimZ = (unsigned)grid[2];
      config.blockDimX = variant->threads;
      config.blockDimY = config.blockDimZ = 1;
      config.sharedMemBytes = variant->shared_bytes;
      config.hStream = stream;
      config.attrs = &attribute;
      config.numAttrs = 1;
      result = cuLaunchKernelEx(&config,
                                module->functions[table->first_function + f],
                                launches[f].params, NULL);
    } else {
      result = cuLaunchKernel(
          module->functions[table->first_function + f], (unsigned)grid[0],
          (unsigned)grid[1], (unsigned)grid[2], variant->threads, 1, 1,
          variant->shared_bytes, stream, launches[f].params, NULL);
    }
    if (result != CUDA_SUCCESS) {
      char call[160];
      snprintf(call, sizeof call, "%s(%s)",
               variant->dependent_launch ? "cuLaunchKernelEx"
                                         : "cuLaunchKernel",
               variant->function);
      return fmha_kernels_cuda_failed(module, call, result);
    }
  }
  return FMHA_KERNELS_SUCCESS;
}

/*===----------------------------------------------------------------------===*
 * The ops' launch operands from their arguments
 *===----------------------------------------------------------------------===*/

static void fmha_kernels_set_tensor(
    fmha_kernels_tensor *tensor, const void *data, int64_t d0, int64_t d1,
    int64_t d2, int64_t d3, const int64_t *strides) {
  tensor->data = data;
  tensor->sizes[0] = d0;
  tensor->sizes[1] = d1;
  tensor->sizes[2] = d2;
  tensor->sizes[3] = d3;
  tensor->strides = strides;
}

#if FMHA_KERNELS_ATTENTION_KERNELS || FMHA_KERNELS_ATTENTION_GRAD_KERNELS
/* The sizes of an attention problem, forward or backward. */
static fmha_kernels_status fmha_kernels_check_attention_sizes(
    fmha_kernels_module *module, const char *kernel, int64_t batch,
    int64_t q_heads, int64_t kv_heads, int64_t q_seq, int64_t k_seq) {
  if (batch < 0 || q_heads < 0 || kv_heads < 0 || q_seq < 0 || k_seq < 0)
    return fmha_kernels_invalid(
        module, kernel,
        "batch, q_heads, kv_heads, q_seq and k_seq must be >= 0");
  if (q_heads > 0 && (kv_heads < 1 || q_heads % kv_heads != 0)) {
    char what[128];
    snprintf(what, sizeof what, "q_heads (%lld) must be a multiple of "
             "kv_heads (%lld)", (long long)q_heads, (long long)kv_heads);
    return fmha_kernels_invalid(module, kernel, what);
  }
  if (batch > 0 && q_heads > 0 && q_seq > 0 && k_seq < 1)
    return fmha_kernels_invalid(
        module, kernel, "k_seq must be >= 1 when there are queries");
  return FMHA_KERNELS_SUCCESS;
}
#endif

#if FMHA_KERNELS_ATTENTION_KERNELS || FMHA_KERNELS_ATTENTION_GRAD_KERNELS || \
    FMHA_KERNELS_MERGE_ATTENTION_KERNELS
/* An optional operand \p name, which the kernel \p uses ("reads",
   "writes" or "uses"), given (or not) as the kernel was generated (with
   it, or not: \p flag regenerates it). */
static fmha_kernels_status
fmha_kernels_check_optional(fmha_kernels_module *module, const char *kernel,
                            const char *name, const char *uses, int generated,
                            int given, const char *flag) {
  char what[160];
  if (generated == given)
    return FMHA_KERNELS_SUCCESS;
  if (generated)
    snprintf(what, sizeof what,
             "%s is NULL: the kernel was generated with "
             "%s and %s it",
             name, name, uses);
  else
    snprintf(what, sizeof what,
             "%s must be NULL: the kernel was generated "
             "without %s (regenerate with %s)",
             name, name, flag);
  return fmha_kernels_invalid(module, kernel, what);
}
#endif

#if FMHA_KERNELS_ATTENTION_KERNELS
/* fmha.attention kernel k: the launch operands q, k, v, o[, lse][, sinks]
   [, key_lengths][, page_table]. */
static fmha_kernels_status fmha_kernels_launch_attention_kernel(
    fmha_kernels_module *module, int k, const fmha_kernels_attention_args *a,
    CUstream stream) {
  const fmha_kernels_kernel_info *info = &fmha_kernels_kernels[k];
  const char *kernel = info->name;
  fmha_kernels_tensor tensors[FMHA_KERNELS_MAX_OPERANDS];
  int i;
  int64_t entries, query_entries, key_entries;
  fmha_kernels_status status = fmha_kernels_check_loaded(module, kernel, a);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  status = fmha_kernels_check_attention_sizes(
      module, kernel, a->batch, a->q_heads, a->kv_heads, a->q_seq, a->k_seq);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  status = fmha_kernels_check_optional(module, kernel, "lse", "writes",
                                       info->lse, a->lse != NULL, "--lse");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(module, kernel, "sinks", "reads",
                                         info->sinks, a->sinks != NULL,
                                         "--sinks");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(
        module, kernel, "query_offsets", "reads", info->query_offsets,
        a->query_offsets != NULL, "query_offsets on the op");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(
        module, kernel, "key_offsets", "reads", info->key_offsets,
        a->key_offsets != NULL, "key_offsets on the op");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(
        module, kernel, "key_lengths", "reads", info->key_lengths,
        a->key_lengths != NULL, "--key-lengths");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(module, kernel, "page_table", "reads",
                                         info->page_size != 0,
                                         a->page_table != NULL, "--page-size");
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  if (info->page_size) {
    char what[192];
    if (a->pages < 1 || a->pages_per_sequence < 0 ||
        a->k_seq != a->pages_per_sequence * info->page_size) {
      snprintf(what, sizeof what,
               "k_seq (%lld) must be "
               "pages_per_sequence (%lld) x page_size (%d), and pages "
               "(%lld) >= 1",
               (long long)a->k_seq, (long long)a->pages_per_sequence,
               info->page_size, (long long)a->pages);
      return fmha_kernels_invalid(module, kernel, what);
    }
  }
  /* Packed sequences are one entry of q (and of k and v with key
     offsets); paged K and V are pools of pages. */
  query_entries = info->query_offsets ? 1 : a->batch;
  key_entries = info->page_size     ? a->pages
                : info->key_offsets ? 1
                                    : a->batch;
  fmha_kernels_set_tensor(
      &tensors[0], a->q, query_entries, a->q_heads, a->q_seq, info->head_dim,
      a->q_strides);
  fmha_kernels_set_tensor(&tensors[1], a->k, key_entries, a->kv_heads,
                          info->page_size ? info->page_size : a->k_seq,
                          info->head_dim, a->k_strides);
  fmha_kernels_set_tensor(&tensors[2], a->v, key_entries, a->kv_heads,
                          info->page_size ? info->page_size : a->k_seq,
                          info->value_head_dim, a->v_strides);
  if (info->split_keys && a->splits < 1) {
    char what[96];
    snprintf(what, sizeof what, "splits (%lld) must be >= 1: the kernel "
             "was generated with split_keys", (long long)a->splits);
    return fmha_kernels_invalid(module, kernel, what);
  }
  /* With split keys, O's and LSE's entries are the splits' of each batch
     entry (of q's one entry with packed sequences: split s of every
     sequence's keys). */
  entries = info->split_keys ? a->splits * query_entries : query_entries;
  fmha_kernels_set_tensor(
      &tensors[3], a->o, entries, a->q_heads, a->q_seq,
      info->value_head_dim, a->o_strides);
  /* The optional operands in the op's order. */
  i = 4;
  if (info->lse)
    fmha_kernels_set_tensor(&tensors[i++], a->lse, entries, a->q_heads,
                            a->q_seq, 0, a->lse_strides);
  if (info->sinks)
    fmha_kernels_set_tensor(&tensors[i++], a->sinks, a->q_heads, a->q_seq, 0, 0,
                            a->sinks_strides);
  if (info->key_lengths)
    fmha_kernels_set_tensor(&tensors[i++], a->key_lengths, a->batch, 0, 0, 0,
                            a->key_lengths_strides);
  if (info->page_size)
    fmha_kernels_set_tensor(&tensors[i++], a->page_table, a->batch,
                            a->pages_per_sequence, 0, 0, a->page_table_strides);
  if (info->query_offsets)
    fmha_kernels_set_tensor(&tensors[i++], a->query_offsets, a->batch + 1, 0,
                            0, 0, a->query_offsets_strides);
  if (info->key_offsets)
    fmha_kernels_set_tensor(&tensors[i++], a->key_offsets, a->batch + 1, 0,
                            0, 0, a->key_offsets_strides);
  /* max_query_length: an index, its value the size. */
  if (info->query_offsets)
    fmha_kernels_set_tensor(&tensors[i++], NULL, a->max_query_length, 0, 0,
                            0, NULL);
  /* Per-sequence key lengths launch one CTA per unit of work, as the JIT
     does: their units differ in cost by up to the cache length, and a
     persistent grid's fixed stride leaves the CTAs that drew long ones
     the last, where the hardware hands each unit to the first SM free. */
  return fmha_kernels_launch_kernel(
      module, k, tensors, info->key_lengths ? 0 : module->multiprocessors,
      stream);
}
#endif

#if FMHA_KERNELS_ATTENTION_GRAD_KERNELS
/* fmha.attention_grad kernel k: the launch operands q, k, v, o, dout, lse,
   dq, dk, dv, delta[, dq_accum[, dq_order]]. */
static fmha_kernels_status fmha_kernels_launch_attention_grad_kernel(
    fmha_kernels_module *module, int k,
    const fmha_kernels_attention_grad_args *a, CUstream stream) {
  const fmha_kernels_kernel_info *info = &fmha_kernels_kernels[k];
  const char *kernel = info->name;
  /* q, k, dq and dk have the head dim; v, o, dout and dv v's. */
  const int64_t d = info->head_dim, dv = info->value_head_dim;
  fmha_kernels_tensor tensors[FMHA_KERNELS_MAX_OPERANDS];
  int i;
  fmha_kernels_status status = fmha_kernels_check_loaded(module, kernel, a);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  status = fmha_kernels_check_attention_sizes(
      module, kernel, a->batch, a->q_heads, a->kv_heads, a->q_seq, a->k_seq);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  /* As the JIT's backward: the dk/dv kernels run over the keys whatever
     the queries, and a TMA map cannot describe an empty q. */
  if (a->batch > 0 && (a->q_heads < 1 || a->q_seq < 1 || a->k_seq < 1)) {
    char what[160];
    snprintf(what, sizeof what, "q_heads (%lld), q_seq (%lld) and k_seq "
             "(%lld) must be >= 1 (a batch of 0 launches nothing)",
             (long long)a->q_heads, (long long)a->q_seq, (long long)a->k_seq);
    return fmha_kernels_invalid(module, kernel, what);
  }
  /* Scratch, which the kernel zeroes: dq_accum f32 [B, Hq, Sq, D], dq_order
     int32 [B, Hq, ceil(Sq / FMHA_KERNELS_DQ_ORDER_ROWS)]. */
  status = fmha_kernels_check_optional(
      module, kernel, "dq_accum", "uses", info->dq_accum, a->dq_accum != NULL,
      "--deterministic=false or --dq-order");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(module, kernel, "dq_order", "uses",
                                         info->dq_order, a->dq_order != NULL,
                                         "--dq-order");
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  fmha_kernels_set_tensor(&tensors[0], a->q, a->batch, a->q_heads, a->q_seq,
                          d, a->q_strides);
  fmha_kernels_set_tensor(&tensors[1], a->k, a->batch, a->kv_heads, a->k_seq,
                          d, a->k_strides);
  fmha_kernels_set_tensor(&tensors[2], a->v, a->batch, a->kv_heads, a->k_seq,
                          dv, a->v_strides);
  fmha_kernels_set_tensor(&tensors[3], a->o, a->batch, a->q_heads, a->q_seq,
                          dv, a->o_strides);
  fmha_kernels_set_tensor(&tensors[4], a->dout, a->batch, a->q_heads,
                          a->q_seq, dv, a->dout_strides);
  fmha_kernels_set_tensor(&tensors[5], a->lse, a->batch, a->q_heads, a->q_seq,
                          0, a->lse_strides);
  fmha_kernels_set_tensor(&tensors[6], a->dq, a->batch, a->q_heads, a->q_seq,
                          d, a->dq_strides);
  fmha_kernels_set_tensor(&tensors[7], a->dk, a->batch, a->kv_heads,
                          a->k_seq, d, a->dk_strides);
  fmha_kernels_set_tensor(&tensors[8], a->dv, a->batch, a->kv_heads,
                          a->k_seq, dv, a->dv_strides);
  fmha_kernels_set_tensor(&tensors[9], a->delta, a->batch, a->q_heads,
                          a->q_seq, 0, a->delta_strides);
  if (info->dq_accum) {
    /* The dq_accum kernels read lse, delta and dq_order at 32-bit element
       offsets, as the JIT's launch checks (TypedLaunch.cpp). */
    static const int offset32[] = {5, 9, 11};
    static const char *const offset32_names[] = {"lse", "delta", "dq_order"};
    fmha_kernels_set_tensor(&tensors[10], a->dq_accum, a->batch, a->q_heads,
                            a->q_seq, d, a->dq_accum_strides);
    if (info->dq_order)
      fmha_kernels_set_tensor(&tensors[11], a->dq_order, a->batch, a->q_heads,
                              (a->q_seq + FMHA_KERNELS_DQ_ORDER_ROWS - 1) /
                                  FMHA_KERNELS_DQ_ORDER_ROWS,
                              0, a->dq_order_strides);
    for (i = 0; i < (info->dq_order ? 3 : 2); ++i) {
      const fmha_kernels_tensor *t = &tensors[offset32[i]];
      int64_t last = 0;
      if (t->sizes[0] > 0 && t->sizes[1] > 0 && t->sizes[2] > 0)
        last = (t->sizes[0] - 1) * t->strides[0] +
               (t->sizes[1] - 1) * t->strides[1] +
               (t->sizes[2] - 1) * t->strides[2];
      if (last > 2147483647) {
        char what[192];
        snprintf(what, sizeof what, "%s's last element is %lld elements from "
                 "its start, expected at most 2^31 - 1 for a kernel with "
                 "dq_accum", offset32_names[i], (long long)last);
        return fmha_kernels_invalid(module, kernel, what);
      }
    }
  }
  return fmha_kernels_launch_kernel(module, k, tensors,
                                    module->multiprocessors, stream);
}
#endif

#if FMHA_KERNELS_MERGE_ATTENTION_KERNELS
/* fmha.merge_attention kernel k: the launch operands outs, lses, o[, lse]. */
static fmha_kernels_status fmha_kernels_launch_merge_attention_kernel(
    fmha_kernels_module *module, int k,
    const fmha_kernels_merge_attention_args *a, CUstream stream) {
  const fmha_kernels_kernel_info *info = &fmha_kernels_kernels[k];
  const char *kernel = info->name;
  fmha_kernels_tensor tensors[FMHA_KERNELS_MAX_OPERANDS];
  int i;
  fmha_kernels_status status = fmha_kernels_check_loaded(module, kernel, a);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  if (a->states < 1 || a->batch < 0 || a->heads < 0 || a->q_seq < 0)
    return fmha_kernels_invalid(
        module, kernel,
        "states must be >= 1, and batch, heads and q_seq >= 0");
  status = fmha_kernels_check_optional(module, kernel, "lse", "writes",
                                       info->lse, a->lse != NULL,
                                       "an lse on the op");
  if (status == FMHA_KERNELS_SUCCESS)
    status = fmha_kernels_check_optional(
        module, kernel, "query_offsets", "reads", info->query_offsets,
        a->query_offsets != NULL, "query_offsets on the op");
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  if (info->query_offsets && a->sequences < 0)
    return fmha_kernels_invalid(module, kernel, "sequences must be >= 0");
  fmha_kernels_set_tensor(&tensors[0], a->outs, a->states, a->batch,
                          a->heads, a->q_seq, a->outs_strides);
  tensors[0].sizes[4] = info->head_dim;
  fmha_kernels_set_tensor(&tensors[1], a->lses, a->states, a->batch,
                          a->heads, a->q_seq, a->lses_strides);
  fmha_kernels_set_tensor(&tensors[2], a->o, a->batch, a->heads, a->q_seq,
                          info->head_dim, a->o_strides);
  i = 3;
  if (info->lse)
    fmha_kernels_set_tensor(&tensors[i++], a->lse, a->batch, a->heads,
                            a->q_seq, 0, a->lse_strides);
  if (info->query_offsets)
    fmha_kernels_set_tensor(&tensors[i++], a->query_offsets,
                            a->sequences + 1, 0, 0, 0,
                            a->query_offsets_strides);
  return fmha_kernels_launch_kernel(module, k, tensors,
                                    module->multiprocessors, stream);
}
#endif

#if FMHA_KERNELS_RESAMPLE_KERNELS
/* fmha.resample kernel k: the launch operands times..., values...,
   lengths... (one per stream), targets and out. */
static fmha_kernels_status fmha_kernels_launch_resample_kernel(
    fmha_kernels_module *module, int k, const fmha_kernels_resample_args *a,
    CUstream stream) {
  static const int64_t unit_stride[1] = {1};
  const fmha_kernels_kernel_info *info = &fmha_kernels_kernels[k];
  const char *kernel = info->name;
  const int streams = info->num_streams;
  fmha_kernels_tensor tensors[FMHA_KERNELS_MAX_OPERANDS];
  int64_t features = 0;
  int s, t = 0;
  fmha_kernels_status status = fmha_kernels_check_loaded(module, kernel, a);
  if (status != FMHA_KERNELS_SUCCESS)
    return status;
  if (a->num_streams != streams || !a->streams) {
    char what[128];
    snprintf(what, sizeof what, "the kernel resamples %d stream(s), got "
             "num_streams %d (streams %s)", streams, a->num_streams,
             a->streams ? "set" : "NULL");
    return fmha_kernels_invalid(module, kernel, what);
  }
  if (a->batch < 0 || a->targets < 0)
    return fmha_kernels_invalid(
        module, kernel, "batch and targets must be >= 0");
  for (s = 0; s < streams; ++s) {
    char what[160];
    if (a->batch > 0 && a->targets > 0 && a->streams[s].samples < 1) {
      snprintf(what, sizeof what, "stream %d: samples must be >= 1, got %lld",
               s, (long long)a->streams[s].samples);
      return fmha_kernels_invalid(module, kernel, what);
    }
    if (info->lengths != (a->streams[s].lengths != NULL)) {
      snprintf(what, sizeof what, "stream %d: lengths %s", s,
               info->lengths
                   ? "is NULL: the kernel was generated with lengths"
                   : "must be NULL: the kernel was generated without "
                     "lengths (regenerate with --lengths)");
      return fmha_kernels_invalid(module, kernel, what);
    }
  }
  for (s = 0; s < streams; ++s)
    fmha_kernels_set_tensor(
        &tensors[t++], a->streams[s].times, a->batch, a->streams[s].samples,
        0, 0, a->streams[s].times_strides);
  for (s = 0; s < streams; ++s) {
    fmha_kernels_set_tensor(
        &tensors[t++], a->streams[s].values, a->batch, a->streams[s].samples,
        info->features[s], 0, a->streams[s].values_strides);
    features += info->features[s];
  }
  for (s = 0; info->lengths && s < streams; ++s)
    fmha_kernels_set_tensor(
        &tensors[t++], a->streams[s].lengths, a->batch, 0, 0, 0, unit_stride);
  fmha_kernels_set_tensor(
      &tensors[t++], a->target_times, a->batch, a->targets, 0, 0,
      a->target_strides);
  fmha_kernels_set_tensor(
      &tensors[t], a->out, a->batch, a->targets, features, 0, a->out_strides);
  return fmha_kernels_launch_kernel(module, k, tensors,
                                    module->multiprocessors, stream);
}
#endif

/*===----------------------------------------------------------------------===*
 * The kernels
 *===----------------------------------------------------------------------===*/

/* fmha-aot:begin kernels */
fmha_kernels_status fmha_kernels_launch_attention(fmha_kernels_module *module,
    const fmha_kernels_attention_args *args, CUstream stream) {
  return fmha_kernels_launch_attention_kernel(module, 0, args, stream);
}

fmha_kernels_status fmha_kernels_launch_resample(fmha_kernels_module *module,
    const fmha_kernels_resample_args *args, CUstream stream) {
  return fmha_kernels_launch_resample_kernel(module, 1, args, stream);
}

fmha_kernels_status fmha_kernels_launch_attention_grad(fmha_kernels_module *module,
    const fmha_kernels_attention_grad_args *args, CUstream stream) {
  return fmha_kernels_launch_attention_grad_kernel(module, 2, args, stream);
}

static const int fmha_kernels_features_1[] = {8};

/* clang-format off: as fmha-aot writes it */
const fmha_kernels_kernel_info fmha_kernels_kernels[FMHA_KERNELS_NUM_KERNELS] = {
  {"attention", "attention", "bf16",
   64, 64, 1, 1, 0, 0, 0, {0, 0}, 1.250000000e-01f, 0.000000000e+00f,
   NULL, 0, NULL, 0,
   fmha_kernels_launch_attention, NULL, NULL,
   0, 0, 0, 0, 0, 0, NULL},
  {"resample", "resample", "f32",
   0, 0, 0, 0, 0, 0, 0, {0, 0}, 0.000000000e+00f, 0.000000000e+00f,
   "linear", 1, fmha_kernels_features_1, 0,
   NULL, NULL, fmha_kernels_launch_resample,
   0, 0, 0, 0, 0, 0, NULL},
  {"attention_grad", "attention_grad", "bf16",
   64, 64, 1, 0, 1, 0, 0, {0, 0}, 1.250000000e-01f, 0.000000000e+00f,
   NULL, 0, NULL, 0,
   NULL, fmha_kernels_launch_attention_grad, NULL,
   0, 0, 0, 0, 0, 0, NULL},
};
/* clang-format on */
/* fmha-aot:end kernels */
