"""Attribute `perf script` samples of the broker to its own functions (issue 32).

Each sample's cost goes to the innermost frame in the lakestream binary (so a
memcpy, malloc, page fault or syscall is charged to the broker function that
made it), and separately to every broker frame on its stack (inclusive).
A third table does the first for the loop thread alone (the thread whose id
is the process id: sockets, request decode, validation, WAL append,
responses); PUTs and metadata commits run on worker threads. Percentages are
of all samples (of the loop thread's, in the third table). With perf's
cpu-clock event at F Hz, samples / F is CPU seconds.
    perf script -i perf.data | python3 bench/prof/attribute.py [TOP]
"""
import collections
import re
import sys


def parse(block):
    lines = block.strip().split("\n")
    head = lines[0].split()
    out = []
    for line in lines[1:]:
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        sym, _, dso = parts[1].rpartition(" (")
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym).replace(" (inlined)", "")
        out.append((sym, dso.rstrip(")")))
    return (head[1] if len(head) > 1 else None), out


def innermost(fr):
    mine = [s for s, d in fr if d.endswith("/lakestream")]
    if mine:
        return mine, mine[0]
    return mine, "(outside the broker binary: " + fr[0][1].split("/")[-1] + ")"


def table(title, counter, total, top):
    print(f"\n{title}")
    for s, n in counter.most_common(top):
        print(f"{100 * n / total:6.2f}%  {s}")


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    samples = [parse(b) for b in sys.stdin.read().split("\n\n")]
    samples = [(t, fr) for t, fr in samples if fr]
    if not samples:
        sys.exit("no samples")
    loop_tid = min((t for t, _ in samples), key=int)
    own, incl, loop = collections.Counter(), collections.Counter(), collections.Counter()
    nloop = 0
    for tid, fr in samples:
        mine, key = innermost(fr)
        own[key] += 1
        for s in set(mine):
            incl[s] += 1
        if tid == loop_tid:
            nloop += 1
            loop[" <- ".join(mine[:2]) if mine else key] += 1
    total = len(samples)
    print(f"samples: {total}, of them the loop thread ({loop_tid}): {nloop}")
    table("by innermost broker function (self + the library/kernel calls it makes)", own, total,
          top)
    table("inclusive (every broker function on the stack)", incl, total, top)
    table("loop thread only, by innermost broker function <- its caller", loop, nloop, top)


try:
    main()
except BrokenPipeError:
    pass
