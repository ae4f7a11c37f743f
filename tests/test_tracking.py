"Experiment trackers end to end: run_benchmark and run_grid log one run per results row (MLflow's SQLite store and a file store, W&B offline), a rerun logs none twice, a row the tracker missed is logged at the next run"
import os
import pytest
from helpers import read_rows
from lotus_nb.running.benchmark import run_benchmark, BenchmarkSpec
from lotus_nb.running.grid import run_grid
from lotus_nb.running.store import Store
from lotus_nb.running.tracking import MLflowTracker

ARGS = dict(seeds=[1], methods=['original', 'gold', 'lotus'], progress=False)

def mlflow_rows(uri):
    mlflow = pytest.importorskip('mlflow')
    c = mlflow.MlflowClient(uri)
    runs = c.search_runs([c.get_experiment_by_name('lotus_nb').experiment_id], max_results=1000)
    return c, [r for r in runs if r.data.tags['lotus_nb.kind'] == 'row'], [r for r in runs if r.data.tags['lotus_nb.kind'] == 'benchmark']

def test_run_benchmark_mlflow_resume_and_catch_up(tmp_path):
    pytest.importorskip('mlflow')
    out = tmp_path/'res'
    run_benchmark('digits', 'resnet18_tiny', out_dir=out, tracking='mlflow', **ARGS)
    uri = f"sqlite:///{out/'mlflow.db'}"
    c, rows, parents = mlflow_rows(uri)
    assert sorted(r.data.params['method'] for r in rows) == ['gold', 'lotus', 'original'] and len(parents) == 1
    lotus = next(r for r in rows if r.data.params['method'] == 'lotus')
    rec = Store(out).read_record(next(i for i in Store(out).done() if i[5] == 'lotus'))   # the LoTUS row's record
    assert [m.value for m in sorted(c.get_metric_history(lotus.info.run_id, 'trace/tau_d'), key=lambda m: m.step)] == pytest.approx([e['tau_d'] for e in rec['trace']])
    assert os.path.exists(lotus.data.params['checkpoint.orig']) and lotus.data.params['config.alpha'] == str(rec['config']['alpha'])
    # a rerun logs nothing twice; a row appended without the tracker (finetune) is logged by the next tracked run
    run_benchmark('digits', 'resnet18_tiny', out_dir=out, tracking='mlflow', **ARGS)
    assert len(mlflow_rows(uri)[1]) == 3
    run_benchmark('digits', 'resnet18_tiny', out_dir=out, **{**ARGS, 'methods': ['original', 'gold', 'finetune']})
    assert len(mlflow_rows(uri)[1]) == 3 and len(read_rows(out/'results.csv')) == 4
    run_benchmark('digits', 'resnet18_tiny', out_dir=out, tracking='mlflow', **ARGS)
    _, rows, _ = mlflow_rows(uri)
    assert sorted(r.data.params['method'] for r in rows) == ['finetune', 'gold', 'lotus', 'original']

def test_run_grid_mlflow_file_store(tmp_path, monkeypatch):
    "Any tracking URI: here MLflow's file store, which MLflow 3 opens only when asked to"
    pytest.importorskip('mlflow')
    monkeypatch.setenv('MLFLOW_ALLOW_FILE_STORE', 'true')
    out, uri = tmp_path/'res', (tmp_path/'mlruns').as_uri()
    run_grid([BenchmarkSpec('digits', 'resnet18_tiny', 0.1)], out_dir=out, tracking=MLflowTracker(out, uri=uri), **ARGS)
    _, rows, parents = mlflow_rows(uri)
    assert len(rows) == len(read_rows(out/'results.csv')) == 3 and len(parents) == 1
    assert not (out/'mlflow.db').exists()

def test_run_grid_wandb_offline(tmp_path, monkeypatch):
    pytest.importorskip('wandb')
    for k in ('WANDB_API_KEY', 'WANDB_MODE'): monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv('NETRC', str(tmp_path/'no_netrc')); monkeypatch.setenv('WANDB_SILENT', 'true')
    out = tmp_path/'res'
    run_grid([BenchmarkSpec('digits', 'resnet18_tiny', 0.1)], out_dir=out, tracking='wandb', **ARGS)
    runs = sorted((out/'wandb').glob('offline-run-*'))
    raw = [next(d.glob('run-*.wandb')).read_bytes() for d in runs]
    assert len(runs) == 4, runs   # three rows and the benchmark's run (tables and figures)
    assert [sum(k in r for r in raw) for k in (b'lotus seed 1', b'gold seed 1', b'acc_forget', b'trace/tau_d', b'config.alpha', b'figures/')] == [1, 1, 3, 1, 1, 1]
    run_grid([BenchmarkSpec('digits', 'resnet18_tiny', 0.1)], out_dir=out, tracking='wandb', **ARGS)
    assert len((out/'wandb'/'lotus_nb_logged.txt').read_text().split()) == 3   # no row logged twice

def test_unknown_tracker_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="unknown tracker 'neptune'; valid trackers: mlflow, wandb"):
        run_benchmark('digits', 'resnet18_tiny', out_dir=tmp_path/'res', tracking='neptune', **ARGS)
    assert not (tmp_path/'res').exists()
