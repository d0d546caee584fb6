// The reference attention that never writes the last query row, under
// another name: the harness self-test must reject it.
#define FMHA_REF_BROKEN_TAIL
#define fmhaRefAttention fmhaBrokenTailAttention
#include "attention.cu"
