# -*- Python -*-
# lit configuration of the FlashCore regression tests (check-fmha).

import os
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
tools = [ToolSubst("fmha-opt", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
