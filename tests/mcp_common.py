"""What the MCP test scripts share: checks, waits and the processes found by a marker."""

import os
import time

import anyio

# Generous bounds for waiting on the server: a failure ends the wait, never a timing check.
DEADLINE_S = 60


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def running(marker):
    """Whether a live process other than this script has `marker` in an argument."""
    for pid in os.listdir("/proc"):
        # This script has the markers among its own arguments.
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if any(marker.encode() in a for a in args) and state not in ("Z", "X"):
            return True
    return False


async def wait_until(predicate, what):
    end = time.monotonic() + DEADLINE_S
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"waited {DEADLINE_S}s for {what}")
        await anyio.sleep(0.05)
