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
