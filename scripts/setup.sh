#!/usr/bin/env bash
# Installs what FlashCore's build and tests need from Debian's packages.
# Idempotent (installs only what is missing), non-interactive, and bounded in
# time (FLASHCORE_SETUP_TIMEOUT seconds per apt step, default 1200). The CUDA
# toolkit is not a Debian package: it is checked, and its absence explained.
set -euo pipefail

# LLVM/MLIR 22 and the test tools (../shared/TOOLCHAIN.md): lit, FileCheck,
# not and count come from llvm-22-tools; libzstd-dev because LLVMSupport links
# zstd; libgtest-dev for the unit tests.
PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libzstd-dev
          ninja-build cmake g++ python3 libgtest-dev)
TIMEOUT_S=${FLASHCORE_SETUP_TIMEOUT:-1200}

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
    sudo=(sudo -n)
  fi
  apt_get=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive timeout "$TIMEOUT_S"
           apt-get -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confold -q -y)
  "${apt_get[@]}" update >/dev/null
  "${apt_get[@]}" install --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: installed ${#missing[@]} packages"
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
for needed in include/cuda.h include/nvJitLink.h; do
  if [ ! -e "$cuda_home/$needed" ]; then
    echo "setup: $cuda_home/$needed not found: install NVIDIA's CUDA 13 toolkit" \
         "(cuda-cudart-dev-13-0, libnvjitlink-dev-13-0 from NVIDIA's apt repository)" \
         "or set CUDA_HOME to its root" >&2
    exit 1
  fi
done
echo "setup: CUDA toolkit at $cuda_home"

# cuobjdump (and the nvdisasm it runs) for the SASS tests: the CPU machines'
# toolkit lacks them, PyPI has them. Optional: without them those tests
# report UNSUPPORTED.
root=$(cd "$(dirname "$0")/.." && pwd)
pypi_dir=$root/.tools/pypi
pypi_bin=$pypi_dir/nvidia/cu13/bin
sass_wheels=(nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37)
if [ -x "$cuda_home/bin/cuobjdump" ] && [ -x "$cuda_home/bin/nvdisasm" ]; then
  echo "setup: cuobjdump and nvdisasm present"
elif [ -x "$pypi_bin/cuobjdump" ] && [ -x "$pypi_bin/nvdisasm" ]; then
  echo "setup: cuobjdump and nvdisasm present (PyPI)"
else
  rm -rf "$pypi_dir"
  if timeout 300 python3 -m pip install -q --disable-pip-version-check --no-deps \
       --target "$pypi_dir" "${sass_wheels[@]}" >/dev/null 2>&1; then
    echo "setup: installed ${sass_wheels[*]} from PyPI"
  else
    echo "setup: warning: could not install ${sass_wheels[*]} from PyPI; SASS tests will be unsupported" >&2
  fi
fi

# NVIDIA's PTX compiler library (ptxas as a static library, of the toolkit's
# version) for fmha-aot, which compiles each kernel as a whole program, as
# the driver's JIT does: nvJitLink's relocatable compile ignores setmaxnreg
# (sm_90a) and spills the sm_80 attention kernels. The toolkit's own copy if
# it has one, else PyPI's.
ptxcompiler_dir=$root/.tools/ptxcompiler
ptxcompiler_wheel=nvidia-nvptxcompiler==13.0.88
if [ -e "$cuda_home/lib64/libnvptxcompiler_static.a" ] && [ -e "$cuda_home/include/nvPTXCompiler.h" ]; then
  echo "setup: PTX compiler library present"
elif [ -e "$ptxcompiler_dir/nvidia/cu13/lib/libnvptxcompiler_static.a" ]; then
  echo "setup: PTX compiler library present (PyPI)"
else
  rm -rf "$ptxcompiler_dir"
  if ! timeout 300 python3 -m pip install -q --disable-pip-version-check --no-deps \
       --target "$ptxcompiler_dir" "$ptxcompiler_wheel" >/dev/null 2>&1; then
    echo "setup: could not install $ptxcompiler_wheel from PyPI (needed by fmha-aot):" \
         "install NVIDIA's libnvptxcompiler (cuda-nvcc-13-0) or make PyPI reachable" >&2
    exit 1
  fi
  echo "setup: installed $ptxcompiler_wheel from PyPI"
fi
