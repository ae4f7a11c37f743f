"""Each metric is one record (lotus_nb.metrics.metric_facts): the tables, the lists read from it and the cache key of rows.
The tables of one benchmark's rows are compared with those the code gave before the record held the tables' rows
(tests/data/report_tables_before.json, written by `python tests/test_metric_record.py --write` on that code)."""
import json, sys
from pathlib import Path
import numpy as np, pandas as pd

SNAPSHOT = Path(__file__).parent/'data'/'report_tables_before.json'
RESOURCES = {'steps': 100, 'peak_mem_mb': 512., 'peak_rss_mb': 2048.}

def rows() -> pd.DataFrame:
    "Three seeds of every paper method, Gold and the Original, every built-in metric drawn from a fixed generator"
    from lotus_nb.metrics.report import paper_methods
    from lotus_nb.methods.base import role_method
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
    import lotus_nb.metrics.report as R, lotus_nb.metrics.evaluation as M, lotus_nb.running.store as S, lotus_nb.paper.published as P, lotus_nb.paper.ablation_study as A
    names = ('MAIN_ROWS', 'EXTRA_ROWS', 'PAPER_ROWS', 'LOGGED_DIGITS', 'CERTAIN_ROWS', 'SUPP_ROWS', 'SUPP_RANKED', 'SUPP_LABELS',
             'EXTRA_MIA', 'LOGGED_ROUNDING', 'PAPER_SCALE')
    out = {n: json.loads(json.dumps(getattr(R, n))) for n in names}
    out.update(GAP_KEYS=list(M.GAP_KEYS), BUILTIN_METRICS=list(M.BUILTIN_METRICS), METRICS=list(S.METRICS),
               GAP_METRICS=list(P.GAP_METRICS), SWEEP_METRICS=json.loads(json.dumps(A.SWEEP_METRICS)))
    return out

def tables() -> dict:
    "report_tables of rows(), with tab:avg_gap by our aggregation on MAIN_ROWS and the authors' aggregation"
    from lotus_nb.paper.paper_tables import report_tables, table_avg_gap
    from lotus_nb.metrics.report import MAIN_ROWS, aggregate_authors
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

import pytest

@pytest.mark.parametrize('tables', [None, ('main',)])
def test_plugin_metric_goes_where_its_record_says(tmp_path, tables):
    "A metric a plugin registers once is in the results rows, in the table its record names (default: '_extra') and in what the tracker gets"
    from lotus_nb.core.registry import registered, registering
    from lotus_nb.metrics.evaluation import METRIC_FNS, register_metric
    from lotus_nb.running.benchmark import run_benchmark
    from lotus_nb.paper.paper_tables import report_tables, table_avg_gap
    from lotus_nb.running.tracking import Tracker
    from lotus_nb.methods.base import display_name

    class Memo(Tracker):   # keeps what it is sent
        name = 'memo'
        def __init__(self): super().__init__(tmp_path); self.rows = {}
        def logged(self): return set(self.rows)
        def log_row(self, key, bench, name, params, metrics, history, files): self.rows[key] = metrics
        def log_benchmark(self, *a): pass

    def conf_forget(outputs, ref): return outputs['forget'][0].softmax(-1).max(-1).values.mean()
    with registered(METRIC_FNS), registering('plugin'):
        register_metric('conf_forget', conf_forget, label='Forget conf.', higher_better=True, **({'tables': tables} if tables else {}))
        assert METRIC_FNS.layer('conf_forget') == 'plugin'
        memo = Memo()
        res = run_benchmark(dataset='digits', model='resnet18_tiny', seeds=[1], methods=['original', 'gold', 'finetune'],
                            out_dir=tmp_path, train_epochs=1, progress=False, tracking=memo).results
        assert res['conf_forget'].between(0, 1).all() and len(res) == 3                            # every results row
        assert all(0 <= m['conf_forget'] <= 1 for m in memo.rows.values()) and len(memo.rows) == 3  # the tracker's
        extra = report_tables(res)['avg_gap_extra']
        if tables is None: assert extra.loc['Forget conf.', display_name('finetune')] != ''       # the default: the '_extra' table
        else:
            assert 'Forget conf.' not in extra.index
            main = table_avg_gap(res)                                                                # tab:avg_gap by our aggregation
            assert list(main.index) == ['Avg Gap', 'JSD x1e4', 'RF-JSD x1e4', 'Time (min.)', 'Forget conf.'], list(main.index)
    assert 'conf_forget' not in METRIC_FNS

def test_metric_version_enters_setup_key():
    "A metric's version, once set, changes the rows' setup key (their models' keys stay); no version keeps the key of before"
    from lotus_nb.core.registry import registered
    from lotus_nb.metrics.evaluation import METRIC_FNS, register_metric
    from lotus_nb.running.benchmark_spec import BenchmarkSpec, resolve_spec, prepare
    spec = resolve_spec(BenchmarkSpec('digits', 'resnet18_tiny', 0.1, train_epochs=1))
    before = prepare(spec, ['lotus'])
    with registered(METRIC_FNS):
        register_metric('toy_conf', lambda o, ref: 0.)
        assert prepare(spec, ['lotus']).setup == before.setup                  # no version: the key of before
    with registered(METRIC_FNS):
        register_metric('toy_conf', lambda o, ref: 0., version='2')
        p = prepare(spec, ['lotus'])
        assert p.setup['lotus'] != before.setup['lotus'] and p.base == before.base
    assert prepare(spec, ['lotus']).setup == before.setup
