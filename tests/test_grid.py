"The grid on Ray (a local instance on 2 CPUs) writes the same rows as the local executor under the default environment (the package sets the threads), and papermill passes the executor"
import pandas as pd
import pytest, torch
from helpers import papermill, read_rows, show, outputs
from lotus_nb.running.benchmark import BenchmarkSpec
from lotus_nb.running.store import METRICS, KEY
from lotus_nb.running.grid import run_grid

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
    torch.set_num_threads(2)                    # whatever this process had: each unit runs with the grid's `threads` (1)
    run_grid(SPECS, out_dir=tmp_path/'local', **ARGS)
    res = run_grid(SPECS, out_dir=tmp_path/'ray', executor='ray', tracking='mlflow', **ARGS)   # on Ray, the driver alone logs each row
    a, b = sorted_rows(tmp_path/'local'/'results.csv'), sorted_rows(tmp_path/'ray'/'results.csv')
    assert len(a) == len(b) == 16
    cols = [c for c in METRICS if c != 'time_min']
    pd.testing.assert_frame_equal(a[KEY + cols], b[KEY + cols], check_exact=False, rtol=1e-9, atol=1e-12)
    assert set(a.threads) == set(b.threads) == {1}, "the package set the threads of every unit"
    assert torch.get_num_threads() == 2, "and gave this process its own back"
    assert len(list((tmp_path/'ray'/'checkpoints').glob('orig_*.pt'))) == 2, "each f_orig trained once, kept by the driver"
    assert len(list((tmp_path/'ray'/'checkpoints').glob('gold_*.pt'))) == 4
    assert {b.name for b in res.values()} == {'digits_resnet18_tiny_forget10', 'digits_resnet18_tiny_class3'}
    done = lambda d: sorted({(r.benchmark, r.seed, r.stage) for r in pd.read_csv(tmp_path/d/'stages.csv').itertuples()
                             if r.stage.split()[0] in ('unlearn', 'evaluate')})
    assert done('ray') == done('local') and len(done('ray')) == 2 * 2 * 2 * 4, "each Ray unit's stages reached the driver's stages.csv"
    # a second Ray run finds every row and runs nothing
    before = (tmp_path/'ray'/'results.csv').read_bytes()
    run_grid(SPECS, out_dir=tmp_path/'ray', executor='ray', tracking='mlflow', **ARGS)
    assert (tmp_path/'ray'/'results.csv').read_bytes() == before
    mlflow = pytest.importorskip('mlflow')
    c = mlflow.MlflowClient(f"sqlite:///{tmp_path/'ray'/'mlflow.db'}")
    runs = c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=1000)
    assert sorted(r.info.run_name for r in runs if r.data.tags['lotus_nb.kind'] == 'row') == sorted(f'{m} seed {s}' for m, s in zip(b.method, b.seed))
    assert sum(r.data.tags['lotus_nb.kind'] == 'benchmark' for r in runs) == 2   # one parent run per benchmark, none twice

def test_papermill_executor_ray(tmp_path):
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5]', '-y', 'methods: [original, gold, lotus]',
                    '-p', 'executor', 'ray', '-p', 'out_dir', tmp_path/'res')
    assert res.returncode == 0, show(res)
    df = read_rows(tmp_path/'res'/'results.csv')
    assert sorted(df.method) == ['gold', 'lotus', 'original'] and set(df.seed) == {5}, df

def test_figures_read_their_own_benchmarks_records(tmp_path):
    "Forget 10% and forget 50% of one dataset in one grid: each benchmark's figures draw its own runs' records (before 0.3 they shared one file)"
    from lotus_nb.running.grid import find_benchmark
    from lotus_nb.running.benchmark import prepare, resolve_spec
    from lotus_nb.running.store import Store
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

def test_ray_storage_folder(tmp_path, ray_local):
    "With `storage` a folder (a disk every node mounts), the checkpoints live there, not in out_dir, and a second grid of another forget set reuses the f_orig"
    spec, shared = BenchmarkSpec('digits', 'resnet18_tiny', 0.1, train_epochs=2), tmp_path/'shared'
    args = dict(seeds=[1], methods=['original', 'gold', 'lotus'], progress=False, write=False)
    run_grid([spec], out_dir=tmp_path/'local', **args)
    run_grid([spec], out_dir=tmp_path/'ray', executor='ray', storage=str(shared), **args)
    a, b = sorted_rows(tmp_path/'local'/'results.csv'), sorted_rows(tmp_path/'ray'/'results.csv')
    cols = [c for c in METRICS if c != 'time_min']
    pd.testing.assert_frame_equal(a[KEY + cols], b[KEY + cols], check_exact=False, rtol=1e-9, atol=1e-12)
    assert sorted(p.name.split('_')[0] for p in shared.glob('*.pt')) == ['gold', 'orig']
    assert not (tmp_path/'ray'/'checkpoints').exists(), "nothing went through the driver"
    orig = next(shared.glob('orig_*.pt')); mtime = orig.stat().st_mtime_ns
    run_grid([BenchmarkSpec('digits', 'resnet18_tiny', forget_class=3, train_epochs=2)], out_dir=tmp_path/'ray', executor='ray', storage=str(shared), **args)
    assert orig.stat().st_mtime_ns == mtime and len(list(shared.glob('gold_*.pt'))) == 2, "the f_orig was read from the storage, not trained again"

def test_papermill_dry_run_and_recipe(tmp_path):
    "-p dry_run true prints the plan, the data and the estimate and trains nothing; a recipe changes the benchmark, an unknown field is refused"
    res = papermill(tmp_path/'dry.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5, 6]', '-y', 'methods: [original, gold, lotus]',
                    '-p', 'out_dir', tmp_path/'res', '-p', 'dry_run', 'true', '-p', 'device', 'cpu')
    assert res.returncode == 0, show(res)
    text = outputs(tmp_path/'dry.ipynb')
    assert 'DRY RUN' in text and '6 row(s) still to run' in text and 'device-hours' in text and 'digits (default): present' in text, text[-3000:]
    assert not (tmp_path/'res'/'results.csv').exists() and not (tmp_path/'res'/'checkpoints').exists()
    res = papermill(tmp_path/'r.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5]', '-y', 'methods: [original, gold]',
                    '-p', 'out_dir', tmp_path/'res', '-y', 'recipe: {epochs: 2, batch_size: 64, lr: 0.05}')
    assert res.returncode == 0, show(res)
    from lotus_nb.models.training import load_checkpoint
    hist = [load_checkpoint(p)['meta']['history'] for p in (tmp_path/'res'/'checkpoints').glob('*.pt')]
    assert len(hist) == 2 and all(len(h) <= 2 for h in hist), [len(h) for h in hist]   # at most the recipe's 2 epochs
    res = papermill(tmp_path/'bad.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [5]', '-p', 'out_dir', tmp_path/'res2', '-y', 'recipe: {epoch: 2}')
    assert res.returncode != 0 and 'valid fields: epochs, batch_size' in res.stdout, show(res)

def test_paper_dry_run(tmp_path):
    "paper.ipynb -p dry_run true previews every grid of the paper (its tables and the notebooks it runs), writes nothing, runs no notebook"
    from helpers import run_nb
    res = run_nb('paper', tmp_path/'p.ipynb', '-p', 'scale', 'embedded', '-y', 'datasets: [digits]', '-y', 'seeds: [1]', '-p', 'dry_run', 'true',
                 '-p', 'out_dir', tmp_path/'out', '-p', 'device', 'cpu')
    assert res.returncode == 0, show(res)
    text = outputs(tmp_path/'p.ipynb')
    for s in ['DRY RUN', 'main tables:', 'ablation: alpha:', 'device-hours', 'digits (default): present']: assert s in text, (s, text[-3000:])
    assert not (tmp_path/'out').exists(), "a dry run writes nothing"

def test_worker_processes_equal_local(tmp_path):
    "workers=2 runs two units at once, each in a spawned process that writes its rows into the store: the rows of one after the other, each logged once"
    run_grid(SPECS, out_dir=tmp_path/'one', **ARGS)
    run_grid(SPECS, out_dir=tmp_path/'two', workers=2, tracking='mlflow', **ARGS)
    a, b = sorted_rows(tmp_path/'one'/'results.csv'), sorted_rows(tmp_path/'two'/'results.csv')
    assert len(a) == len(b) == 16
    cols = [c for c in METRICS if c != 'time_min'] + ['steps']
    pd.testing.assert_frame_equal(a[KEY + cols], b[KEY + cols], check_exact=False, rtol=1e-9, atol=1e-12)
    assert set(b.threads) == {1}
    before = (tmp_path/'two'/'results.csv').read_bytes()
    run_grid(SPECS, out_dir=tmp_path/'two', workers=2, tracking='mlflow', **ARGS)   # a second run finds every row and runs nothing
    assert (tmp_path/'two'/'results.csv').read_bytes() == before
    mlflow = pytest.importorskip('mlflow')
    c = mlflow.MlflowClient(f"sqlite:///{tmp_path/'two'/'mlflow.db'}")
    runs = c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=1000)
    assert sorted(r.info.run_name for r in runs if r.data.tags['lotus_nb.kind'] == 'row') == sorted(f'{m} seed {s}' for m, s in zip(b.method, b.seed))

def test_workers_refused_before_any_work(tmp_path):
    for bad in (0, 1.5, True, '2'):
        with pytest.raises(ValueError, match='workers must be a positive integer'): run_grid(SPECS, out_dir=tmp_path, workers=bad, **ARGS)
    assert not (tmp_path/'results.csv').exists()
