// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s
// RUN: fmha-compile %s --chip=sm_90a --emit=link-log | FileCheck %s --check-prefix=LOG
// RUN: fmha-compile %s --chip=sm_80 --emit=link-log | FileCheck %s --check-prefix=LOG
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=SM90A

// fmha.merge_attention becomes one kernel for every chip: a warp per query
// row, 8 rows per CTA, the CTAs striding over ceil(Sq / 8) x H x B units.
// The lines below are the sm_80 lowering's; the kernel is the same for
// sm_90a.

// CHECK: func.func @merge(%[[OUTS:.+]]: memref<?x?x?x?x128xbf16>, %[[LSES:.+]]: memref<?x?x?x?xf32>, %[[O:.+]]: memref<?x?x?x128xbf16>, %[[LSE:.+]]: memref<?x?x?xf32>)
// CHECK: gpu.launch_func @fmha_kernels::@merge_attention blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c256,
// CHECK-NOT: fmha.merge_attention
// CHECK-NOT: griddepcontrol
// CHECK: gpu.func @merge_attention(
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [outs, lses, o, lse], threads = 256, shared_bytes = 0, grid = [min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1], parameters = [outs, lses, o, lse]>
// CHECK: %[[LANE:.+]] = arith.remui %thread_id_x, %{{.+}} : index
// CHECK: scf.for %[[UNIT:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// Pass 1: the largest finite lse, lane l over states l, l + 32, ..., then
// across the warp.
// CHECK: scf.for %{{.+}} = %[[LANE]] to %{{.+}} step %c32
// CHECK: memref.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<?x?x?x?xf32>
// CHECK: math.absf
// CHECK: arith.cmpf olt
// CHECK: arith.maximumf
// CHECK-COUNT-5: gpu.shuffle xor
// Pass 2: the sum of exp(lse_s - max), the same way.
// CHECK: scf.for %{{.+}} = %[[LANE]] to %{{.+}} step %c32
// CHECK: math.exp
// CHECK-COUNT-5: gpu.shuffle xor
// Pass 3: lane l accumulates columns l + 32 i (128 / 32 = 4 per lane), 8
// states a step, every load of the step (8 lses, 8 x 4 elements) before
// its first fma; then the last S mod 8 states one at a time.
// CHECK: %[[LN:.+]] = math.log
// CHECK: %[[TOTAL:.+]] = arith.addf %{{.+}}, %[[LN]] : f32
// CHECK: %[[REST:.+]] = arith.remui %{{.+}}, %c8
// CHECK: %[[GROUPED:.+]] = arith.subi %{{.+}}, %[[REST]]
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[GROUPED]] step %c8{{.*}} iter_args({{.+}}, {{.+}}, {{.+}}, {{.+}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-8: memref.load %[[OUTS]]{{.+}}
// CHECK-NOT: math.fma
// CHECK-COUNT-24: memref.load %[[OUTS]]
// CHECK-COUNT-32: math.fma
// CHECK: scf.for %{{.+}} = %[[GROUPED]] to
// CHECK-COUNT-4: memref.load %[[OUTS]]
// CHECK-COUNT-4: math.fma
// CHECK: arith.truncf {{.+}} : f32 to bf16
// CHECK: memref.store {{.+}}, %[[O]]
// A row no state saw a key for: +inf.
// CHECK: arith.select %{{.+}}, %[[TOTAL]], %{{.+}} : f32
// CHECK: memref.store {{.+}}, %[[LSE]]

// One CTA an SM suffices, so that ptxas keeps a step's loads in flight
// rather than holding the kernel to fewer registers for occupancy. On
// sm_90a the kernel is a dependent launch: it waits for the previous grid
// (the split kernel, whose states it reads) before its first global access.
// PTX: .entry merge_attention(
// PTX: .maxntid 256, 1, 1
// PTX-NEXT: .minnctapersm 1
// PTX-NOT: ld.global
// PTX: griddepcontrol.wait;
// PTX: ld.global

// SM90A: fmha.launch = #fmha.launch<operands = [outs, lses, o, lse], threads = 256, shared_bytes = 0, grid = [min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1], dependent_launch, parameters = [outs, lses, o, lse]>
// SM90A-NEXT: nvvm.griddepcontrol wait

// LOG: Function properties for 'merge_attention':
// LOG: 0 bytes lmem

func.func @merge(%outs: memref<?x?x?x?x128xbf16>, %lses: memref<?x?x?x?xf32>,
                 %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) {
  fmha.merge_attention outs(%outs : memref<?x?x?x?x128xbf16>) lses(%lses : memref<?x?x?x?xf32>)
                    -> o(%o : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
  return
}
