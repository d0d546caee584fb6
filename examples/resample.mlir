// Two sensor streams of a robot trajectory, an IMU (6 features at 200 Hz) and
// joint encoders (32 features at 50 Hz), resampled onto 30 Hz targets and
// fused into one [B, 60, 38] output by one kernel. Rows may hold fewer valid
// samples than S (per-row lengths).
func.func @fuse_imu_and_joints(%t_imu: memref<?x400xf32>,
                               %imu: memref<?x400x6xbf16>,
                               %n_imu: memref<?xi32>,
                               %t_joint: memref<?x100xf32>,
                               %joint: memref<?x100x32xbf16>,
                               %n_joint: memref<?xi32>,
                               %t_out: memref<?x60xf32>,
                               %out: memref<?x60x38xbf16>) {
  fmha.resample linear
      times(%t_imu, %t_joint : memref<?x400xf32>, memref<?x100xf32>)
      values(%imu, %joint : memref<?x400x6xbf16>, memref<?x100x32xbf16>)
      lengths(%n_imu, %n_joint : memref<?xi32>, memref<?xi32>)
      targets(%t_out : memref<?x60xf32>)
      -> out(%out : memref<?x60x38xbf16>)
  return
}
