"""{{tool}}: count the lines and bytes of a text file in the workspace.

A toolhost extension in Python, made a component by componentize-py (which
bundles CPython) against the `extension` world of wit/world.wit. The
`wit_world` package is generated from that WIT at build time: the host's
Operations it imports as modules under `wit_world.imports`, and the `tool`
interface it exports as the class `Tool` below. The Operations refuse every
path outside the directories granted.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import cancellation, fs_read, fs_types, types

# The JSON Schema of the arguments: the host validates (and coerces) every
# call against it before `execute` sees the arguments.
PARAMETERS = json.dumps(
    {
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": {"type": "string", "description": "The file, relative to the workspace or absolute"}
        },
    }
)

# Bytes asked of the host per read (it returns at most 4 MiB).
CHUNK = 1024 * 1024


class Tool(exports.Tool):
    def definitions(self):
        return [
            types.ToolDefinition(
                name="{{tool}}",
                label="Line count",
                description="Count the lines and bytes of a text file in the workspace.",
                parameters=PARAMETERS,
                prompt_snippet="Count the lines of a file",
                prompt_guidelines=[],
                execution_mode=types.ExecutionMode.PARALLEL,
                output_schema=None,
            )
        ]

    def prepare_arguments(self, name, arguments):
        return None  # the arguments are used as the model wrote them

    def execute(self, name, context, arguments):
        """Raising Err is the tool failing: its text is the error result's."""
        path = json.loads(arguments)["path"]
        # The host's Operations take absolute paths.
        absolute = path if path.startswith("/") else f"{context.cwd}/{path}"
        size, lines, last = 0, 0, b"\n"
        while True:
            if cancellation.is_cancelled():
                raise Err("Operation aborted")
            try:
                chunk = fs_read.read_file(absolute, size, CHUNK)
            except Err as e:
                raise Err(failure(path, e.value))
            if not chunk:
                break
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
        if last != b"\n":
            lines += 1  # the last line has no newline
        return types.ToolResult(
            content=[types.ContentBlock_Text(f"{path}: {lines} lines, {size} bytes")],
            details=None,
            terminate=False,
            added_tool_names=[],
            structured_content=None,
            is_error=False,
        )


def failure(path, error):
    """What a failed read tells the model."""
    if error.code == fs_types.ErrorCode.NOT_FOUND:
        return f"{path} does not exist"
    return error.message
