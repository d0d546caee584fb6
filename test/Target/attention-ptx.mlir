// RUN: fmha-compile %s --chip=sm_80 --ptx-isa=9.0 | FileCheck %s

// The generated sm_80 attention kernel as PTX: cp.async.cg 16-byte copies
// with zero-fill, ldmatrix (plain for Q and K, .trans for V) from 32-bit
// shared addresses plus immediate offsets, bf16 mma.sync m16n8k16 with f32
// accumulators, ex2.approx.ftz for the softmax, quad shuffles, and no calls
// or local memory left in the PTX.

// CHECK: .target sm_80
// CHECK-NOT: .func
// CHECK: .visible .entry attention(
// CHECK-DAG: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// CHECK-DAG: cp.async.wait_group 0;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{.*}}, [%r{{[0-9]+}}+{{[0-9]+}}];
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{.*}}, [%r{{[0-9]+}}+{{[0-9]+}}];
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-DAG: shfl.sync.bfly.b32
// CHECK-DAG: cvt.rn.bf16x2.f32
// CHECK-NOT: .local

func.func @attention(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                     %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>,
                     %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%k : memref<?x?x?x256xbf16>)
                 v(%v : memref<?x?x?x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}
