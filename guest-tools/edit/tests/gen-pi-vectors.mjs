// Generates pi-vectors.json: edits run through Pi 0.85.0's own edit pipeline
// (the functions of dist/core/tools/edit-diff.js, in the order edit.js calls
// them), which src/lib.rs's tests replay against this crate.
//
//   cd /tmp && npm pack @earendil-works/pi-coding-agent@0.85.0 diff@8.0.4
//   mkdir pi && tar xzf earendil-works-pi-coding-agent-0.85.0.tgz -C pi
//   mkdir jsdiff && tar xzf diff-8.0.4.tgz -C jsdiff
//   node gen-pi-vectors.mjs /tmp/pi/package /tmp/jsdiff/package > pi-vectors.json
//
// edit-diff.js imports modules that need Pi's whole dependency tree; only
// its `diff` and BOM helpers are used here, so a copy with those two imports
// pointed at the unpacked packages is loaded from the temp directory.
//
// Left out, because toolhost deliberately differs there (spec §7.9, and the
// tests named in src/apply.rs cover them): cases where an oldText found
// exactly is counted differently after fuzzy normalisation, calls that mix
// exact and fuzzy matches, and Pi's "Cannot preserve unchanged lines" error.
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [piDir, diffDir] = process.argv.slice(2).map((p) => resolve(p));
const source = readFileSync(join(piDir, "dist/core/tools/edit-diff.js"), "utf8")
  .replace('from "diff"', `from ${JSON.stringify(pathToFileURL(join(diffDir, "libesm/index.js")).href)}`)
  .replace(/import \{ resolveToCwd \} from "\.\/path-utils\.js";/, "const resolveToCwd = undefined;")
  .replace('from "../../utils/text.js"', `from ${JSON.stringify(pathToFileURL(join(piDir, "dist/utils/text.js")).href)}`);
const copy = join(mkdtempSync(join(tmpdir(), "pi-edit-")), "edit-diff.mjs");
writeFileSync(copy, source);
const E = await import(pathToFileURL(copy).href);
const { splitBom } = await import(pathToFileURL(join(piDir, "dist/utils/text.js")).href);

let seed = 85;
function rand(n) {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) % n;
}
const pick = (a) => a[rand(a.length)];

// Lines with what fuzzy matching is about: trailing whitespace, curly quotes,
// dashes, no-break spaces, composed and decomposed accents, a ligature.
const VOCAB = ["fn main() {", "    let x = 1;", "\tlet y = 2;", "  return x;  ", "}", "", "say \u201Chi\u201D and \u2018bye\u2019",
  "a\u2014b \u2013 c", "x\u00A0=\u00A0y", "caf\u00e9", "cafe\u0301", "   ", "// comment\t", "item", "item  ", "\uFB01le",
  "    if (a) {", "        b();", "    }"];

function fuzzify(s) {
  return s.split("\n").map((l) => l.replace(/[ \t]+$/, "")).join("\n")
    .replace(/[\u201C\u201D]/g, '"').replace(/[\u2018\u2019]/g, "'").replace(/\u00A0/g, " ").replace(/[\u2013\u2014]/g, "-");
}
const count = (hay, needle) => hay.split(needle).length - 1;

const cases = [];
while (cases.length < 300) {
  const n = 3 + rand(20);
  const lines = Array.from({ length: n }, (_, i) => {
    const v = pick(VOCAB);
    if (rand(10) < 7 && v.trim()) {
      const m = v.match(/^(.*?)([ \t]*)$/);
      return m[1] + " #" + i + m[2];
    }
    return v;
  });
  const crlf = rand(5) === 0;
  let file = lines.join(crlf ? "\r\n" : "\n") + (rand(3) ? (crlf ? "\r\n" : "\n") : "");
  if (rand(10) === 0) file = "\uFEFF" + file;
  const edits = [];
  for (let e = 0, k = rand(3) ? 1 : 1 + rand(3); e < k; e++) {
    let old;
    const r = rand(10);
    if (r === 0) old = "nothing like this " + rand(100);
    else if (r < 5) {
      const i = rand(n);
      old = lines.slice(i, i + 1 + rand(3)).join("\n") + (rand(2) ? "\n" : "");
    } else {
      const line = lines[rand(n)];
      const a = rand(line.length + 1);
      old = line.slice(a, a + 1 + rand(8)) || line || "x";
    }
    if (rand(3) === 0) old = fuzzify(old);
    if (crlf && rand(8) === 0) old = old.replace(/\n/g, "\r\n");
    const neu = rand(4) === 0 ? old : pick(VOCAB) + (rand(2) ? "\nNEW" + rand(9) : "");
    edits.push({ oldText: old, newText: neu });
  }

  const { bom, text } = splitBom(file);
  const lf = E.normalizeToLF(text);
  const folded = E.normalizeForFuzzyMatch(lf);
  const olds = edits.map((e) => E.normalizeToLF(e.oldText));
  const exact = olds.map((o) => o !== "" && count(lf, o) > 0);
  if (olds.some((o, i) => exact[i] && count(lf, o) !== count(folded, E.normalizeForFuzzyMatch(o)))) continue;
  if (exact.some((x) => x) && olds.some((o, i) => o !== "" && !exact[i])) continue;

  let pi;
  try {
    const ending = E.detectLineEnding(text);
    const { baseContent, newContent } = E.applyEditsToNormalizedContent(lf, edits, "f.txt");
    const d = E.generateDiffString(baseContent, newContent);
    pi = {
      written: bom + E.restoreLineEndings(newContent, ending),
      diff: d.diff,
      patch: E.generateUnifiedPatch("f.txt", baseContent, newContent),
      firstChangedLine: d.firstChangedLine,
    };
  } catch (err) {
    if (err.message.startsWith("Cannot preserve unchanged lines")) continue;
    pi = { error: err.message };
  }
  cases.push({ file, edits: edits.map((e) => [e.oldText, e.newText]), pi });
}
process.stdout.write(JSON.stringify(cases).replace(/\},\{"file"/g, '},\n{"file"') + "\n");
