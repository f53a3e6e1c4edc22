// Generates jsdiff-vectors.json: line diffs and patches made by jsdiff 8
// itself, which the edit tool's port (src/diff.rs) must reproduce byte for
// byte. Run with the jsdiff package unpacked somewhere outside the repo:
//
//   cd /tmp && npm pack diff@8 && tar xzf diff-8.*.tgz
//   node gen-jsdiff-vectors.js /tmp/package > jsdiff-vectors.json
//
// Inputs are pseudo-random (fixed seed) texts over a few distinct lines, so
// the diff has many equally short answers and jsdiff's tie-breaking shows.
"use strict";
const Diff = require(require("path").resolve(process.argv[2]));

let seed = 20260501;
function rand(n) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
}

const WORDS = ["a", "b", "c", "d", "}", "", "  x", "a\r", "e\rf"];
function text(lines, endings) {
  const out = [];
  for (let i = 0; i < lines; i++) {
    out.push(WORDS[rand(WORDS.length)]);
    out.push(endings && rand(4) === 0 ? "\r\n" : "\n");
  }
  if (out.length && rand(3) === 0) out.pop(); // no final newline
  return out.join("");
}

function mutate(s) {
  const lines = s.split("\n");
  const edits = 1 + rand(4);
  for (let k = 0; k < edits; k++) {
    const at = rand(lines.length + 1);
    switch (rand(3)) {
      case 0: lines.splice(at, 1); break;
      case 1: lines.splice(at, 0, WORDS[rand(WORDS.length)]); break;
      default: lines[Math.min(at, lines.length - 1)] = WORDS[rand(WORDS.length)] + "!";
    }
  }
  return lines.join("\n");
}

const cases = [];
for (let i = 0; i < 400; i++) {
  const size = i < 300 ? rand(14) : 20 + rand(60);
  const old = text(size, i % 5 === 0);
  const next = rand(10) === 0 ? text(rand(14), false) : mutate(old);
  if (old === next) continue;
  const parts = Diff.diffLines(old, next).map((p) => [p.added ? "+" : p.removed ? "-" : " ", p.count]);
  const patch = Diff.createTwoFilesPatch("f.txt", "f.txt", old, next, undefined, undefined, {
    context: 4,
    headerOptions: Diff.FILE_HEADERS_ONLY,
  });
  cases.push({ old, new: next, parts, patch });
}
process.stdout.write(JSON.stringify(cases, null, 0).replace(/\},\{/g, "},\n{") + "\n");
