/*===- FlashCore.h - C API of the FlashCore JIT -------------------*- C -*-===*\
|*                                                                            *|
|* Part of FlashCore. Every call returns a status; on failure it hands the    *|
|* caller a message it owns (free it with fmhaFreeMessage), so no error text *|
|* is ever truncated or lost. Thread-safe where the C++ JIT is.               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FMHA_C_FLASHCORE_H
#define FMHA_C_FLASHCORE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fmhaStatus {
  FMHA_SUCCESS = 0,
  /** A null handle or pointer, or an unknown chip name. */
  FMHA_ERROR_INVALID_ARGUMENT = 1,
  /** Anything else: no driver, compile error, launch error. */
  FMHA_ERROR_FAILED = 2,
} fmhaStatus;

typedef struct fmhaJit_ *fmhaJit;
/** Owned by its fmhaJit and valid until fmhaJitDestroy. */
typedef struct fmhaKernel_ *fmhaKernel;

typedef struct fmhaJitOptions {
  int device;
  /** "sm_80" or "sm_90a"; NULL picks the device's best. */
  const char *chip;
  /** NULL: the default cache directory; "": no disk cache. */
  const char *cacheDirectory;
  /** 0: the default bound. */
  unsigned long long cacheMaxBytes;
  /** NULL or "": no dumps. */
  const char *dumpDirectory;
} fmhaJitOptions;

/** Fills \p options with the defaults. */
void fmhaJitOptionsInit(fmhaJitOptions *options);

/** Creates a JIT for options->device. On failure *message (if message is
 *  not NULL) receives the reason; free it with fmhaFreeMessage. */
fmhaStatus fmhaJitCreate(const fmhaJitOptions *options, fmhaJit *jit,
                         char **message);
void fmhaJitDestroy(fmhaJit jit);

/** The kernel \p kernelName of MLIR \p source (one gpu.module). */
fmhaStatus fmhaJitGetKernelFromSource(fmhaJit jit, const char *source,
                                      const char *kernelName,
                                      fmhaKernel *kernel, char **message);

/** Launches \p kernel on \p stream (a CUstream; NULL is the default
 *  stream). \p arguments follow cuLaunchKernel. */
fmhaStatus fmhaKernelLaunch(fmhaKernel kernel, void *stream,
                            const unsigned grid[3], const unsigned block[3],
                            unsigned sharedBytes, void **arguments,
                            char **message);

void fmhaFreeMessage(char *message);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_C_FLASHCORE_H */
