"""Helpers of the test suite, imported by name (`from helpers import run, show`): the repository root, console scripts,
subprocess runs, papermill runs, results files, and the repository's one import scanner (tools/import_graph.py)."""
import ast, json, os, shutil, signal, subprocess, sys
from pathlib import Path
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS_NB = ROOT/'nbs'/'experiments.ipynb'

def script(name: str) -> str:
    "Path of the console script `name` installed next to this interpreter (falling back to PATH)"
    p = Path(sys.executable).parent/name
    if p.exists(): return str(p)
    found = shutil.which(name)
    if not found: pytest.fail(f"console script {name!r} not found next to {sys.executable} nor on PATH; run tools/setup.sh")
    return found

def run(cmd, timeout=600, cwd=ROOT, env=None, unset=()) -> subprocess.CompletedProcess:
    """Run `cmd` in its own process group, capturing stdout and stderr together as text, with `env` added to this
    process's environment and the variables `unset` removed from it.
    On timeout the whole group is killed (a grandchild left alive could hold the pipe open) and the test fails."""
    cmd = [str(c) for c in cmd]
    if env is not None or unset: env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset}
    with subprocess.Popen(cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as p:
        try: out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            pytest.fail(f"timed out after {timeout} s: $ {' '.join(cmd)}\n{out[-20_000:]}")
        finally:
            try: os.killpg(p.pid, signal.SIGKILL)      # leftovers of the group, if any
            except ProcessLookupError: pass
    return subprocess.CompletedProcess(cmd, p.returncode, out)

ONE_THREAD = dict(OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')

def run_nb(nb: str, out_nb, *args, env=None, timeout=600) -> subprocess.CompletedProcess:
    "Execute nbs/`nb`.ipynb with papermill into `out_nb`, passing `args` (-p/-y ...), one thread per process"
    return run([sys.executable, '-m', 'papermill', ROOT/'nbs'/f'{nb}.ipynb', out_nb, '--no-progress-bar', *args],
               timeout=timeout, env={**ONE_THREAD, **(env or {})})

def papermill(out_nb, *args, timeout=600) -> subprocess.CompletedProcess:
    "Execute nbs/experiments.ipynb with papermill into `out_nb`, passing `args` (-p/-y ...)"
    return run_nb('experiments', out_nb, *args, timeout=timeout)

def outputs(out_nb) -> str:
    "The executed notebook's code-cell outputs, as one string"
    return json.dumps([c.get('outputs', []) for c in json.loads(Path(out_nb).read_text())['cells'] if c['cell_type'] == 'code'])

def show(res: subprocess.CompletedProcess, tail: int = 20_000) -> str:
    "The command and the tail of its output, for assertion messages"
    return f"$ {' '.join(map(str, res.args))}\nexit {res.returncode}\n{res.stdout[-tail:]}"

def read_rows(path) -> pd.DataFrame:
    "The rows of the store whose results.csv is `path` (none while the file does not exist)"
    from lotus_nb.running.store import Store
    return Store(Path(path).parent).read()

sys.path.insert(0, str(ROOT/'tools'))
import import_graph   # the one import scanner: tools/import_graph.py (`scan`, `scan_file`, `graph`, `problems`)

def checkout_copy(dst: Path) -> Path:
    """Copy the files git would check out (tracked, or new and not ignored) to `dst`, as a fresh clone has them;
    package archives (.whl, .tar.gz, .zip) lying in the work tree are downloads or build outputs, not sources"""
    res = run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=ROOT, timeout=60)
    assert res.returncode == 0, show(res)
    for name in filter(None, res.stdout.split('\0')):
        src = ROOT/name
        if src.is_file() and not name.endswith(('.whl', '.tar.gz', '.zip')):
            (dst/name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst/name)
    return dst

def builtin_methods() -> tuple: # (every built-in method in column order, those a default run leaves out)
    """The methods lotus_nb's own modules register (`@register_method('name', ..., order=k)`), read from their sources, in
    column order, and those registered with `default_run=False`: a new built-in needs its notebook and the catalog's line,
    not an edit of the tests"""
    found = []
    for path in sorted((ROOT/'lotus_nb'/'methods').glob('*.py')):
        for node in ast.walk(import_graph.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'register_method' and node.args
                    and isinstance(node.args[0], ast.Constant)): continue
            kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            found.append((kw.get('order'), node.args[0].value, kw.get('default_run', True)))
    assert all(o is not None for o, *_ in found), f"a built-in method without its column order: {found}"
    found.sort()
    return [n for _, n, _ in found], [n for _, n, run in found if not run]
