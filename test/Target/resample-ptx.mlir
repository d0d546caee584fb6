// RUN: fmha-compile %s --chip=sm_90a --ptx-isa=9.0 | FileCheck %s
// RUN: fmha-compile %s --chip=sm_80 --emit=link-log | FileCheck %s --check-prefix=LOG
// RUN: fmha-compile %s --chip=sm_90a --emit=link-log | FileCheck %s --check-prefix=LOG

// The generated resample kernel as PTX: 16-byte global loads and stores of
// the 32 bf16 features, the search results shared through a barrier, one fma
// per element, libdevice fully inlined (no .func left), and no spills or
// local memory.

// CHECK: .target sm_90a
// CHECK-NOT: .func
// CHECK: .visible .entry resample(
// CHECK: .maxntid 256, 1, 1
// CHECK: .minnctapersm 4
// CHECK: ld.global
// CHECK: bar.sync
// CHECK-DAG: ld.global.v4.b32
// CHECK-DAG: fma.rn.f32
// CHECK-DAG: st.global.v4.b32
// CHECK-NOT: .local

// LOG: Compiling entry function 'resample'
// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// LOG: Function properties for 'resample':
// LOG-NEXT: used {{[1-5]?[0-9]|6[0-4]}} registers, {{.*}} 0 bytes lmem

func.func @resample(%t0: memref<?x?xf32>, %x0: memref<?x?x32xbf16>, %n0: memref<?xi32>,
                    %tt: memref<?x?xf32>, %o: memref<?x?x32xbf16>) {
  fmha.resample linear times(%t0 : memref<?x?xf32>) values(%x0 : memref<?x?x32xbf16>)
      lengths(%n0 : memref<?xi32>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x32xbf16>)
  return
}
