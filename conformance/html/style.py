"""The report's inline stylesheet and its filter script: the one visual language of the kit's HTML pages.

The outcome colours are the ones every page uses (the matrix cells, the badges,
the loss curve's page). The script needs no server: it reads the filter boxes
and hides every element with a ``data-outcome``, ``data-adapter`` or
``data-level`` that a box excludes (``data-level`` may list several levels).
"""

from __future__ import annotations

#: Outcome colours, shared by every page.
COLOURS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "error": "#8250df",
    "unsupported": "#6e7781",
    "xfailed": "#9a6700",
    "xpassed": "#bc4c00",
    "not-run": "#57606a",
}

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       margin: 0 auto; max-width: 1400px; padding: 0 24px 48px; }
h1 { margin: 16px 0 0; font-size: 22px; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 4px; margin-top: 28px; }
h3 { font-size: 15px; margin: 0 0 8px; } h4 { margin: 0 0 4px; font-size: 13px; }
.versions, .note { color: #57606a; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.count { text-align: right; font-variant-numeric: tabular-nums; font-weight: 600; }
td.zero { color: #afb8c1; font-weight: 400; }
.badge { color: #fff; border-radius: 10px; padding: 1px 8px; font-size: 12px; margin-right: 6px; }
section.result { border: 1px solid #d0d7de; border-left-width: 5px; border-radius: 6px; padding: 10px 14px; margin: 14px 0; }
.columns { display: flex; gap: 16px; align-items: flex-start; }
.program { flex: 0 0 300px; max-height: 520px; overflow: auto; font-size: 12px; }
.program ol { padding-left: 48px; margin: 0; } .program li.here { background: #ffebe9; font-weight: 600; }
.gap { color: #57606a; margin: 2px 0; }
figure.graph-box { flex: 1 1 auto; margin: 0; overflow: auto; max-height: 560px; border: 1px solid #eaeef2; padding: 6px; }
figcaption { color: #57606a; font-size: 12px; margin-bottom: 4px; }
svg.graph { display: block; }
table.sides td:nth-child(2), table.sides td:nth-child(3) { font-family: ui-monospace, monospace; font-size: 12px; }
tr.first td, tr.differs td { background: #ffebe9; } tr.focus td { background: #ffebe9; outline: 2px solid #cf222e; }
pre { background: #f6f8fa; padding: 8px; overflow: auto; font-size: 12px; white-space: pre-wrap; }
.bug { background: #fff8c5; padding: 4px 8px; border-radius: 4px; }
.warning { color: #9a6700; font-weight: 600; }
#filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
#filters fieldset { border: 1px solid #d0d7de; border-radius: 6px; }
#filters label { margin-right: 10px; white-space: nowrap; }
[hidden] { display: none !important; }
""" + "".join(
    f".badge.{name} {{ background: {colour}; }} section.result[data-outcome={name}] {{ border-left-color: {colour}; }}\n"
    f"td.count.{name}:not(.zero) {{ color: {colour}; }}\n"
    for name, colour in COLOURS.items()
)

SCRIPT = """
(function () {
  var form = document.getElementById('filters');
  function apply() {
    var on = { outcome: {}, adapter: {}, level: {} };
    form.querySelectorAll('input[type=checkbox]').forEach(function (box) { if (box.checked) on[box.name][box.value] = true; });
    var shown = 0, total = 0;
    document.querySelectorAll('.filterable, section.result').forEach(function (el) {
      var d = el.dataset, visible = true;
      if (d.outcome !== undefined && el.tagName === 'SECTION') visible = visible && !!on.outcome[d.outcome];
      if (d.adapter !== undefined) visible = visible && !!on.adapter[d.adapter];
      if (d.level !== undefined) visible = visible && d.level.split(' ').some(function (l) { return on.level[l]; });
      el.hidden = !visible;
      if (el.tagName === 'SECTION') { total += 1; if (visible) shown += 1; }
    });
    document.getElementById('shown').textContent = shown + ' of ' + total + ' sections shown';
  }
  form.addEventListener('change', apply);
  apply();
})();
"""
