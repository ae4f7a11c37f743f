"The same benchmark run twice from scratch (separate checkpoint caches) gives exactly the same metrics"
import pandas as pd
from lotus_nb.running.benchmark import run_benchmark
from lotus_nb.running.store import METRICS

def test_two_runs_identical(tmp_path):
    args = dict(seeds=[7], methods=['original', 'gold', 'finetune', 'lotus'], progress=False)
    a = run_benchmark('digits', 'resnet18_small', out_dir=tmp_path/'a', **args).results
    b = run_benchmark('digits', 'resnet18_small', out_dir=tmp_path/'b', **args).results
    assert len(a) == len(b) == 4
    key = ['method', 'seed']
    cols = [c for c in METRICS if c != 'time_min']
    a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[key + cols], b[key + cols], check_exact=True)
    assert a.setup.tolist() == b.setup.tolist()
