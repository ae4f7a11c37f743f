"""nbs/privacy_audit.ipynb run by papermill on digits with 4 shadows: the privacy table and ROC figure, resume, and the numbers
recomputed here from what the audit stored (scores, checkpoints) with sklearn and plain torch"""
import json, re, sys
import numpy as np
import pandas as pd
import pytest
from helpers import ROOT, run, show
from lotus_nb.running.privacy import PRIVACY_ROWS
from lotus_nb.methods.base import display_name

AUDIT_NB = ROOT/'nbs'/'privacy_audit.ipynb'
METHODS = ['gold', 'finetune', 'lotus']
SHADOWS = 4

def audit(out_nb, out_dir, timeout=600):
    "Execute the audit notebook on digits with 4 shadows and `METHODS` into `out_nb`, writing under `out_dir`, each row also an MLflow run"
    return run([sys.executable, '-m', 'papermill', AUDIT_NB, out_nb, '--no-progress-bar', '-p', 'dataset', 'digits',
                '-p', 'shadows', SHADOWS, '-y', f"methods: [{', '.join(METHODS)}]", '-p', 'out_dir', out_dir, '-p', 'tracking', 'mlflow'], timeout=timeout)

@pytest.fixture(scope='module')
def digits_audit(tmp_path_factory):
    "One audit run: (output notebook, out_dir)"
    tmp = tmp_path_factory.mktemp('privacy')
    res = audit(tmp/'out.ipynb', tmp/'res')
    assert res.returncode == 0, show(res)
    return tmp/'out.ipynb', tmp/'res'

def cell(cell: str) -> tuple:
    "The (mean, std) of a 'mean ± std' cell"
    m = re.fullmatch(r'(-?[\d.]+) ± ([\d.]+)', cell.strip())
    assert m, f"not a 'mean ± std' cell: {cell!r}"
    return float(m.group(1)), float(m.group(2))

def test_table_and_figure(digits_audit):
    "Each cell is the mean ± std over shadows of privacy_results.csv; `best` is the method closest to Gold's mean, Gold not ranked"
    _, res = digits_audit
    for p in [res/'tables'/'privacy.md', res/'tables'/'privacy.csv', res/'figures'/'roc.png', res/'privacy_results.csv']:
        assert p.exists() and p.stat().st_size > 0, f"{p} missing or empty"
    assert (res/'figures'/'roc.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    t = pd.read_csv(res/'tables'/'privacy.csv', index_col=0)
    assert list(t.index) == list(PRIVACY_ROWS), t.index
    assert list(t.columns) == [display_name(m) for m in METHODS] + ['best'], t.columns
    df = pd.read_csv(res/'privacy_results.csv')
    g = df.groupby('method')
    mean, std = g.mean(numeric_only=True), g.std(ddof=0, numeric_only=True)
    for attack, col in PRIVACY_ROWS.items():
        for m in METHODS:
            got = cell(t.loc[attack, display_name(m)])
            assert np.allclose(got, (mean.loc[m, col], std.loc[m, col]), rtol=0, atol=5.1e-5), (attack, m, got, mean.loc[m, col], std.loc[m, col])
        dist = (mean.loc[[m for m in METHODS if m != 'gold'], col] - mean.loc['gold', col]).abs()
        assert t.loc[attack, 'best'] == display_name(dist.idxmin()), (attack, t.loc[attack, 'best'], dist)
    md = (res/'tables'/'privacy.md').read_text()
    assert 'U-LiRA AUC' in md and '**' in md and '<u>' in md

def audit_setup():
    "The notebook's audit design on digits (its defaults), as prepared by the package"
    from lotus_nb.running.privacy import prepare_audit
    return prepare_audit('digits', 'resnet18_small', SHADOWS, 0)

def scores(res, m) -> np.ndarray:
    "The stored pool scores of method `m`: shadows x candidates, read from the run records of the audit's store"
    from lotus_nb.running.store import Store
    setup, store = audit_setup(), Store(res)
    return np.stack([setup.prep.entropies(store, m, setup.shadow_seed(k))['pool_scores'] for k in range(SHADOWS)])

def test_ulira_recomputed(digits_audit):
    """U-LiRA's per-target AUC and TPR@1%FPR, recomputed from the stored scores with sklearn. With 4 shadows, the target's pair left
    out, one shadow forgot each candidate and one never saw it; LiRA's fixed variance is then shared, so its likelihood ratio ranks
    candidates as (s - mu_out)^2 - (s - mu_in)^2 does"""
    from sklearn.metrics import roc_auc_score, roc_curve
    from lotus_nb.running.privacy import shadow_membership
    _, res = digits_audit
    df = pd.read_csv(res/'privacy_results.csv').set_index(['method', 'seed'])
    assert sorted(df.index) == sorted((m, k) for m in METHODS for k in range(SHADOWS)), df.index
    assert df.notna().all().all(), df
    member = shadow_membership(100, SHADOWS, 0)          # the notebook's pool_size and seed
    for m in METHODS:
        S = scores(res, m)
        for k in range(SHADOWS):
            o = [j for j in range(SHADOWS) if j//2 != k//2]
            mu_in = np.where(member[o], S[o], 0).sum(0)              # one forgetting shadow per candidate
            mu_out = np.where(~member[o], S[o], 0).sum(0)            # one that never saw it
            d = (S[k] - mu_out)**2 - (S[k] - mu_in)**2
            fpr, tpr, _ = roc_curve(member[k], d, drop_intermediate=False)
            want = dict(ulira_auc=roc_auc_score(member[k], d), ulira_tpr_1=tpr[fpr <= 0.01].max())
            got = df.loc[(m, k), list(want)].to_dict()
            assert np.allclose(list(got.values()), list(want.values()), atol=1e-9), (m, k, got, want)
    assert (df.ulira_tpr_01 <= df.ulira_tpr_1).all()
    gold = df.loc['gold']
    assert abs(gold.ulira_auc.mean() - 0.5) < 0.2, f"the Gold Standard should be near chance under U-LiRA: {gold.ulira_auc.tolist()}"

def test_gold_rows_recomputed(digits_audit):
    """Gold's unlearned shadow is its cached f_gold: its accuracies in privacy_results.csv and its stored pool scores
    (the logit-scaled confidence log p_y - log(1 - p_y)) are recomputed here from those checkpoints"""
    import torch
    from lotus_nb.models.architectures import create_model
    from lotus_nb.models.training import load_checkpoint
    from lotus_nb.data.loaders import device_splits
    from lotus_nb.running.store import Store
    _, res = digits_audit
    df = pd.read_csv(res/'privacy_results.csv').set_index(['method', 'seed'])
    setup = audit_setup(); prep, d, S = setup.prep, setup.prep.data, scores(res, 'gold')
    def outputs(model, split):
        zs, ys = zip(*[(model(x), y) for x, y, *_ in split.loader(512)])
        return torch.cat(zs).double(), torch.cat(ys)
    for k in range(SHADOWS):
        seed = setup.shadow_seed(k)
        ck = prep.checkpoints(seed, Store(res))[1]; assert ck.exists(), ck
        sp = device_splits(d, prep.splits(seed))
        assert sorted(sp['forget'].idx) == sorted(setup.forget(k)) and sorted(sp['retain'].idx) == sorted(setup.base)
        model = create_model(setup.model, d.num_classes, d.in_chans, d.img_size)
        model.load_state_dict(load_checkpoint(ck)['state_dict']); model.eval()
        with torch.no_grad():
            acc = {f'acc_{n}': (lambda z, y: (z.argmax(1) == y).double().mean().item())(*outputs(model, sp[n]))
                   for n in ('forget', 'retain', 'test')}
            z, y = outputs(model, sp['forget'].with_idx(setup.pool))
        assert np.allclose(list(acc.values()), df.loc[('gold', k), list(acc)].tolist(), atol=1e-12), (k, acc, df.loc[('gold', k)])
        logp = z.log_softmax(1).gather(1, y[:, None]).squeeze(1)
        conf = (logp - torch.log(-torch.expm1(logp))).numpy()       # log(p_y/(1 - p_y))
        ok = np.isfinite(conf)                                     # p_y rounded to 1 in float64: the stored score stays finite
        assert ok.mean() > 0.5 and np.allclose(conf[ok], S[k][ok], rtol=1e-6, atol=1e-6), (k, conf[:5], S[k][:5])

def test_output_notebook(digits_audit):
    out_nb, res = digits_audit
    nb = json.loads(out_nb.read_text())
    outputs = json.dumps([c.get('outputs', []) for c in nb['cells'] if c['cell_type'] == 'code'])
    assert 'U-LiRA AUC' in outputs and 'Closest to Gold' in outputs, "the table and the verdict are among the outputs"
    assert "digits with resnet18_small: 4 shadows" in outputs, "the parameters reached the notebook"
    verdict = (res/'tables'/'privacy_verdict.md').read_text()
    assert "U-LiRA's AUC on the Gold Standard is" in verdict and display_name('lotus') in verdict

def test_rows_tracked(digits_audit):
    "(Before test_rerun_resumes, which drops a logged row from results.csv by hand.) -p tracking mlflow: each (method, shadow) row of the audit's store is one FINISHED MLflow run with the row's metrics (the audit runs on the grid, which logs)"
    mlflow = pytest.importorskip('mlflow')
    _, res = digits_audit
    c = mlflow.MlflowClient(f"sqlite:///{res/'mlflow.db'}")
    runs = [r for r in c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=1000) if r.data.tags['lotus_nb.kind'] == 'row']
    df = pd.read_csv(res/'results.csv')
    assert sorted((r.data.params['method'], int(r.data.params['seed'])) for r in runs) == sorted(zip(df.method, df.seed)) and len(df) == len(METHODS)*SHADOWS
    assert {r.info.status for r in runs} == {'FINISHED'}
    for r in runs:
        want = df[(df.method == r.data.params['method']) & (df.seed == int(r.data.params['seed']))].iloc[0]
        assert r.data.metrics['mia'] == pytest.approx(want.mia, rel=1e-12) and r.data.metrics['acc_forget'] == pytest.approx(want.acc_forget, rel=1e-12)

def test_rerun_resumes(digits_audit):
    "A rerun retrains nothing; a (shadow, method) whose row a killed run never wrote is recomputed alone, identically"
    from lotus_nb.running.store import Store
    out_nb, res = digits_audit
    store, setup = Store(res), audit_setup()
    ckpts = sorted(store.checkpoints.glob('*.pt'))
    assert len(ckpts) == 2*SHADOWS and len(store.read()) == len(METHODS)*SHADOWS, (ckpts, store.read())
    before = {p: p.stat().st_mtime_ns for p in ckpts}
    results = (res/'privacy_results.csv').read_text()
    lines = store.results.read_text().splitlines(keepends=True)
    lost = [i for i, l in enumerate(lines) if f',lotus,{setup.shadow_seed(2)},' in l]
    assert len(lost) == 1, lost
    store.results.write_text(''.join(l for i, l in enumerate(lines) if i not in lost))
    r = audit(out_nb.with_name('out2.ipynb'), res)
    assert r.returncode == 0, show(r)
    assert {p: p.stat().st_mtime_ns for p in ckpts} == before, "no shadow retrained"
    assert len(store.read()) == len(METHODS)*SHADOWS and not list(res.rglob('*.tmp'))
    assert (res/'privacy_results.csv').read_text() == results, "the recomputed run is identical: everything is seeded"
