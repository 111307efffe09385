"""The documented commands of one markdown file, as tests/docs/run executes them.

    blocks.py script FILE OUTDIR   print the bash script of FILE's ```sh blocks (empty when it
                                   has none); expected outputs are written to OUTDIR
    blocks.py expect KIND EXPECTED ACTUAL   check a block's output (KIND: text or json)

The contract (also at the top of tests/docs/run and in docs/README.md):

- A fenced block whose info string is exactly `sh` is executed; every other block is not
  (`sh server` marks a command the runner has already done the equivalent of: starting the
  service or the fake connector proxy, or `cargo test`).
- A block fenced ```text expected or ```json expected that follows an `sh` block (only blank
  lines between them) is that block's expected standard output:
  - text: the output, each line without trailing spaces and without trailing blank lines, must
    equal the expected lines; a line that is only `...` matches any number of lines;
  - json: the output must be as many JSON values as the block holds, and each expected value
    must be contained in the actual one: an object's keys must be present with contained
    values (others may be there too), an array must have as many items, each contained, and
    anything else must be equal.
Python 3 standard library only.
"""

import json
import re
import sys
from pathlib import Path

FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*?)\s*$")


def blocks(text):
    """(info string, first line number, content) of every fenced block, in order."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = len(match.group(1)), match.group(2), match.group(3)
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if closing and closing.group(2)[0] == fence[0] and len(closing.group(2)) >= len(fence) \
                    and closing.group(3) == "":
                break
            line = lines[i]
            # a block indented in a list item: its lines lose that indentation
            body.append(line[indent:] if line[:indent].strip() == "" else line)
            i += 1
        found.append((info, start, "\n".join(body), i))
        i += 1
    return found


def script(path, outdir):
    text = Path(path).read_text(encoding="utf-8")
    found = blocks(text)
    lines = text.split("\n")
    parts = []
    previous_sh = None  # index in parts of the last sh block, while an expected block may follow
    last_end = -1
    for info, start, body, end in found:
        words = info.split()
        if words[-1:] == ["expected"] and len(words) == 2 and words[0] in ("text", "json"):
            between = lines[last_end + 1:start - 1]
            if previous_sh is None or any(line.strip() for line in between):
                raise SystemExit(f"{path}:{start}: a ```{info} block must follow a ```sh block "
                                 "(only blank lines between them)")
            number, block_start, block_body = parts[previous_sh]
            expected = Path(outdir) / f"{number}.expected"
            expected.write_text(body + "\n", encoding="utf-8")
            parts[previous_sh] = (number, block_start, block_body, words[0], expected)
            previous_sh = None
        elif info == "sh":
            parts.append((len(parts) + 1, start, body))
            previous_sh = len(parts) - 1
        else:
            previous_sh = None
        last_end = end
    out = []
    for part in parts:
        number, start, body = part[:3]
        out.append(f"printf '\\n%s\\n' {shell_quote(f'--- {path}:{start}')}")
        if len(part) == 3:
            out.append(body)
            continue
        kind, expected = part[3:]
        actual = Path(outdir) / f"{number}.out"
        out.append("{")
        out.append(body)
        out.append(f"}} > {shell_quote(str(actual))}")
        out.append(f"cat {shell_quote(str(actual))}")
        out.append(f"python3 {shell_quote(str(Path(__file__).resolve()))} expect {kind} "
                   f"{shell_quote(str(expected))} {shell_quote(str(actual))}")
    return "\n".join(out) + "\n" if out else ""


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def text_matches(expected, actual):
    pattern = []
    for line in expected:
        pattern.append("(?:.*\n)*?" if line == "..." else re.escape(line) + "\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in actual)) is not None


def normalised_lines(text):
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def json_values(text):
    decoder = json.JSONDecoder()
    values, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return values
        value, i = decoder.raw_decode(text, i)
        values.append(value)


def contained(expected, actual, where="$"):
    """None when `expected` is contained in `actual`, else where and why not."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected an object, got {json.dumps(actual)}"
        for key, value in expected.items():
            if key not in actual:
                return f"{where}: no key {json.dumps(key)}"
            why = contained(value, actual[key], f"{where}.{key}")
            if why:
                return why
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where}: expected {len(expected)} items, got {json.dumps(actual)}"
        for n, (e, a) in enumerate(zip(expected, actual)):
            why = contained(e, a, f"{where}[{n}]")
            if why:
                return why
        return None
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        return f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"
    return None


def expect(kind, expected_path, actual_path):
    expected = Path(expected_path).read_text(encoding="utf-8")
    actual = Path(actual_path).read_text(encoding="utf-8", errors="replace")
    if kind == "text":
        if text_matches(normalised_lines(expected), normalised_lines(actual)):
            return 0
        print("\nthe output differs from the expected text:\n" + expected, file=sys.stderr)
        return 1
    try:
        wanted = json_values(expected)
    except ValueError as e:
        print(f"the expected JSON does not parse: {e}", file=sys.stderr)
        return 1
    try:
        got = json_values(actual)
    except ValueError as e:
        print(f"the output is not JSON: {e}", file=sys.stderr)
        return 1
    if len(got) != len(wanted):
        print(f"expected {len(wanted)} JSON value(s), got {len(got)}", file=sys.stderr)
        return 1
    for e, a in zip(wanted, got):
        why = contained(e, a)
        if why:
            print(f"\nthe output differs from the expected JSON at {why}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "script":
        sys.stdout.write(script(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "expect" and sys.argv[2] in ("text", "json"):
        sys.exit(expect(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
