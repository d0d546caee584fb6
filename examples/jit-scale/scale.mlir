// The end-to-end example's kernel, written with upstream gpu, arith, scf and
// memref ops: x[i] *= s for i < n. The memref becomes five kernel parameters
// (allocated pointer, aligned pointer, offset, size, stride).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<?xf32>, %n: index, %s: f32) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.mulf %v, %s : f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
