"""The paper's printed numbers as stored in lotus_nb/paper/published.csv: sampled cells of every table against values read by hand
from the .tex and against the source re-parsed; the stored file ships with the package; results.csv written before
`jsd_authors` was a column still reads and appends in line; published values are never compared with stand-ins."""
import math, subprocess
import numpy as np, pandas as pd, pytest
from helpers import ROOT
from lotus_nb.paper.published import (TABLES, DATA_FILE, published, read_published, parse_paper, paper_tex, ours_long, compare_published,
                              TEX_UNSET)
from lotus_nb.running.store import COLUMNS, KEY, Store

TEX = paper_tex()
needs_tex = pytest.mark.skipif(TEX is None, reason=TEX_UNSET)
nan = math.nan

# (table, the cell's keys, printed mean, printed std (nan: none), printed text or None), read by hand from the .tex
LITERALS = [
    ('tab:avg_gap', dict(arch='RN18', dataset='C-100', method='lotus', metric='avg_gap'), .12, nan, '0.1200'),
    ('tab:avg_gap', dict(arch='RN18', dataset='C-100', method='scrub', metric='avg_gap'), .165, nan, '0.1650'),
    ('tab:avg_gap', dict(arch='ViT', dataset='TinyIN', method='gold', metric='time_min'), 228.9, 6.49, '228.9'),
    ('tab:avg_gap', dict(arch='ViT', dataset='MUFAC', method='bad_teacher', metric='jsd'), 1.89, 1.01, None),
    ('tab:avg_gap', dict(arch='RN18', dataset='MUFAC', method='lotus', metric='time_min'), .62, 0., None),
    ('tab:avg_gap', dict(arch='RN18', dataset='TinyIN', method='lotus', metric='jsd'), .62, .01, None),
    ('tab:cifar', dict(arch='ViT', method='lotus', unseen='cifake', metric='avg_gap'), .0075, nan, '0.0075'),
    ('tab:cifar', dict(arch='RN18', method='gold', metric='time_min'), 5.32, 1.18, None),
    ('tab:cifar', dict(arch='RN18', method='bad_teacher', metric='jsd'), 2.39, 2.03, None),
    ('tab:cifar', dict(arch='ViT', method='salun', metric='time_min'), 37.97, .19, None),
    ('tab:fifty', dict(arch='ViT', dataset='C-100', method='lotus', metric='time_min'), 13.79, .02, None),
    ('tab:fifty', dict(arch='RN18', dataset='C-10', method='bad_teacher', metric='avg_gap'), .0625, nan, None),
    ('tab:fifty', dict(arch='RN18', dataset='C-100', method='salun', metric='jsd'), 6.25, .45, None),
    ('tab:fifty_supp', dict(arch='ViT', dataset='C-100', method='finetune', metric='time_min'), 6.34, .01, None),
    ('tab:fifty_supp', dict(arch='RN18', dataset='C-10', method='random_label', metric='jsd'), .73, .22, None),
    ('tab:fifty_supp', dict(arch='RN18', dataset='C-100', method='neggrad_plus', metric='avg_gap'), .315, nan, None),
    ('tab:imagenet', dict(method='lotus', metric='rf_jsd'), 1.11, .01, None),
    ('tab:imagenet', dict(method='lotus', metric='time_min'), 10.72, .01, None),
    ('tab:imagenet', dict(method='bad_teacher', metric='acc_retain'), .77, .21, None),
    ('tab:imagenet', dict(method='original', metric='time_min'), nan, nan, '(pre-trained)'),
    ('tab:hyperparams', dict(method='scrub', metric='lr'), 5e-4, nan, '5e-4'),
    ('tab:hyperparams', dict(method='ssd', metric='lr'), .1, nan, '0.1'),
    ('tab:hyperparams', dict(method='salun', metric='weight_decay'), 5e-4, nan, '5e-4'),
    ('tab:hyperparams', dict(method='bad_teacher', metric='optimizer'), nan, nan, 'Adam'),
    ('tab:avg_gap_supp', dict(arch='ViT', dataset='TinyIN', method='gold', metric='mia'), .76, 0., None),
    ('tab:avg_gap_supp', dict(arch='ViT', dataset='TinyIN', method='random_label', metric='gap_acc_forget'), .29, nan, None),
    ('tab:avg_gap_supp', dict(arch='RN18', dataset='C-100', method='lotus', metric='avg_gap'), .12, nan, None),
    ('tab:avg_gap_supp', dict(arch='RN18', dataset='MUFAC', method='bad_teacher', metric='acc_forget'), .53, .07, None),
    ('tab:avg_gap_supp', dict(arch='RN18', dataset='MUFAC', method='bad_teacher', metric='gap_acc_forget'), .06, nan, None),
    ('tab:avg_gap_supp', dict(arch='ViT', dataset='C-10', method='scrub', metric='gap_mia'), 0., nan, '0.00'),
    ('tab:pcc', dict(arch='ViT', dataset='C-100', forget_pct=.1, metric='pcc'), .84, nan, None),
    ('tab:pcc', dict(arch='ViT', dataset='C-100', forget_pct=.1, metric='p_value'), .0043, nan, None),
    ('tab:pcc', dict(arch='RN18', dataset='C-10', forget_pct=.5, metric='pcc'), .89, nan, None),
    ('tab:pcc', dict(arch='', dataset='', metric='pcc'), .92, .04, None),
    ('tab:pcc', dict(arch='', dataset='', metric='p_value'), .001, .0016, None),
    ('tab:class', dict(dataset='TinyIN', forget_class='pizza', method='lotus', metric='avg_gap'), .0925, nan, None),
    ('tab:class', dict(dataset='C-100', forget_class='beaver', method='ssd', metric='jsd'), 45.19, 9.19, None),
    ('tab:class', dict(dataset='TinyIN', forget_class='pizza', method='gold', metric='time_min'), 42.15, 16.05, None),
    ('tab:class', dict(dataset='C-100', forget_class='beaver', method='lotus', metric='time_min'), .23, .01, None),
    ('tab:gumbel', dict(arch='ViT', dataset='C-100', variant='', metric='avg_gap'), .125, nan, '0.125'),   # printed so (0.0125 in tab:avg_gap)
    ('tab:gumbel', dict(arch='RN18', dataset='MUFAC', variant='softmax', metric='jsd'), 7.33, nan, None),
    ('tab:gumbel', dict(arch='RN18', dataset='TinyIN', variant='softmax', metric='avg_gap'), .185, nan, None),
]

def one(df, table, keys):
    sel = df[df.table == table]
    for k, v in keys.items(): sel = sel[np.isclose(sel[k], v) if k == 'forget_pct' else sel[k] == v]
    assert len(sel) == 1, (table, keys, len(sel))
    return sel.iloc[0]

def same(a, b): return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

def test_literals_cover_every_table():
    assert {t for t, *_ in LITERALS} == set(TABLES)
    assert all(sum(t == u for u, *_ in LITERALS) >= 3 for t in TABLES)

@pytest.mark.parametrize('table,keys,mean,std,text', LITERALS, ids=lambda x: str(x) if isinstance(x, str) else None)
def test_stored_against_hand_read(table, keys, mean, std, text):
    r = one(published(), table, keys)
    assert same(r['mean'], mean) and same(r['std'], std), (r['mean'], r['std'], mean, std)
    if text is not None: assert r.text == text

@needs_tex
def test_stored_against_reparsed_tex():
    "The sampled cells, then the whole table, parsed again from the source, equal the stored file"
    parsed = parse_paper(TEX).astype({'forget_pct': float})
    for table, keys, *_ in LITERALS:
        a, b = one(parsed, table, keys), one(published(), table, keys)
        assert same(a['mean'], b['mean']) and same(a['std'], b['std']) and a.text == b.text, (table, keys)
    pd.testing.assert_frame_equal(parsed, read_published(), check_dtype=False)

def test_stored_file_ships():
    "The package reads only its stored CSV, which MANIFEST.in puts in the sdist and (include_package_data) the wheel"
    assert DATA_FILE.parent == ROOT/'lotus_nb'/'paper' and DATA_FILE.exists()
    assert 'include lotus_nb/paper/published.csv' in (ROOT/'MANIFEST.in').read_text().splitlines()
    assert subprocess.run(['git', 'check-ignore', '-q', str(DATA_FILE)], cwd=ROOT).returncode == 1, "published.csv is git-ignored"
    pd.testing.assert_frame_equal(published(), read_published(DATA_FILE))
    assert set(published().table) == set(TABLES)

OLD = [c for c in COLUMNS if c != 'jsd_authors']   # the header before jsd_authors

def row(method, seed, **m):
    return dict(dataset='cifar100', model='resnet18', forget_pct=.1, forget_class=None, unseen='heldout', method=method, seed=seed,
                setup='ab', **m)

def test_old_header_results(tmp_path):
    "A results.csv of the old header reads with jsd_authors NaN, and the next append migrates it without shifting a column"
    st = Store(tmp_path); path = st.results
    pd.DataFrame([row('lotus', 1, jsd=.5, rf_jsd=.25, time_min=1.5), row('gold', 1, jsd=0., rf_jsd=.125, time_min=2.)],
                 columns=OLD).to_csv(path, index=False)
    old = st.read()
    assert list(old.columns) == COLUMNS and old.jsd_authors.isna().all()
    assert old.jsd.tolist() == [.5, 0.] and old.rf_jsd.tolist() == [.25, .125]
    st.append(row('scrub', 1, jsd=.75, jsd_authors=.001, rf_jsd=.375, time_min=3.))
    assert path.read_text().splitlines()[0].split(',') == COLUMNS
    assert not list(tmp_path.glob('.*tmp')), "the migration's temp file is left"
    df = st.read()
    assert df.method.tolist() == ['lotus', 'gold', 'scrub'] and df.jsd.tolist() == [.5, 0., .75]
    assert df.rf_jsd.tolist() == [.25, .125, .375] and df.time_min.tolist() == [1.5, 2., 3.]
    assert df.jsd_authors.isna().tolist() == [True, True, False] and df.jsd_authors.iloc[2] == .001
    st.append(row('ssd', 2, jsd=1., jsd_authors=.002))        # now the plain append
    assert st.read().jsd_authors.iloc[3] == .002 and len(path.read_text().splitlines()) == 5

def test_extra_column_kept(tmp_path):
    "A file with a column this version does not know keeps it (rows are written in the file's own order)"
    st = Store(tmp_path); path = st.results
    pd.DataFrame([{**row('lotus', 1, jsd=.5), 'note': 'x'}], columns=COLUMNS + ['note']).to_csv(path, index=False)
    st.append(row('gold', 1, jsd=0., jsd_authors=0.))
    df = st.read()
    assert list(df.columns) == COLUMNS + ['note'] and df.note.iloc[0] == 'x' and df.jsd.tolist() == [.5, 0.]

LOTUS_MIA = {3407: .60, 13: .40, 12: .53}   # LoTUS's MIA per seed, Gold's 0.50: a gap of means of 0.01, per-seed gaps 0.10, 0.10, 0.03

def fake(dataset, model):
    return pd.DataFrame([row(m, s, mia=LOTUS_MIA[s] if m == 'lotus' else .5, acc_forget=.6, acc_retain=.9, acc_test=.6, jsd=1e-4, jsd_authors=2e-5,
                             rf_jsd=1e-3, rf_jsd_authors=3e-5, avg_gap=.1, time_min=.3)
                         | dict(dataset=dataset, model=model) for s in (3407, 13, 12) for m in ('gold', 'lotus')])

def test_compare_published_paper_scale_only():
    "The published cells beside ours by the authors' aggregation: JSD and RF-JSD are the authors' formulas, Avg Gap the mean of the gaps of the rounded means"
    cmp = compare_published(ours_long(fake('cifar100', 'resnet18')), 'tab:avg_gap').set_index(['method', 'metric'])
    assert cmp.loc[('lotus', 'jsd'), 'ours_metric'] == 'jsd_authors' and math.isclose(cmp.loc[('lotus', 'jsd'), 'ours'], .2)
    assert cmp.loc[('lotus', 'avg_gap'), 'published'] == .12 and math.isclose(cmp.loc[('lotus', 'avg_gap'), 'ours'], .0025)   # |0.51 - 0.50| / 4
    assert math.isclose(cmp.loc[('lotus', 'avg_gap'), 'difference'], .0025 - .12) and math.isnan(cmp.loc[('lotus', 'avg_gap'), 'ours_std'])
    im = compare_published(ours_long(fake('imagenet', 'vit_b_16_imagenet')), 'tab:imagenet').set_index(['method', 'metric'])
    assert im.loc[('lotus', 'rf_jsd'), 'ours_metric'] == 'rf_jsd_authors' and math.isclose(im.loc[('lotus', 'rf_jsd'), 'ours'], .3)
    for ds, model in [('digits', 'resnet18_small'), ('fashionmnist', 'resnet18_small'), ('cifar100', 'resnet18_small'), ('digits', 'resnet18')]:
        with pytest.raises(ValueError, match='stand-ins'): compare_published(ours_long(fake(ds, model)), 'tab:avg_gap')
