// json_query: evaluate a small jq-style path expression over a JSON file.
//
// An example toolhost extension in JavaScript, built with componentize-qjs
// against the `jsonquery` world of ../wit/world.wit. The module exports the
// `toolhost:tool/tool` interface as an object named `tool`; WIT names become
// camelCase, a `result` is a return value or a thrown error, a `variant` is
// `{ tag, val }`. Files are read through the host's `fs-read` Operations,
// which refuse every path outside the directories granted in toolhost.toml.

import { readFile, stat } from "toolhost:tool/fs-read@0.1.0";
import { isCancelled } from "toolhost:tool/cancellation@0.1.0";

const SCHEMA = JSON.stringify({
  type: "object",
  required: ["path"],
  properties: {
    path: {
      type: "string",
      description: "The JSON file (relative to the workspace, or absolute)",
    },
    query: {
      type: "string",
      description:
        'A jq-style path: ".", ".key", ".\\"odd key\\"", "[0]", "[-1]", "[]" (every element), ' +
        'chained (".items[].name"), then optionally "| length", "| keys" or "| type". Default "."',
    },
  },
});

const DESCRIPTION =
  "Query a JSON file with a small subset of jq: follow keys and indexes, iterate arrays " +
  "and objects with [], and end with | length, | keys or | type. Prints each result as " +
  "JSON, one after another. Output is cut at 50KB.";

// Largest file read, and most output returned.
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const MAX_OUTPUT_BYTES = 50 * 1024;
const CHUNK_BYTES = 4 * 1024 * 1024;

export const tool = {
  definitions() {
    return [
      {
        name: "json_query",
        label: "JSON query",
        description: DESCRIPTION,
        parameters: SCHEMA,
        promptSnippet: "Extract values from JSON files with jq-style paths",
        promptGuidelines: [
          "Use json_query instead of reading a whole large JSON file when you need a few values.",
        ],
        executionMode: "parallel",
      },
    ];
  },

  // The compatibility hook: calls written for an older version of this tool
  // named the file `file`. Returning null keeps the arguments as they are.
  prepareArguments(_name, argumentsJson) {
    const args = JSON.parse(argumentsJson);
    if (args && typeof args === "object" && args.path === undefined && typeof args.file === "string") {
      const { file, ...rest } = args;
      return JSON.stringify({ ...rest, path: file });
    }
    return null;
  },

  execute(_name, context, argumentsJson) {
    const args = JSON.parse(argumentsJson);
    const raw = args.path;
    const query = args.query ?? ".";
    const program = parse(query); // throws a message naming the query's problem
    const abs = resolve(context.cwd, raw);
    const document = readJson(context, raw, abs);

    const results = run(program, document);
    let text = results.map((v) => JSON.stringify(v, null, 2) ?? "null").join("\n");
    let truncated = false;
    if (utf8Length(text) > MAX_OUTPUT_BYTES) {
      text = cutToBytes(text, MAX_OUTPUT_BYTES) +
        "\n\n[Output truncated at 50KB. Narrow the query to see the rest.]";
      truncated = true;
    }
    if (results.length === 0) text = "(no results)";
    return {
      content: [{ tag: "text", val: text }],
      details: JSON.stringify({ results: results.length, truncated }),
      terminate: false,
      addedToolNames: [],
    };
  },
};

// ---- files -----------------------------------------------------------------

function resolve(cwd, p) {
  const joined = p.startsWith("/") ? p : `${cwd}/${p}`;
  const parts = [];
  for (const seg of joined.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return "/" + parts.join("/");
}

// An fs-read call failed: the host threw `{ payload: { code, message } }`.
function fsFailure(context, raw, err) {
  const code = err?.payload?.code;
  switch (code) {
    case "outside-roots": {
      const roots = context.roots.length ? context.roots.join(", ") : "none";
      return `${raw} is outside the directories this extension may read (${roots})`;
    }
    case "not-found":
      return `No such file: ${raw}`;
    case "is-a-directory":
      return `${raw} is a directory, not a JSON file`;
    case "cancelled":
      return "Operation aborted";
    default:
      return `Cannot read ${raw}: ${err?.payload?.message ?? err}`;
  }
}

function readJson(context, raw, abs) {
  let meta;
  try {
    meta = stat(abs);
  } catch (err) {
    throw fsFailure(context, raw, err);
  }
  if (meta.kind !== "file") throw `${raw} is a ${meta.kind}, not a JSON file`;
  if (meta.size > MAX_FILE_BYTES) {
    throw `${raw} is ${meta.size} bytes; json_query reads files up to ${MAX_FILE_BYTES} bytes`;
  }
  const chunks = [];
  let offset = 0;
  for (;;) {
    if (isCancelled()) throw "Operation aborted";
    let chunk;
    try {
      chunk = readFile(abs, offset, CHUNK_BYTES);
    } catch (err) {
      throw fsFailure(context, raw, err);
    }
    if (chunk.length === 0) break;
    chunks.push(chunk);
    offset += chunk.length;
    if (offset > MAX_FILE_BYTES) {
      throw `${raw} grew past ${MAX_FILE_BYTES} bytes while being read`;
    }
  }
  const text = decodeUtf8(chunks);
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    throw `${raw} is not valid JSON: ${err.message}`;
  }
}

// QuickJS has no TextDecoder: decode UTF-8 by hand, invalid bytes as U+FFFD.
function decodeUtf8(chunks) {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  const out = [];
  let codes = [];
  const flush = () => {
    out.push(String.fromCodePoint(...codes));
    codes = [];
  };
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    let need = 0, cp = 0, min = 0;
    if (b < 0x80) { cp = b; }
    else if (b >= 0xc2 && b < 0xe0) { need = 1; cp = b & 0x1f; min = 0x80; }
    else if (b >= 0xe0 && b < 0xf0) { need = 2; cp = b & 0x0f; min = 0x800; }
    else if (b >= 0xf0 && b < 0xf5) { need = 3; cp = b & 0x07; min = 0x10000; }
    else { codes.push(0xfffd); i += 1; continue; }
    let j = 1;
    for (; j <= need; j++) {
      const c = bytes[i + j];
      if (c === undefined || (c & 0xc0) !== 0x80) break;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) {
      codes.push(0xfffd);
      i += j;
    } else {
      codes.push(cp);
      i += need + 1;
    }
    if (codes.length >= 8192) flush();
  }
  flush();
  return out.join("");
}

function utf8Length(s) {
  let n = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

function cutToBytes(s, max) {
  let n = 0;
  let end = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n > max) break;
    end += ch.length;
  }
  return s.slice(0, end);
}

// ---- the query language ----------------------------------------------------
//
// program := term ("|" term)*
// term    := path | "length" | "keys" | "type"
// path    := "." | ("." (name | string)? ("[" (int | string)? "]")*)+
//
// A term maps one value to a list of values (`[]` yields several); a program
// feeds each result of a term to the next, as jq does.

function parse(query) {
  let i = 0;
  const fail = (what) => {
    throw `Invalid query ${JSON.stringify(query)} at position ${i + 1}: ${what}`;
  };
  const ws = () => {
    while (i < query.length && /\s/.test(query[i])) i++;
  };
  const string = () => {
    // A JSON string literal.
    const start = i;
    i++;
    while (i < query.length && query[i] !== '"') i += query[i] === "\\" ? 2 : 1;
    if (i >= query.length) fail("unterminated string");
    i++;
    return JSON.parse(query.slice(start, i));
  };
  const name = () => {
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(query.slice(i));
    if (!m) fail("expected a key name");
    i += m[0].length;
    return m[0];
  };
  const bracket = (steps) => {
    i++; // [
    ws();
    if (query[i] === "]") {
      steps.push({ op: "each" });
    } else if (query[i] === '"') {
      steps.push({ op: "key", key: string() });
    } else {
      const m = /^-?[0-9]+/.exec(query.slice(i));
      if (!m) fail('expected an index, a "key" or ]');
      i += m[0].length;
      steps.push({ op: "index", index: Number(m[0]) });
    }
    ws();
    if (query[i] !== "]") fail("expected ]");
    i++;
  };
  const term = () => {
    ws();
    for (const fn of ["length", "keys", "type"]) {
      if (query.startsWith(fn, i) && !/[A-Za-z0-9_]/.test(query[i + fn.length] ?? "")) {
        i += fn.length;
        return [{ op: fn }];
      }
    }
    const steps = [];
    if (query[i] !== "." && query[i] !== "[") fail('expected a path starting with "." or a function');
    while (i < query.length && (query[i] === "." || query[i] === "[")) {
      if (query[i] === ".") {
        i++;
        if (query[i] === '"') steps.push({ op: "key", key: string() });
        else if (/[A-Za-z_]/.test(query[i] ?? "")) steps.push({ op: "key", key: name() });
      }
      while (query[i] === "[") bracket(steps);
    }
    return steps;
  };
  const program = [term()];
  ws();
  while (query[i] === "|") {
    i++;
    program.push(term());
    ws();
  }
  if (i < query.length) fail(`unexpected ${JSON.stringify(query[i])}`);
  return program;
}

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v; // object, string, number, boolean
}

function step(s, v) {
  const t = typeOf(v);
  switch (s.op) {
    case "key":
      if (t === "null") return [null];
      if (t !== "object") throw `Cannot index ${t} with ${JSON.stringify(s.key)}`;
      return [Object.prototype.hasOwnProperty.call(v, s.key) ? v[s.key] : null];
    case "index":
      if (t === "null") return [null];
      if (t !== "array") throw `Cannot index ${t} with number`;
      return [v[s.index < 0 ? v.length + s.index : s.index] ?? null];
    case "each":
      if (t === "array") return v;
      if (t === "object") return Object.values(v);
      throw `Cannot iterate over ${t}`;
    case "length":
      if (t === "null") return [0];
      if (t === "string" || t === "array") return [[...v].length];
      if (t === "object") return [Object.keys(v).length];
      if (t === "number") return [Math.abs(v)];
      throw `${t} has no length`;
    case "keys":
      if (t === "object") return [Object.keys(v).sort()];
      if (t === "array") return [v.map((_, k) => k)];
      throw `${t} has no keys`;
    case "type":
      return [t];
  }
  throw `unknown step ${s.op}`;
}

function run(program, document) {
  let values = [document];
  for (const steps of program) {
    for (const s of steps) {
      values = values.flatMap((v) => step(s, v));
    }
  }
  return values;
}
