#!/usr/bin/env python3
"""A small client of `toolhost serve` (JSON-RPC 2.0, one object per line), standard library only.

It starts `toolhost serve`, lists the active tools in OpenAI's format, runs the tool calls of an
assistant message as one batch, and prints each streamed event as a JSON line as it arrives,
then the batch's result (the tool-result messages and the terminate flag) as a last line.

    python3 examples/serve_client.py [--toolhost PATH] BATCH.json [-- TOOLHOST OPTIONS...]

    python3 examples/serve_client.py examples/demo-batch.json -- --all-tools

BATCH.json is an assistant message (see examples/demo-batch.json); `-` reads it from stdin.
The protocol is described in docs/protocol.md.
"""

import argparse
import itertools
import json
import queue
import subprocess
import sys
import threading


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(f"{error['message']} (code {error['code']})")
        self.code = error["code"]


class Toolhost:
    """A running `toolhost serve`. Requests may be sent from several threads at once."""

    def __init__(self, command):
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.pending = {}  # request id -> (response queue, event callback)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("method") == "batch/event":
                _, on_event = self.pending[message["params"]["id"]]
                on_event(message["params"]["event"])
            elif "id" in message:
                responses, _ = self.pending.pop(message["id"])
                responses.put(message)
        for responses, _ in list(self.pending.values()):
            responses.put({"error": {"code": -32000, "message": "toolhost exited"}})

    def request(self, method, params=None, on_event=None):
        """Send a request and wait for its response; batch events go to `on_event`."""
        request_id = next(self.ids)
        responses = queue.Queue()
        self.pending[request_id] = (responses, on_event)
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        response = responses.get()
        if "error" in response:
            raise RpcError(response["error"])
        return response["result"]

    def close(self):
        self.process.stdin.close()
        return self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolhost", default="toolhost", help="the toolhost binary (default: on PATH)")
    parser.add_argument("batch", help="an assistant message as JSON, or - for stdin")
    parser.add_argument("options", nargs="*", help="global toolhost options (after --)")
    args = parser.parse_args()

    text = sys.stdin.read() if args.batch == "-" else open(args.batch).read()
    message = json.loads(text)
    host = Toolhost([args.toolhost, *args.options, "serve"])
    try:
        tools = host.request("tools/list", {"format": "openai"})["tools"]
        names = ", ".join(t["function"]["name"] for t in tools)
        print(f"# {len(tools)} active tools: {names}", file=sys.stderr)

        def print_event(event):
            print(json.dumps(event), flush=True)

        result = host.request("batch/run", {"message": message}, on_event=print_event)
        print(json.dumps(result), flush=True)
    finally:
        host.close()


if __name__ == "__main__":
    main()
