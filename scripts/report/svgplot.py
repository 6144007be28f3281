# SPDX-License-Identifier: GPL-2.0-or-later
"""Line charts as standalone SVG, with the standard library only."""
from xml.sax.saxutils import escape
import math

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]


def line_chart(path, title, xlabel, ylabel, series, log2_x=True, ymax=None, percent=False):
    """series: list of (name, [(x, y), ...]); writes an SVG file to path."""
    w, h, left, right, top, bottom = 720, 420, 70, 200, 40, 50
    pw, ph = w - left - right, h - top - bottom
    xs = sorted({x for _, pts in series for x, _ in pts})
    if not xs:
        return
    fx = (lambda x: math.log2(x)) if log2_x else (lambda x: x)
    x0, x1 = fx(xs[0]), fx(xs[-1])
    if x1 == x0:
        x1 = x0 + 1
    top_y = ymax if ymax is not None else max([y for _, pts in series for _, y in pts] + [1e-9]) * 1.1
    sx = lambda x: left + (fx(x) - x0) / (x1 - x0) * pw
    sy = lambda y: top + ph - min(y, top_y) / top_y * ph
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2 - right / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>']
    for x in xs:
        out.append(f'<line x1="{sx(x):.1f}" y1="{top + ph}" x2="{sx(x):.1f}" y2="{top + ph + 5}" stroke="black"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 18}" text-anchor="middle">{x}</text>')
    for i in range(6):
        y = top_y * i / 5
        label = f"{100 * y:.0f}%" if percent else f"{y:.3g}"
        out.append(f'<line x1="{left - 5}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{sy(y) + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text x="16" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 {top + ph / 2})">{escape(ylabel)}</text>')
    for i, (name, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted(pts)
        if pts:
            d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
            for x, y in pts:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>')
        ly = top + 10 + 18 * i
        out.append(f'<line x1="{left + pw + 15}" y1="{ly}" x2="{left + pw + 35}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 40}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def bar_chart(path, title, panels, legend=()):
    """Side-by-side panels of grouped bars, as standalone SVG.

    panels: list of (label, groups, ymax, fmt): groups is [(name, [(series, value)])], a value
    None draws no bar, a name "a:b" is labelled on two lines, fmt formats axis and tooltip values.
    legend: series names, coloured as the bars with the same index in each group."""
    W, H, m = 430 * len(panels), 440, 60
    pw = (W - (len(panels) + 1) * m) / max(len(panels), 1)
    ph = H - 2 * m - 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{W / 2}" y="22" font-size="15" text-anchor="middle">{escape(title)}</text>']
    for p, (label, groups, ymax, fmt) in enumerate(panels):
        x0 = m + p * (pw + m)
        out.append(f'<text x="{x0 + pw / 2:.0f}" y="{m - 10}" text-anchor="middle">{escape(label)}</text>')
        out.append(f'<line x1="{x0:.0f}" y1="{m}" x2="{x0:.0f}" y2="{m + ph}" stroke="black"/>')
        out.append(f'<line x1="{x0:.0f}" y1="{m + ph}" x2="{x0 + pw:.0f}" y2="{m + ph}" stroke="black"/>')
        for i in range(5):
            y = m + ph - ph * i / 4
            out.append(f'<text x="{x0 - 4:.0f}" y="{y + 3:.0f}" text-anchor="end" font-size="10">{escape(fmt(ymax * i / 4))}</text>')
            out.append(f'<line x1="{x0:.0f}" y1="{y:.0f}" x2="{x0 + pw:.0f}" y2="{y:.0f}" stroke="#ddd"/>')
        gw = pw / max(len(groups), 1)
        for i, (name, series) in enumerate(groups):
            bw = gw * 0.8 / max(len(series), 1)
            for j, (sname, v) in enumerate(series):
                if v is None:
                    continue
                h = ph * min(v / ymax, 1.0) if ymax else 0
                x = x0 + i * gw + gw * 0.1 + j * bw
                out.append(f'<rect x="{x:.1f}" y="{m + ph - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                           f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(name)} {escape(sname)}: '
                           f'{escape(fmt(v))}</title></rect>')
            for li, part in enumerate(name.split(":")):
                out.append(f'<text x="{x0 + i * gw + gw / 2:.1f}" y="{m + ph + 14 + 12 * li}" '
                           f'text-anchor="middle" font-size="10">{escape(part)}</text>')
    for j, name in enumerate(legend):
        x = m + j * 130
        out.append(f'<rect x="{x:.0f}" y="{H - 22}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 14:.0f}" y="{H - 13}" font-size="11">{escape(name)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
