"""csv_stats: per-column statistics of a CSV file.

An example toolhost extension in Python, built with componentize-py against
the `csvstats` world of ../wit/world.wit. componentize-py generates the
`wit_world` bindings package from the WIT at build time; this module provides
the exported interface as a class named after it, `Tool`.

The file is read with Python's own `open()`: the host preopens, through WASI,
exactly the directories granted to this extension in toolhost.toml (at their
absolute paths), so `open()` reaches those and nothing else. The component
imports no toolhost Operations at all.
"""

import csv
import json
import math
import os
import statistics
from collections import Counter

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import cancellation, types

SCHEMA = json.dumps(
    {
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": {
                "type": "string",
                "description": "The CSV file (relative to the workspace, or absolute). "
                "Its first row names the columns.",
            },
            "delimiter": {
                "type": "string",
                "description": 'The field separator, one character (default: guessed among , ; tab |)',
            },
            "columns": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only these columns (default: all)",
            },
        },
    }
)

DESCRIPTION = (
    "Summarise a CSV file column by column: for numeric columns count, min, max, mean, "
    "median and sum; for text columns the number of distinct values and the most common "
    "one. Empty cells are counted apart. Reads at most 1,000,000 rows."
)

MAX_ROWS = 1_000_000
# Distinct text values tracked per column; past this the count is a lower bound.
MAX_DISTINCT = 10_000
CANCEL_CHECK_EVERY = 10_000


class Tool(exports.Tool):
    def definitions(self):
        return [
            types.ToolDefinition(
                name="csv_stats",
                label="CSV statistics",
                description=DESCRIPTION,
                parameters=SCHEMA,
                prompt_snippet="Summarise the columns of a CSV file",
                prompt_guidelines=[],
                execution_mode=types.ExecutionMode.PARALLEL,
                output_schema=None,
            )
        ]

    def prepare_arguments(self, name, arguments):
        return None  # the arguments are used as the model wrote them

    def execute(self, name, context, arguments):
        args = json.loads(arguments)
        raw = args["path"]
        path = os.path.normpath(os.path.join(context.cwd, raw))
        delimiter = args.get("delimiter")
        if delimiter is not None and len(delimiter) != 1:
            raise Err(f"delimiter must be one character, not {json.dumps(delimiter)}")

        try:
            f = open(path, newline="", encoding="utf-8", errors="replace")
        except FileNotFoundError:
            # Outside the preopened directories a file does not exist for WASI.
            if not inside(path, context.roots):
                raise Err(f"{raw} is outside the directories this extension may read ({roots(context)})")
            raise Err(f"No such file: {raw}")
        except IsADirectoryError:
            raise Err(f"{raw} is a directory, not a CSV file")
        except OSError as e:
            raise Err(f"Cannot read {raw}: {e.strerror or e}")

        with f:
            if delimiter is None:
                delimiter = guess_delimiter(f.read(65536))
                f.seek(0)
            try:
                summary = summarise(f, delimiter, args.get("columns"))
            except csv.Error as e:
                raise Err(f"Cannot parse {raw} as CSV: {e}")
        shown = os.path.relpath(path, context.cwd) if inside(path, [context.cwd]) else path
        return types.ToolResult(
            content=[types.ContentBlock_Text(report(shown, delimiter, summary))],
            details=json.dumps(summary),
            terminate=False,
            added_tool_names=[],
            structured_content=None,
        )


def inside(path, dirs):
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def roots(context):
    return ", ".join(context.roots) or "none"


def guess_delimiter(sample):
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def number(cell):
    """The cell's value as a finite float, or None if it is not a number."""
    if "_" in cell:
        return None  # float() accepts 1_000; a CSV cell should not
    try:
        x = float(cell)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def summarise(lines, delimiter, wanted):
    reader = csv.reader(lines, delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        raise Err("The file is empty")
    if wanted:
        missing = [c for c in wanted if c not in header]
        if missing:
            raise Err(f"No such column: {', '.join(missing)} (columns: {', '.join(header)})")
        picked = [header.index(c) for c in wanted]
    else:
        picked = list(range(len(header)))

    columns = {i: Column(header[i]) for i in picked}
    rows = 0
    ragged = 0
    complete = True
    for row in reader:
        if rows == MAX_ROWS:
            complete = False
            break
        if rows % CANCEL_CHECK_EVERY == 0 and cancellation.is_cancelled():
            raise Err("Operation aborted")
        if not row:
            continue  # a blank line
        rows += 1
        if len(row) != len(header):
            ragged += 1
        for i, col in columns.items():
            col.add(row[i].strip() if i < len(row) else "")

    return {
        "rows": rows,
        "raggedRows": ragged,
        "complete": complete,
        "columns": [columns[i].summary() for i in picked],
    }


class Column:
    """One column's statistics, gathered a cell at a time: the numbers while
    every cell is one (for the median), and the counts of distinct values."""

    def __init__(self, name):
        self.name = name
        self.count = 0
        self.empty = 0
        self.numbers = []  # None once a cell is not a number
        self.counts = Counter()

    def add(self, cell):
        if cell == "":
            self.empty += 1
            return
        self.count += 1
        if self.numbers is not None:
            x = number(cell)
            if x is None:
                self.numbers = None
            else:
                self.numbers.append(x)
        if cell in self.counts or len(self.counts) < MAX_DISTINCT:
            self.counts[cell] += 1

    def summary(self):
        col = {"name": self.name, "count": self.count, "empty": self.empty}
        xs = self.numbers
        if xs:
            col.update(
                type="number",
                min=tidy(min(xs)),
                max=tidy(max(xs)),
                mean=tidy(statistics.fmean(xs)),
                median=tidy(statistics.median(xs)),
                sum=tidy(math.fsum(xs)),
            )
            return col
        # The most common value; the first seen wins a tie. (Not
        # Counter.most_common: it imports heapq inside the call, and
        # componentize-py bundles only the modules imported while it builds.)
        top = max(self.counts.items(), key=lambda kv: kv[1], default=(None, 0))
        col.update(
            type="text",
            distinct=len(self.counts),
            distinctCapped=len(self.counts) >= MAX_DISTINCT,
            top=top[0],
            topCount=top[1],
        )
        return col


def tidy(x):
    """Rounded to 6 significant digits; a whole number without a fraction."""
    if abs(x) < 1e15 and x == int(x):
        return int(x)
    r = float(f"{x:.6g}")
    return int(r) if abs(r) < 1e15 and r == int(r) else r


def plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def report(shown, delimiter, summary):
    cols = summary["columns"]
    lines = [
        f"{shown}: {plural(summary['rows'], 'row')}, {plural(len(cols), 'column')}, "
        f"delimiter {json.dumps(delimiter)}"
    ]
    width = max((len(c["name"]) for c in cols), default=0)
    for c in cols:
        head = f"{c['name']:<{width}}  {c['type']:<6}  {plural(c['count'], 'value')}, {c['empty']} empty"
        if c["type"] == "number":
            lines.append(
                f"{head}; min {c['min']}, max {c['max']}, mean {c['mean']}, "
                f"median {c['median']}, sum {c['sum']}"
            )
        elif c["top"] is None:
            lines.append(head)
        else:
            more = "+" if c["distinctCapped"] else ""
            lines.append(
                f"{head}; {c['distinct']}{more} distinct, most common "
                f"{json.dumps(c['top'], ensure_ascii=False)} ({c['topCount']})"
            )
    if summary["raggedRows"]:
        lines.append(f"[{summary['raggedRows']} rows have a different number of cells than the header]")
    if not summary["complete"]:
        lines.append(f"[Stopped after {MAX_ROWS} rows]")
    return "\n".join(lines)
