#!/usr/bin/env bash
# One error convention (docs/STYLE.md "Errors"): a function that describes
# its failure takes the caller's buffer as its last two parameters,
# `char *err, size_t errlen` (the names may differ; the length is size_t),
# and returns ls_status, a pointer, void or another documented result, never
# an int, long or int64_t with -1 for failure. Fails, naming file:line, on
#   (a) a `char *err...` or `char *why...` parameter followed by an `int`
#       length, and
#   (b) a function (or function pointer) with such a parameter
#       whose return type is int, long or int64_t.
# Generated code (src/kafka/msg_gen.*) is not checked. Prints one PASS or
# FAIL line and, on failure, each file:line.
#
#   tools/lint/check-error-convention.sh [SRC_DIR]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-$ROOT/src}

out=$(python3 - "$SRC" <<'EOF'
import os, re, sys

src = sys.argv[1]


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


# comments, string/char literals and preprocessor lines, newlines kept so
# offsets map to lines
LEX = re.compile(r'(?m:^[ \t]*#(?:[^\n]*\\\n)*[^\n]*)|/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# [return type] name ( params ) or [return type] ( *name ) ( params )
FUNC = re.compile(
    r"(?P<ret>[A-Za-z_][\w \t\n*]*?)\s*(?:\b(?P<name>[A-Za-z_]\w*)|\(\s*\*\s*(?P<ptr>[A-Za-z_]\w*)\s*\))"
    r"\s*\((?!\s*\*)(?P<params>[^()]*(?:\([^()]*\)[^()]*)*)\)",
    re.S,
)
ERRBUF = re.compile(r"\bchar\s*\*\s*((?:err|why)\w*)\s*,\s*([^,]+?)\s*(?:,|$)")
INTRET = re.compile(r"^(?:(?:static|inline|extern|const|__attribute__\s*\(\([^)]*\)\))\s+)*(?:signed\s+)?(int|long|long\s+int|long\s+long|int64_t|int32_t|ssize_t)$")
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "defined"}

bad = []
for dp, dns, fns in os.walk(src):
    dns.sort()
    for fn in sorted(fns):
        if not fn.endswith((".c", ".h")):
            continue
        path = os.path.join(dp, fn)
        rel = os.path.relpath(path, src)
        if rel.startswith("kafka/msg_gen."):
            continue
        text = LEX.sub(blank, open(path, errors="replace").read())
        for m in FUNC.finditer(text):
            name = m.group("name") or m.group("ptr")
            if name in KEYWORDS:
                continue
            e = ERRBUF.search(m.group("params"))
            if not e:
                continue
            line = text.count("\n", 0, m.start("params")) + 1
            length = e.group(2).split()
            if length[:-1] == ["int"] or length == ["int"]:
                bad.append("%s:%d: %s: error length of %s is int (size_t)" % (rel, line, name, e.group(1)))
            # the return type is the statement's last words before the name
            ret = m.group("ret").strip()
            ret = re.split(r"[;{}()=,]", ret)[-1].strip()
            ret = " ".join(w for w in ret.split() if w not in ("typedef",))
            if INTRET.match(ret):
                bad.append("%s:%d: %s: returns %s with an error buffer (ls_status)" % (rel, line, name, ret.split()[-1]))
print("\n".join(bad))
EOF
)
if [ -z "$out" ]; then
    echo "PASS lint.error_convention"
    exit 0
fi
printf '%s\n' "$out" | sed 's/^/  /'
echo "FAIL lint.error_convention: an error buffer with an int length, or an int/long/int64_t result beside one; see docs/STYLE.md \"Errors\""
exit 1
