/* What scripts/gpu/aot_backward.py calls through ctypes: the generated
 * fmha_aot_grad.{h,c} (fmha-aot --name=fmha_aot_grad) behind a few plain
 * functions, one module per process, so that Python mirrors only the
 * attention_grad args and the leading fields of the kernel info. */

#include "fmha_aot_grad.h"

static fmha_aot_grad_module module;

int shim_load(void) { return (int)fmha_aot_grad_load(&module); }

const char *shim_message(void) { return module.message; }

const char *shim_arch(void) {
  return module.cubin >= 0 ? fmha_aot_grad_archs[module.cubin] : "none";
}

int shim_num_kernels(void) { return FMHA_AOT_GRAD_NUM_KERNELS; }

int shim_dq_order_rows(void) { return FMHA_AOT_GRAD_DQ_ORDER_ROWS; }

const fmha_aot_grad_kernel_info *shim_kernel(int k) {
  return &fmha_aot_grad_kernels[k];
}

int shim_launch(int k, const fmha_aot_grad_attention_grad_args *args,
                CUstream stream) {
  return (int)fmha_aot_grad_kernels[k].launch_attention_grad(&module, args,
                                                             stream);
}
