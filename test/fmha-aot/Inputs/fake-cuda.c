/*===- fake-cuda.c - the driver calls of fmha-aot's code, on a CPU --------===*\
|*                                                                            *|
|* Part of FlashCore. Stands in for libcuda so that the generated loader and  *|
|* launchers run without a GPU: the device's compute capability comes from    *|
|* fake_major/fake_minor, and each launch is printed (grid, block, shared     *|
|* memory and the first 64 bits of each parameter up to the NULL that the     *|
|* generated launchers end their lists with) instead of run. A fake tensor    *|
|* map holds its base address in its first 64 bits.                          *|
\*===----------------------------------------------------------------------===*/

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int fake_major = 8, fake_minor = 0;
/* The per-block opt-in limit of shared memory of each compute capability
   (the CUDA C Programming Guide's table): 9.0 232448, 8.0 166912, and the
   101376 of 8.6 and 8.9 for the others. */
static int getMaxShared(void) {
  if (fake_major == 9)
    return 232448;
  if (fake_major == 8 && fake_minor == 0)
    return 166912;
  return 101376;
}
int fake_multiprocessors = 132;

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
  *name = error == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                                            : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  if (fake_major == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice device) {
  (void)device;
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = fake_major;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = fake_minor;
  else if (attribute == CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    *value = getMaxShared();
  else if (attribute == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    *value = fake_multiprocessors;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  /* fmha-aot embeds cubins only: ELF images. */
  if (memcmp(image, "\177ELF", 4) != 0)
    return CUDA_ERROR_INVALID_IMAGE;
  *module = (CUmodule)image;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  (void)module;
  printf("function: %s\n", name);
  *function = (CUfunction)name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  (void)function;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  printf("max dynamic shared: %d\n", value);
  return value > getMaxShared() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  (void)module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY,
                                unsigned gridZ, unsigned blockX,
                                unsigned blockY, unsigned blockZ,
                                unsigned sharedBytes, CUstream stream,
                                void **params, void **extra) {
  int i;
  (void)stream;
  (void)extra;
  printf("launch %s grid (%u, %u, %u) block (%u, %u, %u) shared %u\n",
         (const char *)f, gridX, gridY, gridZ, blockX, blockY, blockZ,
         sharedBytes);
  printf("params:");
  for (i = 0; params[i]; ++i)
    printf(" %lld", (long long)*(const int64_t *)params[i]);
  printf("\n");
  return CUDA_SUCCESS;
}

/* A launch with programmatic stream serialization (a dependent_launch
   kernel): the same line, marked. */
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **params, void **extra) {
  int dependent = config->numAttrs == 1 &&
                  config->attrs[0].id ==
                      CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
                  config->attrs[0].value.programmaticStreamSerializationAllowed;
  printf("%s", dependent ? "dependent " : "unexpected attributes: ");
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY,
                        config->gridDimZ, config->blockDimX, config->blockDimY,
                        config->blockDimZ, config->sharedMemBytes,
                        config->hStream, params, extra);
}

CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *base,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion,
    CUtensorMapFloatOOBfill fill) {
  cuuint32_t i;
  (void)elementStrides;
  (void)interleave;
  (void)fill;
  printf("tensor map: type %d base %lld dims", (int)type,
         (long long)(intptr_t)base);
  for (i = 0; i < rank; ++i)
    printf(" %llu", (unsigned long long)dims[i]);
  printf(" byte strides");
  for (i = 0; i + 1 < rank; ++i)
    printf(" %llu", (unsigned long long)strides[i]);
  printf(" box");
  for (i = 0; i < rank; ++i)
    printf(" %u", box[i]);
  printf(" swizzle %d promotion %d\n", (int)swizzle, (int)promotion);
  /* As the driver: strides are multiples of 16 bytes. */
  for (i = 0; i + 1 < rank; ++i)
    if (strides[i] % 16 != 0)
      return CUDA_ERROR_INVALID_VALUE;
  memset(map, 0, sizeof *map);
  memcpy(map, &base, sizeof base);
  return CUDA_SUCCESS;
}
