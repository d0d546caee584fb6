// The reference resample that never writes the last target of a row, under
// another name: the harness self-test must reject it.
#define FMHA_REF_BROKEN_TAIL
#define fmhaRefResample fmhaBrokenTailResample
#include "resample.cu"
