"""Every notebook's tests pass (nbdev_test; `slow`/`cuda` cells and skip_exec notebooks are skipped by nbdev). The quick
chapters of tests/test_outputs.py (CHEAP) are not run here: that file executes them as nbdev_test does and compares
their outputs, so a cell of theirs that raises fails there; each chapter executes once in the suite."""
import re
from helpers import ROOT, run, script, show, ONE_THREAD
from test_outputs import CHEAP

# One torch thread per worker: two workers each spinning a per-core OpenMP pool on a 2-core machine run
# the notebooks ~15x slower (minutes instead of seconds).
SKIP = r'^([_.]|(' + '|'.join(map(re.escape, CHEAP)) + r')\.ipynb$)'   # nbdev's own skip (`^[_.]`) and the chapters test_outputs runs

def test_nbdev_test():
    res = run([script('nbdev_test'), '--n_workers', '2', '--timing', '--skip_file_re', SKIP], timeout=30*60, env=ONE_THREAD)   # 12.4 min for every chapter at 0.8 on the loaded 2-core machine; 30: room, not a target
    assert res.returncode == 0, f"nbdev_test failed\n{show(res)}"
    assert 'Success.' in res.stdout, show(res)
    print(res.stdout)

def test_every_chapter_runs_once():
    "The notebooks nbdev_test runs here and those test_outputs runs are apart, and together every notebook nbdev_test would run"
    from nbdev.doclinks import nbglob
    every = {p.stem for p in nbglob(ROOT/'nbs', as_path=True)}
    here = {p.stem for p in nbglob(ROOT/'nbs', as_path=True, skip_file_re=SKIP)}
    assert set(CHEAP) <= every and not here & set(CHEAP) and here | set(CHEAP) == every, (set(CHEAP) - every, here & set(CHEAP))
