"The grid on Ray (a local instance on 2 CPUs) writes the same rows as the local executor, and papermill passes the executor"
import pandas as pd
import pytest, torch
from conftest import papermill, read_rows, show
from lotus_nb.experiment import BenchmarkSpec, METRICS, KEY
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
    assert set(res) == {'digits_resnet18_tiny_forget10', 'digits_resnet18_tiny_class3'}
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
