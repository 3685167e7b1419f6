#!/usr/bin/env bash
# The format check of `make test`: every C source and header under src/,
# tests/unit/, tools/ and bench/ (ROOT, default the checkout) must be as
# clang-format leaves it with the repository's .clang-format. Prints the files
# that differ and one PASS/FAIL line. `make format` fixes them.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROOT=${1:-$REPO}
if ! command -v clang-format >/dev/null; then
    echo "FAIL lint.format: clang-format is not installed (tools/install-deps.sh installs it)"
    exit 1
fi
bad=0
while IFS= read -r f; do
    if ! clang-format --style="file:$REPO/.clang-format" "$f" | cmp -s - "$f"; then
        echo "  not formatted: ${f#$ROOT/}"
        bad=$((bad + 1))
    fi
done < <(find "$ROOT/src" "$ROOT/tests/unit" "$ROOT/tools" "$ROOT/bench" \
             -name '*.[ch]' -not -path '*/corpus/*' | sort)
if [ "$bad" -gt 0 ]; then
    echo "FAIL lint.format: $bad file(s) differ from .clang-format (run: make format)"
    exit 1
fi
echo "PASS lint.format"
