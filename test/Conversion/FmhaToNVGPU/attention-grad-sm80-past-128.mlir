// RUN: fmha-opt %s -split-input-file -verify-diagnostics -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s

// sm_80's one-pass dk/dv kernel past head dim 128 (isSm80OnePassGradHeadDim):
// at 160 and 192, FlashAttention-2's 64 keys x 64 queries over a 4 x 2 grid
// of 8 warps for S^T and dP^T, each warp 16 keys; dK and dV over the same
// grid at 160 (half of D, 5 chunk pairs, a warp) and over 2 x 4 at 192 (32
// keys and 3 pairs); its tiles 192 columns wide: K and V, two buffers of Q
// and dO, the LSE and delta, dS^T and P^T, 164,864 bytes (an A100's CTA
// may have 166,912).
// Its copies take rows of 24 chunks with 192 of the 256 threads, 8 rows a
// pass. At 224 and 256 the same grid over tiles of 256 columns with one Q
// and dO buffer (two would pass 163 KB): 147,968 bytes. Other head dims
// past 128 keep the deterministic kernels.

// CHECK-LABEL: func.func @grad_d160
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c164864_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq_convert
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: threads = 256, shared_bytes = 164864, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)]
// CHECK: arith.cmpi slt, %{{.+}}, %c192_i32
// CHECK: nvgpu.device_async_copy {{.*}} to memref<64x192xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix {{.*}} : memref<64x192xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync
// CHECK: memref.atomic_rmw addf
func.func @grad_d160(%q: memref<?x?x?x160xbf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x160xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x160xbf16>) k(%q : memref<?x?x?x160xbf16>)
      v(%q : memref<?x?x?x160xbf16>) o(%q : memref<?x?x?x160xbf16>)
      dout(%q : memref<?x?x?x160xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x160xbf16>) dk(%q : memref<?x?x?x160xbf16>)
         dv(%q : memref<?x?x?x160xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x160xf32>) causal
  return
}

// -----

// CHECK-LABEL: func.func @grad_d192
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c164864_i32
func.func @grad_d192(%q: memref<?x?x?x192xf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x192xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xf16>) k(%q : memref<?x?x?x192xf16>)
      v(%q : memref<?x?x?x192xf16>) o(%q : memref<?x?x?x192xf16>)
      dout(%q : memref<?x?x?x192xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xf16>) dk(%q : memref<?x?x?x192xf16>)
         dv(%q : memref<?x?x?x192xf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @grad_d224
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c147968_i32
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: threads = 256, shared_bytes = 147968, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)]
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mma.sync
// One buffer: block n + 1's copies start after the barrier that follows
// block n's dK and dV GEMMs (their last reads of Q and dO), before its dQ
// atomics.
// CHECK: gpu.barrier
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NEXT: arith.cmpi slt
// CHECK-NEXT: scf.if
// CHECK: nvgpu.device_async_copy {{.*}} to memref<64x256xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: memref.atomic_rmw addf
func.func @grad_d224(%q: memref<?x?x?x224xbf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x224xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x224xbf16>) k(%q : memref<?x?x?x224xbf16>)
      v(%q : memref<?x?x?x224xbf16>) o(%q : memref<?x?x?x224xbf16>)
      dout(%q : memref<?x?x?x224xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x224xbf16>) dk(%q : memref<?x?x?x224xbf16>)
         dv(%q : memref<?x?x?x224xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x224xf32>) causal
  return
}

// -----

// CHECK-LABEL: func.func @grad_d256
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c147968_i32
func.func @grad_d256(%q: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xf16>) k(%q : memref<?x?x?x256xf16>)
      v(%q : memref<?x?x?x256xf16>) o(%q : memref<?x?x?x256xf16>)
      dout(%q : memref<?x?x?x256xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xf16>) dk(%q : memref<?x?x?x256xf16>)
         dv(%q : memref<?x?x?x256xf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>)
  return
}

// -----

// Between them D's halves are not whole chunk pairs (d176: 88 columns;
// d240: 120).
func.func @grad_d176(%q: memref<?x?x?x176xbf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x176xf32>) {
  // expected-error @+1 {{dq_accum at head dim 176 needs chip sm_90a, got sm_80 (whose kernel takes head dims up to 128, 160, 192, 224 and 256; without dq_accum the deterministic kernels run)}}
  fmha.attention_grad q(%q : memref<?x?x?x176xbf16>) k(%q : memref<?x?x?x176xbf16>)
      v(%q : memref<?x?x?x176xbf16>) o(%q : memref<?x?x?x176xbf16>)
      dout(%q : memref<?x?x?x176xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x176xbf16>) dk(%q : memref<?x?x?x176xbf16>)
         dv(%q : memref<?x?x?x176xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x176xf32>)
  return
}

// -----

func.func @grad_d240(%q: memref<?x?x?x240xbf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x240xf32>) {
  // expected-error @+1 {{dq_accum at head dim 240 needs chip sm_90a, got sm_80 (whose kernel takes head dims up to 128, 160, 192, 224 and 256; without dq_accum the deterministic kernels run)}}
  fmha.attention_grad q(%q : memref<?x?x?x240xbf16>) k(%q : memref<?x?x?x240xbf16>)
      v(%q : memref<?x?x?x240xbf16>) o(%q : memref<?x?x?x240xbf16>)
      dout(%q : memref<?x?x?x240xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x240xbf16>) dk(%q : memref<?x?x?x240xbf16>)
         dv(%q : memref<?x?x?x240xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x240xf32>)
  return
}
