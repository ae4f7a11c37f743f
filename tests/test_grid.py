"The grid on Ray (a local instance on 2 CPUs) writes the same rows as the local executor, and papermill passes the executor"
import pandas as pd
import pytest, torch
from conftest import papermill, read_rows, show
from lotus_nb.experiment import BenchmarkSpec
from lotus_nb.store import METRICS, KEY
from lotus_nb.grid import run_grid

SPECS = [BenchmarkSpec('digits', 'resnet18_tiny', 0.1), BenchmarkSpec('digits', 'resnet18_tiny', forget_class=3)]
ARGS = dict(seeds=[1, 2], methods=['original', 'gold', 'finetune', 'lotus'], progress=False)

def sorted_rows(path):
    df = read_rows(path)
    return df.sort_values(['forget_class', 'method', 'seed'], na_position='first').reset_index(drop=True)

@pytest.fixture(scope='module')
def ray_local():
    ray = pytest.importorskip('ray')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()

def test_ray_equals_local(tmp_path, ray_local):
    torch.set_num_threads(1)                    # Ray's workers run one thread each: same arithmetic
    run_grid(SPECS, out_dir=tmp_path/'local', **ARGS)
    res = run_grid(SPECS, out_dir=tmp_path/'ray', executor='ray', **ARGS)
    a, b = sorted_rows(tmp_path/'local'/'results.csv'), sorted_rows(tmp_path/'ray'/'results.csv')
    assert len(a) == len(b) == 16
    cols = [c for c in METRICS if c != 'time_min']
    pd.testing.assert_frame_equal(a[KEY + cols], b[KEY + cols], check_exact=False, rtol=1e-9, atol=1e-12)
    assert len(list((tmp_path/'ray'/'checkpoints').glob('orig_*.pt'))) == 2, "each f_orig trained once"
    assert {b.name for b in res.values()} == {'digits_resnet18_tiny_forget10', 'digits_resnet18_tiny_class3'}
    # a second Ray run finds every row and runs nothing
    before = (tmp_path/'ray'/'results.csv').read_bytes()
    run_grid(SPECS, out_dir=tmp_path/'ray', executor='ray', **ARGS)
    assert (tmp_path/'ray'/'results.csv').read_bytes() == before

def test_papermill_executor_ray(tmp_path):
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5]', '-y', 'methods: [original, gold, lotus]',
                    '-p', 'executor', 'ray', '-p', 'out_dir', tmp_path/'res')
    assert res.returncode == 0, show(res)
    df = read_rows(tmp_path/'res'/'results.csv')
    assert sorted(df.method) == ['gold', 'lotus', 'original'] and set(df.seed) == {5}, df

def test_figures_read_their_own_benchmarks_records(tmp_path):
    "Forget 10% and forget 50% of one dataset in one grid: each benchmark's figures draw its own runs' records (before 0.3 they shared one file)"
    from lotus_nb.grid import find_benchmark
    from lotus_nb.experiment import prepare, resolve_spec
    from lotus_nb.store import Store
    specs = [BenchmarkSpec('digits', 'resnet18_tiny', f, train_epochs=2) for f in (.1, .5)]
    res = run_grid(specs, seeds=[1], methods=['original', 'gold', 'random_label', 'lotus'], out_dir=tmp_path, progress=False)
    store, sizes = Store(tmp_path), []
    for s in specs:
        b, prep = find_benchmark(res, s), prepare(resolve_spec(s), ['lotus'])
        n_forget = len(prep.splits(1).forget)
        for m, ent in b.plotted['entropy'].items():
            assert len(ent['forget']) == n_forget, (s.forget_pct, m, len(ent['forget']), n_forget)   # this benchmark's forget set
        rec = prep.record(store, 'lotus', 1)
        assert rec['ident']['forget_pct'] == s.forget_pct
        assert b.plotted['tau_trace'] == {1: rec['trace']}
        assert b.figures['entropy'].exists() and b.figures['tau_trace'].exists()
        sizes.append(n_forget)
    assert sizes[1] > 4*sizes[0], sizes
    a, b = (find_benchmark(res, s) for s in specs)
    assert a.plotted['tau_trace'] != b.plotted['tau_trace'] and a.figures['entropy'] != b.figures['entropy']
