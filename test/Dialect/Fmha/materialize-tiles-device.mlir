// RUN: fmha-opt %s -fmha-materialize-tiles="chip=sm_80 max-shared-bytes=101376" | FileCheck %s --check-prefix=SM86
// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_80 | FileCheck %s --check-prefix=A100
// RUN: fmha-opt %s -fmha-materialize-tiles="chip=sm_90a max-shared-bytes=101376" | FileCheck %s --check-prefix=SM90

// max-shared-bytes: the 99 KB a block may take on an sm_86 or sm_89 GPU,
// which runs sm_80's kernels (fmha-aot lowers its sm_86 and sm_89 cubins
// so, as the JIT does on such a GPU). The forward's default tiles fit it
// where the chip's do not; an attention_grad gets max_shared_bytes where
// its kernels must tile to fit it (getAttentionGradSharedLimit), and keeps
// the chip's otherwise, or its own. On sm_90a the one-pass backward runs on
// Hopper alone: no limit.

// SM86-LABEL: func @forward
// A100-LABEL: func @forward
func.func @forward(%q64: memref<?x?x?x64xbf16>, %q256: memref<?x?x?x256xbf16>) {
  // SM86: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>
  // A100: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>
  fmha.attention q(%q64 : memref<?x?x?x64xbf16>) k(%q64 : memref<?x?x?x64xbf16>) v(%q64 : memref<?x?x?x64xbf16>) -> o(%q64 : memref<?x?x?x64xbf16>)
  // SM86: tile = #fmha.tile<sm_80, block_m = 64, block_n = 64, warps = 4, stages = 1>
  // A100: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 8, stages = 1>
  fmha.attention q(%q256 : memref<?x?x?x256xbf16>) k(%q256 : memref<?x?x?x256xbf16>) v(%q256 : memref<?x?x?x256xbf16>) -> o(%q256 : memref<?x?x?x256xbf16>)
  return
}

// SM86-LABEL: func @backward
// A100-LABEL: func @backward
// SM90-LABEL: func @backward
func.func @backward(%q256: memref<?x?x?x256xbf16>, %q128: memref<?x?x?x128xbf16>,
                    %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>) {
  // The deterministic kernels past head dim 128 (131,584 bytes on the
  // chip's tiling).
  // SM86: fmha.attention_grad {{.*}} causal {max_shared_bytes = 101376 : i64}
  // A100: fmha.attention_grad {{.*}} causal{{$}}
  // SM90: fmha.attention_grad {{.*}} causal {max_shared_bytes = 101376 : i64}
  fmha.attention_grad q(%q256 : memref<?x?x?x256xbf16>) k(%q256 : memref<?x?x?x256xbf16>)
      v(%q256 : memref<?x?x?x256xbf16>) o(%q256 : memref<?x?x?x256xbf16>)
      dout(%q256 : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q256 : memref<?x?x?x256xbf16>) dk(%q256 : memref<?x?x?x256xbf16>)
         dv(%q256 : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>) causal
  // At head dim 128 they fit already (99,328 bytes).
  // SM86: fmha.attention_grad {{.*}} delta(%{{.*}} : memref<?x?x?xf32>){{$}}
  fmha.attention_grad q(%q128 : memref<?x?x?x128xbf16>) k(%q128 : memref<?x?x?x128xbf16>)
      v(%q128 : memref<?x?x?x128xbf16>) o(%q128 : memref<?x?x?x128xbf16>)
      dout(%q128 : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q128 : memref<?x?x?x128xbf16>) dk(%q128 : memref<?x?x?x128xbf16>)
         dv(%q128 : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
  // The one-pass kernel at head dim 128 (164,864 bytes on the chip's
  // tiling); Hopper's own one-pass kernel has no limit.
  // SM86: dq_accum({{.*}}) {max_shared_bytes = 101376 : i64}
  // A100: dq_accum({{.*}} : memref<?x?x?x128xf32>){{$}}
  // SM90: dq_accum({{.*}} : memref<?x?x?x128xf32>){{$}}
  fmha.attention_grad q(%q128 : memref<?x?x?x128xbf16>) k(%q128 : memref<?x?x?x128xbf16>)
      v(%q128 : memref<?x?x?x128xbf16>) o(%q128 : memref<?x?x?x128xbf16>)
      dout(%q128 : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q128 : memref<?x?x?x128xbf16>) dk(%q128 : memref<?x?x?x128xbf16>)
         dv(%q128 : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
  // An op's own limit stays.
  // SM86: causal {max_shared_bytes = 65536 : i64}
  fmha.attention_grad q(%q128 : memref<?x?x?x128xbf16>) k(%q128 : memref<?x?x?x128xbf16>)
      v(%q128 : memref<?x?x?x128xbf16>) o(%q128 : memref<?x?x?x128xbf16>)
      dout(%q128 : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q128 : memref<?x?x?x128xbf16>) dk(%q128 : memref<?x?x?x128xbf16>)
         dv(%q128 : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         causal {max_shared_bytes = 65536 : i64}
  return
}
