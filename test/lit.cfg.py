# -*- Python -*-
# lit configuration of the FlashCore regression tests (check-fmha).

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FLASHCORE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fmha_obj_root, "test")
# Unit/ has its own configuration (GoogleTest binaries).
config.excludes = ["Unit", "Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(
    ("%examples", os.path.join(os.path.dirname(config.test_source_root), "examples"))
)

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# FileCheck, not and count come from Debian's llvm-22-tools, never from /usr/bin
# (LLVM 14 there).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.fmha_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("fmha-opt", unresolved="fatal"),
    ToolSubst("fmha-compile", unresolved="fatal"),
    ToolSubst("jit-scale", unresolved="fatal"),
    ToolSubst("compile-stages", unresolved="fatal"),
    ToolSubst("fmha-doctor", unresolved="fatal"),
    ToolSubst("fmha-aot", unresolved="fatal"),
    ToolSubst("aot-consumer", unresolved="fatal"),
    ToolSubst("fmha-runner", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The C and C++ compilers of the build, for the code fmha-aot generates (no
# MLIR, no LLVM: cuda.h only, and a fake libcuda in test/fmha-aot/Inputs).
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%cuda_include", os.path.join(config.cuda_home, "include")))

# cuobjdump, for SASS checks: the toolkit's, or PyPI's that scripts/setup.sh
# installs under .tools/pypi (the CPU machines' toolkit has none).
source_root = os.path.dirname(config.test_source_root)
cuobjdump_dirs = [
    os.path.join(config.cuda_home, "bin"),
    os.path.join(source_root, ".tools", "pypi", "nvidia", "cu13", "bin"),
]
# cuobjdump runs nvdisasm from the same place, found through NVDISASM_PATH.
sass_dir = next((d for d in cuobjdump_dirs
                 if all(os.access(os.path.join(d, tool), os.X_OK)
                        for tool in ("cuobjdump", "nvdisasm"))), None)
if sass_dir:
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", os.path.join(sass_dir, "cuobjdump")))
    config.environment["NVDISASM_PATH"] = sass_dir

# ptxas, to compile PTX as a whole program the way the driver's JIT does
# (nvJitLink compiles it as relocatable code, which ignores setmaxnreg).
ptxas = os.path.join(config.cuda_home, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# GPU features, detected at lit time so that the same build reports GPU
# tests unsupported here and runs them on the GPU machine.
def detect_gpu():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None

capability = detect_gpu()
if capability:
    config.available_features.add("cuda-gpu")
    major, _, minor = capability.partition(".")
    if int(major) >= 8:
        config.available_features.add("sm_80")
    if capability == "9.0":
        config.available_features.add("sm_90a")
    lit_config.note(f"GPU tests enabled: compute capability {capability}")
else:
    lit_config.note("no GPU: tests that REQUIRE cuda-gpu are unsupported")
