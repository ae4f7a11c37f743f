"""Each metric is one record (lotus_nb.metric_facts): the tables, the lists read from it and the cache key of rows.
The tables of one benchmark's rows are compared with those the code gave before the record held the tables' rows
(tests/data/report_tables_before.json, written by `python tests/test_metric_record.py --write` on that code)."""
import json, sys
from pathlib import Path
import numpy as np, pandas as pd

SNAPSHOT = Path(__file__).parent/'data'/'report_tables_before.json'
RESOURCES = {'steps': 100, 'peak_mem_mb': 512., 'peak_rss_mb': 2048.}

def rows() -> pd.DataFrame:
    "Three seeds of every paper method, Gold and the Original, every built-in metric drawn from a fixed generator"
    from lotus_nb.report import paper_methods
    from lotus_nb.methods import role_method
    rng, out = np.random.default_rng(7), []
    methods = [*paper_methods(), role_method('original')]
    for m in methods:
        for s in range(3):
            r = dict(dataset='cifar10', model='resnet18', forget_pct=0.1, forget_class=np.nan, unseen='heldout', method=m, seed=s,
                     setup='x', method_seed=s, **RESOURCES)
            for k in ('acc_forget', 'acc_retain', 'acc_test', 'acc_unseen', 'mia', 'mia_loss', 'mia_svc'): r[k] = rng.uniform(0.3, 1)
            for k in ('jsd', 'jsd_authors', 'rf_jsd', 'rf_jsd_authors'): r[k] = rng.uniform(1e-5, 5e-3)
            r['zrf'], r['time_min'], r['avg_gap'] = rng.uniform(0.5, 1), rng.uniform(0.1, 9), rng.uniform(0, 0.2)
            out.append(r)
    return pd.DataFrame(out)

def _plain(t: pd.DataFrame) -> dict:
    return dict(index=[str(i) for i in t.index], columns=[str(c) for c in t.columns], cells=t.astype(str).values.tolist(),
                rank=sorted([str(r), str(c), int(k)] for (r, c), k in t.attrs.get('rank', {}).items()))

def lists() -> dict:
    "Every list of metrics that the tables read, as plain JSON"
    import lotus_nb.report as R, lotus_nb.metrics as M, lotus_nb.store as S, lotus_nb.published as P, lotus_nb.ablation_study as A
    names = ('MAIN_ROWS', 'EXTRA_ROWS', 'PAPER_ROWS', 'LOGGED_DIGITS', 'CERTAIN_ROWS', 'SUPP_ROWS', 'SUPP_RANKED', 'SUPP_LABELS',
             'EXTRA_MIA', 'LOGGED_ROUNDING', 'PAPER_SCALE')
    out = {n: json.loads(json.dumps(getattr(R, n))) for n in names}
    out.update(GAP_KEYS=list(M.GAP_KEYS), BUILTIN_METRICS=list(M.BUILTIN_METRICS), METRICS=list(S.METRICS),
               GAP_METRICS=list(P.GAP_METRICS), SWEEP_METRICS=json.loads(json.dumps(A.SWEEP_METRICS)))
    return out

def tables() -> dict:
    "report_tables of rows(), with tab:avg_gap by our aggregation on MAIN_ROWS and the authors' aggregation"
    from lotus_nb.paper_tables import report_tables, table_avg_gap
    from lotus_nb.report import MAIN_ROWS, aggregate_authors
    r = rows()
    out = {k: _plain(t) for k, t in report_tables(r).items()}
    out['avg_gap_ours'], out['avg_gap_main'] = _plain(table_avg_gap(r)), _plain(table_avg_gap(r, MAIN_ROWS))
    out['aggregate_authors'] = _plain(aggregate_authors(r))
    return out

def test_tables_as_before():
    "report_tables (and the lists of metrics) give what they gave before the record held the tables' rows"
    want = json.loads(SNAPSHOT.read_text())
    got = json.loads(json.dumps(dict(tables=tables(), lists=lists())))
    for k in want['lists']: assert got['lists'][k] == want['lists'][k], k
    assert list(got['tables']) == list(want['tables'])
    for k in want['tables']: assert got['tables'][k] == want['tables'][k], k

if __name__ == '__main__' and sys.argv[1:] == ['--write']:
    SNAPSHOT.write_text(json.dumps(dict(tables=tables(), lists=lists()), indent=1, ensure_ascii=False) + '\n')
