"""Stages for tests/test_offline_check.py, which runs check.py with ENGINE_CHECK_SELFTEST=<marker>
and ENGINE_CHECK_STAGES naming these (never part of a profile). Every process carries the marker
in its command line, so that the test can tell whether any survived.

  hang MARKER PART   writes a measurement to PART (as a benchmark writes its JSON), then hangs the
                     worst way a stage can: it ignores SIGINT and SIGTERM; its child, in the stage's
                     group, says which signal stopped it (the group's grace reached it); its
                     grandchild made a session of its own (as the engines a test starts do), ignores
                     SIGINT, SIGTERM and SIGHUP and holds the stage's output open, sleeping forever.
  after MARKER PART  writes a measurement and ends: a stage after the hanging one.
"""

import json
import os
import signal
import subprocess
import sys
import time


def measure(part: str, key: str, value: float) -> None:
    tmp = part + ".tmp"
    with open(tmp, "w") as f:
        json.dump({key: value, "ratios": {f"selftest {key}": value}}, f)
    os.replace(tmp, part)


def sleep_forever():
    while True:
        time.sleep(60)


def main():
    mode, marker = sys.argv[1], sys.argv[2]
    here = os.path.abspath(__file__)
    if mode == "after":
        measure(sys.argv[3], "selftest_after", 2.0)
        print(f"after: measured ({marker})", flush=True)
    elif mode == "hang":
        measure(sys.argv[3], "selftest_hang", 1.0)
        subprocess.Popen([sys.executable, here, "child", marker])
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)  # after starting the child, which must not inherit this
        print(f"hang: measured, now hanging ({marker})", flush=True)
        sleep_forever()
    elif mode == "child":
        subprocess.Popen([sys.executable, here, "escaped", marker], start_new_session=True)

        def stopped(signum, _frame):
            print(f"child: stopped by {signal.Signals(signum).name} ({marker})", flush=True)
            os._exit(0)

        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, stopped)
        sleep_forever()
    elif mode == "escaped":
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        print(f"escaped: sleeping in session {os.getsid(0)} ({marker})", flush=True)
        sleep_forever()


if __name__ == "__main__":
    main()
