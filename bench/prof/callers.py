"""Callers of broker functions in `perf script` output (issue 32): for each
sample whose innermost broker frame is one of NAMES, the next broker frames
up the stack; with --kernel SYMBOL, instead the broker frames of samples that
have SYMBOL (e.g. exc_page_fault) anywhere on their stack.
    perf script -i perf.data | python3 bench/prof/callers.py ls_realloc consume
    perf script -i perf.data | python3 bench/prof/callers.py --kernel exc_page_fault
"""
import collections
import re
import sys


def main():
    args = sys.argv[1:]
    kernel = args[1] if args[:1] == ["--kernel"] else None
    names = set(args)
    by = collections.defaultdict(collections.Counter)
    total = 0
    for block in sys.stdin.read().split("\n\n"):
        syms, mine = [], []
        for line in block.strip().split("\n")[1:]:
            parts = line.strip().split(None, 1)
            if len(parts) < 2:
                continue
            sym, _, dso = parts[1].rpartition(" (")
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym).replace(" (inlined)", "")
            syms.append(sym)
            if dso.rstrip(")").endswith("/lakestream"):
                mine.append(sym)
        if not syms:
            continue
        total += 1
        if kernel and kernel in syms:
            by[kernel][" <- ".join(mine[:4])] += 1
        elif not kernel and mine and mine[0] in names:
            by[mine[0]][" <- ".join(mine[1:5])] += 1
    for name, c in by.items():
        print(f"{name}: {100 * sum(c.values()) / total:.2f}% of {total} samples")
        for stack, n in c.most_common(6):
            print(f"  {100 * n / total:6.2f}%  {stack}")


main()
