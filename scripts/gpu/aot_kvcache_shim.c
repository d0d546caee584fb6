/* What scripts/gpu/aot_kvcache.py calls through ctypes: the generated
 * fmha_aot_kv.{h,c} (fmha-aot --name=fmha_aot_kv) behind a few plain
 * functions, one module per process, so that Python mirrors only the
 * attention and merge_attention args and the kernel info's fields it
 * reads. */

#include "fmha_aot_kv.h"

static fmha_aot_kv_module module;

int shim_load(void) { return (int)fmha_aot_kv_load(&module); }

const char *shim_message(void) { return module.message; }

const char *shim_arch(void) {
  return module.cubin >= 0 ? fmha_aot_kv_archs[module.cubin] : "none";
}

int shim_num_kernels(void) { return FMHA_AOT_KV_NUM_KERNELS; }

const fmha_aot_kv_kernel_info *shim_kernel(int k) {
  return &fmha_aot_kv_kernels[k];
}

/* The kernel info's flags that come after its launchers. */
int shim_sinks(int k) { return fmha_aot_kv_kernels[k].sinks; }
int shim_key_lengths(int k) { return fmha_aot_kv_kernels[k].key_lengths; }
int shim_page_size(int k) { return fmha_aot_kv_kernels[k].page_size; }
int shim_split_keys(int k) { return fmha_aot_kv_kernels[k].split_keys; }
int shim_query_offsets(int k) { return fmha_aot_kv_kernels[k].query_offsets; }

int shim_launch(int k, const fmha_aot_kv_attention_args *args,
                CUstream stream) {
  return (int)fmha_aot_kv_kernels[k].launch_attention(&module, args, stream);
}

int shim_launch_merge(int k, const fmha_aot_kv_merge_attention_args *args,
                      CUstream stream) {
  return (int)fmha_aot_kv_kernels[k].launch_merge_attention(&module, args,
                                                            stream);
}
