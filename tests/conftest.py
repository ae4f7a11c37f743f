"""pytest's hooks for the whole suite. The helpers the tests share are a module of their own, imported by name
(`from helpers import ...`: tests/helpers.py); this folder is put on the path so that it imports under any of pytest's
import modes.

The README's test command runs two pytest-xdist workers, a test file at a time each (`-n 2 --dist loadfile`), on a
2-core machine:
- each worker, and what it starts, gets one torch thread unless the caller chose a count (two workers at torch's
  default count thrash);
- the files that take longest are handed out first (`SLOWEST_FIRST`, measured on the 2-core machine), so that the
  short ones fill the end of both workers' time. xdist's own order (files with the most tests first) left the
  notebooks' run, 7 minutes in one test, for the end.

The tests that read the paper's LaTeX source find it through $LOTUS_NB_PAPER_TEX, as the package does; where the variable is
unset and a checkout has the source beside it (`shared/paper/` next to the repository), it is set to that file. Without
either, those tests skip and say what the variable enables."""
import os, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if os.environ.get('PYTEST_XDIST_WORKER'):   # set by pytest-xdist in each worker, before any test module imports torch
    for var in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'): os.environ.setdefault(var, '1')
PAPER_TEX = HERE.parent.parent/'shared'/'paper'/'lotus_cvpr2025.tex'   # the paper's source, where a checkout has it beside itself
if PAPER_TEX.is_file(): os.environ.setdefault('LOTUS_NB_PAPER_TEX', str(PAPER_TEX))

SLOWEST_FIRST = ['test_notebooks.py', 'test_benchmarks.py', 'test_paper.py', 'test_ray_cluster.py', 'test_docs.py', 'test_tuning.py',
                 'test_papermill.py', 'test_rehearsal.py', 'test_outputs.py', 'test_grid.py', 'test_plugins.py', 'test_visible_paper.py',
                 'test_packaging.py', 'test_fast_path.py', 'test_privacy.py', 'test_interrupt.py', 'test_paper_notebooks_b.py']
if missing := [f for f in SLOWEST_FIRST if not (HERE/f).exists()]: raise RuntimeError(f"tests/conftest.py's SLOWEST_FIRST names no file: {missing}")

def pytest_configure(config):
    if hasattr(config.option, 'loadscopereorder'): config.option.loadscopereorder = False   # xdist: files in the order below, not by test count

def pytest_collection_modifyitems(session, config, items):
    "The slowest files first (each worker collects the same order), then the others as collected"
    rank = {f: i for i, f in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda it: rank.get(Path(str(it.fspath)).name, len(rank)))
