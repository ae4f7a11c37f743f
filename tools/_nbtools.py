"""What the notebook tools share (tools/refresh_outputs.py, tools/build_docs.py): nbdev's own reading of settings.ini
(`nbdev.config.get_config`: paths as `Path`s, flags as booleans), and the one rule for the cells that a run of the
chapters skips, as `nbdev_test` skips them."""
from __future__ import annotations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def config():
    "nbdev's configuration of this repository, as nbdev reads it (its `settings.ini`, found from the repository root)"
    from nbdev.config import get_config
    return get_config(path=ROOT)

def skip_flags(force=()) -> set:
    "The flags (settings.ini's `tst_flags`: `slow`, `cuda`) whose cells a run skips, less those in `force`"
    return set(config().tst_flags.split()) - set(force)

def skip_cell(flags:set):
    """`preproc` for execnb's `CaptureShell.run_all`: True for a cell that `nbdev_test` does not run: not code, the
    `nbdev_export()` cell, an `#| eval: false` cell, or a cell flagged with one of `flags` (directives parsed by nbdev)"""
    def no_eval(cell) -> bool:
        if cell.cell_type != 'code': return True
        if 'nbdev_export' + '(' in cell.source: return True
        d = getattr(cell, 'directives_', None) or {}
        if d.get('eval:', [''])[0].lower() == 'false': return True
        return bool(flags & d.keys())
    return no_eval
