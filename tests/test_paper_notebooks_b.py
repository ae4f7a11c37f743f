"""nbs/unseen_sets.ipynb (tab:cifar) and nbs/ablations.ipynb (tab:gumbel, tab:alpha_search, tab:lotus_salun, fig:retain_sweep)
run by papermill in reduced form: the artifacts, their manifest entries, the rows in the shared store, and CIFAKE missing or present."""
import json
from lotus_nb.metrics.report import PAPER_METHODS, MISSING
from lotus_nb.methods.base import display_name
import pandas as pd
import pytest
from helpers import run_nb, outputs, show, read_rows
from lotus_nb.running.store import Store, row_id
from fixtures import write_cifar10, write_cifake

QUICK = ['-y', 'seeds: [1]', '-p', 'train_epochs', '3', '-y', 'benchmarks: [cifar10/resnet18]']

def manifest(out, label) -> dict:
    return json.loads((out/'manifest'/f"{label.split(':')[1]}.json").read_text())

@pytest.fixture(scope='module')
def paper_dir(tmp_path_factory):
    "Both notebooks, embedded scale, digits only, one seed, into one out_dir (the second reuses the first's models and rows)"
    tmp = tmp_path_factory.mktemp('paper_b'); out = tmp/'paper'
    res = run_nb('unseen_sets', tmp/'unseen.ipynb', *QUICK, '-y', 'methods: [original, gold, finetune, lotus]', '-p', 'out_dir', out)
    assert res.returncode == 0, show(res)
    ckpts, first = sorted(p.name for p in (out/'checkpoints').iterdir()), read_rows(out/'results.csv')
    res = run_nb('ablations', tmp/'ablations.ipynb', *QUICK, '-p', 'focus', 'cifar10/resnet18', '-y', 'alphas: [2, 8]',
                    '-y', 'retain_pcts: [0.1, 0.3]', '-p', 'out_dir', out)
    assert res.returncode == 0, show(res)
    return tmp, out, ckpts, first

def md_row(md, row) -> dict:
    "{column: cell} of `row` in the Markdown table `md`, markup kept (row labels may hold ' | ')"
    lines = md.read_text().splitlines()
    cols = [c.strip() for c in lines[0].strip().strip('|').split('|')][1:]
    line = next(l for l in lines if l.startswith(f'| {row} '))
    return dict(zip(cols, [c.strip() for c in line[len(f'| {row} '):].strip().strip('|').split('|')], strict=True))

def marks(md, row) -> tuple:
    "({columns in bold}, {columns underlined}) of `row` in the Markdown table `md`"
    cells = md_row(md, row)
    return tuple({c for c, v in cells.items() if v.startswith(m)} for m in ('**', '<u>'))

def cell_mean(cell) -> float: return float(str(cell).split(' ± ')[0])

def ranked_two(values:dict) -> tuple:
    "({columns at the smallest of `{column: value}`}, {those at the next value}): ties share a mark"
    top = sorted(set(values.values()))[:2]
    return tuple({c for c, v in values.items() if v == t} for t in top) + ((set(),) if len(top) < 2 else ())

TERMS = ['mia', 'acc_forget', 'acc_retain', 'acc_test']   # the paper's Avg Gap terms

def printed(rows) -> pd.Series:
    "The authors' aggregation of some rows of one method (results.ipynb cell 0): the values rounded as logged, their means rounded to 2, JSD x1e4"
    v = rows.assign(**{k: [round(x, 2) for x in rows[k]] for k in TERMS}, jsd_authors=[round(x, 6) for x in rows.jsd_authors])[TERMS + ['jsd_authors']].mean()
    return v.mul(pd.Series(1., v.index).mask(v.index == 'jsd_authors', 1e4)).round(2)

def printed_gap(v, gold) -> float:
    "Avg Gap as the paper's tables print it: the mean of the four gaps of the printed means to Gold's, rounded to 4"
    return round((v[TERMS] - gold[TERMS]).abs().mean(), 4)

def test_tab_cifar(paper_dir):
    tmp, out, _, first = paper_dir
    e = manifest(out, 'tab:cifar')
    assert e['label'] == 'tab:cifar' and not e['missing'] and 'papermill nbs/unseen_sets.ipynb' in e['command']
    assert 'RN18-small / digits (for C-10)' in e['caption'] and 'PCA' in e['caption'], e['caption']
    t = pd.read_csv(out/e['files']['csv'], index_col=0)
    # the paper's grid: Gold Std, the nine methods, LoTUS with a synthetic D_u; blocks ViT (no stand-in: cells —) and RN18
    assert list(t.columns) == [display_name(m) for m in PAPER_METHODS] + ['LoTUS (synthetic D_u)'], t.columns
    assert list(t.index) == [f'{b} | {r}' for b in ('ViT C-10', 'RN18 C-10') for r in ('Avg Gap', 'JSD ×1e4', 'Time (min.)')], t.index
    assert (t.loc['RN18 C-10 | Avg Gap', ['Gold Std', 'Finetuning', 'LoTUS', 'LoTUS (synthetic D_u)']] != MISSING).all()
    assert (t.loc['ViT C-10 | Avg Gap'] == MISSING).all()
    assert 'Original' in pd.read_csv(out/manifest(out, 'tab:cifar_extra')['files']['csv'], index_col=0).columns
    df = read_rows(out/'results.csv')
    syn = df[df.unseen == 'synthetic']
    assert syn.method.tolist() == ['lotus'] and {'original', 'gold', 'finetune', 'lotus'} <= set(df.loc[df.unseen == 'heldout', 'method'])
    # LoTUS's target came from the synthetic set: its run recorded another Acc(f_orig, D_u) than the held-out run's
    rec = lambda r: Store(out).read_record(row_id(r))['acc_unseen']
    held_lotus = df[(df.unseen == 'heldout') & (df.method == 'lotus')].iloc[0]
    assert rec(syn.iloc[0]) != rec(held_lotus)
    # bold and underlined, recomputed from the rows the notebook read by the authors' aggregation: Finetuning, LoTUS, LoTUS with the
    # synthetic D_u are ranked (ties share a mark)
    rows = lambda m, unseen: first[(first.method == m) & (first.unseen == unseen)]
    gold = printed(rows('gold', 'heldout'))
    cand = {'Finetuning': printed(rows('finetune', 'heldout')), 'LoTUS': printed(rows('lotus', 'heldout')),
            'LoTUS (synthetic D_u)': printed(rows('lotus', 'synthetic'))}
    for label, vs in {'Avg Gap': {c: printed_gap(v, gold) for c, v in cand.items()}, 'JSD ×1e4': {c: v['jsd_authors'] for c, v in cand.items()}}.items():
        want = ranked_two(vs)
        assert marks(out/e['files']['md'], f'RN18 C-10 | {label}') == want, (label, want, vs)
    o = outputs(tmp/'unseen.ipynb')
    assert 'LoTUS (synthetic D_u)' in o and '**' in o and 'Acc(f_orig, synthetic D_u)' in o

def test_ablation_artifacts(paper_dir):
    tmp, out, ckpts, first = paper_dir
    for label in ['tab:gumbel', 'tab:alpha_search', 'tab:lotus_salun']:
        e = manifest(out, label)
        assert e['label'] == label and 'papermill nbs/ablations.ipynb' in e['command'] and 'digits' in e['caption'], e
        for ext in ['md', 'tex', 'csv']: assert (out/e['files'][ext]).stat().st_size > 0
    e = manifest(out, 'fig:retain_sweep')
    assert (out/e['files']['png']).stat().st_size > 0 and (out/e['files']['pdf']).exists()
    tg = pd.read_csv(out/'tables'/'gumbel.csv', index_col=0)
    from lotus_nb.paper.paper_plan import PAPER_BENCHMARKS, block_label
    from lotus_nb.paper.paper_tables import GUMBEL_ROWS
    assert list(tg.columns) == [block_label(pb) for pb in PAPER_BENCHMARKS['tab:gumbel']] and list(tg.index) == GUMBEL_ROWS, tg   # the paper's grid
    assert (tg['RN18 C-10'] != '—').all() and (tg['ViT TinyIN'] == '—').all(), tg   # digits stands in for C-10 with RN18; ViT has no stand-in
    ta = pd.read_csv(out/'tables'/'alpha_search.csv', index_col=0)
    assert {'Val. gap α=2', 'Val. gap α=8', 'Selected α', 'Avg Gap (α=2)', 'Avg Gap (selected)'} <= set(ta.columns)
    # the ablation's numbers, recomputed from the rows: LoTUS at alpha 2 is tab:cifar's run, the variants are found by their records
    df, store = read_rows(out/'results.csv'), Store(out)
    gold = df[(df.method == 'gold') & (df.unseen == 'heldout')].iloc[0]
    default = first[(first.method == 'lotus') & (first.unseen == 'heldout')].iloc[0]
    cfg = lambda r: store.read_record(row_id(r))['config']
    lot = [r for _, r in df[(df.method == 'lotus') & (df.unseen == 'heldout')].iterrows()]
    alpha8, = [r for r in lot if cfg(r)['alpha'] == 8]
    softmax, = [r for r in lot if not cfg(r)['gumbel']]
    salun = df[df.method == 'lotus_salun'].iloc[0]
    val_gap = lambda r: sum(abs(r[k] - gold[k]) for k in ('mia', 'acc_forget', 'acc_retain', 'acc_unseen'))/4   # Avg Gap, D_u for the test set
    for a, r in [(2, default), (8, alpha8)]: assert abs(cell_mean(ta.loc['All', f'Val. gap α={a}']) - val_gap(r)) < 5.1e-5, (a, ta.loc['All'])
    assert float(ta.loc['All', 'Selected α']) == min((2, 8), key=lambda a: (val_gap(default if a == 2 else alpha8), a)), ta.loc['All']
    tl = pd.read_csv(out/'tables'/'lotus_salun.csv', index_col=0)
    assert {'LoTUS', 'LoTUS+SalUn', 'Change (%)'} <= set(tl.columns)
    for label, col in [('Avg Gap', 'avg_gap'), ('JSD x1e4', 'jsd')]:
        assert abs(tl.loc[label, 'Change (%)'] - 100*(salun[col] - default[col])/default[col]) <= 0.05 + 1e-9, (label, tl.loc[label], salun[col], default[col])
        assert marks(out/'tables'/'lotus_salun.md', label) == ranked_two({'LoTUS': default[col], 'LoTUS+SalUn': salun[col]}), label
    g0 = printed(df[(df.method == 'gold') & (df.unseen == 'heldout')])
    for label, col in [('Avg Gap', 'avg_gap'), ('JSD ×1e4', 'jsd_authors')]:   # Gumbel-Softmax (the default) against softmax with temperature, the authors' aggregation
        vals = {f'{label} | Gumbel-Softmax': printed(pd.DataFrame([default])), f'{label} | Softmax with Temperature': printed(pd.DataFrame([softmax]))}
        vals = {r: printed_gap(v, g0) if col == 'avg_gap' else v[col] for r, v in vals.items()}
        for row, v in vals.items():
            assert abs(cell_mean(tg.loc[row, 'RN18 C-10']) - v) < 1e-9, (row, tg.loc[row, 'RN18 C-10'], v)
            assert md_row(out/'tables'/'gumbel.md', row)['RN18 C-10'].startswith('**') == (v == min(vals.values())), (row, vals)
    idx = (out/'index.md').read_text()
    for label in ['tab:cifar', 'tab:gumbel', 'tab:alpha_search', 'tab:lotus_salun', 'fig:retain_sweep']: assert f'`{label}`' in idx

def test_ablation_rows(paper_dir):
    "The variants add LoTUS rows only, reuse the models of the first notebook, and leave the shared rows alone"
    tmp, out, ckpts, _ = paper_dir
    assert sorted(p.name for p in (out/'checkpoints').iterdir()) == ckpts, "no model was trained again"
    df = read_rows(out/'results.csv')
    assert not df.duplicated(['dataset', 'model', 'unseen', 'method', 'seed', 'setup']).any()
    held = df[df.unseen == 'heldout']
    # LoTUS: the default (shared with tab:cifar), gumbel=False, alpha=8, retain 0.1: four setups; LoTUS+SalUn: one
    assert held[held.method == 'lotus'].setup.nunique() == 4, held[['method', 'setup']]
    assert (held.method == 'lotus_salun').sum() == 1 and (held.method == 'gold').sum() == 1
    configs = [Store(out).read_record(row_id(r))['config'] for _, r in held[held.method == 'lotus'].iterrows()]
    assert sorted((c['gumbel'], c['alpha']) for c in configs) == [(False, 2.), (True, 2.), (True, 2.), (True, 8.)]
    own, = (out/'tables').glob('digits_resnet18_small_forget10-*_avg_gap.csv')   # the benchmark's own table (named with its setup)
    own = own.read_text()
    assert "Finetuning" in own and "LoTUS+SalUn" not in own, \
        "the ablations did not overwrite the benchmark's own table"

def test_cifake_missing_then_present(tmp_path):
    "Paper scale on a tiny CIFAR-10: without CIFAKE tab:cifar is built without its column and says how to get CIFAKE; with it, the column appears"
    data, out = tmp_path/'data', tmp_path/'paper'
    write_cifar10(data, per_class=6, test_per_class=2)   # 6 per class: one forget image each
    args = ['-p', 'scale', 'paper', '-p', 'data_root', data, '-p', 'out_dir', out, '-y', 'methods: [gold, lotus]',
            '-y', 'seeds: [1]', '-p', 'train_epochs', '1', '-y', 'benchmarks: [cifar10/resnet18]', '-p', 'device', 'cpu',
            '-y', 'method_overrides: {lotus: {epochs: 1}}']   # the paper's full-size ResNet18 on a CPU: one epoch of everything
    env = dict(XDG_CACHE_HOME=str(tmp_path/'cache'), LOTUS_DATA='')
    res = run_nb('unseen_sets', tmp_path/'a.ipynb', *args, env=env)
    assert res.returncode == 0, show(res)
    e = manifest(out, 'tab:cifar')
    assert 'cifake' in e['missing'].lower() and 'kaggle' in e['missing'].lower(), e
    t = pd.read_csv(out/e['files']['csv'], index_col=0)
    syn = 'LoTUS (synthetic D_u)'   # the paper's last column: empty (—) until CIFAKE is there
    assert 'LoTUS' in t and (t[syn] == '—').all() and any(i.startswith('RN18 C-10') for i in t.index), t
    write_cifake(data, per_class=3)
    res = run_nb('unseen_sets', tmp_path/'b.ipynb', *args, env=env)
    assert res.returncode == 0, show(res)
    e = manifest(out, 'tab:cifar')
    assert not e['missing'], e
    t = pd.read_csv(out/e['files']['csv'], index_col=0)
    assert (t.loc[[i for i in t.index if i.startswith('RN18 C-10')], syn] != '—').all(), t
    df = read_rows(out/'results.csv')
    assert df.loc[df.unseen == 'cifake', 'method'].tolist() == ['lotus'] and len(df) == 3
    assert json.loads(next((out/'runs').glob('lotus_seed1_*.json')).read_text())['config']['epochs'] == 1
    # paper scale: ours beside the published cells of tab:cifar (JSD on the authors' scale), cell by cell
    vs = pd.read_csv(out/manifest(out, 'tab:cifar_vs_published')['files']['csv'], index_col=0)
    assert {'published', 'ours', 'difference', 'ours_metric'} <= set(vs.columns), vs.columns
    lo = vs[(vs.method == 'lotus') & (vs.arch == 'RN18') & (vs.unseen == 'heldout')].set_index('metric')
    assert lo.loc['avg_gap', 'published'] == 0.035 and lo.loc['jsd', 'ours_metric'] == 'jsd_authors', lo   # tex: RN18 C-10 LoTUS
    assert abs(lo.loc['avg_gap', 'difference'] - (lo.loc['avg_gap', 'ours'] - 0.035)) < 1e-9
    assert vs[(vs.method == 'lotus') & (vs.unseen == 'cifake') & (vs.arch == 'RN18')].ours.notna().any(), "LoTUS with CIFAKE as D_u"
    # ...with the authors' set-up behind it: their network and recipe trained the models, and the rows carry their metric scales
    import torch
    from lotus_nb.models.training import load_checkpoint
    ck = load_checkpoint(next((out/'checkpoints').rglob('orig*')))
    assert any('identity_conv' in k for k in ck['state_dict']), "the authors' ResNet18: a 1x1 convolution on every shortcut"
    h = ck['meta']['history']
    assert abs(h[0]['lr'] - 0.1/30) < 1e-12 and ck['meta']['kept_epoch'] == len(h) - 1, "their per-epoch warm-up of 30 epochs; the last epoch kept"
    assert df.rf_jsd_authors.notna().all() and lo.loc['avg_gap', 'ours'] == round(lo.loc['avg_gap', 'ours'], 4), "their RF-JSD; Avg Gap as they round it"
