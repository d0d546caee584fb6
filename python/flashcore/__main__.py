"""python -m flashcore: fmha-doctor's report; exit status 0 when FlashCore's
JIT can run kernels here."""

import sys

from ._capi import doctor

report, can_work = doctor()
sys.stdout.write(report)
sys.exit(0 if can_work else 1)
