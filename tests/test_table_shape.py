"""Our paper-shaped tables have the paper's grid: each table's columns (and, where the paper's rows are benchmarks, its rows)
are read from the paper's .tex and compared with the table built from small synthetic results."""
import re
import numpy as np, pandas as pd, pytest
from lotus_nb.metrics.report import PAPER_METHODS, PAPER_ROWS, SUPP_ROWS, MISSING, render
from lotus_nb.paper.paper_plan import PAPER_BENCHMARKS, PB, block_label
from lotus_nb.paper.published import paper_tex, TEX_UNSET
from lotus_nb.paper.paper_tables import PAPER_COLUMNS, table_authors, table_pcc_authors, table_imagenet_authors, gumbel_shape, GUMBEL_ROWS

ALIASES = {'Bad Teacher': 'BadT', 'Rnd Labeling': 'RndLbl'}   # the paper spells two methods two ways

def tex_path():
    "The paper's .tex, named by $LOTUS_NB_PAPER_TEX; the tests skip without it"
    p = paper_tex()
    if p is None: pytest.skip(TEX_UNSET)
    return p

def table_tex(label):
    "The tabular of the table labelled `label`"
    tex = tex_path().read_text()
    end = tex.index(r'\label{' + label + '}')
    start = tex.rindex(r'\begin{tabular}', 0, end)
    return tex[start:tex.index(r'\end{tabular}', start)]

def clean(s):
    "A header cell as plain text: no \\cite, \\tb, \\makecell, math, arrows"
    s = re.sub(r'\\cite\{[^}]*\}', '', s)
    s = re.sub(r'\\(tb|textbf|makecell|B|ul)\{', '{', s)
    s = s.replace('\\\\', ' ').replace('$', '').replace('\\!', '').replace('\\times', '×').replace('\\,', ' ').replace('\\quad', ' ')
    s = re.sub(r'[{}()]', ' ', s)
    return ALIASES.get(' '.join(s.split()), ' '.join(s.split()))

def norm(s):
    "A label compared loosely: no dots, spaces or parentheses, '×' as 'x', 'CIFAR-' as 'C-'"
    return clean(str(s)).replace('\\%', '%').replace('.', '').replace('×', 'x').replace(' ', '').lower().replace('cifar-', 'c-')

def header(label):
    "The paper's column names after its metric column (the first row of the tabular, before \\toprule)"
    body = table_tex(label)
    body = body[body.index('}', body.index('{', len(r'\begin{tabular}')) + 1) + 1:]   # drop the column spec
    head = body[:body.index(r'\toprule')].rstrip().removesuffix('\\\\')
    cells = [clean(c) for c in head.split('&')]
    i = next(i for i, c in enumerate(cells) if c.startswith('Metric') or c.startswith('Method') or c.startswith('Dataset'))
    return [c for c in cells[i + 1:] if c]

def rows_of(label):
    "The row labels of the tabular's body: the first cell of a line after its \\multirow and empty cells, if it is text"
    out = []
    for line in table_tex(label).split(r'\toprule', 1)[1].splitlines():
        cells = [c.strip() for c in line.split('&')]
        while cells and (not cells[0] or cells[0].startswith(('\\multirow', '\\rowcolor', '\\cmidrule', '\\midrule', '\\bottomrule', '\\\\'))):
            cells = cells[1:] if not cells[0].startswith('\\rowcolor') else [cells[0].split('}', 1)[1].strip(), *cells[1:]]
        c = clean(cells[0]) if cells else ''
        if re.match(r'[A-Za-z]', c) and c != 'pre-trained': out.append(c)
    return out

def results(methods, seeds=(1, 2), pct=.1):
    rng = np.random.RandomState(0); rows = []
    for m in methods:
        for s in seeds:
            rows.append(dict(dataset='digits', model='resnet18_small', forget_pct=pct, forget_class=None, unseen='heldout', method=m, seed=s,
                             setup='x', acc_forget=rng.rand(), acc_retain=rng.rand(), acc_test=rng.rand(), acc_unseen=rng.rand(), mia=rng.rand(),
                             jsd=0. if m == 'gold' else rng.rand()*1e-3, rf_jsd=rng.rand()*1e-3, avg_gap=0. if m == 'gold' else rng.rand(),
                             jsd_authors=0. if m == 'gold' else rng.rand()*1e-4, rf_jsd_authors=rng.rand()*1e-4,
                             time_min=rng.rand(), zrf=rng.rand(), mia_loss=rng.rand(), mia_svc=rng.rand()))
    return pd.DataFrame(rows)

EVERY = ['original', *PAPER_METHODS, 'lotus_salun']   # every method that runs: the table keeps the paper's alone

def parts(label, extra=()):
    return {pb: results(EVERY + list(extra), pct=pb.forget_pct) for pb in PAPER_BENCHMARKS[label]}

@pytest.mark.parametrize('label', ['tab:avg_gap', 'tab:cifar', 'tab:fifty', 'tab:fifty_supp', 'tab:class', 'tab:avg_gap_supp'])
def test_method_columns(label):
    t = table_authors(label, parts(label, ['lotus_synthetic'] if label == 'tab:cifar' else ()))
    assert [norm(c) for c in t.columns] == [norm(c) for c in header(label)], (list(t.columns), header(label))
    ranked = {c for _, c in t.attrs['rank']}
    assert ranked <= set(t.columns) and 'LoTUS+SalUn' not in ranked and 'Original' not in ranked
    assert '**' in render(t).to_markdown()

@pytest.mark.parametrize('label', ['tab:avg_gap', 'tab:cifar', 'tab:fifty', 'tab:fifty_supp', 'tab:class', 'tab:avg_gap_supp'])
def test_blocks_and_rows(label):
    "Blocks in the paper's order, the paper's rows in each, in its order"
    t = table_authors(label, parts(label, ['lotus_synthetic'] if label == 'tab:cifar' else ()))
    blocks = list(dict.fromkeys(i.split(' | ')[0] for i in t.index))
    assert blocks == [block_label(pb) for pb in PAPER_BENCHMARKS[label]]
    ours = [norm(i.split(' | ')[1]) for i in t.index][:len(rows_of(label))]
    assert ours == [norm(r) for r in rows_of(label)], (ours, rows_of(label))
    assert not (t.iloc[:len(rows_of(label))] == MISSING).any().any(), "every cell of a block that ran is filled (JSD: jsd_authors)"

def test_imagenet():
    t = table_imagenet_authors(results(EVERY))
    assert list(t.columns) == ['RF-JSD x1e4', 'Time (min.)', 'Retain Acc.', 'MIA Acc.']
    assert [norm(c) for c in t.index] == [norm(r) for r in rows_of('tab:imagenet')] == [norm(c) for c in
            ['Original', 'Finetuning', 'NegGrad+', 'RndLbl', 'BadT', 'SCRUB', 'SSD', 'UNSIR', 'SalUn', 'LoTUS']]
    assert len(header('tab:imagenet')) == len(t.columns) == 4
    assert (t != MISSING).all().all(), t   # every method's cells (RF-JSD: rf_jsd_authors)

def test_pcc_rows():
    "One row per benchmark the paper correlates, in its order, then the mean"
    t = table_pcc_authors(parts('tab:pcc'))
    paper = rows_of('tab:pcc')
    assert len(t) == len(paper) == 11, (list(t.index), paper)
    assert [norm(i.split(' ', 1)[1]) for i in t.index[:-1]] == [norm(r) for r in paper[:-1]]
    assert [i.split(' ')[0] for i in t.index[:-1]] == ['ViT']*5 + ['RN18']*5
    assert list(t.columns) == ['PCC', 'p-value'] and t.index[-1] == 'Mean ± Std' and 'Std' in paper[-1]
    assert (t != MISSING).all().all(), "a correlation on every benchmark that ran (jsd_authors, rf_jsd_authors)"

def test_gumbel():
    tex = table_tex('tab:gumbel')
    second = [clean(c) for c in tex.split(r'\toprule')[0].splitlines()[-1].split('&')][2:]
    short = {'TinyImageNet': 'TinyIN', 'CIFAR-100': 'C-100', 'CIFAR-10': 'C-10', 'MUFAC': 'MUFAC'}
    t = gumbel_shape(pd.DataFrame())
    assert [c.split(' ', 1)[1] for c in t.columns] == [short[c] for c in second]
    assert [c.split(' ')[0] for c in t.columns] == ['ViT']*4 + ['RN18']*4
    assert list(t.index) == GUMBEL_ROWS and 'Avg Gap' in tex and 'Softmax with' in tex
