// The reference attention with a causal mask one key too wide, under another
// name: the harness self-test must reject it.
#define FMHA_REF_BROKEN_MASK
#define fmhaRefAttention fmhaBrokenMaskAttention
#include "attention.cu"
