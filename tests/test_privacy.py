"nbs/privacy_audit.ipynb run by papermill on digits with 4 shadows: the privacy table and ROC figure, numbers in range, resume"
import json, re, sys
import pandas as pd
import pytest
from conftest import ROOT, run, show
from lotus_nb.privacy import PRIVACY_ROWS
from lotus_nb.report import display_name

AUDIT_NB = ROOT/'nbs'/'privacy_audit.ipynb'
METHODS = ['gold', 'finetune', 'lotus']
SHADOWS = 4

def audit(out_nb, out_dir, timeout=600):
    "Execute the audit notebook on digits with 4 shadows and `METHODS` into `out_nb`, writing under `out_dir`"
    return run([sys.executable, '-m', 'papermill', AUDIT_NB, out_nb, '--no-progress-bar', '-p', 'dataset', 'digits',
                '-p', 'shadows', SHADOWS, '-y', f"methods: [{', '.join(METHODS)}]", '-p', 'out_dir', out_dir], timeout=timeout)

@pytest.fixture(scope='module')
def digits_audit(tmp_path_factory):
    "One audit run: (output notebook, out_dir)"
    tmp = tmp_path_factory.mktemp('privacy')
    res = audit(tmp/'out.ipynb', tmp/'res')
    assert res.returncode == 0, show(res)
    return tmp/'out.ipynb', tmp/'res'

def cell_value(cell: str) -> float:
    "The mean of a 'mean ± std' cell"
    m = re.fullmatch(r'(-?[\d.]+) ± ([\d.]+)', cell.strip())
    assert m, f"not a 'mean ± std' cell: {cell!r}"
    return float(m.group(1))

def test_table_and_figure(digits_audit):
    _, res = digits_audit
    for p in [res/'tables'/'privacy.md', res/'tables'/'privacy.csv', res/'figures'/'roc.png', res/'privacy_results.csv']:
        assert p.exists() and p.stat().st_size > 0, f"{p} missing or empty"
    assert (res/'figures'/'roc.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    t = pd.read_csv(res/'tables'/'privacy.csv', index_col=0)
    assert list(t.index) == list(PRIVACY_ROWS), t.index
    assert list(t.columns) == [display_name(m) for m in METHODS] + ['best'], t.columns
    for attack in t.index:
        for m in METHODS: assert 0 <= cell_value(t.loc[attack, display_name(m)]) <= 1, (attack, m, t.loc[attack, display_name(m)])
        assert t.loc[attack, 'best'] in [display_name(m) for m in METHODS if m != 'gold'], "the reference is never ranked"
    md = (res/'tables'/'privacy.md').read_text()
    assert 'U-LiRA AUC' in md and '**' in md and '<u>' in md

def test_results_in_range(digits_audit):
    _, res = digits_audit
    df = pd.read_csv(res/'privacy_results.csv')
    assert sorted(zip(df.method, df.seed)) == sorted((m, k) for m in METHODS for k in range(SHADOWS)), df[['method', 'seed']]
    cols = ['mia', 'mia_loss', 'mia_svc', 'ulira_auc', 'ulira_tpr_1', 'ulira_tpr_01', 'acc_forget', 'acc_retain', 'acc_test']
    assert df[cols].notna().all().all() and df[cols].apply(lambda c: c.between(0, 1)).all().all(), df[cols]
    assert (df.ulira_tpr_01 <= df.ulira_tpr_1).all()
    gold = df[df.method == 'gold']
    assert abs(gold.ulira_auc.mean() - 0.5) < 0.2, f"the Gold Standard should be near chance under U-LiRA: {gold.ulira_auc.tolist()}"

def test_output_notebook(digits_audit):
    out_nb, res = digits_audit
    nb = json.loads(out_nb.read_text())
    outputs = json.dumps([c.get('outputs', []) for c in nb['cells'] if c['cell_type'] == 'code'])
    assert 'U-LiRA AUC' in outputs and 'Closest to Gold' in outputs, "the table and the verdict are among the outputs"
    assert "digits with resnet18_small: 4 shadows" in outputs, "the parameters reached the notebook"
    verdict = (res/'tables'/'privacy_verdict.md').read_text()
    assert "U-LiRA's AUC on the Gold Standard is" in verdict and display_name('lotus') in verdict

def test_rerun_resumes(digits_audit):
    "A rerun retrains no shadow; a score file lost to a killed run is recomputed alone, identically"
    out_nb, res = digits_audit
    ckpts, scores = sorted((res/'shadows').glob('*.pt')), sorted((res/'scores').glob('*.npz'))
    assert len(ckpts) == 2*SHADOWS and len(scores) == len(METHODS)*SHADOWS, (ckpts, scores)
    before = {p: p.stat().st_mtime_ns for p in ckpts + scores}
    results = (res/'privacy_results.csv').read_text()
    lost = next(p for p in scores if p.name.startswith('lotus_2_')); lost.unlink()
    r = audit(out_nb.with_name('out2.ipynb'), res)
    assert r.returncode == 0, show(r)
    after = {p: p.stat().st_mtime_ns for p in ckpts + scores}
    assert {p: v for p, v in after.items() if p != lost} == {p: v for p, v in before.items() if p != lost}, "no shadow retrained, no other score recomputed"
    assert lost.exists() and not list(res.rglob('*.tmp'))
    assert (res/'privacy_results.csv').read_text() == results, "the recomputed run is identical: everything is seeded"
