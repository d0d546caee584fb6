# Finds every external dependency and stops configure with the Debian package
# (or install) that provides it when one is missing. scripts/setup.sh installs
# all of them.

# LLVM/MLIR 22 from Debian. MLIR_DIR or CMAKE_PREFIX_PATH override the default.
set(FLASHCORE_LLVM_ROOT "/usr/lib/llvm-22" CACHE PATH "Root of the LLVM/MLIR 22 installation")
find_package(MLIR CONFIG HINTS "${FLASHCORE_LLVM_ROOT}/lib/cmake/mlir")
if(NOT MLIR_FOUND)
  message(FATAL_ERROR
    "MLIR 22 not found (looked in ${FLASHCORE_LLVM_ROOT}/lib/cmake/mlir). "
    "Install Debian's 'libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools libzstd-dev' "
    "(scripts/setup.sh does), or pass -DMLIR_DIR=<prefix>/lib/cmake/mlir.")
endif()
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "found LLVM ${LLVM_PACKAGE_VERSION} at ${LLVM_DIR}, expected 22: "
    "install Debian's 'llvm-22-dev' and pass -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir")
endif()
# LLVMSupport links zstd::libzstd_shared; without libzstd-dev the failure is obscure.
find_library(FLASHCORE_ZSTD_LIB zstd)
if(NOT FLASHCORE_ZSTD_LIB)
  message(FATAL_ERROR "libzstd not found: install Debian's 'libzstd-dev'")
endif()
message(STATUS "Using MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

# lit and FileCheck come from llvm-22-tools, never the unsuffixed /usr/bin ones.
set(LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}" CACHE PATH "Directory with FileCheck, not, count")
foreach(tool FileCheck not count lit)
  if(NOT EXISTS "${LLVM_TOOLS_DIR}/${tool}")
    message(FATAL_ERROR "${LLVM_TOOLS_DIR}/${tool} not found: install Debian's 'llvm-22-tools'")
  endif()
endforeach()
set(LLVM_EXTERNAL_LIT "${LLVM_TOOLS_DIR}/lit" CACHE FILEPATH "lit driver")

# CUDA toolkit: headers and nvJitLink. No driver and no GPU are needed to build.
if(DEFINED ENV{CUDA_HOME})
  set(FLASHCORE_CUDA_HOME_DEFAULT "$ENV{CUDA_HOME}")
else()
  set(FLASHCORE_CUDA_HOME_DEFAULT "/usr/local/cuda")
endif()
set(CUDA_HOME "${FLASHCORE_CUDA_HOME_DEFAULT}" CACHE PATH "CUDA toolkit root (the CUDA_HOME environment variable overrides the default)")
find_path(FLASHCORE_CUDA_INCLUDE_DIR cuda.h PATHS "${CUDA_HOME}/include" NO_DEFAULT_PATH)
find_path(FLASHCORE_NVJITLINK_INCLUDE_DIR nvJitLink.h PATHS "${CUDA_HOME}/include" NO_DEFAULT_PATH)
find_library(FLASHCORE_NVJITLINK_LIB nvJitLink PATHS "${CUDA_HOME}/lib64" "${CUDA_HOME}/lib" NO_DEFAULT_PATH)
if(NOT FLASHCORE_CUDA_INCLUDE_DIR OR NOT FLASHCORE_NVJITLINK_INCLUDE_DIR OR NOT FLASHCORE_NVJITLINK_LIB)
  message(FATAL_ERROR
    "CUDA toolkit incomplete at CUDA_HOME=${CUDA_HOME} (need include/cuda.h, include/nvJitLink.h, lib64/libnvJitLink.so): "
    "install NVIDIA's CUDA 13 toolkit (apt packages 'cuda-cudart-dev-13-0 libnvjitlink-dev-13-0' from NVIDIA's repository) "
    "or set CUDA_HOME to its root")
endif()
message(STATUS "Using CUDA toolkit at ${CUDA_HOME}")

# NVIDIA's PTX compiler library (static), for fmha-aot's whole-program
# compile: the toolkit's, or PyPI's that scripts/setup.sh installs.
set(FLASHCORE_PTXCOMPILER_HINTS "${CUDA_HOME}" "${CMAKE_SOURCE_DIR}/.tools/ptxcompiler/nvidia/cu13")
find_path(FLASHCORE_PTXCOMPILER_INCLUDE_DIR nvPTXCompiler.h PATHS ${FLASHCORE_PTXCOMPILER_HINTS}
  PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(FLASHCORE_PTXCOMPILER_LIB libnvptxcompiler_static.a PATHS ${FLASHCORE_PTXCOMPILER_HINTS}
  PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
if(NOT FLASHCORE_PTXCOMPILER_INCLUDE_DIR OR NOT FLASHCORE_PTXCOMPILER_LIB)
  message(FATAL_ERROR
    "NVIDIA's PTX compiler library not found (nvPTXCompiler.h, libnvptxcompiler_static.a under "
    "${CUDA_HOME} or .tools/ptxcompiler): run scripts/setup.sh, which installs PyPI's "
    "'nvidia-nvptxcompiler==13.0.88' there")
endif()

# GoogleTest for everything that is not IR.
find_package(GTest CONFIG)
if(NOT GTest_FOUND)
  message(FATAL_ERROR "GoogleTest not found: install Debian's 'libgtest-dev'")
endif()

# Link LLVM statically. Debian's MLIR archives name the shared libLLVM.so
# (150 MB, not on the GPU machine); replacing it by the static component
# archives gives self-contained tools that run on the GPU machine, which has
# no LLVM (../shared/TOOLCHAIN.md, "Linking").
option(FLASHCORE_STATIC_LLVM "Link LLVM's static component libraries instead of libLLVM.so" ON)
if(FLASHCORE_STATIC_LLVM)
  set(LLVM_LINK_LLVM_DYLIB OFF)
  llvm_map_components_to_libnames(FLASHCORE_LLVM_STATIC_LIBS
    AggressiveInstCombine Analysis AsmParser AsmPrinter BinaryFormat BitReader
    BitWriter CodeGen CodeGenTypes Core Coroutines Demangle FrontendOffloading
    FrontendOpenMP InstCombine Instrumentation IPO IRReader Linker MC MCParser
    NVPTXCodeGen NVPTXDesc NVPTXInfo ObjCARCOpts Object Passes ScalarOpts
    SelectionDAG Support Target TargetParser TransformUtils Vectorize)
  foreach(target ${MLIR_EXPORTED_TARGETS})
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
    if(libs AND "LLVM" IN_LIST libs)
      list(TRANSFORM libs REPLACE "^LLVM$" "${FLASHCORE_LLVM_STATIC_LIBS}")
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${libs}")
    endif()
  endforeach()
endif()

# nvcc for kernels-ref/ and harness/, from the same toolkit.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS "${CUDA_HOME}/bin/nvcc")
  set(CMAKE_CUDA_COMPILER "${CUDA_HOME}/bin/nvcc")
endif()
