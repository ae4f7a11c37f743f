"""Execute the chapters and store their outputs in them, the way `nbdev_test` runs them, so that a reader who opens a
chapter on GitHub sees its tables and figures.

Each notebook runs in a fresh Python process of its own (`--n_workers` at a time; nbdev_test reuses its worker
processes, so what one notebook leaves behind cannot show in another's outputs here) as `nbdev_test` runs it: execnb's
`CaptureShell`, in the notebook's folder (`nbs/`), `IN_TEST=1`, the repository and `nbs/` on `sys.path`, skipping the
cells flagged with settings.ini's `tst_flags` (`slow`, `cuda`) unless `--flags` forces them, `#| eval: false` cells
and the `nbdev_export()` cell. A skipped cell keeps the outputs it stores: a slow cell's are stored by a run with
`--flags slow`, and a run without the flag neither erases nor compares them. The environment is pinned for
reproducible outputs: `OMP_NUM_THREADS=1` and `MKL_NUM_THREADS=1` unless already set, `PYTHONHASHSEED=0`,
`TQDM_DISABLE=1` (tqdm's own switch; tqdm bars that a call forces on anyway are removed by `normalise`). The outputs
then go through `normalise` (below) and nbdev's `clean_nb` with settings.ini's options, so `nbdev_clean` leaves the
written notebook as it is.

A notebook whose run raises is left as it was, byte for byte; the report names the cell (`#n`, counted from 1 as in
the file, with its id and first line) and the error. So is a notebook edited while it ran. The notebooks run by
papermill (`skip_exec` in their front matter: experiments, paper, ablations, ...) are skipped, as `nbdev_test` skips
them (but see `experiments` below). After `index.ipynb` (settings.ini's `readme_nb`) is rewritten, README.md is
regenerated from it (`tools/make_readme.py`).

    python tools/refresh_outputs.py                           # every chapter: index, nbs/NN_*.ipynb and nbs/<subpackage>/NN_*.ipynb and the guide pages with code, in place
    python tools/refresh_outputs.py 37_theory nbs/data/22_hashing.ipynb   # these (names, file names or paths)
    python tools/refresh_outputs.py --check 37_theory         # execute, compare with the stored outputs, write nothing
    python tools/refresh_outputs.py --out /tmp/x              # write the executed notebooks to /tmp/x, not in place
    python tools/refresh_outputs.py 90_deviations --flags slow   # its slow cells too: their outputs stored, kept by later runs
    python tools/refresh_outputs.py experiments               # the experiments notebook by papermill, and the embedded paper's page
    python tools/refresh_outputs.py --papermill               # everything: every chapter, the experiments notebook and its page, the field's page
    python tools/refresh_outputs.py field                     # the field (-p methods field) on the embedded benchmark: its page

The experiments notebook (`experiments`, or `--papermill`) is the one papermill notebook that keeps outputs: it runs
with papermill on its defaults (the embedded benchmark, as `papermill nbs/experiments.ipynb out.ipynb`; its results in
a temporary folder), its outputs are stored in nbs/experiments.ipynb (normalised and cleaned as the chapters', the log
lines in one stream), and its tables and figures are written on the page nbs/embedded_paper.ipynb (figures in
nbs/images/embedded/), with `provenance.json` there: the fingerprint of the code that made them (`code_fingerprint`:
lotus_nb's files, the notebook's source, the parameters). About 10 minutes on 2 idle cores, 16 on busy ones.
`--check experiments` runs nothing: it recomputes the fingerprint and compares the page with the notebook
(`check_experiments`, as tests/test_visible_paper.py does).

`--check` (and tests/test_outputs.py, which uses `check`) compares the stored outputs with fresh ones after
`normalise(nb, compare=True)`; a chapter with no stored outputs, where a fresh run shows some, is stale like any other.
Text is compared exactly, images by their pixels. Two rules set aside what no run reproduces, the wall-clock times,
which the notebooks still show: a printed duration (`0.42 s`, `1.5 min`, `'time_min': 0.0031`) and the numbers of a
table row labelled with a duration (`Time (min.)`, `cost (s)`, as in the paper's tables) are masked before comparing.
Exit status: 0 when every notebook ran (and, with `--check`, matched), 1 otherwise.
"""
from __future__ import annotations
import argparse, base64, copy, difflib, io, json, os, re, signal, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _nbtools import ROOT, config, skip_flags, skip_cell   # nbdev's config and the cell-skip rule build_docs shares

def nbs_path() -> Path: return config().nbs_path

def chapters() -> list[Path]:
    """The chapters: `index.ipynb`, the numbered notebooks `nbs/NN_*.ipynb and nbs/<subpackage>/NN_*.ipynb` and the guide pages `nbs/guide_*.ipynb`
    that hold code (not the papermill notebooks)"""
    nbs = nbs_path()
    guides = [p for p in sorted(nbs.glob('guide_*.ipynb')) if any(c['cell_type'] == 'code' for c in json.loads(p.read_text(encoding='utf-8'))['cells'])]
    return [nbs/'index.ipynb', *sorted((p for p in nbs.rglob('*.ipynb') if re.match(r'\d\d\w*_', p.name) and '.ipynb_checkpoints' not in p.parts),
                                       key=lambda p: p.name), *guides]

def resolve(name:str) -> Path:
    "A notebook named as `37_theory`, `methods/37_theory.ipynb` or a path"
    p = Path(name)
    if p.suffix != '.ipynb': p = p.with_name(p.name + '.ipynb')
    for cand in (p, nbs_path()/p, *sorted(nbs_path().rglob(p.name))):
        if cand.exists(): return cand.resolve()
    raise SystemExit(f'no notebook {name!r} (looked for {p} and {nbs_path()/p.name})')

# ---------------------------------------------------------------- normalisation

WIDGET_MIMES = ('application/vnd.jupyter.widget-view+json', 'application/vnd.jupyter.widget-state+json')
# a tqdm bar: `desc: 40%|####      | 4/10 [00:01<00:02, 3.1it/s]` (carriage returns between updates)
_tqdm = re.compile(r'^.*\d+%\|.*\|\s*\d+/\S+\s*\[[\d:?]+(<[\d:?]+)?(,.*)?\]\s*$')
_addr = re.compile(r'\s+at 0x[0-9a-fA-F]+')                         # `<function f at 0x7f3a...>`, as nbdev_clean
# a printed duration: `0.42 s`, `12.3s`, `1.5 min`, `3 ms`, `time_min 0.0031` and `'time_min': 0.0031` (compare only)
_secs = re.compile(r'\b\d+(\.\d+)?(e-?\d+)?\s?(s|sec|secs|seconds|ms|min|mins|minutes)\b')
_time_field = re.compile(r"(time_min|time_s|seconds|secs|elapsed)(['\"]?\s*[:=]?\s*)-?\d+(\.\d+)?(e-?\d+)?")

# a table row labelled with a duration: `Time (min.)`, `cost (s)`, `RN18 / C-10 | Time (min.)`, `time_min` (compare only);
# or with a peak memory: `Peak host memory (MiB)`, `peak_rss_mb`
_time_label = re.compile(r'(?i)\b(time|cost|elapsed|duration)\b[^<>|\n]{0,20}\((s|sec|secs|ms|min|min\.|h)\)|\btime_(min|s)\b'
                         r'|\bmemory\b[^<>|\n]{0,20}\((MiB|MB|GiB|GB)\)|\bpeak_(mem|rss)_mb\b')   # and a run's peak memory, which varies too
_number = re.compile(r'\d+(\.\d+)?(e-?\d+)?')

def _mask_time_rows(s:str) -> str:
    "`s` with the numbers after a duration label masked, on that line or, in HTML, in that table row (`<tr>`)"
    def row(m):
        lab = _time_label.search(m.group(0))
        return m.group(0) if not lab else m.group(0)[:lab.end()] + _number.sub('<t>', m.group(0)[lab.end():])
    s = re.sub(r'<tr>.*?</tr>', row, s, flags=re.S)           # HTML: the row's cells follow on other lines
    return re.sub(r'[^\n]+', row, s)                           # text and Markdown tables: one row a line

def _tmp_dirs() -> list[str]:
    return sorted({tempfile.gettempdir(), '/tmp', '/var/tmp'} | ({os.path.realpath(tempfile.gettempdir())}), key=len, reverse=True)

def norm_text(s:str, compare:bool=False) -> str:
    """`s` without what changes from run to run: memory addresses (as nbdev_clean removes them), temporary folders
    (`/tmp/tmpab12cd/x.csv` -> `<tmp>/x.csv`), the repository's absolute path (`<repo>`), the home folder (`~`); with
    `compare`, also printed durations (`0.42 s`, `1.5 min`, `time_min': 0.0031` -> `<time>`) and the numbers of a
    table row labelled with a duration (`Time (min.)`, `cost (s)` -> `<t>`): shown to the reader, never compared"""
    s = _addr.sub('', s)
    s = s.replace(str(ROOT), '<repo>')
    for t in _tmp_dirs(): s = re.sub(re.escape(t.rstrip('/')) + r'/[^\s/\'"<>:,)\]]+', '<tmp>', s)
    home = str(Path.home())
    if len(home) > 1: s = re.sub(re.escape(home) + r'(?=/)', '~', s)
    if compare:
        s = _time_field.sub(lambda m: m.group(1) + m.group(2) + '<time>', s)
        s = _secs.sub('<time>', s)
        s = _mask_time_rows(s)
    return s

def _join(x) -> str: return ''.join(x) if isinstance(x, list) else (x or '')

def _split(s:str) -> list[str]: return s.splitlines(True)

def norm_stream(text:str, compare:bool=False) -> str:
    "A stream's text without tqdm bars (each update, carriage returns and all) and with `norm_text` applied"
    lines = []
    for line in text.replace('\r\n', '\n').split('\n'):
        last = line.split('\r')[-1] if '\r' in line else line           # what a terminal leaves on screen
        if _tqdm.match(last) or (line != last and not last.strip()): continue
        lines.append(last)
    return norm_text('\n'.join(lines), compare)

def normalise(nb:dict, compare:bool=False) -> dict:
    """Notebook `nb` (nbformat JSON) with its volatile content removed, in place: execution counts, cell metadata
    nbdev_clean drops (timings: `execution`, `ExecuteTime`), widget views and state, tqdm bars, memory addresses,
    temporary and home paths (see `norm_text`). Images (PNG), HTML and text tables stay. With `compare`, printed
    durations are masked too and the outputs' metadata dropped: the form that `check` compares"""
    nb.get('metadata', {}).pop('widgets', None)
    for cell in nb.get('cells', []):
        if cell.get('cell_type') != 'code': continue
        cell['execution_count'] = None
        for k in ('execution', 'ExecuteTime', 'collapsed', 'scrolled'): cell.get('metadata', {}).pop(k, None)
        outs = []
        for o in cell.get('outputs', []):
            o = dict(o)
            if 'execution_count' in o: o['execution_count'] = None
            if o.get('output_type') == 'stream':
                text = norm_stream(_join(o.get('text')), compare)
                if not text.strip(): continue
                o['text'] = _split(text)
            elif o.get('output_type') in ('display_data', 'execute_result'):
                data = {k: v for k, v in o.get('data', {}).items() if k not in WIDGET_MIMES}
                if not data: continue
                for k, v in data.items():
                    if k.startswith('text/'): data[k] = _split(norm_text(_join(v), compare))
                    elif k.startswith('image/') and 'svg' not in k and isinstance(v, str): data[k] = v.rstrip()
                o['data'] = data
                o['metadata'] = {k: v for k, v in o.get('metadata', {}).items() if k not in WIDGET_MIMES}
                if compare: o['metadata'] = {}
            elif o.get('output_type') == 'error':
                o['evalue'] = norm_text(o.get('evalue', ''), compare)
                o['traceback'] = [norm_text(t, compare) for t in o.get('traceback', [])]
            outs.append(o)
        cell['outputs'] = outs
    return nb

def clean(nb:dict) -> dict:
    "nbdev's `clean_nb` with settings.ini's options (what `nbdev_clean` does to the file), in place"
    from nbdev.clean import clean_nb
    cfg = config()
    clean_nb(nb, cfg.clear_all, cfg.get('allowed_metadata_keys', '').split(), cfg.get('allowed_cell_metadata_keys', '').split(), cfg.clean_ids)
    return nb

def nb_text(nb:dict) -> str:
    "The notebook as nbdev writes it (execnb's `nb2str`: sorted keys, one-space indent, UTF-8)"
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n'

# ---------------------------------------------------------------- execution (in a worker process)

def _first_line(src) -> str:
    lines = [l for l in _join(src).splitlines() if l.strip() and not l.lstrip().startswith('#|')]
    return (lines[0][:80] if lines else '')

def execute(src:Path, force_flags:list|None=None, timeout:int|None=None) -> dict:
    """Run notebook `src` in this process as `nbdev_test` does; returns `dict(status, seconds, nb, error)`: status
    'ok' (nb: the file's JSON with fresh outputs, normalised and cleaned), 'skipped' (skip_exec) or 'failed' (error:
    the cell, counted from 1, its id and first line, the exception and traceback)"""
    from execnb.nbio import read_nb
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    from nbdev.frontmatter import FrontmatterProc
    from nbdev.process import NBProcessor
    src = Path(src).resolve()
    raw = json.loads(src.read_text(encoding='utf-8'))
    cwd = os.getcwd()
    os.chdir(ROOT)                                      # nbdev reads settings.ini from the working directory
    try:
        fm = getattr(NBProcessor(src, procs=FrontmatterProc, process=True).nb, 'frontmatter_', {}) or {}
        if str(fm.get('skip_exec', False)).lower() in ('true', '1', 'yes'):
            return dict(status='skipped', seconds=0., reason='skip_exec in its front matter (a papermill notebook)')
        nb = read_nb(src)
        NBProcessor(nb=nb)                              # directives parsed and removed from the source, as nbdev_test runs it
        for c in nb.cells:
            if c.cell_type == 'code': c.outputs, c.execution_count = [], None   # no stale output survives a silent cell
        skip, ran, skipped = skip_cell(skip_flags(force_flags or [])), [], set()
        def pre(cell):
            s = skip(cell)
            if not s: ran.append(cell)
            else: skipped.add(cell.idx_)
            return s
        os.environ['IN_TEST'] = '1'
        if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))
        t0 = time.time()
        k = CaptureShell(src, timeout=timeout)
        try:
            with working_directory(src.parent): k.run_all(nb, exc_stop=True, preproc=pre)
        except BaseException as e:
            cell = ran[-1] if ran else None
            tb = next((o.get('traceback') for o in (cell.get('outputs', []) if cell else []) if o.get('output_type') == 'error'), None)
            import traceback
            tb = ''.join(tb) if tb else ''.join(traceback.format_exception(type(e), e, e.__traceback__))
            return dict(status='failed', seconds=time.time() - t0, error=dict(
                cell=cell.idx_ + 1 if cell else None, id=cell.get('id') if cell else None,
                line=_first_line(cell.source) if cell else '', error=f'{type(e).__name__}: {e}',
                traceback=re.sub(r'\x1b\[[0-9;]*m', '', tb)[-6000:]))
        secs = time.time() - t0
    finally: os.chdir(cwd)
    fresh = json.loads(json.dumps(nb))              # AttrDicts to plain JSON
    for i, (cell, new) in enumerate(zip(raw['cells'], fresh['cells'])):
        if cell.get('cell_type') != 'code': continue
        if i not in skipped: cell['outputs'] = [{k: v for k, v in o.items() if not k.endswith('_')} for o in new.get('outputs', [])]
        cell['execution_count'] = None              # a skipped cell keeps what it stored (a slow cell's, run with --flags slow)
    return dict(status='ok', seconds=secs, nb=clean(normalise(raw)))

def _worker_main(src:str, dst:str, flags:str, timeout:str):
    "Entry point of a worker process: execute `src`, write the result (JSON) to `dst`"
    res = execute(Path(src), flags.split(), int(timeout) or None)
    Path(dst).write_text(json.dumps(res, ensure_ascii=False), encoding='utf-8')

def run_env() -> dict:
    "The environment of a worker process"
    env = dict(os.environ)
    env.setdefault('OMP_NUM_THREADS', '1'); env.setdefault('MKL_NUM_THREADS', '1')
    env.update(PYTHONHASHSEED='0', TQDM_DISABLE='1', PYTHONDONTWRITEBYTECODE='1')
    env.pop('IN_TEST', None)
    return env

def run_one(src:Path, flags:list|None=None, timeout:int|None=None) -> dict:
    "Execute `src` in a fresh Python process (`execute` there); the same dict, plus `wall` (seconds)"
    src = Path(src).resolve()
    with tempfile.TemporaryDirectory(prefix='refresh_') as d:
        out = Path(d)/'result.json'
        cmd = [sys.executable, str(Path(__file__).resolve()), '--_worker', str(src), str(out), ' '.join(flags or []), str(timeout or 0)]
        t0 = time.time()
        with subprocess.Popen(cmd, cwd=ROOT, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) as p:
            try: log, _ = p.communicate(timeout=(timeout + 60) if timeout else None)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL); log, _ = p.communicate()
                return dict(status='failed', seconds=time.time() - t0, wall=time.time() - t0,
                            error=dict(cell=None, id=None, line='', error=f'timed out after {timeout} s', traceback=log[-4000:]))
            finally:
                try: os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError: pass
        wall = time.time() - t0
        if not out.exists():
            return dict(status='failed', seconds=wall, wall=wall, error=dict(cell=None, id=None, line='',
                        error=f'the worker process exited with status {p.returncode}', traceback=log[-4000:]))
        res = json.loads(out.read_text(encoding='utf-8'))
    res['wall'] = wall
    return res

# ---------------------------------------------------------------- comparison

def _png_pixels(b64:str):
    from PIL import Image
    import numpy as np
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert('RGBA'))

def _same_image(a:str, b:str) -> bool:
    "Two base64 PNGs show the same pixels (their encodings may differ: zlib, the Matplotlib version in the metadata)"
    if a == b: return True
    try:
        pa, pb = _png_pixels(a), _png_pixels(b)
        return pa.shape == pb.shape and bool((pa == pb).all())
    except Exception: return False

def _show(o:dict) -> str:
    "An output as text, for a diff: each of its text forms, and its images by size"
    t = o.get('output_type')
    if t == 'stream': return f"[{o.get('name')}]\n" + _join(o.get('text'))
    if t == 'error': return f"[error] {o.get('ename')}: {o.get('evalue')}"
    parts = [f'[{t}]']
    for k, v in o.get('data', {}).items():
        if k.startswith('image/') and 'svg' not in k:
            try: h, w = _png_pixels(_join(v)).shape[:2]; parts.append(f'[{k} {w}x{h}, {len(_join(v))} bytes]')
            except Exception: parts.append(f'[{k}, {len(_join(v))} bytes]')
        else: parts.append(f'[{k}]\n' + _join(v))
    return '\n'.join(parts)

def _diff(a:str, b:str, n:int=12) -> str:
    d = list(difflib.unified_diff(a.splitlines(), b.splitlines(), 'stored', 'fresh', lineterm='', n=1))
    return '\n'.join(d[:n] + (['  ...'] if len(d) > n else []))

def _same_output(a:dict, b:dict) -> bool:
    if a.get('output_type') != b.get('output_type'): return False
    if a.get('output_type') not in ('display_data', 'execute_result'): return a == b
    da, db = a.get('data', {}), b.get('data', {})
    if da.keys() != db.keys(): return False
    for k in da:
        if k.startswith('image/') and 'svg' not in k:
            if not _same_image(_join(da[k]), _join(db[k])): return False
        elif da[k] != db[k]: return False
    return True

def compare(stored:dict, fresh:dict, name:str='') -> list[str]:
    """Where the outputs stored in notebook `stored` differ from those of a fresh run `fresh` (both nbformat JSON of
    the same file), after `normalise(..., compare=True)`: one message per cell, naming the cell (counted from 1), its
    id and first line, with a short diff. A cell with no stored output where the fresh run shows one is stale too."""
    a = normalise(copy.deepcopy(stored), compare=True)['cells']
    b = normalise(copy.deepcopy(fresh), compare=True)['cells']
    if _cells(stored) != _cells(fresh):
        return [f'{name}: the notebook was edited while it ran: compare again']
    out = []
    for i, (ca, cb) in enumerate(zip(a, b), 1):
        if ca.get('cell_type') != 'code': continue
        oa, ob = ca.get('outputs', []), cb.get('outputs', [])
        if len(oa) == len(ob) and all(_same_output(x, y) for x, y in zip(oa, ob)): continue
        where = f"{name} cell #{i} (id {ca.get('id')}: {_first_line(ca.get('source'))!r})"
        if not oa: out.append(f'{where}: no stored output; a fresh run shows {len(ob)} (run tools/refresh_outputs.py)'); continue
        ta, tb = '\n'.join(map(_show, oa)), '\n'.join(map(_show, ob))
        out.append(f'{where}: stored outputs differ from a fresh run\n' + (_diff(ta, tb) if ta != tb else '  (an image differs: same size, other pixels)'))
    return out

# ---------------------------------------------------------------- the command

def _report(src:Path, res:dict) -> str:
    rel = os.path.relpath(src, ROOT)
    if res['status'] == 'skipped': return f"skip  {rel}: {res['reason']}"
    if res['status'] == 'failed':
        e = res['error']
        where = f" at cell #{e['cell']} (id {e['id']}: {e['line']!r})" if e.get('cell') else ''
        tb = '\n'.join('      ' + l for l in e.get('traceback', '').strip().splitlines()[-12:])
        return f"FAIL  {rel}{where}: {e['error']} ({res.get('wall', 0):.1f} s); left unchanged\n{tb}"
    return f"ok    {rel}: {res['seconds']:.1f} s in its cells, {res.get('wall', 0):.1f} s in all"

def _cells(nb:dict) -> list:
    "What a run does not change: each cell's type and source"
    return [(c.get('cell_type'), _join(c.get('source'))) for c in nb.get('cells', [])]

def refresh(paths:list, n_workers:int=2, out_dir:Path|None=None, check_only:bool=False, flags:list|None=None,
            timeout:int|None=None, readme:bool=True, log=print) -> dict:
    """Execute `paths` (`n_workers` processes at a time); write each notebook that ran with its fresh outputs in place
    (or into `out_dir`); with `check_only`, write nothing and compare instead. Returns {path: result}: each result has
    status ('ok', 'skipped', 'failed'), seconds, wall, and `written` or `problems` (`compare`'s messages)"""
    paths = [Path(p).resolve() for p in paths]
    if out_dir: Path(out_dir).mkdir(parents=True, exist_ok=True)
    results = {}
    def job(src):
        res = run_one(src, flags, timeout)
        if res['status'] == 'ok' and _cells(json.loads(src.read_text(encoding='utf-8'))) != _cells(res['nb']):
            res = dict(status='failed', seconds=res['seconds'], wall=res['wall'], error=dict(cell=None, id=None, line='',
                       error='the notebook was edited while it ran: run it again', traceback=''))
        if res['status'] == 'ok':
            fresh = res.pop('nb')
            if check_only: res['problems'] = compare(json.loads(src.read_text(encoding='utf-8')), fresh, src.name)
            else:
                dst = Path(out_dir)/src.name if out_dir else src
                text, old = nb_text(fresh), dst.read_text(encoding='utf-8') if dst.exists() else None
                res['written'] = text != old
                if res['written']:                          # atomically: a reader never sees half a notebook
                    tmp = dst.with_name(f'.{dst.name}.refresh-tmp'); tmp.write_text(text, encoding='utf-8'); os.replace(tmp, dst)
        results[src] = res
        msg = _report(src, res)
        if res.get('problems'): msg += f" -- {len(res['problems'])} cells stale\n" + '\n'.join(res['problems'])
        elif res['status'] == 'ok' and not check_only: msg += ' (written)' if res['written'] else ' (unchanged)'
        elif res['status'] == 'ok': msg += ' -- outputs up to date'
        log(msg)
        return res
    with ThreadPoolExecutor(max(1, n_workers)) as ex: list(ex.map(job, paths))
    readme_nb = (nbs_path()/config().get('readme_nb', 'index.ipynb')).resolve()
    if readme and not check_only and not out_dir and results.get(readme_nb, {}).get('written'):
        subprocess.run([sys.executable, str(ROOT/'tools'/'make_readme.py')], cwd=ROOT, check=True)
        log('README.md regenerated from ' + os.path.relpath(readme_nb, ROOT))
    return {p: results[p] for p in paths}

def check(paths:list, n_workers:int=2, timeout:int|None=None) -> dict:
    "{path: problems} for `paths`: `compare`'s messages, or the failure of the run; empty lists when up to date"
    res = refresh(paths, n_workers, check_only=True, timeout=timeout, log=lambda m: None)
    return {p: r.get('problems', []) if r['status'] != 'failed' else [_report(p, r)] for p, r in res.items()}

# The chapters that train a model show numbers whose last digits depend on the CPU's arithmetic (its vector
# instructions pick the kernels), and training carries them into the first digits shown: HEAD a120f0f's outputs, stored
# on one machine, were stale on an AMD EPYC machine in exactly 37_theory, 63_evaluation, 38_gold, 39_finetune,
# 42_bad_teacher, 43_scrub, 44_ssd and 76_cluster, with the same code and libraries (and 30_gradcam's figure, on an AMD
# EPYC machine whose fingerprint below was the stored one: tests/test_outputs.py lists it with them). `numerics_fingerprint` names a
# machine's arithmetic by a few training steps of the stand-in network; `refresh` stores it beside the chapters it
# writes (FINGERPRINT), so that tests/test_outputs.py compares those chapters only on a machine whose arithmetic is
# the one that stored them, and the others everywhere.
FINGERPRINT = ROOT/'nbs'/'outputs_fingerprint.txt'
FINGERPRINT_CODE = """
import hashlib, torch, torch.nn.functional as F
from lotus_nb.models.architectures import create_model
torch.set_num_threads(1); torch.manual_seed(0)
m = create_model('resnet18_tiny', 10, 1)
opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4), torch.optim.AdamW(m.parameters(), lr=1e-3)]
x, y = torch.randn(64, 1, 14, 14), torch.randint(0, 10, (64,))
for opt in opts:
    for _ in range(5): opt.zero_grad(); F.cross_entropy(m(x), y).backward(); opt.step()
h = hashlib.sha1(b''.join(t.detach().numpy().tobytes() for t in m.state_dict().values())).hexdigest()[:16]
print(torch.__version__.split('+')[0] + ':' + h)
"""

def numerics_fingerprint() -> str:
    "This machine's arithmetic, as the chapters run it (one thread): the torch version and a hash of a few training steps' weights"
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONHASHSEED='0', PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, '-c', FINGERPRINT_CODE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode: raise RuntimeError(f"the numerics fingerprint failed: {out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1]

def stored_fingerprint() -> str:
    "The fingerprint of the machine that last wrote the chapters' outputs ('' when none is stored)"
    return FINGERPRINT.read_text().strip() if FINGERPRINT.exists() else ''

# ---------------------------------------------------------------- the experiments notebook and the embedded paper's page

# The papermill notebooks keep no outputs of their own, except `experiments.ipynb`: `refresh_experiments` runs it with
# papermill on its defaults (the embedded benchmark; `papermill nbs/experiments.ipynb out.ipynb` as the README runs
# it, in a temporary folder: its `results/` is not the repository's), stores the executed notebook's outputs in
# nbs/experiments.ipynb itself, and writes its tables and figures on a page of the site, nbs/embedded_paper.ipynb
# (figures under nbs/images/embedded/, which the page's cells only read), with the fingerprint of the code that made
# them: `code_fingerprint`. tests/test_visible_paper.py recomputes it (`check_experiments`) and fails once lotus_nb
# or the notebook changed since. The whole paper at embedded scale (nbs/paper.ipynb: 19 min at one thread on 2 idle
# cores, far more on a busy machine) is not refreshed here: its main tables are this benchmark's, on the same stand-in.
EXPERIMENTS = 'experiments.ipynb'
EMBEDDED_PAGE = 'embedded_paper.ipynb'
EMBEDDED_DIR = Path('images')/'embedded'               # relative to nbs/ (or to `out`), as the page reads it
PROVENANCE = 'provenance.json'
EXPERIMENTS_CMD = 'python tools/refresh_outputs.py experiments'
EXPERIMENTS_COST = 'about 6 min on 2 idle cores at OMP_NUM_THREADS=1 (6.1 min measured; 16 min on 2 busy ones)'

def code_files() -> list[Path]:
    "What the results of the package depend on: every module and data file of lotus_nb/ but the generated index `_modidx.py`"
    pkg = config().lib_path
    return sorted(p for p in pkg.rglob('*') if p.is_file() and p.suffix in ('.py', '.csv', '.json') and p.name != '_modidx.py'
                  and '__pycache__' not in p.parts and not p.name.startswith('.'))

def _sha(b:bytes) -> str:
    import hashlib
    return hashlib.sha256(b).hexdigest()

def code_fingerprint(nb:Path|None=None, params:dict|None=None) -> dict:
    """What determines the experiments notebook's results, hashed: each file of `code_files` (sha256), the notebook's
    cells (type and source: its parameters' defaults among them) and the parameters passed (`{}`: the defaults).
    `fingerprint` is the hash of the rest; it changes with any change to the code, the notebook or the parameters"""
    nb = Path(nb or nbs_path()/EXPERIMENTS)
    files = {p.relative_to(ROOT).as_posix(): _sha(p.read_bytes())[:16] for p in code_files()}
    cells = _sha(json.dumps(_cells(json.loads(nb.read_text(encoding='utf-8'))), ensure_ascii=False).encode())[:16]
    params = dict(params or {})
    whole = _sha(json.dumps(dict(files=files, notebook=cells, parameters=params), sort_keys=True).encode())[:16]
    return dict(fingerprint=whole, files=files, notebook=cells, parameters=params)

def _merge_streams(nb:dict) -> dict:
    "Consecutive stream outputs of one name as one (the log comes a line at a time), in place"
    for cell in nb.get('cells', []):
        outs = []
        for o in cell.get('outputs', []):
            if o.get('output_type') == 'stream' and outs and outs[-1].get('output_type') == 'stream' and outs[-1].get('name') == o.get('name'):
                outs[-1] = dict(outs[-1], text=_split(_join(outs[-1]['text']) + _join(o.get('text'))))
            else: outs.append(o)
        if 'outputs' in cell: cell['outputs'] = outs
    return nb

def run_papermill(src:Path, params:dict|None=None, timeout:int=3600, workdir:Path|None=None) -> dict:
    """Run notebook `src` with papermill in a fresh process (`run_env`, lotus_nb from this checkout), its kernel in
    `workdir` (a relative `out_dir` lands there), with `params` (none: the notebook's defaults, no injected cell).
    Returns dict(status 'ok' or 'failed', wall, nb: the executed notebook's JSON, error, log)"""
    src = Path(src).resolve()
    out = Path(workdir)/'executed.ipynb'
    cmd = [sys.executable, '-m', 'papermill', str(src), str(out), '--cwd', str(workdir), '--no-progress-bar']
    for k, v in (params or {}).items(): cmd += ['-y', json.dumps({k: v})]
    env = run_env(); env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    env.pop('PYTEST_CURRENT_TEST', None)            # under pytest ipykernel would keep the log (fd 2) out of the notebook
    t0 = time.time()
    try: p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return dict(status='failed', wall=time.time() - t0, error=f'timed out after {timeout} s', log=str(e.stderr or '')[-4000:])
    wall = time.time() - t0
    if p.returncode or not out.exists():
        err = next((l for l in reversed((p.stderr or '').splitlines()) if re.match(r'\w+(Error|Exception)\b', l)), f'papermill exited with status {p.returncode}')
        return dict(status='failed', wall=wall, error=err, log=(p.stderr or '')[-6000:])
    return dict(status='ok', wall=wall, nb=json.loads(out.read_text(encoding='utf-8')), log=p.stderr)

def stored_outputs(src_nb:dict, executed:dict) -> dict:
    """`src_nb` (the notebook as committed) with the outputs of `executed` (papermill's run of it), normalised and
    cleaned as the chapters are; the parameters cell papermill injects, if any, is not stored"""
    cells = [c for c in executed['cells'] if 'injected-parameters' not in c.get('metadata', {}).get('tags', [])]
    if _cells(dict(cells=cells)) != _cells(src_nb): raise ValueError('the executed notebook has other cells than the source')
    nb = copy.deepcopy(src_nb)
    for cell, new in zip(nb['cells'], cells):
        if cell.get('cell_type') == 'code': cell['outputs'], cell['execution_count'] = copy.deepcopy(new.get('outputs', [])), None
    return clean(normalise(_merge_streams(nb)))

def _md_cell(src:str) -> dict: return dict(cell_type='markdown', metadata={}, source=_split(src))

def _code_cell(src:str, outputs:list) -> dict:
    return dict(cell_type='code', execution_count=None, metadata={}, outputs=outputs, source=_split(src))

def _figure_names(nb:dict, fig_dir:Path|None) -> dict:
    "{base64 PNG: name} for the figures the run wrote (`{key}_tau_trace.png` -> `tau_trace`), matched by their bytes"
    names = {}
    for f in sorted(Path(fig_dir).glob('*.png')) if fig_dir and Path(fig_dir).exists() else []:
        m = re.search(r'-[0-9a-f]{6,}_(\w+)$', f.stem)
        names[base64.b64encode(f.read_bytes()).decode()] = m[1] if m else f.stem
    return names

def _page(cells:list) -> dict:
    "A notebook of `cells` (a page the refresh writes), each cell's id a hash of its place and source"
    page = dict(cells=cells, metadata={'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}},
                nbformat=4, nbformat_minor=5)
    for i, c in enumerate(page['cells']): c['id'] = _sha(f'{i}:{_join(c["source"])}'.encode())[:8]
    return page

def embedded_page(nb:dict, prov:dict, figures:dict|None=None) -> tuple[dict, dict]:
    """The page of the embedded paper, from `nb` (the experiments notebook with its stored outputs): the headings
    and prose of its sections from the first table on, each table (its Markdown outputs), each figure (a cell that
    shows the committed PNG, its output stored) and the verdict. Returns (page notebook, {file name: PNG bytes})"""
    figures, pngs = figures or {}, {}
    dataset = prov['parameters'].get('dataset', prov.get('defaults', {}).get('dataset', '?'))
    cells = [_md_cell("# The embedded paper\n\n> The paper's tables and figures on the embedded benchmark, as the experiments notebook "
                      "regenerated them: written by the refresh command, never by hand."),
             _md_cell(f"These are the outputs of one run of [the experiments notebook](experiments.ipynb) with papermill on its defaults "
                      f"(`papermill nbs/experiments.ipynb out.ipynb`: dataset `{dataset}`, every method, the paper's seeds), stored in that "
                      f"notebook too. `{EXPERIMENTS_CMD}` reruns it ({EXPERIMENTS_COST}) and rewrites both, with the figures in "
                      f"`nbs/{EMBEDDED_DIR.as_posix()}/`.\n\nMade by the code of fingerprint `{prov['fingerprint']}` (lotus_nb's modules, "
                      f"the notebook's source and its parameters; each file's hash is in `nbs/{(EMBEDDED_DIR/PROVENANCE).as_posix()}`), "
                      f"PyTorch {prov['torch']}, arithmetic `{prov['numerics']}`. `tests/test_visible_paper.py` fails when the code has "
                      f"changed since: then run the command again.")]
    started, n_fig = False, 0
    for c in nb['cells']:
        src = _join(c.get('source'))
        if c['cell_type'] == 'markdown':
            started = started or bool(re.match(r'##\s+`?tab:', src))
            if started: cells.append(_md_cell(src))
            continue
        if not started or c['cell_type'] != 'code': continue
        for o in c.get('outputs', []):
            data = o.get('data', {})
            if 'image/png' in data:
                b64 = _join(data['image/png']).strip()
                n_fig += 1
                name = f"{figures.get(b64, f'figure_{n_fig}')}.png"
                pngs[name] = base64.b64decode(b64)
                cells.append(_code_cell(f"#| echo: false\nfrom IPython.display import Image\nImage(filename='{(EMBEDDED_DIR/name).as_posix()}')",
                                        [dict(output_type='execute_result', execution_count=None, metadata={},
                                              data={'image/png': b64, 'text/plain': ['<IPython.core.display.Image object>']})]))
            elif 'text/markdown' in data: cells.append(_md_cell(_join(data['text/markdown'])))
            elif o.get('output_type') == 'stream' and o.get('name') == 'stdout':
                cells.append(_md_cell('\n\n'.join('> ' + l for l in _join(o['text']).strip().splitlines())))
    page = _page(cells)
    return clean(page), pngs

def _write(dst:Path, text:str|bytes):
    "Write `dst` atomically: a reader never sees half a file"
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f'.{dst.name}.refresh-tmp')
    tmp.write_bytes(text) if isinstance(text, bytes) else tmp.write_text(text, encoding='utf-8')
    os.replace(tmp, dst)

def _papermill_checked(src:Path, params:dict|None, timeout:int, workdir:Path, what:str, cmd:str, log=print) -> tuple:
    """`run_papermill`, and what makes its run unusable: a failure, or `src` edited while it ran (both: (result, None,
    prov), nothing to write); lotus_nb changed meanwhile is a warning. Returns (result, `src` as it is now, `prov`: the
    code's fingerprint at the start, which the run imported)"""
    before, prov = json.loads(src.read_text(encoding='utf-8')), code_fingerprint(src, params)
    res = run_papermill(src, params, timeout, workdir)
    if res['status'] != 'ok':
        log(f"FAIL  {what}: {res['error']} ({res['wall']:.0f} s); nothing written\n" +
            '\n'.join('      ' + l for l in res.get('log', '').strip().splitlines()[-15:]))
        return res, None, prov
    now = json.loads(src.read_text(encoding='utf-8'))
    if _cells(now) != _cells(before):
        log(f"FAIL  {what}: nbs/{src.name} was edited while it ran: run it again; nothing written")
        return dict(status='failed', wall=res['wall'], error='edited while it ran'), None, prov
    if code_fingerprint(src, params)['fingerprint'] != prov['fingerprint']:   # the kernel imported lotus_nb at its start
        log(f"warn  lotus_nb changed while {what} ran: what is written records the code of the start ({prov['fingerprint']}), "
            f"which the check will call stale: run `{cmd}` again")
    return res, now, prov

def refresh_experiments(params:dict|None=None, out:Path|None=None, timeout:int=3600, log=print) -> dict:
    """Run nbs/experiments.ipynb with papermill (`params`; none: its defaults), then write into `out` (default nbs/,
    in place) `experiments.ipynb` with the run's outputs, the page `embedded_paper.ipynb` and `images/embedded/` (its
    figures and `provenance.json`: the code's fingerprint, the parameters, torch and the arithmetic). A failed run, or
    a notebook edited while it ran, writes nothing. Returns dict(status, wall, written | error)"""
    src = nbs_path()/EXPERIMENTS
    with tempfile.TemporaryDirectory(prefix='refresh_experiments_') as d:
        res, now, prov = _papermill_checked(src, params, timeout, Path(d), f'nbs/{EXPERIMENTS}', EXPERIMENTS_CMD, log)
        if now is None: return res
        try: nb = stored_outputs(now, res['nb'])
        except ValueError as e:
            log(f"FAIL  nbs/{EXPERIMENTS}: {e}; nothing written"); return dict(status='failed', wall=res['wall'], error=str(e))
        figures = _figure_names(nb, Path(d)/str((params or {}).get('out_dir') or 'results')/'figures')   # the notebook's default out_dir
    import papermill as pm, torch
    prov = dict(command=EXPERIMENTS_CMD, **prov, defaults={k: v['default'] for k, v in pm.inspect_notebook(str(src)).items()},
                torch=torch.__version__.split('+')[0], numerics=numerics_fingerprint())
    prov['defaults'] = {k: v.strip("'\"") if isinstance(v, str) else v for k, v in prov['defaults'].items()}
    page, pngs = embedded_page(nb, prov, figures)
    prov['figures'] = {n: _sha(b)[:16] for n, b in pngs.items()}
    dst = Path(out) if out else nbs_path()
    img = dst/EMBEDDED_DIR
    for name, b in pngs.items(): _write(img/name, b)
    for f in img.glob('*.png') if img.exists() else []:
        if f.name not in pngs: f.unlink()            # a figure the run no longer makes
    _write(img/PROVENANCE, json.dumps(prov, indent=1, sort_keys=True) + '\n')
    _write(dst/EMBEDDED_PAGE, nb_text(page))
    _write(dst/EXPERIMENTS, nb_text(nb))
    log(f"ok    nbs/{EXPERIMENTS}: papermill run in {res['wall']/60:.1f} min; outputs stored, {EMBEDDED_PAGE} and "
        f"{EMBEDDED_DIR.as_posix()}/ written (code fingerprint {prov['fingerprint']})")
    return dict(status='ok', wall=res['wall'], written=[dst/EXPERIMENTS, dst/EMBEDDED_PAGE, img])

def _page_tables(page:dict) -> list[str]:
    "The Markdown tables on the page: each markdown cell that holds one (a line starting `|`), stripped"
    return [_join(c['source']).strip() for c in page['cells'] if c['cell_type'] == 'markdown'
            and any(l.startswith('|') for l in _join(c['source']).splitlines())]

def check_experiments(where:Path|None=None, params:dict|None=None) -> list[str]:
    """Problems with the stored experiments notebook and the embedded paper's page in `where` (default nbs/), without
    running anything: the code's fingerprint now differs from the one they were made with (naming the files changed),
    they were made with other parameters than `params` (default: none, the notebook's defaults), the notebook keeps
    no outputs, the page's tables or figures are not the notebook's, a figure file is not the one the page shows"""
    where = Path(where or nbs_path())
    nb_f, page_f, prov_f = where/EXPERIMENTS, where/EMBEDDED_PAGE, where/EMBEDDED_DIR/PROVENANCE
    how = f"refresh them with `{EXPERIMENTS_CMD}` ({EXPERIMENTS_COST})"
    missing = [f.relative_to(where).as_posix() for f in (nb_f, page_f, prov_f) if not f.exists()]
    if missing: return [f"no {', '.join(missing)} in {where}: {how}"]
    prov = json.loads(prov_f.read_text(encoding='utf-8'))
    nb, page = json.loads(nb_f.read_text(encoding='utf-8')), json.loads(page_f.read_text(encoding='utf-8'))
    now, probs = code_fingerprint(nb_f, params), []
    if now['fingerprint'] != prov.get('fingerprint'):
        files = prov.get('files', {})
        changed = sorted(k for k in files.keys() | now['files'].keys() if files.get(k) != now['files'].get(k))
        what = ([f"changed since: {', '.join(changed[:12])}" + (' ...' if len(changed) > 12 else '')] if changed else []) + \
               (['the notebook\'s source changed'] if now['notebook'] != prov.get('notebook') else []) + \
               ([f"made with parameters {prov.get('parameters')}, not {now['parameters']}"] if now['parameters'] != prov.get('parameters') else [])
        probs.append(f"nbs/{EXPERIMENTS}'s stored outputs and nbs/{EMBEDDED_PAGE} were made by other code (fingerprint "
                     f"{prov.get('fingerprint')}, now {now['fingerprint']}: {'; '.join(what) or 'see provenance.json'}): {how}")
    if f"`{prov.get('fingerprint')}`" not in json.dumps(page, ensure_ascii=False):
        probs.append(f"nbs/{EMBEDDED_PAGE} does not show the fingerprint of {prov_f.name} ({prov.get('fingerprint')}): {how}")
    code = [c for c in nb['cells'] if c['cell_type'] == 'code']
    if not any(c.get('outputs') for c in code): probs.append(f"nbs/{EXPERIMENTS} keeps no outputs: {how}"); return probs
    shown = [_join(o['data']['text/markdown']).strip() for c in code for o in c.get('outputs', []) if 'text/markdown' in o.get('data', {})]
    tables = _page_tables(page)
    if not tables: probs.append(f"nbs/{EMBEDDED_PAGE} shows no table: {how}")
    if bad := [t.splitlines()[0][:100] for t in tables if t not in shown]:
        probs.append(f"tables on nbs/{EMBEDDED_PAGE} that nbs/{EXPERIMENTS} does not show (another run): {bad}: {how}")
    if len(tables) != len(shown): probs.append(f"nbs/{EMBEDDED_PAGE} shows {len(tables)} tables, nbs/{EXPERIMENTS} {len(shown)}: {how}")
    imgs = lambda cells: [_join(o['data']['image/png']).strip() for c in cells if c['cell_type'] == 'code'
                          for o in c.get('outputs', []) if 'image/png' in o.get('data', {})]
    if imgs(page['cells']) != imgs(nb['cells']):
        probs.append(f"the figures on nbs/{EMBEDDED_PAGE} are not those of nbs/{EXPERIMENTS} ({len(imgs(page['cells']))} and "
                     f"{len(imgs(nb['cells']))}): {how}")
    for c in page['cells']:
        m = re.search(r"Image\(filename='([^']+)'\)", _join(c.get('source')))
        if not m: continue
        f, b64 = where/m[1], next((_join(o['data']['image/png']).strip() for o in c.get('outputs', []) if 'image/png' in o.get('data', {})), '')
        if not f.exists() or base64.b64encode(f.read_bytes()).decode() != b64:
            probs.append(f"{f.relative_to(where).as_posix()} is not the figure nbs/{EMBEDDED_PAGE} shows: {how}")
    return probs


# ---------------------------------------------------------------- the field on the embedded benchmark

# `-p methods field` on the embedded benchmark (the paper's methods and every method since the paper that does its kind)
# is a second papermill run of the experiments notebook: `refresh_field` runs it in a temporary folder and writes the
# page nbs/embedded_field.ipynb (the notebook's sections on the field and on whether each method acted, their prose and
# tables), with the fingerprint of the code that made it in nbs/images/embedded/field_provenance.json. The experiments
# notebook itself keeps the outputs of its default run. tests/test_visible_paper.py recomputes the fingerprint
# (`check_field`); the README shows the page's table (tests/test_readme.py).
FIELD_PAGE = 'embedded_field.ipynb'
FIELD_PARAMS = {'methods': 'field'}
FIELD_PROVENANCE = 'field_provenance.json'
FIELD_CMD = 'python tools/refresh_outputs.py field'
FIELD_COST = 'about 17 min at OMP_NUM_THREADS=1 on 2 cores, the experiments refresh beside it (16.5 min measured)'
FIELD_SECTIONS = ('## Did each method act?', '## The field')   # the sections of the notebook the page shows

def field_page(nb:dict, prov:dict) -> dict:
    """The page of the field on the embedded benchmark, from `nb` (the experiments notebook as the run with
    `FIELD_PARAMS` executed it): the prose and the Markdown tables and printed lines of `FIELD_SECTIONS`"""
    dataset = prov.get('defaults', {}).get('dataset', '?')
    cells = [_md_cell("# The field on the embedded benchmark\n\n> The paper's methods and the field's since, ranked together by Avg "
                      "Gap, as the experiments notebook ran them: written by the refresh command, never by hand."),
             _md_cell(f"One run of [the experiments notebook](experiments.ipynb) with papermill: `papermill nbs/experiments.ipynb out.ipynb "
                      f"-p methods field` (dataset `{dataset}`, the paper's seeds). `{FIELD_CMD}` reruns it ({FIELD_COST}) and rewrites "
                      f"this page.\n\nMade by the code of fingerprint `{prov['fingerprint']}` (lotus_nb's modules, the notebook's source "
                      f"and its parameters; each file's hash is in `nbs/{(EMBEDDED_DIR/FIELD_PROVENANCE).as_posix()}`), PyTorch "
                      f"{prov['torch']}, arithmetic `{prov['numerics']}`. `tests/test_visible_paper.py` fails when the code has changed "
                      f"since: then run the command again.")]
    keep = False
    for c in nb['cells']:
        src = _join(c.get('source'))
        if c['cell_type'] == 'markdown':
            if re.match(r'##\s', src): keep = src.startswith(FIELD_SECTIONS)
            if keep: cells.append(_md_cell(src))
            continue
        if not keep or c['cell_type'] != 'code': continue
        for o in c.get('outputs', []):
            data = o.get('data', {})
            if 'text/markdown' in data: cells.append(_md_cell(_join(data['text/markdown'])))
            elif o.get('output_type') == 'stream' and o.get('name') == 'stdout':
                cells.append(_md_cell('\n\n'.join('> ' + l for l in _join(o['text']).strip().splitlines())))
    page = _page(cells)
    return clean(page)

def refresh_field(out:Path|None=None, timeout:int=7200, log=print) -> dict:
    """Run nbs/experiments.ipynb with papermill and `FIELD_PARAMS`, then write into `out` (default nbs/) the page
    `embedded_field.ipynb` and `images/embedded/field_provenance.json`. A failed run, or a notebook edited while it
    ran, writes nothing. Returns dict(status, wall, written | error)"""
    src = nbs_path()/EXPERIMENTS
    with tempfile.TemporaryDirectory(prefix='refresh_field_') as d:
        res, now, prov = _papermill_checked(src, FIELD_PARAMS, timeout, Path(d), f'nbs/{FIELD_PAGE}', FIELD_CMD, log)
    if now is None: return res
    import papermill as pm, torch
    prov = dict(command=FIELD_CMD, **prov, defaults={k: v['default'].strip("'\"") if isinstance(v['default'], str) else v['default']
                                                      for k, v in pm.inspect_notebook(str(src)).items()},
                torch=torch.__version__.split('+')[0], numerics=numerics_fingerprint())
    try: page = field_page(stored_outputs(now, res['nb']), prov)
    except ValueError as e:
        log(f"FAIL  nbs/{FIELD_PAGE}: {e}; nothing written"); return dict(status='failed', wall=res['wall'], error=str(e))
    dst = Path(out) if out else nbs_path()
    _write(dst/EMBEDDED_DIR/FIELD_PROVENANCE, json.dumps(prov, indent=1, sort_keys=True) + '\n')
    _write(dst/FIELD_PAGE, nb_text(page))
    log(f"ok    nbs/{FIELD_PAGE}: papermill run with {FIELD_PARAMS} in {res['wall']/60:.1f} min; written (code fingerprint "
        f"{prov['fingerprint']})")
    return dict(status='ok', wall=res['wall'], written=[dst/FIELD_PAGE, dst/EMBEDDED_DIR/FIELD_PROVENANCE])

def check_field(where:Path|None=None) -> list[str]:
    """Problems with the field's page in `where` (default nbs/), without running anything: absent, made by other code
    than the current (naming the files changed), or not showing its fingerprint or a table"""
    where = Path(where or nbs_path())
    page_f, prov_f = where/FIELD_PAGE, where/EMBEDDED_DIR/FIELD_PROVENANCE
    how = f"refresh it with `{FIELD_CMD}` ({FIELD_COST})"
    if missing := [f.relative_to(where).as_posix() for f in (page_f, prov_f) if not f.exists()]:
        return [f"no {', '.join(missing)} in {where}: {how}"]
    prov, page = json.loads(prov_f.read_text(encoding='utf-8')), json.loads(page_f.read_text(encoding='utf-8'))
    now, probs = code_fingerprint(where/EXPERIMENTS, FIELD_PARAMS), []
    if now['fingerprint'] != prov.get('fingerprint'):
        files = prov.get('files', {})
        changed = sorted(k for k in files.keys() | now['files'].keys() if files.get(k) != now['files'].get(k))
        what = ([f"changed since: {', '.join(changed[:12])}" + (' ...' if len(changed) > 12 else '')] if changed else []) + \
               (['the notebook\'s source changed'] if now['notebook'] != prov.get('notebook') else [])
        probs.append(f"nbs/{FIELD_PAGE} was made by other code (fingerprint {prov.get('fingerprint')}, now {now['fingerprint']}: "
                     f"{'; '.join(what) or 'see ' + FIELD_PROVENANCE}): {how}")
    if f"`{prov.get('fingerprint')}`" not in json.dumps(page, ensure_ascii=False):
        probs.append(f"nbs/{FIELD_PAGE} does not show the fingerprint of {prov_f.name} ({prov.get('fingerprint')}): {how}")
    if not any(t.startswith('|') and 'Rank per seed' in t for t in _page_tables(page)):
        probs.append(f"nbs/{FIELD_PAGE} shows no field table: {how}")
    return probs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('notebooks', nargs='*', help='notebooks (default: every chapter: index, nbs/NN_*.ipynb and nbs/<subpackage>/NN_*.ipynb and the guide pages with code)')
    ap.add_argument('--n_workers', type=int, default=min(os.cpu_count() or 1, 8), help='notebooks run at once (default: the CPU count, at most 8)')
    ap.add_argument('--check', action='store_true', help='compare the stored outputs with a fresh run; write nothing')
    ap.add_argument('--out', help='write the executed notebooks into this folder instead of in place')
    ap.add_argument('--flags', default='', help='space-separated test flags to run that are normally skipped (slow cuda)')
    ap.add_argument('--timeout', type=int, default=1800, help='seconds one notebook may run (default 1800)')
    ap.add_argument('--_worker', nargs=4, help=argparse.SUPPRESS)
    ap.add_argument('--papermill', action='store_true', help=f'also the experiments notebook and the embedded paper\'s page '
                    f'(what `{EXPERIMENTS_CMD}` does: {EXPERIMENTS_COST}) and the field\'s page (`{FIELD_CMD}`: {FIELD_COST}), '
                    'after the chapters')
    a = ap.parse_args(argv)
    if a._worker: return _worker_main(*a._worker)
    run_field, names = 'field' in a.notebooks or a.papermill, [n for n in a.notebooks if n != 'field']   # 'field': its page, below
    paths = [resolve(n) for n in names] if names else [] if run_field else chapters()
    exp = nbs_path().resolve()/EXPERIMENTS
    run_exp = exp in paths or a.papermill
    paths = [p for p in paths if p != exp]
    t0 = time.time()
    res = refresh(paths, a.n_workers, a.out, a.check, a.flags.split(), a.timeout) if paths else {}
    if not a.check and not a.out and any(r.get('written') or r['status'] == 'ok' for r in res.values()):
        FINGERPRINT.write_text(numerics_fingerprint() + '\n')   # the arithmetic these outputs were made with
    bad = [p for p, r in res.items() if r['status'] == 'failed' or r.get('problems')]
    if run_exp:
        if a.check:                                 # no run (it takes minutes): the fingerprint and the page against the notebook
            probs = check_experiments()
            print(f"{'ok   ' if not probs else 'STALE'} nbs/{EXPERIMENTS} and nbs/{EMBEDDED_PAGE}: "
                  + ('made by the current code, and the page shows the notebook\'s tables and figures' if not probs else '\n'.join(probs)))
        else: probs = refresh_experiments(out=Path(a.out) if a.out else None, timeout=max(a.timeout, 3600))['status'] != 'ok'
        if probs: bad.append(exp)
    fld = nbs_path().resolve()/FIELD_PAGE
    if run_field:
        if a.check:
            probs = check_field()
            print(f"{'ok   ' if not probs else 'STALE'} nbs/{FIELD_PAGE}: " + ('made by the current code' if not probs else '\n'.join(probs)))
        else: probs = refresh_field(out=Path(a.out) if a.out else None, timeout=max(a.timeout, 7200))['status'] != 'ok'
        if probs: bad.append(fld)
    n = len(res) + run_exp + run_field
    done = sum(r['status'] == 'ok' for r in res.values()) + (run_exp and exp not in bad) + (run_field and fld not in bad)
    print(f"{n} notebooks in {time.time() - t0:.0f} s: {done} "
          f"{'checked' if a.check and not res else 'ran'}, {sum(r['status'] == 'skipped' for r in res.values())} skipped, {len(bad)} "
          + ('stale or failed' if a.check else 'failed') + (': ' + ' '.join(p.name for p in bad) if bad else ''))
    sys.exit(1 if bad else 0)

if __name__ == '__main__': main()
