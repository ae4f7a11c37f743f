"""pytest's hooks and fixtures for the whole suite. The helpers the tests share are a module of their own, imported by
name (`from helpers import ...`: tests/helpers.py); this folder is put on the path so that it imports under any of
pytest's import modes.

The README's test command runs two pytest-xdist workers (`-n 2 --dist loadfile`) on a 2-core machine: each worker, and
what it starts, gets one torch thread unless the caller chose a count (two workers at torch's default count thrash)."""
import os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
if os.environ.get('PYTEST_XDIST_WORKER'):   # set by pytest-xdist in each worker, before any test module imports torch
    for var in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'): os.environ.setdefault(var, '1')
