"""What the MCP test scripts share: checks, waits and the processes found by a marker."""

import os
import sys
import tempfile
import time

import anyio

# Generous bounds for waiting on the server: a failure ends the wait, never a timing check.
DEADLINE_S = 60


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def call_with_progress(client, name, arguments):
    """Call a tool, keeping its progress notifications: the result, and each
    notification's (progress, message) in order."""
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    result = await client.call_tool(name, arguments, progress_callback=on_progress)
    return result, progress


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


TOKEN = "test-token-0123456789abcdef"


async def start_http(toolhost, args):
    """`toolhost ARGS mcp --http` on a free port with TOKEN: the process and its URL."""
    log_path = os.path.join(tempfile.mkdtemp(), "stderr")
    token_file = os.path.join(tempfile.mkdtemp(), "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    server = await anyio.open_process(
        [toolhost, *args, "mcp", "--http", "127.0.0.1:0", "--token-file", token_file],
        stdin=None, stdout=None, stderr=open(log_path, "w"))
    prefix = "toolhost mcp: listening on "

    def log():
        with open(log_path) as f:
            return f.read()

    url = await address_in(log, prefix)
    return server, url


async def address_in(log, prefix):
    """The rest of the first whole line of `log()` that starts with `prefix`, once written
    (a line read while it is being written would give a cut address)."""
    def address():
        whole = [l for l in log().splitlines(keepends=True) if l.endswith("\n")]
        return next((l[len(prefix):].strip() for l in whole if l.startswith(prefix)), None)

    await wait_until(lambda: address() is not None, "the server to print its address")
    return address()


def first_assertion(error):
    """The AssertionError inside anyio's exception groups, if any."""
    if isinstance(error, AssertionError):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_assertion(inner)
        if found is not None:
            return found
    return None


def run_script(main, usage, count):
    """Run `main` with the script's `count` arguments (else exit with `usage`); a failed check
    exits non-zero with its message alone, not anyio's exception groups."""
    if len(sys.argv) != count + 1:
        sys.exit(usage)
    try:
        anyio.run(main, *sys.argv[1:])
    except BaseException as error:
        failed = first_assertion(error)
        if failed is None:
            raise
        sys.exit(f"FAILED: {failed}")
