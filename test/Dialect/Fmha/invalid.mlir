// RUN: fmha-opt %s -split-input-file -verify-diagnostics

// One case per verifier diagnostic; each names the bad value and what was
// expected.

// rank
func.func @case0(%q: memref<2x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{q must have rank 4 [B, H, S, D], got 'memref<2x64x128xbf16>'}}
  fmha.attention q(%q : memref<2x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// element type
func.func @case1(%q: memref<2x8x64x128xf32>, %k: memref<2x8x64x128xf32>, %v: memref<2x8x64x128xf32>, %o: memref<2x8x64x128xf32>) {
  // expected-error @+1 {{q element type must be f16 or bf16, got 'f32'}}
  fmha.attention q(%q : memref<2x8x64x128xf32>) k(%k : memref<2x8x64x128xf32>) v(%v : memref<2x8x64x128xf32>) -> o(%o : memref<2x8x64x128xf32>)
  return
}

// -----

// k element type
func.func @case2(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{k element type must match q ('bf16'), got 'f16'}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// o element type
func.func @case3(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xf16>) {
  // expected-error @+1 {{o element type must match q ('bf16'), got 'f16'}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xf16>)
  return
}

// -----

// dynamic head dim
func.func @case4(%q: memref<2x8x64x?xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{head dim (dim 3 of q) must be static: kernels are specialized on it, got 'memref<2x8x64x?xbf16>'}}
  fmha.attention q(%q : memref<2x8x64x?xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// unsupported head dim: not a multiple of 8
func.func @case5(%q: memref<2x8x64x76xbf16>, %k: memref<2x8x64x76xbf16>, %v: memref<2x8x64x76xbf16>, %o: memref<2x8x64x76xbf16>) {
  // expected-error @+1 {{head dim must be a multiple of 8 from 32 to 256, got 76}}
  fmha.attention q(%q : memref<2x8x64x76xbf16>) k(%k : memref<2x8x64x76xbf16>) v(%v : memref<2x8x64x76xbf16>) -> o(%o : memref<2x8x64x76xbf16>)
  return
}

// -----

// unsupported head dim: past 256
func.func @case5b(%q: memref<2x8x64x272xbf16>, %k: memref<2x8x64x272xbf16>, %v: memref<2x8x64x272xbf16>, %o: memref<2x8x64x272xbf16>) {
  // expected-error @+1 {{head dim must be a multiple of 8 from 32 to 256, got 272}}
  fmha.attention q(%q : memref<2x8x64x272xbf16>) k(%k : memref<2x8x64x272xbf16>) v(%v : memref<2x8x64x272xbf16>) -> o(%o : memref<2x8x64x272xbf16>)
  return
}

// -----

// unsupported head dim: under 32
func.func @case5c(%q: memref<2x8x64x16xbf16>, %k: memref<2x8x64x16xbf16>, %v: memref<2x8x64x16xbf16>, %o: memref<2x8x64x16xbf16>) {
  // expected-error @+1 {{head dim must be a multiple of 8 from 32 to 256, got 16}}
  fmha.attention q(%q : memref<2x8x64x16xbf16>) k(%k : memref<2x8x64x16xbf16>) v(%v : memref<2x8x64x16xbf16>) -> o(%o : memref<2x8x64x16xbf16>)
  return
}

// -----

// k head dim
func.func @case6(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x64xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{k head dim must match q's (128), got 64}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x64xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// v head dim: may differ from q's, but must be supported
func.func @case6b(%q: memref<2x8x64x192xbf16>, %k: memref<2x8x64x192xbf16>, %v: memref<2x8x64x76xbf16>, %o: memref<2x8x64x76xbf16>) {
  // expected-error @+1 {{v head dim (dim 3 of v) must be a multiple of 8 from 32 to 256, got 76}}
  fmha.attention q(%q : memref<2x8x64x192xbf16>) k(%k : memref<2x8x64x192xbf16>) v(%v : memref<2x8x64x76xbf16>) -> o(%o : memref<2x8x64x76xbf16>)
  return
}

// -----

// o head dim: v's
func.func @case6c(%q: memref<2x8x64x192xbf16>, %k: memref<2x8x64x192xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x192xbf16>) {
  // expected-error @+1 {{o head dim must match v's (128), got 192}}
  fmha.attention q(%q : memref<2x8x64x192xbf16>) k(%k : memref<2x8x64x192xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x192xbf16>)
  return
}

// -----

// dynamic v head dim
func.func @case6d(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x?xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{head dim (dim 3 of v) must be static: kernels are specialized on it, got 'memref<2x8x64x?xbf16>'}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x?xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// v batch
func.func @case7(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<3x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{v batch size must match q's (2), got 3}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<3x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// o heads
func.func @case8(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x4x64x128xbf16>) {
  // expected-error @+1 {{o head count must match q's (8), got 4}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x4x64x128xbf16>)
  return
}

// -----

// o sequence
func.func @case9(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x65x128xbf16>) {
  // expected-error @+1 {{o sequence length must match q's (64), got 65}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x65x128xbf16>)
  return
}

// -----

// v sequence
func.func @case10(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x32x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{v sequence length must match k's (64), got 32}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x32x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// v heads
func.func @case11(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x4x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{v head count must match k's (8), got 4}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x4x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// GQA ratio
func.func @case12(%q: memref<2x32x64x128xbf16>, %k: memref<2x12x64x128xbf16>, %v: memref<2x12x64x128xbf16>, %o: memref<2x32x64x128xbf16>) {
  // expected-error @+1 {{query heads Hq (32) must be a multiple of key/value heads Hkv (12)}}
  fmha.attention q(%q : memref<2x32x64x128xbf16>) k(%k : memref<2x12x64x128xbf16>) v(%v : memref<2x12x64x128xbf16>) -> o(%o : memref<2x32x64x128xbf16>)
  return
}

// -----

// empty query
func.func @case13(%q: memref<2x8x0x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x0x128xbf16>) {
  // expected-error @+1 {{query sequence length Sq must be at least 1, got 0}}
  fmha.attention q(%q : memref<2x8x0x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x0x128xbf16>)
  return
}

// -----

// empty keys
func.func @case14(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x0x128xbf16>, %v: memref<2x8x0x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{key sequence length Sk must be at least 1, got 0}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x0x128xbf16>) v(%v : memref<2x8x0x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
  return
}

// -----

// lse rank
func.func @case15(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>, %lse: memref<2x8xf32>) {
  // expected-error @+1 {{lse must have rank 3 [B, Hq, Sq], got 'memref<2x8xf32>'}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) lse(%lse : memref<2x8xf32>)
  return
}

// -----

// lse element type
func.func @case16(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>, %lse: memref<2x8x64xf16>) {
  // expected-error @+1 {{lse element type must be f32, got 'f16'}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) lse(%lse : memref<2x8x64xf16>)
  return
}

// -----

// lse sequence
func.func @case17(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>, %lse: memref<2x8x63xf32>) {
  // expected-error @+1 {{lse sequence length must match q's (64), got 63}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) lse(%lse : memref<2x8x63xf32>)
  return
}

// -----

// negative scale
func.func @case18(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) {scale = -1.0 : f32}
  return
}

// -----

// infinite scale
func.func @case19(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got INF}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) {scale = 0x7F800000 : f32}
  return
}

// -----

// window arity
func.func @case20(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{window must be [left, right], got 3 values}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) {window = array<i64: 128, 0, 4>}
  return
}

// -----

// negative window
func.func @case21(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{window sizes must be non-negative, got [-1, 0]}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) {window = array<i64: -1, 0>}
  return
}

// -----

// causal window
func.func @case22(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{a causal query sees no later key: window right must be 0, got 16}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) causal {window = array<i64: 128, 16>}
  return
}

// -----

// tile too large for the chip
func.func @case23(%q: memref<2x8x64x256xbf16>, %k: memref<2x8x64x256xbf16>, %v: memref<2x8x64x256xbf16>, %o: memref<2x8x64x256xbf16>) {
  // expected-error @+1 {{tile needs 328784 bytes of shared memory at head dim 256 ((block_m + 2 * stages * block_n) * 256 * 2 bytes + 1024 of alignment + 8 per mbarrier), but sm_90a allows 232448 per block}}
  fmha.attention q(%q : memref<2x8x64x256xbf16>) k(%k : memref<2x8x64x256xbf16>) v(%v : memref<2x8x64x256xbf16>) -> o(%o : memref<2x8x64x256xbf16>) {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>}
  return
}

// -----

// sm_90a: no room for O's own buffer (49 stages), nor to stage O in the last V buffer
func.func @case23b(%q: memref<2x8x64x64xbf16>, %k: memref<2x8x64x64xbf16>, %v: memref<2x8x64x64xbf16>, %o: memref<2x8x64x64xbf16>) {
  // expected-error @+1 {{sm_90a stages O in the last V buffer where a buffer of its own does not fit, 16 columns of every consumer warp's 16 rows at least: block_n must be at least 32 with 2 consumer warpgroups at head dim 64, got 16}}
  fmha.attention q(%q : memref<2x8x64x64xbf16>) k(%k : memref<2x8x64x64xbf16>) v(%v : memref<2x8x64x64xbf16>) -> o(%o : memref<2x8x64x64xbf16>) {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 16, warps = 12, stages = 49>}
  return
}

// -----

// sm_80 smem
func.func @case24(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+1 {{tile needs 196608 bytes of shared memory at head dim 128 ((block_m + 2 * stages * block_n) * 128 * 2 bytes), but sm_80 allows 166912 per block}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>) {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 8, stages = 5>}
  return
}

// -----

// sm_80 warp layout
func.func @case25(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: sm_80 stacks 4 warps of 16 query rows: block_m must be a multiple of 64, got 96}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 96, block_n = 64, warps = 4, stages = 1>}
  return
}

// -----

// sm_90a warpgroups
func.func @case26(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: sm_90a schedules whole warpgroups: warps must be a multiple of 4, got 6}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 64, warps = 6, stages = 2>}
  return
}

// -----

// sm_90a producer
func.func @case27(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: sm_90a needs a producer and at least one consumer warpgroup: warps must be at least 8, got 4}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 64, warps = 4, stages = 2>}
  return
}

// -----

// sm_90a consumer rows
func.func @case28(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: sm_90a gives each of 2 consumer warpgroups 64 query rows: block_m must be a multiple of 128, got 64}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 64, warps = 12, stages = 2>}
  return
}

// -----

// WGMMA N
func.func @case29(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: sm_90a uses block_n as a WGMMA N: it must be at most 256, got 272}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 272, warps = 12, stages = 1>}
  return
}

// -----

// block_n multiple
func.func @case30(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: block_n must be a multiple of 16 (the k extent of the P*V MMA), got 40}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 128, block_n = 40, warps = 4, stages = 1>}
  return
}

// -----

// zero stages
func.func @case31(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: block_m, block_n, warps and stages must be positive, got block_m = 128, block_n = 64, warps = 4, stages = 0}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 0>}
  return
}

// -----

// too many warps
func.func @case32(%q: memref<2x8x64x128xbf16>, %k: memref<2x8x64x128xbf16>, %v: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+2 {{invalid #fmha.tile: warps must be at most 32 (1024 threads per block), got 64}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%v : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 2048, block_n = 64, warps = 64, stages = 1>}
  return
}

// -----

// stream count
func.func @case33(%t0: memref<4x100xf32>, %t1: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{each stream needs one times and one values operand, got 2 times and 1 values}}
  fmha.resample linear times(%t0, %t1 : memref<4x100xf32>, memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// lengths count
func.func @case34(%t0: memref<4x100xf32>, %t1: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %x1: memref<4x100x8xbf16>, %n0: memref<4xi32>, %tt: memref<4x50xf32>, %o: memref<4x50x16xbf16>) {
  // expected-error @+1 {{lengths must be given for every stream or none: expected 2, got 1}}
  fmha.resample linear times(%t0, %t1 : memref<4x100xf32>, memref<4x100xf32>) values(%x0, %x1 : memref<4x100x8xbf16>, memref<4x100x8xbf16>) lengths(%n0 : memref<4xi32>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x16xbf16>)
  return
}

// -----

// target timestamps
func.func @case35(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf16>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{targets element type must be f32, got 'f16'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf16>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// targets rank
func.func @case36(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<200xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{targets must have rank 2 [B, T], got 'memref<200xf32>'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<200xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// value element type
func.func @case37(%t0: memref<4x100xf32>, %x0: memref<4x100x8xi8>, %tt: memref<4x50xf32>, %o: memref<4x50x8xi8>) {
  // expected-error @+1 {{out element type must be f32, f16 or bf16, got 'i8'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xi8>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xi8>)
  return
}

// -----

// source timestamps
func.func @case38(%t0: memref<4x100xf64>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{times #0 element type must be f32, got 'f64'}}
  fmha.resample linear times(%t0 : memref<4x100xf64>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// times rank
func.func @case39(%t0: memref<4x100x1xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{times #0 must have rank 2 [B, S], got 'memref<4x100x1xf32>'}}
  fmha.resample linear times(%t0 : memref<4x100x1xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// values vs out
func.func @case40(%t0: memref<4x100xf32>, %x0: memref<4x100x8xf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{values #0 element type must match out's ('bf16'), got 'f16'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// dynamic D
func.func @case41(%t0: memref<4x100xf32>, %x0: memref<4x100x?xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{values #0 feature dim D must be static: kernels are specialized on it, got 'memref<4x100x?xbf16>'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x?xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// samples
func.func @case42(%t0: memref<4x100xf32>, %x0: memref<4x99x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{values #0 sample count must match times #0's (100), got 99}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x99x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// feature sum
func.func @case43(%t0: memref<4x100xf32>, %t1: memref<4x30xf32>, %x0: memref<4x100x8xbf16>, %x1: memref<4x30x4xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x16xbf16>) {
  // expected-error @+1 {{out feature dim must be the sum of the streams' (8 + 4 = 12), got 16}}
  fmha.resample linear times(%t0, %t1 : memref<4x100xf32>, memref<4x30xf32>) values(%x0, %x1 : memref<4x100x8xbf16>, memref<4x30x4xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x16xbf16>)
  return
}

// -----

// lengths type
func.func @case44(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %n0: memref<4xi64>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{lengths #0 element type must be i32, got 'i64'}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) lengths(%n0 : memref<4xi64>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// lengths batch
func.func @case45(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %n0: memref<5xi32>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{lengths #0 batch size must match targets' (4), got 5}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) lengths(%n0 : memref<5xi32>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// times batch
func.func @case46(%t0: memref<3x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{times #0 batch size must match targets' (4), got 3}}
  fmha.resample linear times(%t0 : memref<3x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// target count
func.func @case47(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x51x8xbf16>) {
  // expected-error @+1 {{out target count must match targets' (50), got 51}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x51x8xbf16>)
  return
}

// -----

// no targets
func.func @case48(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x0xf32>, %o: memref<4x0x8xbf16>) {
  // expected-error @+1 {{target count T must be at least 1, got 0}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x0xf32>) -> out(%o : memref<4x0x8xbf16>)
  return
}

// -----

// no samples
func.func @case49(%t0: memref<4x0xf32>, %x0: memref<4x0x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{times #0 sample count S must be at least 1, got 0}}
  fmha.resample linear times(%t0 : memref<4x0xf32>) values(%x0 : memref<4x0x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// resample threads
func.func @case50(%t0: memref<4x100xf32>, %x0: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{invalid #fmha.resample_tile: threads must be a positive multiple of 32 and at most 1024, got 48}}
  fmha.resample linear times(%t0 : memref<4x100xf32>) values(%x0 : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>) {tile = #fmha.resample_tile<sm_80, block_t = 64, threads = 48>}
  return
}

// -----

// no stream at all (only reachable in generic form)
func.func @no_streams(%tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{needs at least one stream, got none}}
  "fmha.resample"(%tt, %o) <{mode = 0 : i32, operandSegmentSizes = array<i32: 0, 0, 0, 1, 1>}> : (memref<4x50xf32>, memref<4x50x8xbf16>) -> ()
  return
}

// -----

// plain sm_90 is not a chip
func.func @sm90(%q: memref<2x8x64x128xbf16>, %o: memref<2x8x64x128xbf16>) {
  // expected-error @+3 {{chip 'sm_90' is not supported: Hopper kernels need the arch-specific 'sm_90a' (WGMMA, TMA multicast and setmaxnreg do not exist in plain sm_90); expected sm_80 or sm_90a}}
  fmha.attention q(%q : memref<2x8x64x128xbf16>) k(%q : memref<2x8x64x128xbf16>) v(%q : memref<2x8x64x128xbf16>) -> o(%o : memref<2x8x64x128xbf16>)
                 // expected-error @+1 {{failed to parse Fmha_TileAttr parameter 'chip'}}
                 {tile = #fmha.tile<sm_90, block_m = 128, block_n = 128, warps = 12, stages = 2>}
  return
}

// -----

// unknown resample mode
func.func @mode(%t: memref<4x100xf32>, %x: memref<4x100x8xbf16>, %tt: memref<4x50xf32>, %o: memref<4x50x8xbf16>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'mode' [linear, nearest, previous]}}
  fmha.resample cubic times(%t : memref<4x100xf32>) values(%x : memref<4x100x8xbf16>) targets(%tt : memref<4x50xf32>) -> out(%o : memref<4x50x8xbf16>)
  return
}

// -----

// check_sorted: one i64 slot per stream
func.func @check_first_size(%t0: memref<4x100xf32>, %t1: memref<4x30xf32>, %first: memref<1xi64>) {
  // expected-error @+1 {{'fmha.check_sorted' op first size must match the stream count (2), got 1}}
  fmha.check_sorted times(%t0, %t1 : memref<4x100xf32>, memref<4x30xf32>) -> first(%first : memref<1xi64>)
  return
}

// -----

func.func @check_first_type(%t: memref<4x100xf32>, %first: memref<1xi32>) {
  // expected-error @+1 {{'fmha.check_sorted' op first element type must be i64, got 'i32'}}
  fmha.check_sorted times(%t : memref<4x100xf32>) -> first(%first : memref<1xi32>)
  return
}

// -----

func.func @check_times_type(%t: memref<4x100xf16>, %first: memref<1xi64>) {
  // expected-error @+1 {{'fmha.check_sorted' op times #0 element type must be f32, got 'f16'}}
  fmha.check_sorted times(%t : memref<4x100xf16>) -> first(%first : memref<1xi64>)
  return
}

// -----

func.func @check_batch(%t0: memref<4x100xf32>, %t1: memref<3x30xf32>, %first: memref<2xi64>) {
  // expected-error @+1 {{'fmha.check_sorted' op times #1 batch size must match times #0's (4), got 3}}
  fmha.check_sorted times(%t0, %t1 : memref<4x100xf32>, memref<3x30xf32>) -> first(%first : memref<2xi64>)
  return
}

// -----

func.func @check_lengths(%t0: memref<4x100xf32>, %t1: memref<4x30xf32>, %n: memref<4xi32>, %first: memref<2xi64>) {
  // expected-error @+1 {{'fmha.check_sorted' op lengths must be given for every stream or none: expected 2, got 1}}
  fmha.check_sorted times(%t0, %t1 : memref<4x100xf32>, memref<4x30xf32>) lengths(%n : memref<4xi32>) -> first(%first : memref<2xi64>)
  return
}

// -----

func.func @check_lengths_type(%t: memref<4x100xf32>, %n: memref<4xi64>, %first: memref<1xi64>) {
  // expected-error @+1 {{'fmha.check_sorted' op lengths #0 element type must be i32, got 'i64'}}
  fmha.check_sorted times(%t : memref<4x100xf32>) lengths(%n : memref<4xi64>) -> first(%first : memref<1xi64>)
  return
}

// -----

func.func @split_keys_without_lse(%q: memref<2x8x1x128xbf16>, %k: memref<2x8x64x128xbf16>, %o: memref<4x8x1x128xbf16>) {
  // expected-error @+1 {{split_keys needs an lse: merging the partial states weighs them by it}}
  fmha.attention q(%q : memref<2x8x1x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%k : memref<2x8x64x128xbf16>) -> o(%o : memref<4x8x1x128xbf16>) split_keys
  return
}

// -----

func.func @split_keys_batch(%q: memref<2x8x1x128xbf16>, %k: memref<2x8x64x128xbf16>, %o: memref<5x8x1x128xbf16>, %lse: memref<5x8x1xf32>) {
  // expected-error @+1 {{o batch size must be S * B (S >= 1 partial states of each of q's 2 batch entries) with split_keys, got 5}}
  fmha.attention q(%q : memref<2x8x1x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%k : memref<2x8x64x128xbf16>) -> o(%o : memref<5x8x1x128xbf16>) lse(%lse : memref<5x8x1xf32>) split_keys
  return
}

// -----

func.func @split_keys_lse_batch(%q: memref<2x8x1x128xbf16>, %k: memref<2x8x64x128xbf16>, %o: memref<4x8x1x128xbf16>, %lse: memref<6x8x1xf32>) {
  // expected-error @+1 {{lse batch size must match o's (4), got 6}}
  fmha.attention q(%q : memref<2x8x1x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%k : memref<2x8x64x128xbf16>) -> o(%o : memref<4x8x1x128xbf16>) lse(%lse : memref<6x8x1xf32>) split_keys
  return
}

// -----

func.func @o_batch_without_split_keys(%q: memref<2x8x1x128xbf16>, %k: memref<2x8x64x128xbf16>, %o: memref<4x8x1x128xbf16>) {
  // expected-error @+1 {{o batch size must match q's (2), got 4}}
  fmha.attention q(%q : memref<2x8x1x128xbf16>) k(%k : memref<2x8x64x128xbf16>) v(%k : memref<2x8x64x128xbf16>) -> o(%o : memref<4x8x1x128xbf16>)
  return
}

// -----

func.func @merge_rank(%outs: memref<2x8x1x128xbf16>, %lses: memref<2x8x1xf32>, %o: memref<8x1x128xbf16>) {
  // expected-error @+1 {{outs must have rank 5 [S, B, H, Sq, D], got 'memref<2x8x1x128xbf16>'}}
  fmha.merge_attention outs(%outs : memref<2x8x1x128xbf16>) lses(%lses : memref<2x8x1xf32>) -> o(%o : memref<8x1x128xbf16>)
  return
}

// -----

func.func @merge_element_type(%outs: memref<2x1x8x1x128xbf16>, %lses: memref<2x1x8x1xf32>, %o: memref<1x8x1x128xf16>) {
  // expected-error @+1 {{o element type must match outs ('bf16'), got 'f16'}}
  fmha.merge_attention outs(%outs : memref<2x1x8x1x128xbf16>) lses(%lses : memref<2x1x8x1xf32>) -> o(%o : memref<1x8x1x128xf16>)
  return
}

// -----

func.func @merge_lses_type(%outs: memref<2x1x8x1x128xf32>, %lses: memref<2x1x8x1xf16>, %o: memref<1x8x1x128xf32>) {
  // expected-error @+1 {{lses element type must be f32, got 'f16'}}
  fmha.merge_attention outs(%outs : memref<2x1x8x1x128xf32>) lses(%lses : memref<2x1x8x1xf16>) -> o(%o : memref<1x8x1x128xf32>)
  return
}

// -----

func.func @merge_outs_type(%outs: memref<2x1x8x1x128xi8>, %lses: memref<2x1x8x1xf32>, %o: memref<1x8x1x128xi8>) {
  // expected-error @+1 {{outs element type must be f16, bf16 or f32, got 'i8'}}
  fmha.merge_attention outs(%outs : memref<2x1x8x1x128xi8>) lses(%lses : memref<2x1x8x1xf32>) -> o(%o : memref<1x8x1x128xi8>)
  return
}

// -----

func.func @merge_dynamic_head_dim(%outs: memref<2x1x8x1x?xf32>, %lses: memref<2x1x8x1xf32>, %o: memref<1x8x1x?xf32>) {
  // expected-error @+1 {{head dim (dim 4 of outs) must be static and at least 1: kernels are specialized on it, got 'memref<2x1x8x1x?xf32>'}}
  fmha.merge_attention outs(%outs : memref<2x1x8x1x?xf32>) lses(%lses : memref<2x1x8x1xf32>) -> o(%o : memref<1x8x1x?xf32>)
  return
}

// -----

func.func @merge_no_states(%outs: memref<0x1x8x1x128xf32>, %lses: memref<0x1x8x1xf32>, %o: memref<1x8x1x128xf32>) {
  // expected-error @+1 {{state count S (dim 0 of outs) must be at least 1, got 0}}
  fmha.merge_attention outs(%outs : memref<0x1x8x1x128xf32>) lses(%lses : memref<0x1x8x1xf32>) -> o(%o : memref<1x8x1x128xf32>)
  return
}

// -----

func.func @merge_lses_states(%outs: memref<3x1x8x1x128xf32>, %lses: memref<2x1x8x1xf32>, %o: memref<1x8x1x128xf32>) {
  // expected-error @+1 {{lses state count must match outs' (3), got 2}}
  fmha.merge_attention outs(%outs : memref<3x1x8x1x128xf32>) lses(%lses : memref<2x1x8x1xf32>) -> o(%o : memref<1x8x1x128xf32>)
  return
}

// -----

func.func @merge_o_heads(%outs: memref<3x1x8x1x128xf32>, %lses: memref<3x1x8x1xf32>, %o: memref<1x4x1x128xf32>) {
  // expected-error @+1 {{o head count must match outs' (8), got 4}}
  fmha.merge_attention outs(%outs : memref<3x1x8x1x128xf32>) lses(%lses : memref<3x1x8x1xf32>) -> o(%o : memref<1x4x1x128xf32>)
  return
}

// -----

func.func @merge_lse_seq(%outs: memref<3x1x8x5x128xf32>, %lses: memref<3x1x8x5xf32>, %o: memref<1x8x5x128xf32>, %lse: memref<1x8x6xf32>) {
  // expected-error @+1 {{lse sequence length must match outs' (5), got 6}}
  fmha.merge_attention outs(%outs : memref<3x1x8x5x128xf32>) lses(%lses : memref<3x1x8x5xf32>) -> o(%o : memref<1x8x5x128xf32>) lse(%lse : memref<1x8x6xf32>)
  return
}

// -----

func.func @grad_softcap(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{softcap must be a positive finite f32, got -3}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>) {softcap = -3.0 : f32}
  return
}

// -----

func.func @grad_max_shared_bytes(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{max_shared_bytes must be positive (the shared memory a block may take on the device), got -1}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>) {max_shared_bytes = -1 : i64}
  return
}

// -----

func.func @grad_head_dim(%q: memref<1x8x100x52xbf16>, %k: memref<1x2x300x52xbf16>, %v: memref<1x2x300x52xbf16>, %dq: memref<1x8x100x52xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{head dim must be a multiple of 8 from 32 to 256, got 52}}
  fmha.attention_grad q(%q : memref<1x8x100x52xbf16>) k(%k : memref<1x2x300x52xbf16>) v(%v : memref<1x2x300x52xbf16>) o(%q : memref<1x8x100x52xbf16>) dout(%q : memref<1x8x100x52xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x52xbf16>) dk(%k : memref<1x2x300x52xbf16>) dv(%v : memref<1x2x300x52xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_value_head_dim(%q: memref<1x8x100x192xbf16>, %k: memref<1x2x300x192xbf16>, %v: memref<1x2x300x128xbf16>, %o: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{dv head dim must match v's (128), got 192}}
  fmha.attention_grad q(%q : memref<1x8x100x192xbf16>) k(%k : memref<1x2x300x192xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%o : memref<1x8x100x128xbf16>) dout(%o : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x192xbf16>) dk(%k : memref<1x2x300x192xbf16>) dv(%k : memref<1x2x300x192xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_value_head_dim_unsupported(%q: memref<1x8x100x192xbf16>, %k: memref<1x2x300x192xbf16>, %v: memref<1x2x300x20xbf16>, %o: memref<1x8x100x20xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{v's head dim must be a multiple of 8 from 32 to 256, got 20}}
  fmha.attention_grad q(%q : memref<1x8x100x192xbf16>) k(%k : memref<1x2x300x192xbf16>) v(%v : memref<1x2x300x20xbf16>) o(%o : memref<1x8x100x20xbf16>) dout(%o : memref<1x8x100x20xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x192xbf16>) dk(%k : memref<1x2x300x192xbf16>) dv(%v : memref<1x2x300x20xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_lse_type(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf16>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{lse element type must be f32, got 'f16'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf16>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_delta_rank(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100x1xf32>) {
  // expected-error @+1 {{delta must have rank 3 [B, Hq, Sq], got 'memref<1x8x100x1xf32>'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100x1xf32>)
  return
}

// -----

func.func @grad_dq_length(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x99x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{dq sequence length must match q's (100), got 99}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x99x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_v_heads(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x4x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{v head count must match k's (2), got 4}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x4x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x4x300x128xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_element_type(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{v element type must match q ('bf16'), got 'f16'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_group(%q: memref<1x6x100x128xbf16>, %k: memref<1x4x300x128xbf16>, %v: memref<1x4x300x128xbf16>, %dq: memref<1x6x100x128xbf16>, %lse: memref<1x6x100xf32>, %delta: memref<1x6x100xf32>) {
  // expected-error @+1 {{query heads Hq (6) must be a multiple of key/value heads Hkv (4)}}
  fmha.attention_grad q(%q : memref<1x6x100x128xbf16>) k(%k : memref<1x4x300x128xbf16>) v(%v : memref<1x4x300x128xbf16>) o(%q : memref<1x6x100x128xbf16>) dout(%q : memref<1x6x100x128xbf16>) lse(%lse : memref<1x6x100xf32>) -> dq(%dq : memref<1x6x100x128xbf16>) dk(%k : memref<1x4x300x128xbf16>) dv(%v : memref<1x4x300x128xbf16>) delta(%delta : memref<1x6x100xf32>)
  return
}

// -----

func.func @grad_lse_heads(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x4x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{lse head count must match q's (8), got 4}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x4x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>)
  return
}

// -----

func.func @grad_causal_window(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{a causal query sees no later key: window right must be 0, got 8}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>) causal {window = array<i64: 8, 8>}
  return
}

// -----

func.func @grad_scale(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %v: memref<1x2x300x128xbf16>, %dq: memref<1x8x100x128xbf16>, %lse: memref<1x8x100xf32>, %delta: memref<1x8x100xf32>) {
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%v : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%dq : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%v : memref<1x2x300x128xbf16>) delta(%delta : memref<1x8x100xf32>) {scale = -1.0 : f32}
  return
}

// -----

func.func @grad_accumulator_type(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xbf16>) {
  // expected-error @+1 {{dq_accum element type must be f32, got 'bf16'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xbf16>)
  return
}

// -----

func.func @grad_accumulator_rows(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x99x128xf32>) {
  // expected-error @+1 {{dq_accum sequence length must match q's (100), got 99}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x99x128xf32>)
  return
}

// -----

func.func @grad_accumulator_strides(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32, strided<[?, ?, ?, 1], offset: ?>>) {
  // expected-error @+1 {{dq_accum must be dense along its rows (strides [?, ?, 128, 1]: a block's rows are one range), got 'memref<1x8x100x128xf32, strided<[?, ?, ?, 1], offset: ?>>'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32, strided<[?, ?, ?, 1], offset: ?>>)
  return
}

// -----

func.func @grad_order_without_accumulator(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %order: memref<1x8x2xi32>) {
  // expected-error @+1 {{dq_order orders the adds into dq_accum: it needs dq_accum}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_order(%order : memref<1x8x2xi32>)
  return
}

// -----

func.func @grad_order_type(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %order: memref<1x8x2xi64>) {
  // expected-error @+1 {{dq_order element type must be i32, got 'i64'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dq_order(%order : memref<1x8x2xi64>)
  return
}

// -----

func.func @grad_order_blocks(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %order: memref<1x8x1xi32>) {
  // expected-error @+1 {{dq_order has 1 counters a head, expected ceil(Sq / 64) = 2 (one per block of 64 queries)}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dq_order(%order : memref<1x8x1xi32>)
  return
}

// -----

func.func @grad_order_heads(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %order: memref<1x2x2xi32>) {
  // expected-error @+1 {{dq_order head count must match q's (8), got 2}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dq_order(%order : memref<1x2x2xi32>)
  return
}

// -----

func.func @grad_partial_without_accumulator(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %p: memref<2x1x2x300x256xf32>) {
  // expected-error @+1 {{dkv_partial slices the group's query heads of the one-pass kernel: it needs dq_accum}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dkv_partial(%p : memref<2x1x2x300x256xf32>)
  return
}
// -----

func.func @grad_partial_rank(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %p: memref<1x2x300x256xf32>) {
  // expected-error @+1 {{dkv_partial must have rank 5 [S, B, Hkv, Sk, D + Dv]}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dkv_partial(%p : memref<1x2x300x256xf32>)
  return
}
// -----

func.func @grad_partial_type(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %p: memref<2x1x2x300x256xbf16>) {
  // expected-error @+1 {{dkv_partial element type must be f32, got 'bf16'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dkv_partial(%p : memref<2x1x2x300x256xbf16>)
  return
}
// -----

func.func @grad_partial_heads(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %p: memref<2x1x8x300x256xf32>) {
  // expected-error @+1 {{dkv_partial head count must match k's (2), got 8}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dkv_partial(%p : memref<2x1x8x300x256xf32>)
  return
}
// -----

func.func @grad_partial_row(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %p: memref<2x1x2x300x128xf32>) {
  // expected-error @+1 {{dkv_partial row must match D + Dv (256), got 128}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dkv_partial(%p : memref<2x1x2x300x128xf32>)
  return
}
// -----

func.func @grad_partial_strides(%q: memref<1x8x100x128xbf16>, %k: memref<1x2x300x128xbf16>, %lse: memref<1x8x100xf32>, %acc: memref<1x8x100x128xf32>, %p: memref<2x1x2x300x256xf32, strided<[?, ?, ?, 512, 1]>>) {
  // expected-error @+1 {{dkv_partial must be dense along its rows (strides [?, ?, ?, 256, 1]), got 'memref<2x1x2x300x256xf32, strided<[?, ?, ?, 512, 1]>>'}}
  fmha.attention_grad q(%q : memref<1x8x100x128xbf16>) k(%k : memref<1x2x300x128xbf16>) v(%k : memref<1x2x300x128xbf16>) o(%q : memref<1x8x100x128xbf16>) dout(%q : memref<1x8x100x128xbf16>) lse(%lse : memref<1x8x100xf32>) -> dq(%q : memref<1x8x100x128xbf16>) dk(%k : memref<1x2x300x128xbf16>) dv(%k : memref<1x2x300x128xbf16>) delta(%lse : memref<1x8x100xf32>) dq_accum(%acc : memref<1x8x100x128xf32>) dkv_partial(%p : memref<2x1x2x300x256xf32, strided<[?, ?, ?, 512, 1]>>)
  return
}

// -----

func.func @softcap_negative(%q: memref<1x8x100x64xbf16>) {
  // expected-error @+1 {{softcap must be a positive finite f32, got -3.000000e+00}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) {softcap = -3.0 : f32}
  return
}

// -----

func.func @softcap_zero(%q: memref<1x8x100x64xbf16>) {
  // expected-error @+1 {{softcap must be a positive finite f32, got 0.000000e+00}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) {softcap = 0.0 : f32}
  return
}

// -----

func.func @sinks_size(%q: memref<1x8x100x64xbf16>, %s: memref<4x100xf32>) {
  // expected-error @+1 {{sinks head count must match q's (8), got 4}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) sinks(%s : memref<4x100xf32>)
  return
}

// -----

func.func @sinks_rank(%q: memref<1x8x100x64xbf16>, %s: memref<8xf32>) {
  // expected-error @+1 {{sinks must have rank 2 [Hq, Sq], got 'memref<8xf32>'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) sinks(%s : memref<8xf32>)
  return
}

// -----

func.func @sinks_type(%q: memref<1x8x100x64xbf16>, %s: memref<8x100xf16>) {
  // expected-error @+1 {{sinks element type must be f32, got 'f16'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) sinks(%s : memref<8x100xf16>)
  return
}

// -----

func.func @key_lengths_size(%q: memref<2x8x100x64xbf16>, %l: memref<3xi32>) {
  // expected-error @+1 {{key_lengths size must match the sequence count (2), got 3}}
  fmha.attention q(%q : memref<2x8x100x64xbf16>) k(%q : memref<2x8x100x64xbf16>) v(%q : memref<2x8x100x64xbf16>) -> o(%q : memref<2x8x100x64xbf16>) key_lengths(%l : memref<3xi32>)
  return
}

// -----

func.func @key_lengths_type(%q: memref<2x8x100x64xbf16>, %l: memref<2xi64>) {
  // expected-error @+1 {{key_lengths element type must be i32, got 'i64'}}
  fmha.attention q(%q : memref<2x8x100x64xbf16>) k(%q : memref<2x8x100x64xbf16>) v(%q : memref<2x8x100x64xbf16>) -> o(%q : memref<2x8x100x64xbf16>) key_lengths(%l : memref<2xi64>)
  return
}

// -----

func.func @key_lengths_rank(%q: memref<2x8x100x64xbf16>, %l: memref<2x1xi32>) {
  // expected-error @+1 {{key_lengths must have rank 1 [B], got 'memref<2x1xi32>'}}
  fmha.attention q(%q : memref<2x8x100x64xbf16>) k(%q : memref<2x8x100x64xbf16>) v(%q : memref<2x8x100x64xbf16>) -> o(%q : memref<2x8x100x64xbf16>) key_lengths(%l : memref<2x1xi32>)
  return
}

// -----

func.func @page_table_batch(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x16x64xbf16>, %t: memref<3x4xi32>) {
  // expected-error @+1 {{page_table batch size must match the sequence count (2), got 3}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<3x4xi32>)
  return
}

// -----

func.func @page_table_type(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x16x64xbf16>, %t: memref<2x4xi64>) {
  // expected-error @+1 {{page_table element type must be i32, got 'i64'}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<2x4xi64>)
  return
}

// -----

func.func @page_table_rank(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x16x64xbf16>, %t: memref<8xi32>) {
  // expected-error @+1 {{page_table must have rank 2 [B, P], got 'memref<8xi32>'}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<8xi32>)
  return
}

// -----

func.func @page_size_dynamic(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x?x64xbf16>, %t: memref<2x4xi32>) {
  // expected-error @+1 {{with a page_table, k's page size (dim 2) must be a static multiple of 8, got 'memref<100x8x?x64xbf16>'}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x?x64xbf16>) v(%k : memref<100x8x?x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<2x4xi32>)
  return
}

// -----

func.func @page_size_multiple(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x12x64xbf16>, %t: memref<2x4xi32>) {
  // expected-error @+1 {{with a page_table, k's page size (dim 2) must be a static multiple of 8, got 'memref<100x8x12x64xbf16>'}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x12x64xbf16>) v(%k : memref<100x8x12x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<2x4xi32>)
  return
}

// -----

func.func @page_counts(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x16x64xbf16>, %v: memref<99x8x16x64xbf16>, %t: memref<2x4xi32>) {
  // expected-error @+1 {{v page count must match k's (100), got 99}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%v : memref<99x8x16x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>) page_table(%t : memref<2x4xi32>)
  return
}

// -----

func.func @pages_without_table(%q: memref<2x8x1x64xbf16>, %k: memref<100x8x16x64xbf16>) {
  // expected-error @+1 {{k batch size must match q's (2), got 100}}
  fmha.attention q(%q : memref<2x8x1x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<2x8x1x64xbf16>)
  return
}

// -----

// Variable-length batches: query_offsets, key_offsets, max_query_length.

func.func @key_offsets_without_query_offsets(%q: memref<1x8x100x64xbf16>, %ck: memref<3xi32>) {
  // expected-error @+1 {{key_offsets needs query_offsets (the sequences they delimit)}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) key_offsets(%ck : memref<3xi32>)
  return
}

// -----

func.func @max_query_length_without_query_offsets(%q: memref<1x8x100x64xbf16>, %m: index) {
  // expected-error @+1 {{max_query_length without query_offsets: it bounds the rows of a packed sequence}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_without_max_query_length(%q: memref<1x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %cq: memref<3xi32>) {
  // expected-error @+1 {{query_offsets needs max_query_length (the most rows a sequence has: it sizes the grid)}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<2x8x100x64xbf16>) v(%k : memref<2x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<3xi32>)
  return
}

// -----

func.func @query_offsets_rank(%q: memref<1x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %cq: memref<3x1xi32>, %m: index) {
  // expected-error @+1 {{query_offsets must have rank 1 [B + 1], got 'memref<3x1xi32>'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<2x8x100x64xbf16>) v(%k : memref<2x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<3x1xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_type(%q: memref<1x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %cq: memref<3xi64>, %m: index) {
  // expected-error @+1 {{query_offsets element type must be i32, got 'i64'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<2x8x100x64xbf16>) v(%k : memref<2x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<3xi64>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_empty(%q: memref<1x8x100x64xbf16>, %cq: memref<0xi32>, %m: index) {
  // expected-error @+1 {{query_offsets must have B + 1 >= 1 entries, got 0}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<0xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_split_keys_lse(%q: memref<1x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %o: memref<3x8x100x64xbf16>, %lse: memref<2x8x100xf32>, %cq: memref<3xi32>, %m: index) {
  // expected-error @+1 {{lse batch size must match o's (3), got 2}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<2x8x100x64xbf16>) v(%k : memref<2x8x100x64xbf16>) -> o(%o : memref<3x8x100x64xbf16>) lse(%lse : memref<2x8x100xf32>) query_offsets(%cq : memref<3xi32>) max_query_length(%m) split_keys
  return
}


// -----

func.func @query_offsets_batch(%q: memref<2x8x100x64xbf16>, %cq: memref<3xi32>, %m: index) {
  // expected-error @+1 {{with query_offsets, q's batch size must be 1 (the sequences packed as one entry), got 2}}
  fmha.attention q(%q : memref<2x8x100x64xbf16>) k(%q : memref<2x8x100x64xbf16>) v(%q : memref<2x8x100x64xbf16>) -> o(%q : memref<2x8x100x64xbf16>) query_offsets(%cq : memref<3xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_o_batch(%q: memref<1x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>, %cq: memref<3xi32>, %m: index) {
  // expected-error @+1 {{o batch size must match q's (1), got 2}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<2x8x100x64xbf16>) v(%k : memref<2x8x100x64xbf16>) -> o(%o : memref<2x8x100x64xbf16>) query_offsets(%cq : memref<3xi32>) max_query_length(%m)
  return
}

// -----

// Without key_offsets, k and v keep a batch entry per sequence.
func.func @query_offsets_k_batch(%q: memref<1x8x100x64xbf16>, %k: memref<3x8x100x64xbf16>, %cq: memref<5xi32>, %m: index) {
  // expected-error @+1 {{k batch size must match the sequence count (query_offsets' size - 1) (4), got 3}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<3x8x100x64xbf16>) v(%k : memref<3x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_v_batch(%q: memref<1x8x100x64xbf16>, %k: memref<4x8x100x64xbf16>, %v: memref<3x8x100x64xbf16>, %cq: memref<5xi32>, %m: index) {
  // expected-error @+1 {{v batch size must match the sequence count (query_offsets' size - 1) (4), got 3}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<4x8x100x64xbf16>) v(%v : memref<3x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_key_lengths_size(%q: memref<1x8x100x64xbf16>, %k: memref<4x8x100x64xbf16>, %l: memref<3xi32>, %cq: memref<5xi32>, %m: index) {
  // expected-error @+1 {{key_lengths size must match the sequence count (4), got 3}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<4x8x100x64xbf16>) v(%k : memref<4x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) key_lengths(%l : memref<3xi32>) query_offsets(%cq : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @query_offsets_page_table_batch(%q: memref<1x8x100x64xbf16>, %k: memref<100x8x16x64xbf16>, %t: memref<2x4xi32>, %cq: memref<5xi32>, %m: index) {
  // expected-error @+1 {{page_table batch size must match the sequence count (4), got 2}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) page_table(%t : memref<2x4xi32>) query_offsets(%cq : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @key_offsets_page_table(%q: memref<1x8x100x64xbf16>, %k: memref<100x8x16x64xbf16>, %t: memref<4x4xi32>, %cq: memref<5xi32>, %ck: memref<5xi32>, %m: index) {
  // expected-error @+1 {{key_offsets with a page_table: a paged sequence's keys are its pages}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<100x8x16x64xbf16>) v(%k : memref<100x8x16x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) page_table(%t : memref<4x4xi32>) query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @key_offsets_rank(%q: memref<1x8x100x64xbf16>, %cq: memref<5xi32>, %ck: memref<5x1xi32>, %m: index) {
  // expected-error @+1 {{key_offsets must have rank 1 [B + 1], got 'memref<5x1xi32>'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<5x1xi32>) max_query_length(%m)
  return
}

// -----

func.func @key_offsets_type(%q: memref<1x8x100x64xbf16>, %cq: memref<5xi32>, %ck: memref<5xf32>, %m: index) {
  // expected-error @+1 {{key_offsets element type must be i32, got 'f32'}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<5xf32>) max_query_length(%m)
  return
}

// -----

func.func @key_offsets_size(%q: memref<1x8x100x64xbf16>, %cq: memref<5xi32>, %ck: memref<4xi32>, %m: index) {
  // expected-error @+1 {{key_offsets size must match query_offsets' (5), got 4}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%q : memref<1x8x100x64xbf16>) v(%q : memref<1x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<4xi32>) max_query_length(%m)
  return
}

// -----

// With key_offsets, k and v are packed as one batch entry, like q.
func.func @key_offsets_k_batch(%q: memref<1x8x100x64xbf16>, %k: memref<4x8x100x64xbf16>, %cq: memref<5xi32>, %ck: memref<5xi32>, %m: index) {
  // expected-error @+1 {{k batch size must match q's (1), got 4}}
  fmha.attention q(%q : memref<1x8x100x64xbf16>) k(%k : memref<4x8x100x64xbf16>) v(%k : memref<4x8x100x64xbf16>) -> o(%q : memref<1x8x100x64xbf16>) query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<5xi32>) max_query_length(%m)
  return
}

// -----

func.func @merge_query_offsets_type(%outs: memref<2x1x8x10x64xbf16>, %lses: memref<2x1x8x10xf32>, %o: memref<1x8x10x64xbf16>, %cq: memref<3xi64>) {
  // expected-error @+1 {{query_offsets element type must be i32, got 'i64'}}
  fmha.merge_attention outs(%outs : memref<2x1x8x10x64xbf16>) lses(%lses : memref<2x1x8x10xf32>) -> o(%o : memref<1x8x10x64xbf16>) query_offsets(%cq : memref<3xi64>)
  return
}

// -----

func.func @merge_query_offsets_empty(%outs: memref<2x1x8x10x64xbf16>, %lses: memref<2x1x8x10xf32>, %o: memref<1x8x10x64xbf16>, %cq: memref<0xi32>) {
  // expected-error @+1 {{query_offsets must have N + 1 >= 1 entries, got 0}}
  fmha.merge_attention outs(%outs : memref<2x1x8x10x64xbf16>) lses(%lses : memref<2x1x8x10xf32>) -> o(%o : memref<1x8x10x64xbf16>) query_offsets(%cq : memref<0xi32>)
  return
}
