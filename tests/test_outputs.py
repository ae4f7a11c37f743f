"""The chapters are committed with their outputs (tools/refresh_outputs.py), and those outputs are not stale: the quick
chapters are re-executed, as nbdev_test runs them, and what they show now must be what they store, after the tool's
own normalisation (`normalise(nb, compare=True)`: execution counts, progress bars, memory addresses, temporary paths
and printed durations set aside). A chapter with no stored outputs fails like a stale one. This run is also those
chapters' nbdev_test: a cell that raises fails here, and tests/test_notebooks.py runs the other notebooks (each
chapter executes once in the suite). Also: the tool leaves a notebook whose run fails untouched and names the cell;
what it writes survives nbdev_clean and is reproducible."""
import json, shutil, sys
from pathlib import Path
import nbformat, pytest
from helpers import ROOT, run, script, show

sys.path.insert(0, str(ROOT/'tools'))
import refresh_outputs as ro

# The chapters that run in a few seconds each under refresh_outputs: seconds of wall time, process start included,
# measured one at a time (OMP_NUM_THREADS=1) on the 2-core machine; two at a time they take about 1.5 minutes (3 when
# the machine is busy). The others (index 39 s, 77_benchmark 36 s, 75_grid 32 s, 36_lotus 21 s, 02, 11, 12, 16, 17 at
# about 15 s, 18, 21, 25 and the 01a-01h data chapters at 5-13 s) are refreshed by the same command and run by
# nbdev_test (tests/test_notebooks.py, which skips those named here: they run here), but not compared here.
CHEAP = {'37_theory': 20, '01_registry': 10, '10_datasets': 4, '16_splits': 8, '18_loaders': 9, '12_formats_cifar': 5, '14_mufac': 6, '15_hf_datasets': 10, '32_base': 7, '63_evaluation': 10, '64_report': 7, '70_store': 6, '71_tracking': 14,
         '38_gold': 10, '39_finetune': 9, '42_bad_teacher': 11, '43_scrub': 11, '44_ssd': 10, '90_deviations': 5,
         '06_catalog': 5, '76_cluster': 10, '85_paper_tables': 7, '30_gradcam': 8, '22_hashing': 8, '88_ablation_study': 10,
         '89_published': 6}

# ---------------------------------------------------------------- the chapters' stored outputs are fresh

# The chapters whose outputs show trained models: their digits follow the CPU's arithmetic (measured: HEAD a120f0f's stored
# outputs were stale on an AMD EPYC machine in exactly these, with the same code and libraries; see tools/refresh_outputs.py).
# They are compared where the machine's arithmetic is the one that stored them (numerics_fingerprint), the others everywhere.
# 30_gradcam too: its Grad-CAM figure differed in 16.6% of its pixels (by up to 11 levels of 255) on an AMD EPYC machine (AVX512)
# whose fingerprint was the stored one, while the machines CI ran on matched the stored figure.
MACHINE_DEPENDENT = {'37_theory', '63_evaluation', '38_gold', '39_finetune', '42_bad_teacher', '43_scrub', '44_ssd', '76_cluster', '30_gradcam'}

@pytest.fixture(scope='module')
def same_numerics() -> tuple:
    "(whether this machine's arithmetic is the one that stored the outputs, this machine's fingerprint, the stored one)"
    here, stored = ro.numerics_fingerprint(), ro.stored_fingerprint()
    return here == stored, here, stored

@pytest.fixture(scope='module')
def fresh(request):
    """{notebook name: result}: the cheap chapters (those selected) executed two at a time and compared with what they store.
    Every one runs, the machine-dependent ones too: this run is their nbdev_test (tests/test_notebooks.py skips them)"""
    chosen = {it.callspec.params['name'] for it in request.session.items
              if getattr(it, 'originalname', '') == 'test_chapter_outputs_up_to_date' and hasattr(it, 'callspec')}
    names = [n for n in CHEAP if n in chosen or not chosen]
    res = ro.refresh([ro.resolve(n) for n in names], n_workers=2, check_only=True, timeout=600, log=lambda m: None)
    return {p.stem: r for p, r in res.items()}

@pytest.mark.parametrize('name', list(CHEAP))
def test_chapter_outputs_up_to_date(fresh, same_numerics, name):
    """The chapter's checks pass (it runs as nbdev_test runs it), and the outputs it stores are those a fresh run shows
    (none stored counts as stale)"""
    same, here, stored = same_numerics
    res = fresh[name]
    assert res['status'] == 'ok', ro._report(ro.resolve(name), res)
    if name in MACHINE_DEPENDENT and not same:
        pytest.skip(f"{name} ran and its checks passed; it shows trained models, and this machine's arithmetic ({here}) is not the one "
                    f"that stored its outputs ({stored or 'none stored'}): refresh them here with `python tools/refresh_outputs.py` to compare")
    probs = res['problems']
    assert not probs, (f"{name}.ipynb: {len(probs)} cells with stale or missing outputs; refresh them with "
                       f"`python tools/refresh_outputs.py {name}` (or every chapter: `python tools/refresh_outputs.py`)\n"
                       + '\n'.join(probs)[:6000])

SOURCE_DEPENDENT = ['89_published']   # chapters that read the paper's .tex when $LOTUS_NB_PAPER_TEX names it

@pytest.mark.parametrize('name', SOURCE_DEPENDENT)
def test_outputs_hold_without_the_paper_source(monkeypatch, name):
    "Without the paper's source ($LOTUS_NB_PAPER_TEX empty, as unset): the chapter's stored outputs are still the fresh ones"
    monkeypatch.setenv('LOTUS_NB_PAPER_TEX', '')
    probs = ro.check([ro.resolve(name)], n_workers=1, timeout=600)[(ro.resolve(name)).resolve()]
    assert not probs, f"{name}.ipynb shows other outputs without the paper's source:\n" + '\n'.join(probs)[:4000]

def test_cheap_chapters_exist():
    "Every chapter named above exists, and is a chapter the tool refreshes by default"
    assert {p.stem for p in ro.chapters()} >= set(CHEAP)

# ---------------------------------------------------------------- the tool, on small notebooks of its own

def _nb(tmp_path, *cells, name='99_tiny.ipynb') -> Path:
    "A notebook of `cells` (code, or markdown when starting with '#') in `tmp_path`, as nbdev writes it"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(c) if c.startswith('# ') else nbformat.v4.new_code_cell(c)
                                         for c in cells])
    nb.metadata = {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}}
    for i, c in enumerate(nb.cells): c.id = f'c{i:07d}'
    p = tmp_path/name
    p.write_text(ro.nb_text(json.loads(nbformat.writes(nb))), encoding='utf-8')
    return p

TINY = ['# Tiny\n\n> a chapter of a few cells',
        'import tempfile, os, matplotlib.pyplot as plt\nfrom tqdm.auto import tqdm',
        'print("hello")\nobject()',                                      # a memory address in the repr
        'd = tempfile.mkdtemp()\nos.path.join(d, "results.csv")',          # a temporary path
        'for _ in tqdm(range(3), disable=False): pass\nprint("after the bar")',   # a bar forced on
        'plt.plot([0, 1], [1, 0]);',
        '#| slow\nraise RuntimeError("a slow cell is skipped, as nbdev_test skips it")',
        'import time\nprint(f"took {time.time() % 1 + 1:.2f} s")']          # a printed duration

def _outputs(p: Path) -> list:
    return [c.get('outputs', []) for c in json.loads(p.read_text())['cells'] if c['cell_type'] == 'code']

def test_refresh_writes_outputs(tmp_path):
    "Outputs stored, volatile content normalised, skipped cells empty, nbdev_clean a no-op, a second run identical"
    p = _nb(tmp_path, *TINY)
    res = ro.refresh([p], n_workers=1, log=lambda m: None)[p.resolve()]
    assert res['status'] == 'ok' and res['written'], res
    text = p.read_text()
    outs = _outputs(p)
    assert 'hello' in json.dumps(outs[1]) and '<object>' in json.dumps(outs[1])     # IPython's `<object at 0x7f...>`
    assert '<tmp>/results.csv' in json.dumps(outs[2]) and '/tmp/' not in json.dumps(outs[2])
    assert json.dumps(outs[3]).count('after the bar') == 1 and 'it/s' not in json.dumps(outs[3]) and '%|' not in json.dumps(outs[3])
    assert any('image/png' in o.get('data', {}) for o in outs[4])
    assert outs[5] == []                                                  # the slow cell did not run
    assert ' 0x' not in text and '"execution_count": null' in text and '"execution_count": 1' not in text
    # what nbdev_clean (settings.ini's options) makes of it is the same file: outputs kept, nothing else to strip
    res = run([script('nbdev_clean'), '--fname', p], cwd=ROOT, timeout=120)
    assert res.returncode == 0 and p.read_text() == text, show(res)
    # a second run stores the same bytes (the duration differs, and is compared masked)
    again = ro.refresh([p], n_workers=1, log=lambda m: None)[p.resolve()]
    assert again['status'] == 'ok', again
    assert ro.check([p], n_workers=1) == {p.resolve(): []}

def test_slow_cell_outputs_stored_and_kept(tmp_path):
    "`--flags slow` stores a slow cell's output; a run without the flag keeps it (neither erased nor compared): the chapter checks fresh"
    p = _nb(tmp_path, '# Slow\n\n> a slow cell', 'print("fast")', '#| slow\nprint("slow " + "table")')
    res = ro.refresh([p], n_workers=1, flags=['slow'], log=lambda m: None)[p.resolve()]
    assert res['status'] == 'ok' and 'slow table' in json.dumps(_outputs(p)[1]), res
    ro.refresh([p], n_workers=1, log=lambda m: None)
    assert 'slow table' in json.dumps(_outputs(p)[1]) and 'fast' in json.dumps(_outputs(p)[0])
    assert ro.check([p], n_workers=1) == {p.resolve(): []}

def test_missing_and_stale_outputs_fail(tmp_path):
    "A notebook without its outputs is stale; a changed output is reported with its cell, id and a diff"
    p = _nb(tmp_path, 'print(6 * 7)', 'x = 1', 'print("end")')
    probs = ro.check([p], n_workers=1)[p.resolve()]
    assert len(probs) == 2 and 'cell #1 (id c0000000' in probs[0] and 'no stored output' in probs[0], probs
    assert ro.refresh([p], n_workers=1, log=lambda m: None)[p.resolve()]['status'] == 'ok'
    assert ro.check([p], n_workers=1)[p.resolve()] == []
    nb = json.loads(p.read_text()); nb['cells'][0]['outputs'][0]['text'] = ['41\n']
    p.write_text(ro.nb_text(nb))
    probs = ro.check([p], n_workers=1)[p.resolve()]
    assert len(probs) == 1 and "cell #1 (id c0000000: 'print(6 * 7)')" in probs[0], probs
    assert '-41' in probs[0] and '+42' in probs[0], probs[0]

def test_failure_leaves_notebook_unchanged(tmp_path):
    "A cell that raises: the notebook stays byte for byte as it was, and the report names the cell and the error"
    p = _nb(tmp_path, '# Broken', 'x = 1\nx', 'y = 1 / 0', 'print("never")')
    before = p.read_bytes()
    res = ro.refresh([p], n_workers=1, log=lambda m: None)[p.resolve()]
    assert res['status'] == 'failed' and p.read_bytes() == before
    e = res['error']
    assert (e['cell'], e['id'], e['line']) == (3, 'c0000002', 'y = 1 / 0') and e['error'].startswith('ZeroDivisionError'), e
    assert 'cell #3' in ro._report(p, res)
    cli = run([sys.executable, ROOT/'tools'/'refresh_outputs.py', p], timeout=300)
    assert cli.returncode == 1 and 'FAIL' in cli.stdout and 'cell #3' in cli.stdout and p.read_bytes() == before, show(cli)

def test_papermill_notebooks_skipped():
    "The papermill notebooks (skip_exec) are not chapters, and the tool skips them as nbdev_test does"
    names = {p.relative_to(ro.nbs_path()).as_posix() for p in ro.chapters()}
    assert 'index.ipynb' in names and 'methods/36_lotus.ipynb' in names
    assert not names & {'experiments.ipynb', 'paper.ipynb', 'ablations.ipynb', 'privacy_audit.ipynb'}
    assert ro.execute(ROOT/'nbs'/'experiments.ipynb')['status'] == 'skipped'

def test_normalise_rules():
    "Each volatile piece and its rule; durations are masked only for comparison"
    t = ro.norm_text
    assert t('<function f at 0x7f3a2c1b5e50>') == '<function f>'
    assert t('/tmp/tmpab12_x/results.csv') == '<tmp>/results.csv' and t(str(ROOT/'nbs'/'x')) == '<repo>/nbs/x'
    assert t(str(Path.home()/'.cache'/'lotus_nb')) == '~/.cache/lotus_nb'
    assert t('took 1.23 s') == 'took 1.23 s' and t('took 1.23 s', compare=True) == 'took <time>'
    assert t("{'acc': 0.5, 'time_min': 0.0123}", compare=True) == "{'acc': 0.5, 'time_min': <time>}"
    assert t('0.9923 accuracy, 10 seeds', compare=True) == '0.9923 accuracy, 10 seeds'
    assert t('| Peak host memory (MiB) | 412 ± 3 |', compare=True) == '| Peak host memory (MiB) | <t> ± <t> |'
    assert t('| Peak host memory (MiB) | 412 ± 3 |') == '| Peak host memory (MiB) | 412 ± 3 |'
    bar = 'LoTUS:  40%|####      | 2/5 [00:01<00:02,  1.50it/s]\rLoTUS: 100%|##########| 5/5 [00:03<00:00,  1.52it/s]\n'
    assert ro.norm_stream(bar + 'done\n') == 'done\n'
    nb = {'metadata': {'widgets': {}}, 'cells': [{'cell_type': 'code', 'execution_count': 3, 'metadata': {'execution': {}},
          'source': '', 'outputs': [{'output_type': 'display_data', 'metadata': {},
                                     'data': {'application/vnd.jupyter.widget-view+json': {}}},
                                    {'output_type': 'stream', 'name': 'stderr', 'text': [bar]},
                                    {'output_type': 'execute_result', 'execution_count': 3, 'metadata': {},
                                     'data': {'text/plain': ['1']}}]}]}
    ro.normalise(nb)
    assert nb['metadata'] == {} and nb['cells'][0]['execution_count'] is None and nb['cells'][0]['metadata'] == {}
    assert nb['cells'][0]['outputs'] == [{'output_type': 'execute_result', 'execution_count': None, 'metadata': {},
                                          'data': {'text/plain': ['1']}}]

def test_nbdev_clean_keeps_outputs():
    "settings.ini keeps outputs under nbdev_clean (clear_all = False) and nbdev runs no hook that strips them"
    cfg = ro.config()   # nbdev's reading of settings.ini
    assert cfg.clear_all is False and cfg.jupyter_hooks is False

def test_edit_during_run_is_kept(tmp_path, monkeypatch):
    "A notebook edited while it ran is not overwritten with the outputs of its old source"
    p = _nb(tmp_path, 'print(1)')
    real = ro.run_one
    def run_then_edit(src, *args, **kwargs):
        res = real(src, *args, **kwargs)
        nb = json.loads(p.read_text()); nb['cells'][0]['source'] = ['print(2)']; p.write_text(ro.nb_text(nb))
        return res
    monkeypatch.setattr(ro, 'run_one', run_then_edit)
    res = ro.refresh([p], n_workers=1, log=lambda m: None)[p.resolve()]
    assert res['status'] == 'failed' and 'edited while it ran' in res['error']['error'], res
    nb = json.loads(p.read_text())
    assert nb['cells'][0]['source'] == ['print(2)'] and nb['cells'][0]['outputs'] == []

def test_fingerprint_names_the_arithmetic():
    "The fingerprint is stable on one machine, stored beside the outputs, and MACHINE_DEPENDENT names chapters the check runs"
    assert ro.numerics_fingerprint() == ro.numerics_fingerprint()
    assert ro.stored_fingerprint(), "tools/refresh_outputs.py stores nbs/outputs_fingerprint.txt with the outputs it writes"
    assert MACHINE_DEPENDENT <= set(CHEAP)
