"""Answer what a tool asks the client (toolhost:tool/client: forms, the client's model, its
roots) and receive its log messages, with the official MCP Python SDK's callbacks.

Run by tests/it/mcp.rs with the virtualenv scripts/setup creates, against the conformance tools
(tests/guests/mcptools). The user's toolhost.toml grants them `client = ["elicitation",
"roots"]`, and not sampling. In `legacy` mode (2025-11-25) the host sends the requests to the
client as they come; in `auto` mode (2026-07-28) they come as input-required results, which the
SDK answers through the same callbacks and retries with the request state. Prints a JSON summary
on the last line.

Usage: mcp_tool_asks.py TOOLHOST WORKSPACE MODE EXTENSION   (MODE: `legacy` or `auto`)
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def main(toolhost, workspace, mode, extension):
    env = {**get_default_environment(), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    params = StdioServerParameters(
        command=toolhost, args=["--workspace", workspace, "--extension", extension, "mcp"], env=env
    )
    forms, samplings, roots_asked, logs = [], [], [], []

    async def on_elicit(context, params):
        forms.append({"message": params.message, "schema": params.requested_schema})
        if "color" in json.dumps(params.requested_schema):
            return types.ElicitResult(action="accept", content={"color": "blue"})
        return types.ElicitResult(action="accept", content={"name": "Ada", "username": "ada", "email": "ada@example.org"})

    async def on_sample(context, params):
        samplings.append(params.model_dump(mode="json"))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi"), model="m"
        )

    async def on_roots(context):
        roots_asked.append(True)
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project")])

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    summary = {}
    extra = {"log_level": "info"} if mode == "auto" else {}
    async with Client(
        stdio_client(params),
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
        logging_callback=on_log,
        **extra,
    ) as client:
        if mode == "legacy":
            await client.set_logging_level("info")
        calls = {}
        for name, args in [
            ("test_elicitation", {"message": "Who are you?"}),
            ("test_input_required_result_list_roots", {}),
            ("test_input_required_result_multi_round", {}),
            # Sampling is not granted: refused before the client is asked.
            ("test_sampling", {"prompt": "Say hi"}),
            ("test_tool_with_logging", {}),
        ]:
            result = await client.call_tool(name, args)
            calls[name] = [text_of(result), result.is_error]
        summary["calls"] = calls
        # Give the last log messages a moment (they precede the response, but the callback
        # runs on the session's task).
        await anyio.sleep(0.2)
    summary["forms"] = forms
    summary["samplings"] = samplings
    summary["rootsAsked"] = len(roots_asked)
    summary["logs"] = logs
    # A client that declared none of it.
    async with Client(stdio_client(params), mode=mode) as client:
        try:
            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            summary["undeclared"] = {"result": [text_of(result), result.is_error]}
        except Exception as e:  # the server's JSON-RPC error
            summary["undeclared"] = {"error": str(e)}
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
