"nbs/paper.ipynb in reduced form (digits only, one seed, a few methods): every table and figure of the paper is built or says why not; Ray gives the same rows"
import json
import pandas as pd
import pytest
from helpers import run_nb, show, read_rows
from lotus_nb.running.store import KEY, METRICS

# every table and figure of the paper
LABELS = ['tab:avg_gap', 'tab:cifar', 'tab:fifty', 'tab:fifty_supp', 'tab:imagenet', 'tab:hyperparams', 'tab:avg_gap_supp', 'tab:pcc',
          'tab:class', 'tab:gumbel', 'fig:fig1', 'fig:tau', 'fig:streisand', 'fig:gradcams', 'fig:hash_diff', 'fig:mufac_examples',
          'fig:mufac_classes']
REDUCED = ['-y', 'datasets: [digits]', '-y', 'seeds: [1]', '-y', 'methods: [original, gold, finetune, random_label, lotus]',
           '-p', 'train_epochs', '3']

def paper(out_nb, out_dir, *args, timeout=1800):
    return run_nb('paper', out_nb, '-p', 'out_dir', out_dir, *REDUCED, *args, timeout=timeout)   # one thread, as Ray's workers: same arithmetic

@pytest.fixture(scope='module')
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('paper')
    res = paper(tmp/'out.ipynb', tmp/'paper', '-p', 'tracking', 'mlflow')   # the tracker reaches every notebook of part 4
    assert res.returncode == 0, show(res)
    return tmp/'paper'

def test_tracker_mirrors_every_notebooks_rows(built):
    "paper.ipynb passes `tracking` to the notebooks of part 4: every row of the shared store, whichever notebook wrote it, is one MLflow run"
    mlflow = pytest.importorskip('mlflow')
    from lotus_nb.running.store import Store, row_id
    c = mlflow.MlflowClient(f"sqlite:///{built/'mlflow.db'}")
    runs = c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=5000)
    keys = sorted(r.data.tags['lotus_nb.row'] for r in runs if r.data.tags['lotus_nb.kind'] == 'row')
    st = Store(built)
    assert keys == sorted(st.key_of(row_id(r)) for _, r in st.read().iterrows())
    assert {r.data.params['forget_class'] != 'None' for r in runs if r.data.tags['lotus_nb.kind'] == 'row'} == {True, False}, \
        "rows of the main grid (instance unlearning) and of class_unlearning.ipynb"

def test_every_artifact_is_built_or_explained(built):
    entries = {json.loads(p.read_text())['label']: json.loads(p.read_text()) for p in (built/'manifest').glob('*.json')}
    missing = [l for l in LABELS if l not in entries]
    assert not missing, f"no manifest entry for {missing}"
    for label, e in entries.items():
        if e['files']:
            for f in e['files'].values(): assert (built/f).stat().st_size > 0, f"{label}: {f} is empty"
        else: assert e['missing'], f"{label} was not built and does not say why"
    # digits stands in for CIFAR: the CIFAR tables are built; MUFAC has no stand-in and says how to get it
    for label in ['tab:avg_gap', 'tab:fifty', 'tab:cifar', 'tab:pcc', 'tab:hyperparams', 'fig:tau', 'fig:fig1', 'fig:streisand']:
        assert entries[label]['files'], f"{label} not built: {entries[label]['missing']}"
    assert 'mufac' in entries['fig:mufac_classes']['missing'].lower()
    assert 'stand-in' in entries['tab:avg_gap']['caption']
    index = (built/'index.md').read_text()
    for label in LABELS: assert f'`{label}`' in index
    assert '**' in (built/'tables'/'avg_gap.md').read_text(), "best in bold"
    # embedded scale: stand-ins, so the paper's numbers are shown nowhere beside them
    assert not [l for l, e in entries.items() if e.get('published')], "published values beside stand-ins"
    assert not [l for l in entries if l.endswith('_vs_published')] and not list((built/'tables').glob('*_vs_published*'))

def test_tables_have_the_papers_shape(built):
    "tab:avg_gap as the paper prints it: its ten columns, its six blocks in order (the ViT and MUFAC ones empty: no stand-in), extras apart"
    from lotus_nb.metrics.report import PAPER_METHODS, MISSING
    from lotus_nb.methods.base import display_name
    t = pd.read_csv(built/'tables'/'avg_gap.csv', index_col=0)
    assert list(t.columns) == [display_name(m) for m in PAPER_METHODS], t.columns
    blocks = ['ViT TinyIN', 'ViT C-100', 'ViT MUFAC', 'RN18 TinyIN', 'RN18 C-100', 'RN18 MUFAC']
    assert list(t.index) == [f'{b} | {r}' for b in blocks for r in ('Avg Gap', 'JSD ×1e4', 'Time (min.)')], t.index
    assert (t.loc['ViT C-100 | Avg Gap'] == MISSING).all() and t.loc['RN18 C-100 | Avg Gap', 'LoTUS'] != MISSING
    assert t.loc['RN18 TinyIN | Avg Gap', 'LoTUS'] == MISSING, "datasets=[digits]: the F-MNIST stand-in did not run"
    x = pd.read_csv(built/'tables'/'avg_gap_extra.csv', index_col=0)
    assert 'Original' in x.columns and 'best' in x.columns
    pcc = pd.read_csv(built/'tables'/'pcc.csv', index_col=0)
    assert len(pcc) == 11 and pcc.index[-1] == 'Mean ± Std', pcc.index
    supp = pd.read_csv(built/'tables'/'avg_gap_supp.csv', index_col=0)
    assert len(supp) == 40 and list(supp.columns) == list(t.columns)
    fifty = pd.read_csv(built/'tables'/'fifty_supp.csv', index_col=0)
    assert list(fifty.columns) == ['Finetuning', 'NegGrad+', 'RndLbl', 'LoTUS']
    tau = json.loads((built/'manifest'/'tau.json').read_text())
    assert 'epochs of LoTUS' in tau['caption'] and 'RN18' in tau['caption'], tau['caption']

def test_figures_draw_their_own_runs(built):
    "fig:tau and fig:streisand draw the records of the main benchmark's own runs (forget 10%), never those of tab:fifty's forget 50% of the same setup"
    import numpy as np
    from lotus_nb.running.store import Store, row_id
    store = Store(built)
    rows = store.read()
    assert (rows.forget_pct == .5).any() and (rows.forget_pct == .1).any(), "both forget sets ran in one store: the case that used to collide"
    tau = json.loads((built/'figures'/'tau.json').read_text())
    assert tau, "fig:tau drew no run"
    for seed, d in tau.items():
        assert d['ident']['forget_pct'] == .1 and d['ident']['method'] == 'lotus' and d['ident']['seed'] == int(seed), d['ident']
        assert store.read_record(row_id(d['ident']))['trace'] == d['trace']
    ent = json.loads((built/'figures'/'streisand.json').read_text())
    assert set(ent) == {'original', 'gold', 'random_label', 'lotus'}, set(ent)
    n_forget = {len(d['entropies']['forget']) for d in ent.values()}
    assert len(n_forget) == 1, n_forget
    for m, d in ent.items():
        assert d['ident']['forget_pct'] == .1 and d['ident']['method'] == m, d['ident']
        arrays = store.read_arrays(row_id(d['ident']))
        assert set(arrays) == set(d['entropies'])
        for k, v in d['entropies'].items(): np.testing.assert_allclose(v, arrays[k], rtol=1e-6)

def test_ray_gives_the_same_rows(built, tmp_path):
    pytest.importorskip('ray')
    res = paper(tmp_path/'out.ipynb', tmp_path/'paper', '-p', 'executor', 'ray', '-y', 'notebooks: []')
    assert res.returncode == 0, show(res)
    key = ['forget_pct', 'forget_class', 'method', 'seed']
    a, b = read_rows(built/'results.csv'), read_rows(tmp_path/'paper'/'results.csv')
    bench = ['dataset', 'model', 'forget_pct', 'forget_class', 'unseen', 'setup']   # the main grid's benchmarks (the sub-notebooks add others)
    ran = set(map(tuple, b[bench].astype(str).values))
    a = a[[tuple(r) in ran for r in a[bench].astype(str).values]]
    a, b = (d.sort_values(key, na_position='first').reset_index(drop=True) for d in (a, b))
    cols = [c for c in METRICS if c != 'time_min']
    assert len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a[KEY + cols], b[KEY + cols], check_exact=False, rtol=1e-6, atol=1e-9)
