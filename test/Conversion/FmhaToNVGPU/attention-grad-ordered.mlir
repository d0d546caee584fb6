// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: not fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80

// With dq_order, the sm_90a backward adds dq into dq_accum in a fixed
// order: delta also zeroes a counter per 64 queries; in the dk/dv kernel
// the key blocks launch from the last, and the dQ writer waits until its
// query block's counter reaches the key blocks after its own (an acquire
// load), orders that before its bulk reduce-add (a proxy fence), waits for
// the add to complete and counts it (a release add). sm_80's atomics have
// no order to keep: refused.

// CHECK: gpu.func @attention_grad_delta(
// CHECK-SAME: operands = [q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum, dq_order]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : memref<?x?x?xi32>
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: parameters = [tensor_map(q, bf16, box = [64, 64], swizzle = 128), tensor_map(k, bf16, box = [128, 64], swizzle = 128), tensor_map(v, bf16, box = [128, 64], swizzle = 128), tensor_map(dout, bf16, box = [64, 64], swizzle = 128), q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum, dq_order]>
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: scf.while
// CHECK: "ld.acquire.gpu.global.b32 $0, [$1];"
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: "red.release.gpu.global.add.u32 [$0], 1;"
// CHECK: nvvm.setmaxregister increase 240
// CHECK: gpu.func @attention_grad_dq_convert(

// SM80: error: 'fmha.attention_grad' op dq_order needs chip sm_90a (its kernel adds a block's dq with one bulk reduce that a counter can order), got sm_80; without dq_accum the backward is deterministic on every chip

func.func @grad_ordered(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                        %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>,
                        %order: memref<?x?x?xi32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) dq_order(%order : memref<?x?x?xi32>)
         causal {window = array<i64: 300, 0>}
  return
}
