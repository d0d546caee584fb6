# -*- Python -*-
# lit configuration that runs every GoogleTest binary under unittests/.

import os

import lit.formats

config.name = "FLASHCORE-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.fmha_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
