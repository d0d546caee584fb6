"""The result table of the Python GPU checks (python_check.py,
aot_backward.py): each check runs a function, a failure is recorded with
its traceback printed, and the table comes last. A check that runs past
FLASHCORE_CHECK_SECONDS (default 300) ends the process with its name and
every thread's stack, so that a hang names itself instead of eating the
device call's time limit. FLASHCORE_CHECK_REPEAT (default 1) runs each
selected check that many times, on fresh inputs each round, to hunt an
intermittent failure or hang: one row, failing at the first bad round
(its number in the detail; the timeout names it too)."""

import faulthandler
import os
import re
import sys
import threading
import time
import traceback

results = []
# FLASHCORE_CHECKS (a regex): only the checks whose names it matches run.
_only = re.compile(os.environ.get("FLASHCORE_CHECKS", ""))
_limit = float(os.environ.get("FLASHCORE_CHECK_SECONDS", "300"))
_repeat = int(os.environ.get("FLASHCORE_CHECK_REPEAT", "1"))


def _time_out(name):
    print(f"TIMEOUT  {name}  (past {_limit:.0f} s; the stacks follow)",
          flush=True)
    faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
    sys.stdout.flush()
    os._exit(124)


def check(name, fn):
    """Runs fn (which returns a detail string or None, and raises on
    failure) as the check \\p name, FLASHCORE_CHECK_REPEAT times; one line
    per check as it completes."""
    if not _only.search(name):
        return
    start = time.monotonic()
    for attempt in range(1, _repeat + 1):
        label = name if _repeat == 1 else f"{name} (round {attempt}/{_repeat})"
        # The timer prints the name where the GIL is free (a wait in a CUDA
        # call releases it); faulthandler's own thread, which needs no GIL,
        # ends the process a little later if the timer could not.
        timer = threading.Timer(_limit, _time_out, args=(label,))
        timer.daemon = True
        timer.start()
        faulthandler.dump_traceback_later(_limit + 30, exit=True)
        try:
            detail = fn() or ""
            verdict = "PASS"
        except Exception as e:  # noqa: BLE001 - the table reports every failure
            verdict, detail = "FAIL", f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        finally:
            timer.cancel()
            faulthandler.cancel_dump_traceback_later()
        if verdict == "FAIL" or attempt == _repeat:
            if _repeat > 1:
                detail = (f"round {attempt}: {detail}" if verdict == "FAIL"
                          else f"{_repeat} rounds, the last: {detail}")
            results.append((name, verdict, detail))
            break
    # The seconds on the line (not in the table) tell a slow check from a
    # stuck one in a log cut off by the call's time limit.
    print(f"{results[-1][1]}  {name}  {results[-1][2]}  "
          f"({time.monotonic() - start:.1f} s)", flush=True)


def print_table(title):
    """The markdown table of every check, then `title: passed/total
    passed`; returns the exit status (0 when all passed and there was
    one)."""
    failed = [r for r in results if r[1] != "PASS"]
    print("\n| check | result | detail |\n|---|---|---|")
    for name, verdict, detail in results:
        print(f"| {name} | {verdict} | {detail} |")
    print(f"\n{title}: {len(results) - len(failed)}/{len(results)} passed")
    return 1 if failed or not results else 0
