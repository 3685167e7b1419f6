"""A plain SVG line chart (no plotting library is installed on the test
machines; the bench's gnuplot comes with bench/setup.sh only). Used by the
soak (tests/soak/soak.py) and the partition-scaling bench
(bench/partitions.py). Each series is scaled to its own maximum, which its
legend states, so series of different units share one chart; log_x spaces
x values logarithmically (for 100, 1 000, 10 000)."""

import math


def write_plot(path, xs, xunit, series, title, log_x=False):
    """xs: the x values; series: [(name, [y or None per x])]."""
    w, h, pad = 900, 440, 60
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    fx = (lambda x: math.log10(max(x, 1e-9))) if log_x else (lambda x: x)
    lo, hi = (fx(min(xs)), fx(max(xs))) if xs else (0, 1)
    span = (hi - lo) or 1

    def px(x):
        return pad + (fx(x) - lo) / span * (w - pad - 20)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="14">%s</text>' % (pad, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (pad, h - pad, w - 20, h - pad),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (pad, 40, pad, h - pad)]
    ticks = sorted(set(xs)) if log_x else ([min(xs), max(xs)] if xs else [])
    for x in ticks:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g %s</text>'
                   % (px(x), h - pad + 16, x, xunit))
    for k, (name, ys) in enumerate(series):
        vals = [y for y in ys if y is not None]
        vmax = max(vals) if vals else 1
        scale = vmax or 1
        pts = " ".join("%.1f,%.1f" % (px(x), h - pad - (y / scale) * (h - pad - 60))
                       for x, y in zip(xs, ys) if y is not None)
        c = colors[k % len(colors)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (c, pts))
        if log_x:
            for x, y in zip(xs, ys):
                if y is not None:
                    out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>'
                               % (px(x), h - pad - (y / scale) * (h - pad - 60), c))
        out.append('<text x="%d" y="%d" fill="%s">%s (max %s)</text>'
                   % (w - 420, 40 + 16 * k, c, name, "%g" % vmax))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))
