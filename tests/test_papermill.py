"nbs/experiments.ipynb run by papermill on `digits`: results, tables, figures, resume, progress on the terminal, parameters reaching the notebook; every papermill notebook's parameters parsed"
import ast, dataclasses, json, os, re, subprocess, sys
import numpy as np
import pandas as pd
import pytest
import torch
from helpers import ROOT, EXPERIMENTS_NB, ONE_THREAD, papermill, read_rows, show, run, run_nb, outputs
from lotus_nb.running.store import COLUMNS
from lotus_nb.methods.base import list_methods
from lotus_nb.methods.base import display_name

PAPER_GAP_KEYS = ['mia', 'acc_forget', 'acc_retain', 'acc_test']   # the paper's Avg Gap: these four gaps to f_gold, averaged
METHODS = list_methods(default_run=True)   # the notebook's default: every method of the default run, references included
SEEDS = [3407, 13, 12]

@pytest.fixture(scope='module')
def run_digits(tmp_path_factory):
    "One papermill run of the default benchmark on `digits`: (output notebook, out_dir, process)"
    tmp = tmp_path_factory.mktemp('papermill')
    out_nb, res_dir = tmp/'out.ipynb', tmp/'res'
    res = papermill(out_nb, '-p', 'dataset', 'digits', '-p', 'out_dir', res_dir, '-p', 'tracking', 'mlflow')   # the README's tracker command
    assert res.returncode == 0, show(res)
    return out_nb, res_dir, res

def test_results_csv(run_digits):
    _, res_dir, _ = run_digits
    header = (res_dir/'results.csv').read_text().splitlines()[0]
    assert header.split(',') == COLUMNS
    df = read_rows(res_dir/'results.csv')
    assert len(df) == len(METHODS)*len(SEEDS), df
    assert sorted(zip(df.method, df.seed)) == sorted((m, s) for m in METHODS for s in SEEDS)
    assert not df.duplicated(['method', 'seed']).any()
    assert set(df.dataset) == {'digits'}
    # every row's avg_gap, recomputed here: the mean of |metric - gold's metric of the same seed| over the paper's four terms
    gold = df[df.method == 'gold'].set_index('seed')[PAPER_GAP_KEYS]
    want = (df[PAPER_GAP_KEYS] - gold.loc[df.seed].to_numpy()).abs().mean(axis=1)
    assert np.allclose(df.avg_gap, want, rtol=0, atol=1e-12), df.assign(want=want)[['method', 'seed', 'avg_gap', 'want']]
    assert (df.loc[df.method != 'gold', 'avg_gap'] > 0).all(), "only f_gold is at distance 0 from itself"
    assert df[[c for c in COLUMNS if c not in ('forget_class', 'peak_mem_mb')]].notna().all().all(), df   # device memory: CUDA only
    assert (df.method_seed == df.seed).all() and (df.threads == 1).all() and (df.peak_rss_mb > 0).all(), df[['seed', 'method_seed', 'threads', 'peak_rss_mb']]
    # the original trained on the forget set, the gold model did not: over the seeds, the original is the more accurate on it
    # (per seed the two can swap on digits, where memorisation is small)
    assert df.loc[df.method == 'original', 'acc_forget'].mean() > df.loc[df.method == 'gold', 'acc_forget'].mean(), df[['method', 'seed', 'acc_forget']]

def test_gold_against_an_independent_retraining(run_digits):
    """Gold's row is f_gold scored against itself: its Avg Gap and JSD are 0 by definition. The check that can fail: the row holds
    the cached f_gold's own metrics, and a second retraining (the gold recipe on the same D_r, another seed) is another model, whose
    JSD to f_gold (recomputed here from both models' outputs) and Avg Gap are not 0"""
    from lotus_nb.running.benchmark import BenchmarkSpec, prepare, resolve_spec
    from lotus_nb.running.runner import seed_context
    from lotus_nb.methods.base import unlearn
    from lotus_nb.running.store import Store
    _, res_dir, _ = run_digits
    seed, store = SEEDS[0], Store(res_dir)
    ckpts = sorted(store.checkpoints.iterdir())
    prep = prepare(resolve_spec(BenchmarkSpec('digits', method_overrides={})), ['gold'])   # the notebook's spec
    ctx = seed_context(prep, seed, store, 'cpu', progress=False)
    assert sorted(store.checkpoints.iterdir()) == ckpts, "f_orig and f_gold came from the run's cache: nothing was trained"
    df = read_rows(res_dir/'results.csv')
    row = df[(df.method == 'gold') & (df.seed == seed)].iloc[0]
    mine = ctx.evaluate(ctx.f_gold)
    cols = PAPER_GAP_KEYS + ['acc_unseen', 'jsd']
    assert np.allclose(row[cols].astype(float), [mine[c] for c in cols], rtol=0, atol=1e-12), (row[cols], mine)
    assert row.jsd == 0 and row.avg_gap == 0
    task = dataclasses.replace(ctx.task, retrain=None, seed=seed + 1)            # retrain, not the cached f_gold
    f_other = unlearn('gold', ctx.f_orig, task, prep.cfgs['gold'], prep.arch, progress=False).model
    other = ctx.evaluate(f_other)
    def probs(model):
        model.eval()                                                               # BatchNorm on its running statistics
        with torch.no_grad(): return torch.cat([model(x).double().softmax(1) for x, *_ in ctx.splits['forget'].loader(512)]).numpy()
    p, q = probs(f_other), probs(ctx.f_gold); m = (p + q)/2
    kl = lambda a, b: (a*(np.log(np.clip(a, 1e-12, None)) - np.log(np.clip(b, 1e-12, None)))).sum(1)
    js = (0.5*kl(p, m) + 0.5*kl(q, m)).mean()                                     # the paper's JSD: mean per-sample JS (nats)
    assert js > 1e-5 and np.isclose(other['jsd'], js, rtol=1e-6, atol=1e-9), (other['jsd'], js)
    gap = np.mean([abs(other[k] - row[k]) for k in PAPER_GAP_KEYS])
    assert gap > 0, f"two independent retrainings agree on all four Avg Gap terms: {other}"

def test_tables_and_figures(run_digits):
    _, res_dir, _ = run_digits
    for kind in ['avg_gap', 'avg_gap_supp', 'hyperparams']:
        for ext in ['md', 'tex', 'csv']:
            found = list((res_dir/'tables').glob(f'*_{kind}.{ext}'))
            assert len(found) == 1, f"expected one *_{kind}.{ext} in {res_dir/'tables'}, got {found}"
            assert found[0].stat().st_size > 0, f"{found[0]} is empty"
    for kind in ['tau_trace', 'entropy']:
        found = list((res_dir/'figures').glob(f'*_{kind}.png'))
        assert len(found) == 1 and found[0].stat().st_size > 0, f"figure *_{kind}.png missing in {res_dir/'figures'}"

def marks(md) -> dict:
    "{row label: (columns in bold, columns underlined)} of a rendered Markdown table"
    lines = [[c.strip() for c in l.strip().strip('|').split('|')] for l in md.read_text().splitlines() if l.startswith('|')]
    return {l[0]: tuple({c for c, v in zip(lines[0], l) if v.startswith(m)} for m in ('**', '<u>')) for l in lines[2:]}

def two_best(values) -> tuple:
    "({display names at the smallest value}, {those at the next value})"
    v = values.dropna(); top = sorted(v.unique())[:2]
    return tuple({display_name(m) for m in v.index if v[m] == t} for t in top) + ((set(),) if len(top) < 2 else ())

def test_best_and_second(run_digits):
    """The bold (best, every tie) and underlined (the next value) cells of the Avg Gap tables, recomputed from the rows: the paper-shaped
    table by the authors' aggregation (results.ipynb cell 0: values rounded as logged, means rounded to 2, Avg Gap the mean of the gaps of
    the rounded means, JSD the authors' formula x1e4), the _extra table by ours (the mean of the rows' per-seed values); the references are not ranked"""
    from lotus_nb.metrics.report import PAPER_METHODS, OURS_AVG_GAP
    _, res_dir, _ = run_digits
    df = read_rows(res_dir/'results.csv')
    assert df[~df.method.isin(['original', 'gold'])].method.nunique() >= 2
    logged = df.assign(**{k: [round(v, 2) for v in df[k]] for k in PAPER_GAP_KEYS}, jsd_authors=[round(v, 6) for v in df.jsd_authors])
    g = logged.groupby('method')[PAPER_GAP_KEYS + ['jsd_authors']].mean()
    g['jsd_authors'] = g.jsd_authors*1e4; g = g.round(2)
    paper = pd.DataFrame({'Avg Gap': (g[PAPER_GAP_KEYS] - g.loc['gold', PAPER_GAP_KEYS]).abs().mean(axis=1).round(4), 'JSD ×1e4': g.jsd_authors})
    ranked = [m for m in PAPER_METHODS if m not in ('original', 'gold')]
    md, = (res_dir/'tables').glob('*_avg_gap.md')
    got = marks(md)
    for label in paper: assert got[label] == two_best(paper.loc[ranked, label]), (label, got[label], paper[label])
    ours = df[~df.method.isin(['original', 'gold'])].groupby('method')[['avg_gap', 'jsd', 'rf_jsd']].mean()
    md, = (res_dir/'tables').glob('*_avg_gap_extra.md')
    got = marks(md)
    for label, col in {OURS_AVG_GAP: 'avg_gap', 'JSD x1e4': 'jsd', 'RF-JSD x1e4': 'rf_jsd'}.items():
        assert got[label] == two_best(ours[col]), (label, got[label], ours[col].sort_values())

def test_output_notebook(run_digits):
    out_nb, _, _ = run_digits
    assert 'Avg Gap' in out_nb.read_text()
    nb = json.loads(out_nb.read_text())
    outputs = json.dumps([c.get('outputs', []) for c in nb['cells'] if c['cell_type'] == 'code'])
    assert 'Avg Gap' in outputs, "the tab:avg_gap table is not among the executed notebook's outputs"
    for m in METHODS: assert display_name(m) in outputs, f"{display_name(m)} missing from the executed notebook's tables"
    assert '**' in outputs and '<u>' in outputs, "best in bold and second underlined"

def test_rerun_resumes(run_digits):
    "A second run into the same out_dir finds every row and rewrites nothing"
    out_nb, res_dir, _ = run_digits
    before = (res_dir/'results.csv').read_bytes()
    res = papermill(out_nb.with_name('out2.ipynb'), '-p', 'dataset', 'digits', '-p', 'out_dir', res_dir, '-p', 'tracking', 'mlflow')
    assert res.returncode == 0, show(res)
    assert (res_dir/'results.csv').read_bytes() == before
    check_mlflow_mirror(res_dir)   # and the resumed run logged no row twice

def check_mlflow_mirror(res_dir):
    "One FINISHED MLflow run per row of results.csv in res_dir/mlflow.db, each the child of its benchmark's run, which holds the tables and figures"
    mlflow = pytest.importorskip('mlflow')
    c = mlflow.MlflowClient(f"sqlite:///{res_dir/'mlflow.db'}")
    runs = c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=1000)
    rows, parents = [r for r in runs if r.data.tags['lotus_nb.kind'] == 'row'], [r for r in runs if r.data.tags['lotus_nb.kind'] == 'benchmark']
    df = read_rows(res_dir/'results.csv')
    assert sorted((r.data.params['method'], int(r.data.params['seed'])) for r in rows) == sorted(zip(df.method, df.seed))
    assert {r.info.status for r in rows} == {'FINISHED'} and len(parents) == 1
    assert {r.data.tags['mlflow.parentRunId'] for r in rows} == {parents[0].info.run_id}
    for r in rows:   # each run's metrics are its row's
        want = df[(df.method == r.data.params['method']) & (df.seed == int(r.data.params['seed']))].iloc[0]
        assert r.data.metrics['avg_gap'] == pytest.approx(want.avg_gap, rel=1e-12) and r.data.metrics['acc_forget'] == pytest.approx(want.acc_forget, rel=1e-12)
    lotus = next(r for r in rows if r.data.params['method'] == 'lotus')
    assert 'config.alpha' in lotus.data.params and len(c.get_metric_history(lotus.info.run_id, 'trace/tau_d')) >= 1
    arts = {a.path for d in ('tables', 'figures') for a in c.list_artifacts(parents[0].info.run_id, d)}
    assert any(a.endswith('_avg_gap.md') for a in arts) and any(a.endswith('_tau_trace.png') for a in arts), arts

def test_progress_on_the_terminal(run_digits):
    """papermill with no flag prints one grid line per finished row on its terminal, each once (the notebook logs to the kernel's file
    descriptor 2, which ipykernel copies onto the terminal and into the notebook); no tqdm bar or TqdmWarning reaches either"""
    out_nb, _, res = run_digits
    rows = len(METHODS)*len(SEEDS)
    got = re.findall(r'^\[grid (\d+)/(\d+) rows, [\d.]+ min elapsed, ~[\d.]+ min left\] digits_\w+ seed \d+: \w+ avg_gap=[\d.]+ time=[\d.]+ min$', res.stdout, re.M)
    assert got == [(str(i), str(rows)) for i in range(1, rows + 1)], show(res)
    for text in (res.stdout, outputs(out_nb)): assert 'IProgress not found' not in text and 'it/s]' not in text

def test_progress_in_the_output_notebook(tmp_path):
    """The same lines go into the output notebook (ipykernel copies what the kernel writes to fd 2 there too). ipykernel makes that copy
    on Linux and macOS, and not under pytest (it sees PYTEST_CURRENT_TEST): this run leaves that variable out of papermill's environment"""
    env = {k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'} | ONE_THREAD
    res = subprocess.run([sys.executable, '-m', 'papermill', EXPERIMENTS_NB, tmp_path/'out.ipynb', '--no-progress-bar', '-p', 'dataset', 'digits',
                          '-y', 'seeds: [1]', '-y', 'methods: [original, gold]', '-p', 'out_dir', tmp_path/'res'],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    want = ['[grid 1/2 rows,', '[grid 2/2 rows,']
    assert [l[:15] for l in res.stderr.splitlines() if l.startswith('[grid ')] == want, res.stderr   # the terminal: papermill's stderr
    nb = outputs(tmp_path/'out.ipynb')
    assert re.findall(r'\[grid \d/2 rows,', nb) == want, re.findall(r'"name": "stderr".{0,300}', nb)

PAPERMILL_NOTEBOOKS = ['experiments', 'paper', 'class_unlearning', 'large_scale', 'unseen_sets', 'ablations', 'privacy_audit', 'tuning', 'data_analysis']

def parameter_names(nb:str) -> list:
    "The names the `parameters` cell of nbs/`nb`.ipynb assigns, read by Python's own parser"
    cells = json.loads((ROOT/'nbs'/f'{nb}.ipynb').read_text())['cells']
    src = next(''.join(c['source']) for c in cells if 'parameters' in c.get('metadata', {}).get('tags', []))
    return [t.id for n in ast.parse(src).body for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets)]

@pytest.mark.parametrize('nb', PAPERMILL_NOTEBOOKS)
def test_papermill_parses_every_parameter(nb, tmp_path):
    """papermill's parameter parser takes every line of the parameters cell (it drops a line with a second '=', e.g. in its comment:
    "Unable to parse line ..."): --help-notebook lists each parameter, and --prepare-only warns of none"""
    helped = run([sys.executable, '-m', 'papermill', '--help-notebook', ROOT/'nbs'/f'{nb}.ipynb'])
    assert helped.returncode == 0 and 'Unable to parse' not in helped.stdout, show(helped)
    assert re.findall(r'^  (\w+): ', helped.stdout, re.M) == parameter_names(nb), show(helped)
    prepared = run_nb(nb, tmp_path/'out.ipynb', '--prepare-only')
    assert prepared.returncode == 0 and 'Unable to parse' not in prepared.stdout, show(prepared)

def code_of(nb:str) -> str:
    "The code cells of nbs/`nb`.ipynb as one source (no shell or magic lines among them)"
    cells = json.loads((ROOT/'nbs'/f'{nb}.ipynb').read_text())['cells']
    return '\n'.join(''.join(c['source']) for c in cells if c['cell_type'] == 'code' and not ''.join(c['source']).lstrip().startswith(('%', '!')))

def grid_calls_without_threads(nb:str) -> list:
    "The `run_grid(...)` calls of nbs/`nb`.ipynb that pass no `threads` (as a keyword, or in the `**options` dict literal they unpack)"
    tree = ast.parse(code_of(nb))
    dicts = {t.id: {k.arg for k in n.value.keywords} for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
             and getattr(n.value.func, 'id', '') == 'dict' for t in n.targets if isinstance(t, ast.Name)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', '') == 'run_grid']
    return [ast.unparse(c)[:80] for c in calls
            if not any(k.arg == 'threads' or (k.arg is None and 'threads' in dicts.get(getattr(k.value, 'id', ''), ())) for k in c.keywords)]

def test_threads_reach_every_grid():
    """`-p threads N` on paper.ipynb: its own grid and those of the notebooks of part 4 that run one (all but experiments, whose rows
    the main grid has made, and data_analysis) run each unit on N torch threads; a run_grid call that drops it is named"""
    src = code_of('paper')
    part4 = ast.literal_eval(re.search(r"^NOTEBOOKS = (\[.*?\])", src, re.M).group(1))
    assert 'threads=threads).items() if v is not None and k in takes' in src, "paper.ipynb forwards threads to the notebooks that take it"
    for nb in ['paper'] + [n for n in part4 if n not in ('experiments', 'data_analysis')]:
        assert 'threads' in parameter_names(nb), nb
        assert 'run_grid(' in code_of(nb) and grid_calls_without_threads(nb) == [], (nb, grid_calls_without_threads(nb))
    assert grid_calls_without_threads('experiments'), "the check finds a call without threads (experiments.ipynb takes none)"

def test_parameters_reach_notebook(tmp_path):
    "-p and -y values replace the `parameters` cell's defaults"
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5]', '-y', 'methods: [original, gold, lotus]',
                    '-y', 'method_overrides: {lotus: {alpha: 4.0, epochs: 3}}', '-p', 'train_epochs', '5', '-p', 'out_dir', tmp_path/'res')
    assert res.returncode == 0, show(res)
    df = read_rows(tmp_path/'res'/'results.csv')
    assert len(df) == 3 and set(df.seed) == {5} and sorted(df.method) == ['gold', 'lotus', 'original'], df
    assert set(df.dataset) == {'digits'}
    rec = json.loads(next((tmp_path/'res'/'runs').glob('lotus_seed5_*.json')).read_text())
    assert rec['config']['alpha'] == 4.0 and len(rec['trace']) == 3, rec['config']
    hist = json.loads(next((tmp_path/'res'/'runs').glob('gold_seed5_*.json')).read_text())['history']
    assert len(hist) == 5, "train_epochs caps the gold model's training"


def test_tinyimagenet_from_its_tree(tmp_path):
    """`-p dataset tinyimagenet -p data_root DIR -p train_epochs 1` on a folder in the standard `tiny-imagenet-200/`
    layout: the paper's defaults (ResNet18 with the CIFAR stem, 64 px) run end to end on CPU"""
    from lotus_nb.core.testing import write_tinyimagenet
    data = tmp_path/'data'; write_tinyimagenet(data, n_classes=3, per_class=6, n_val=9)
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'tinyimagenet', '-p', 'data_root', data, '-p', 'train_epochs', '1',
                    '-y', 'seeds: [3407]', '-y', 'methods: [original, gold, finetune, lotus]', '-p', 'out_dir', tmp_path/'res',
                    '-y', 'method_overrides: {finetune: {epochs: 1}, lotus: {epochs: 1}}', timeout=1200)
    assert res.returncode == 0, show(res)
    df = read_rows(tmp_path/'res'/'results.csv')
    assert sorted(df.method) == ['finetune', 'gold', 'lotus', 'original'] and set(df.dataset) == {'tinyimagenet'}, df
    assert set(df.model) == {'resnet18'}, "model='auto' is the paper's ResNet18 on TinyImageNet"
    hist = json.loads(next((tmp_path/'res'/'runs').glob('gold_seed3407_*.json')).read_text())['history']
    assert len(hist) == 1, "train_epochs caps the gold model's training"

def test_protocol_authors_rehearsal(tmp_path):
    """`-p protocol authors` reaches the BenchmarkSpec: a rehearsal (`-p fast_dev_run 1`, one batch a loop) of the methods the
    authors' protocol changes runs, its rows record protocol='authors' and its methods ran the authors' settings; an unknown
    protocol is refused with the valid ones before any work"""
    # the embedded benchmark (Fashion-MNIST): digits' tiny ResNet refuses the authors' MIA passes of one image in train mode
    res = papermill(tmp_path/'out.ipynb', '-p', 'protocol', 'authors', '-p', 'fast_dev_run', '1',
                    '-y', 'seeds: [1]', '-y', 'methods: [original, gold, neggrad_plus, lotus]', '-p', 'out_dir', tmp_path/'res')
    assert res.returncode == 0, show(res)
    from lotus_nb.running.store import Store
    store = Store(tmp_path/'res'/'rehearsal'); rows = store.read()
    assert sorted(rows.method) == ['gold', 'lotus', 'neggrad_plus', 'original'], rows.method
    assert set(rows.protocol) == {'authors'}, rows[['method', 'protocol']]
    cfg = {m: json.loads(next(store.runs.glob(f'{m}_seed1_*.json')).read_text())['config'] for m in ('neggrad_plus', 'lotus')}
    assert cfg['neggrad_plus']['loop'] == 'authors' and cfg['lotus']['authors_stop'] is True, cfg
    bad = papermill(tmp_path/'bad.ipynb', '-p', 'dataset', 'digits', '-p', 'protocol', 'theirs', '-p', 'out_dir', tmp_path/'bad')
    assert bad.returncode != 0 and "unknown protocol 'theirs'; valid protocols: authors, lotus_nb" in bad.stdout, show(bad)
    assert not (tmp_path/'bad'/'results.csv').exists()
