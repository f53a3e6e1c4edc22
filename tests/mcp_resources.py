"""Resources, prompts and completions of `toolhost mcp`, driven by the official MCP Python SDK,
first as an attacker: no URI, prompt argument or completion may name what `read` could not
open, nor anything hidden (git's internals, toolhost's configuration, the user's secrets).

Run by tests/it/mcp_resources.rs. Each step asserts what it receives; any failure exits
non-zero with the reason. On success the last line of stdout is a JSON summary.

Usage: mcp_resources.py TOOLHOST WORKSPACE OUTSIDE EXTENSION MODE
  WORKSPACE is laid out by the test (see there); it is also $HOME, so the user's secret
  stores lie inside it. OUTSIDE is a file beside the workspace. EXTENSION is the conformance
  tools' directory (a manifest offering prompts and resources). MODE is `legacy` (the
  initialize handshake, resources/subscribe) or `auto` (2026-07-28, subscriptions/listen).
  MODE `off`: the user's toolhost.toml says `[mcp] resources = false`: no resources
  capability, nothing listed, every read refused naming the setting; prompts still served.
"""

import json
import os
import sys
import warnings

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_common import DEADLINE_S, check

warnings.simplefilter("ignore")


def file_uri(path):
    return "file://" + path


async def refusal(client, uri):
    """The error reading `uri` gets: (code, data's uri, message); fails on a result."""
    try:
        result = await client.read_resource(uri, cache_mode="bypass")
    except MCPError as e:
        return e.code, (e.data or {}).get("uri"), e.message
    raise AssertionError(f"{uri} was served: {result}")


async def all_pages(client):
    names, pages, cursor = [], 0, None
    while True:
        page = await client.list_resources(cursor=cursor, cache_mode="bypass")
        pages += 1
        names += [r.name for r in page.resources]
        for r in page.resources:
            check(r.uri.startswith("file://") or "://" in r.uri, f"listed {r}")
        cursor = page.next_cursor
        if not cursor:
            return names, pages
        check(pages < 100, "the listing does not end")


async def resources_off(client, workspace):
    """`[mcp] resources = false`: nothing of the workspace, nor of the extensions, is a
    resource."""
    check(client.server_capabilities.resources is None, f"{client.server_capabilities}")
    listed = await client.list_resources(cache_mode="bypass")
    check(listed.resources == [], f"listed with resources off: {listed}")
    templates = await client.list_resource_templates(cache_mode="bypass")
    check(templates.resource_templates == [], f"templates with resources off: {templates}")
    refused = {}
    for uri in [file_uri(f"{workspace}/a.txt"), "test://static-text"]:
        code, data_uri, message = await refusal(client, uri)
        check(code == -32602 and data_uri == uri, f"{uri}: {code} {data_uri}")
        refused[uri.split("/")[-1]] = message.replace(workspace, "WS")
    prompts = [p.name for p in (await client.list_prompts(cache_mode="bypass")).prompts]
    check("toolhost" in prompts, f"prompts with resources off: {prompts}")
    return {"refused": refused}


async def main(toolhost, workspace, outside, extension, mode):
    env = {**get_default_environment(), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
           "HOME": workspace, "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    params = StdioServerParameters(
        command=toolhost, args=["--workspace", workspace, "--extension", extension, "mcp"], env=env)
    errlog = open(os.path.join(os.path.dirname(outside), "stderr"), "w")
    summary = {}
    updates = []

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)

    forms = []

    async def on_elicit(context, params):
        forms.append(params.message)
        return types.ElicitResult(action="accept", content={"context": "from the person"})

    async with Client(stdio_client(params, errlog=errlog), mode="legacy" if mode == "off" else mode,
                      message_handler=on_message, elicitation_callback=on_elicit) as client:
        if mode == "off":
            print(json.dumps(await resources_off(client, workspace)))
            return
        caps = client.server_capabilities
        check(caps.resources is not None and caps.prompts is not None and caps.completions is not None,
              f"capabilities {caps}")
        summary["instructions"] = bool(client.instructions and "read" in client.instructions)

        # --- Attacks first: every way to name what read could not, or what is hidden.
        ws = workspace
        # A secret store made after the server started is hidden too.
        os.makedirs(os.path.join(ws, ".gnupg"))
        with open(os.path.join(ws, ".gnupg", "secring.gpg"), "w") as f:
            f.write("made later\n")
        attacks = {
            "outside": file_uri(outside),
            "passwd": "file:///etc/passwd",
            "dotdot": file_uri(f"{ws}/../{os.path.basename(outside)}"),
            "encodedDotdot": file_uri(f"{ws}/%2E%2E/{os.path.basename(outside)}"),
            "linkOut": file_uri(f"{ws}/link-out.txt"),
            "linkIn": file_uri(f"{ws}/link-in.txt"),
            "dirLinkToGit": file_uri(f"{ws}/gitdir/config"),
            "gitConfig": file_uri(f"{ws}/.git/config"),
            "gitHead": file_uri(f"{ws}/.git/HEAD"),
            "policy": file_uri(f"{ws}/toolhost.toml"),
            "dotToolhost": file_uri(f"{ws}/.toolhost/extensions/x.wasm"),
            "sshKey": file_uri(f"{ws}/.ssh/id_ed25519"),
            "awsCredentials": file_uri(f"{ws}/.aws/credentials"),
            "madeLater": file_uri(f"{ws}/.gnupg/secring.gpg"),
            "otherHost": f"file://evil.example{ws}/a.txt",
            "query": file_uri(f"{ws}/a.txt?x=1"),
            "nul": file_uri(f"{ws}/a.txt%00.png"),
            "otherScheme": f"http://127.0.0.1/{ws}/a.txt",
            "relative": "file:a.txt",
            "missing": file_uri(f"{ws}/missing.txt"),
            "directory": file_uri(f"{ws}/sub"),
            "tooLarge": file_uri(f"{ws}/big.bin"),
            "unknownScheme": "test://nonexistent-resource-for-conformance-testing",
        }
        refusals = {}
        for name, uri in attacks.items():
            code, data_uri, message = await refusal(client, uri)
            check(code == -32602, f"{name}: code {code} for {uri}: {message}")
            check(data_uri == uri, f"{name}: data.uri {data_uri!r}, not {uri!r}")
            check(uri in message, f"{name}: the message does not name the URI: {message}")
            refusals[name] = message.replace(ws, "WS").replace(os.path.dirname(outside), "TMP")
        summary["refusals"] = refusals

        # The listing: the workspace's files as find walks them, nothing hidden or ignored.
        names, pages = await all_pages(client)
        summary["pages"] = pages
        summary["listedCount"] = len(names)
        for hidden in [".git/config", ".git/HEAD", "toolhost.toml", ".toolhost/extensions/x.wasm",
                       ".ssh/id_ed25519", ".aws/credentials", "ignored.log", "link-in.txt",
                       "link-out.txt", "keys/id_ed25519", ".gnupg/secring.gpg"]:
            check(hidden not in names, f"{hidden} is listed")
        for shown in ["a.txt", "pixel.png", "sub/b.rs", ".gitignore", "many/f-249.txt"]:
            check(shown in names, f"{shown} is not listed: {names[:20]}…")
        check(len(names) == len(set(names)), "a file is listed twice across pages")
        summary["offeredListed"] = "test://static-text" in names or any(
            n == "Static Text Resource" for n in names)

        # Reading: text and an image, by their listed URIs.
        text = await client.read_resource(file_uri(f"{ws}/a.txt"), cache_mode="bypass")
        c = text.contents[0]
        check(c.text == "Hello, resources!\n" and c.mime_type == "text/plain", f"a.txt: {c}")
        png = await client.read_resource(file_uri(f"{ws}/pixel.png"), cache_mode="bypass")
        c = png.contents[0]
        check(c.mime_type == "image/png" and c.blob, f"pixel.png: {c}")
        spaced = await client.read_resource(file_uri(f"{ws}/sub/with%20space.md"), cache_mode="bypass")
        check(spaced.contents[0].text == "# spaced\n", f"with space.md: {spaced}")

        # Templates and completions: workspace paths as a shell completes them, nothing hidden.
        templates = await client.list_resource_templates(cache_mode="bypass")
        uris = [t.uri_template for t in templates.resource_templates]
        check("file:///{path}" in uris, f"templates {uris}")
        ref = types.ResourceTemplateReference(uri="file:///{path}")
        rel = ws.lstrip("/")
        done = await client.complete(ref, {"name": "path", "value": f"{rel}/su"})
        check(done.completion.values == [f"{rel}/sub/"], f"completing su: {done.completion}")
        done = await client.complete(ref, {"name": "path", "value": f"{rel}/."})
        summary["dotCompletions"] = sorted(v[len(rel) + 1:] for v in done.completion.values)
        # Above the workspace, only the way back down to it: never what lies beside it.
        done = await client.complete(ref, {"name": "path", "value": f"{rel}/../"})
        back = os.path.basename(ws)
        check(done.completion.values == [f"{rel}/../{back}/"], f"completing ../: {done.completion}")
        done = await client.complete(ref, {"name": "path", "value": f"{rel}/../o"})
        check(done.completion.values == [], f"completing ../o: {done.completion}")
        # Through a link to a secret store, or to a link's name: nothing (a read refuses links).
        for through in [f"{rel}/keys/", f"{rel}/keys/id", f"{rel}/gitdir/", f"{rel}/ke"]:
            done = await client.complete(ref, {"name": "path", "value": through})
            check(done.completion.values == [], f"completing {through}: {done.completion}")
        done = await client.complete(ref, {"name": "path", "value": "et"})
        check(done.completion.values == [], f"completing /et: {done.completion}")

        # Prompts: the tools' text, and an extension's, whose embedded resource is read
        # through the same checks.
        prompts = {p.name: p for p in (await client.list_prompts(cache_mode="bypass")).prompts}
        summary["prompts"] = sorted(prompts)
        system = await client.get_prompt("toolhost")
        body = system.messages[0].content.text
        check("- read:" in body and "Guidelines:" in body, f"the toolhost prompt: {body}")
        got = await client.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": file_uri(f"{ws}/a.txt")})
        embedded = [m.content for m in got.messages if m.content.type == "resource"]
        check(embedded and embedded[0].resource.text == "Hello, resources!\n", f"embedded: {got}")
        smuggled = {}
        for name in ["passwd", "gitConfig", "sshKey", "linkOut"]:
            try:
                await client.get_prompt("test_prompt_with_embedded_resource",
                                        {"resourceUri": attacks[name]})
                raise AssertionError(f"the prompt embedded {attacks[name]}")
            except MCPError as e:
                check(e.code == -32602, f"embedding {name}: {e.code} {e.message}")
                smuggled[name] = e.code
        summary["smuggledRefused"] = smuggled
        # A prompt that asks the person first: live in a session, a round at 2026-07-28.
        asked = await client.get_prompt("test_input_required_result_prompt")
        check(asked.messages[0].content.text == "A prompt built with the context: from the person",
              f"the asking prompt: {asked}")
        check(forms == ["What context should the prompt use?"], f"forms {forms}")
        done = await client.complete(types.PromptReference(name="test_prompt_with_arguments"),
                                     {"name": "arg1", "value": "par"})
        summary["argCompletions"] = done.completion.values

        # Watching: a change by anyone (here this script) reaches the client; a hidden or
        # outside file cannot be watched.
        watched = file_uri(f"{ws}/a.txt")
        if mode == "legacy":
            for name in ["passwd", "gitConfig", "outside"]:
                try:
                    await client.subscribe_resource(attacks[name])
                    raise AssertionError(f"subscribed to {attacks[name]}")
                except MCPError as e:
                    check(e.code == -32602, f"subscribing {name}: {e.code}")
            await client.subscribe_resource(watched)
            with open(os.path.join(ws, "a.txt"), "w") as f:
                f.write("changed by someone else\n")
            with anyio.fail_after(DEADLINE_S):
                while watched not in updates:
                    await anyio.sleep(0.05)
            await client.unsubscribe_resource(watched)
            summary["updated"] = True
        else:
            asked = [watched, attacks["passwd"], attacks["gitConfig"], attacks["outside"]]
            async with client.listen(resource_subscriptions=asked) as sub:
                honored = list(sub.honored.resource_subscriptions or [])
                check(honored == [watched], f"listen honoured {honored}")
                with open(os.path.join(ws, "a.txt"), "w") as f:
                    f.write("changed by someone else\n")
                with anyio.fail_after(DEADLINE_S):
                    async for event in sub:
                        if isinstance(event, ResourceUpdated) and event.uri == watched:
                            break
            summary["updated"] = True
        again = await client.read_resource(watched, cache_mode="bypass")
        check(again.contents[0].text == "changed by someone else\n", f"after the change: {again}")

    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
