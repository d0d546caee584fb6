// RUN: fmha-opt %s -split-input-file -verify-diagnostics -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s

// max_shared_bytes: the 99 KB of an sm_86 or sm_89 GPU (101,376 bytes).
// sm_80's deterministic kernels past head dim 128 (tiles of 256 columns)
// take 131,584 bytes on the chip's 64 x 32 tiling (K and V, two buffers of
// Q and dO); under the limit their streamed blocks halve to 16 rows, still
// double-buffered: 65,536 + 32,768 + the LSE and delta's 256 = 98,560.
// The one-pass kernel (dq_accum) fits up to head dim 128.

// CHECK-LABEL: func.func @grad_d256_fits
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq {{.*}} threads in (%c128{{.*}} dynamic_shared_memory_size %c98560_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dk {{.*}} dynamic_shared_memory_size %c98560_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dv {{.*}} dynamic_shared_memory_size %c98560_i32
// CHECK: gpu.func @attention_grad_dq(
// CHECK-SAME: threads = 128, shared_bytes = 98560, grid = [ceildiv(q[2], 64), q[1], min(q[0], 65535)]
// CHECK: nvgpu.device_async_copy {{.*}} to memref<16x256xbf16, #gpu.address_space<workgroup>>
// CHECK: gpu.func @attention_grad_dk(
// CHECK-SAME: threads = 128, shared_bytes = 98560, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)]
func.func @grad_d256_fits(%q: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
      v(%q : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%q : memref<?x?x?x256xbf16>)
         dv(%q : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
         causal {max_shared_bytes = 101376 : i64}
  return
}

// -----

// Without the limit, the chip's tiling.
// CHECK-LABEL: func.func @grad_d256_chip
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq {{.*}} dynamic_shared_memory_size %c131584_i32
func.func @grad_d256_chip(%q: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
      v(%q : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%q : memref<?x?x?x256xbf16>)
         dv(%q : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
  return
}

// -----

// At head dim 128 the chip's 64 x 64 tiling already fits (99,328 bytes).
// CHECK-LABEL: func.func @grad_d128_fits_already
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq {{.*}} dynamic_shared_memory_size %c99328_i32
func.func @grad_d128_fits_already(%q: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xf16>) k(%q : memref<?x?x?x128xf16>)
      v(%q : memref<?x?x?x128xf16>) o(%q : memref<?x?x?x128xf16>)
      dout(%q : memref<?x?x?x128xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xf16>) dk(%q : memref<?x?x?x128xf16>)
         dv(%q : memref<?x?x?x128xf16>) delta(%lse : memref<?x?x?xf32>)
         {max_shared_bytes = 101376 : i64}
  return
}

// -----

// The one-pass kernel (dq_accum) at head dim 128: the chip's 128 keys x 64
// queries take 164,864 bytes; under the limit 64 keys (4 x 2 warps, 16 keys
// a warp) with one Q and dO buffer: K and V 32,768, Q and dO 32,768, the
// LSE and delta 512, dS^T and P^T 16,384.
// CHECK-LABEL: func.func @grad_d128_one_pass
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c82432_i32
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: threads = 256, shared_bytes = 82432, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)]
func.func @grad_d128_one_pass(%q: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                              %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
      v(%q : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%q : memref<?x?x?x128xbf16>)
         dv(%q : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) causal {max_shared_bytes = 101376 : i64}
  return
}

// -----

// At head dim 64 its streamed blocks halve: 128 keys x 64 queries, 99,328
// bytes.
// CHECK-LABEL: func.func @grad_d64_one_pass
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c99328_i32
func.func @grad_d64_one_pass(%q: memref<?x?x?x64xf16>, %lse: memref<?x?x?xf32>,
                             %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
      v(%q : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xf16>) dk(%q : memref<?x?x?x64xf16>)
         dv(%q : memref<?x?x?x64xf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>) {max_shared_bytes = 101376 : i64}
  return
}

// -----

// Past 128 the one-pass kernel has no tiling that fits 99 KB: refused, by
// name.
func.func @grad_d256_one_pass(%q: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>,
                              %acc: memref<?x?x?x256xf32>) {
  // expected-error @+1 {{'fmha.attention_grad' op max_shared_bytes is 101376, but kernel attention_grad_dkv on chip sm_80 takes 147968 bytes of shared memory a block at head dim 256; without dq_accum the deterministic kernels fit}}
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
      v(%q : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%q : memref<?x?x?x256xbf16>)
         dv(%q : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>) {max_shared_bytes = 101376 : i64}
  return
}

// -----

// A limit below what any tiling takes: refused, by name.
func.func @grad_d64_too_small(%q: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  // expected-error @+1 {{'fmha.attention_grad' op max_shared_bytes is 16384, but kernel attention_grad_dq on chip sm_80 takes 49664 bytes of shared memory a block at head dim 64}}
  fmha.attention_grad q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>)
      v(%q : memref<?x?x?x64xbf16>) o(%q : memref<?x?x?x64xbf16>)
      dout(%q : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xbf16>) dk(%q : memref<?x?x?x64xbf16>)
         dv(%q : memref<?x?x?x64xbf16>) delta(%lse : memref<?x?x?xf32>)
         {max_shared_bytes = 16384 : i64}
  return
}
