// {{tool}}: count the lines and bytes of a text file in the workspace.
//
// A toolhost extension in JavaScript, made a component by componentize-qjs
// (QuickJS) against the `extension` world of wit/world.wit. The module
// exports the `toolhost:tool/tool` interface as an object named `tool`: WIT
// names become camelCase, a `result` is a return value or a thrown error,
// a `variant` is `{ tag, val }`. The host's Operations are imported as
// modules; they refuse every path outside the directories granted.

import { readFile } from "toolhost:tool/fs-read@{{wit_version}}";
import { isCancelled } from "toolhost:tool/cancellation@{{wit_version}}";

// The JSON Schema of the arguments: the host validates (and coerces) every
// call against it before `execute` sees the arguments.
const PARAMETERS = JSON.stringify({
  type: "object",
  required: ["path"],
  properties: {
    path: { type: "string", description: "The file, relative to the workspace or absolute" },
  },
});

// Bytes asked of the host per read (it returns at most 4 MiB).
const CHUNK = 1024 * 1024;

export const tool = {
  definitions() {
    return [
      {
        name: "{{tool}}",
        label: "Line count",
        description: "Count the lines and bytes of a text file in the workspace.",
        parameters: PARAMETERS,
        promptSnippet: "Count the lines of a file",
        promptGuidelines: [],
        executionMode: "parallel",
      },
    ];
  },

  prepareArguments(_name, _argumentsJson) {
    return null; // the arguments are used as the model wrote them
  },

  // A thrown string is the tool failing: it is the error result's text.
  execute(_name, context, argumentsJson) {
    const { path } = JSON.parse(argumentsJson);
    // The host's Operations take absolute paths.
    const absolute = path.startsWith("/") ? path : `${context.cwd}/${path}`;
    let bytes = 0, lines = 0, last = 10;
    for (;;) {
      if (isCancelled()) throw "Operation aborted";
      let chunk;
      try {
        chunk = readFile(absolute, bytes, CHUNK);
      } catch (err) {
        throw failure(path, err);
      }
      if (chunk.length === 0) break;
      for (const b of chunk) if (b === 10) lines += 1;
      bytes += chunk.length;
      last = chunk[chunk.length - 1];
    }
    if (last !== 10) lines += 1; // the last line has no newline
    return {
      content: [{ tag: "text", val: `${path}: ${lines} lines, ${bytes} bytes` }],
      terminate: false,
      addedToolNames: [],
      isError: false,
    };
  },
};

// What a failed read tells the model (the Operations throw an `fs-error`).
function failure(path, err) {
  const error = err?.payload ?? err;
  if (error?.code === "not-found") return `${path} does not exist`;
  return error?.message ?? String(err);
}
