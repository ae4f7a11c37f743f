"The benchmark scripts run on the CPU with small models and synthetic data and print their tables: a smoke run, never a timing"
import importlib.util, json, sys
from pathlib import Path
import numpy as np
import pytest
from helpers import ROOT, run

def load_script(name):
    "A script of benchmarks/ imported as a module (benchmarks/ is not a package)"
    spec = importlib.util.spec_from_file_location(name, ROOT/'benchmarks'/f'{name}.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

@pytest.fixture(scope='module')
def dry_run(tmp_path_factory):
    "tools/gpu_session.sh --dry-run, once: the folder of its logs and JSON; the GPU session's script on the CPU with small models"
    out = tmp_path_factory.mktemp('gpu_session')
    res = run(['bash', ROOT/'tools'/'gpu_session.sh', out, '--dry-run'], env={'OMP_NUM_THREADS': '1'})
    assert res.returncode == 0, res.stdout[-5000:]
    return out

def test_gpu_speed_smoke(dry_run):
    """benchmarks/gpu_speed.py --small on the CPU, as the dry run calls it (`--models resnet18_small --methods all --ft-epochs 2
    --more-epochs 1 --check`): every graph-safe method, each path ran the steps it names, the tables and the JSON"""
    gs = load_script('gpu_speed')
    out = dry_run
    log = (out/'gpu_speed.log').read_text()
    assert '--check' in (ROOT/'tools'/'gpu_session.sh').read_text(), "the dry run checks the fast path against the plain one"
    for title in ('agreement, fast path vs plain', 'Speed per method and model', 'evaluate (all metrics', 'LoTUS vs Gold retraining',
                  'The path a user takes'):
        assert title in log, title
    j = json.loads((out/'gpu.json').read_text())
    assert {c['check'].split(':')[0] for c in j['checks']} == set(gs.GRAPHED)
    assert all(c['ok'] for c in j['checks']), j['checks']
    steps = {(r['method'], r['path']): [int(v) for v in r['steps'].split('/')] for r in j['rows'] if r['steps']}
    assert {m for m, _ in steps} == set(gs.GRAPHED)
    for m in gs.GRAPHED:      # steps = graph replays / warm-up / eager / plain
        graph, warm, eager, plain = steps[m, 'plain']; assert plain > 0 and graph == warm == eager == 0, (m, steps[m, 'plain'])
        graph, warm, eager, plain = steps[m, 'fast']; assert eager > 0 and graph == warm == plain == 0, (m, steps[m, 'fast'])
        graph, warm, eager, plain = steps[m, 'fast-emulated']; assert graph > 0 and warm > 0 and plain == 0, (m, steps[m, 'fast-emulated'])
    timed = [r for r in j['rows'] if r['steps']]
    for r in timed:   # the reported rates are the counted samples over the measured time, and over the ceiling: bookkeeping, not speed
        assert np.isclose(r['samples_s']*r['time_s'], r['samples']) and np.isclose(r['ratio'], r['samples_s']/r['ceiling_s']), r
    kinds = {'ce', 'lotus', 'neggrad_plus', 'bad_teacher', 'scrub_max', 'scrub_min', 'salun', 'saliency'}   # each method's own steps
    assert {r['method'] for r in j['rows'] if r['method'].startswith('ceiling:')} == {f'ceiling:{k}' for k in kinds}
    fast = [r for r in timed if r['path'] == 'fast']
    for r in fast:   # with --more-epochs: the one-off cost is the time the steps' pace leaves unexplained
        if np.isfinite(r['steps_ratio']): assert np.isclose(r['fixed_s'], r['time_s'] - r['ratio']*r['time_s']/r['steps_ratio']), r
    assert any(np.isfinite(r['steps_ratio']) for r in fast), fast   # a tiny CPU run's ratios may lose to timing noise (2 of 7 did under load)
    users = {u['input']: u for u in j['users']}
    assert len(users) == 5 and all(u['lotus_s'] >= u['read_s'] >= 0 and u['evaluate_s'] > 0 for u in users.values()), users
    assert users['ours: Split on the device']['lotus_vs_ours'] == 1
    assert {e['path'] for e in j['evaluate']} == {'plain', 'fast'} and all(np.isclose(e['ratio'], e['evaluate_s']/e['forward_s']) for e in j['evaluate'])
    assert all(np.isclose(g['lotus_over_gold'], g['lotus_s']/g['total_s']) for g in j['gold']), j['gold']

def test_gpu_session_dry_run(dry_run):
    "tools/gpu_session.sh --dry-run: the GPU session's one script runs on the CPU and writes its logs and JSON (the GPU tests skip here)"
    tmp_path = dry_run
    j = json.loads((tmp_path/'gpu.json').read_text())
    assert {r['method'] for r in j['rows']} >= set(load_script('gpu_speed').GRAPHED) and len(j['users']) == 5, j['rows']
    log = (tmp_path/'pytest_gpu.log').read_text()
    assert 'skipped' in log and 'failed' not in log and 'error' not in log.lower(), log
    assert (tmp_path/'warnings.txt').read_text().strip() == 'AccumulateGrad stream warnings: 0'

def test_user_path_inputs():
    """The benchmark's user-path inputs take the paths they are named for: TensorDatasets and the deterministic torchvision-style Dataset are
    read into memory (over Tensors, the same images as ours), the one with a random flip streams (over Items)"""
    import torch
    from lotus_nb.data.loaders import Tensors
    from lotus_nb.data.user_data import as_split, Items
    gs = load_script('gpu_speed')
    ts = gs.synthetic_splits(gs.SMALL, torch.device('cpu'))
    ours = torch.cat([x for x, _ in ts['forget'].loader(1024)])
    for ds, kind in ((gs.user_datasets(ts), Tensors), (gs.generic_datasets(ts), Tensors), (gs.generic_datasets(ts, random_flip=True), Items)):
        sp = as_split(ds['forget'], progress=False)
        assert type(sp.source) is kind, (type(sp.source), kind)
        got = torch.cat([x for x, _ in sp.loader(1024)])
        if kind is Tensors: assert torch.allclose(got, ours, atol=1e-5), (got - ours).abs().max()
        assert torch.equal(sp.labels, ts['forget'].labels)

def test_samples_trained():
    "samples_trained (the benchmark's samples/s numerator) against the samples that went forward through the student with gradients"
    import dataclasses, torch
    from torch.nn.modules.module import register_module_forward_pre_hook
    from lotus_nb.methods.base import unlearn, method_config
    from lotus_nb.methods.demo import demo_task
    gs = load_script('gpu_speed')
    f_orig, ts, task = demo_task('digits', epochs=1)
    seen = [0]
    def count(mod, args):       # the student trains with gradients; teachers and accuracies run without
        if type(mod) is type(f_orig) and mod.training and torch.is_grad_enabled(): seen[0] += len(args[0])
    for m in gs.GRAPHED:
        cfg = dataclasses.replace(method_config(m), epochs=2)
        seen[0], h = 0, register_module_forward_pre_hook(count)
        try: unlearn(m, f_orig, task, cfg=cfg, progress=False)
        finally: h.remove()
        want = gs.samples_trained(m, task, cfg, 2)
        bs, f = cfg.batch_size, len(task.forget)    # NegGrad+: the forget batches' mean size, not where the cycle stood (off by < a batch)
        slack = bs - (f % bs or bs) if m == 'neggrad_plus' else 0
        assert abs(seen[0] - want) <= slack and seen[0] > 0, (m, seen[0], want)

def test_bench_evaluate_vs_forward():
    "benchmarks/bench.py's evaluate-vs-forward figures on digits: a smoke run; the times are printed by the script, never compared here"
    e = load_script('bench').evaluate_vs_forward('digits', repeats=1)
    assert set(e) == {'forward', 'evaluate'} and all(np.isfinite(v) for v in e.values()), e

def test_evaluate_is_one_forward_pass():
    """Why `evaluate` costs about one forward pass (the ratio bench.py times): with the reference outputs cached, it sends each
    image of the four splits through the scored model exactly once, and no reference model runs. Counted, not timed."""
    import torch
    from torch.nn.modules.module import register_module_forward_pre_hook
    from lotus_nb.methods.demo import demo_task
    from lotus_nb.models.architectures import reinit_copy
    from lotus_nb.metrics.evaluation import evaluate, reference_outputs
    from lotus_nb.models.training import predict
    m, ts, _ = demo_task('digits', 'resnet18_tiny', epochs=1)
    f_gold, f_rand = reinit_copy(m, seed=1), reinit_copy(m, seed=2)
    ref = reference_outputs(ts['forget'], ts['unseen'], f_gold, m, f_rand)
    splits = [ts[k] for k in ('forget', 'retain', 'test', 'unseen')]
    seen = {}
    def count(mod, args):       # images entering each whole network (not its submodules)
        if mod in (m, f_gold, f_rand): seen[id(mod)] = seen.get(id(mod), 0) + len(args[0])
    h = register_module_forward_pre_hook(count)
    try:
        for s in splits: predict(m, s)
        forward, seen = seen, {}
        evaluate(m, *splits, ref=ref, check_sets=False)   # the set checks run the model on two items of each set; the runner scores so
    finally: h.remove()
    n = sum(len(s) for s in splits)
    assert forward == {id(m): n}, forward
    assert seen == {id(m): n}, f"evaluate forwarded {seen} images (scored model: {id(m)}), one pass over the four splits is {n}"

def test_import_time_smoke(tmp_path):
    "benchmarks/import_time.py --repeat 1 on two parts: a row each and one for everything; lotus_nb.running.store loads no torch and lotus_nb.metrics.evaluation fewer modules than lotus_nb.all"
    out = tmp_path/'imp.json'
    res = run([sys.executable, ROOT/'benchmarks'/'import_time.py', '--repeat', '1', '--parts', 'lotus_nb.running.store', 'lotus_nb.metrics.evaluation', '--json', out], env={'PYTHONPATH': str(ROOT), 'OMP_NUM_THREADS': '1'})
    assert res.returncode == 0, res.stdout[-5000:]
    rows = {r['module']: r for r in json.loads(out.read_text())}
    assert list(rows) == ['lotus_nb.running.store', 'lotus_nb.metrics.evaluation', 'lotus_nb.all'], list(rows)
    assert rows['lotus_nb.running.store']['torch'] is False and rows['lotus_nb.running.store']['lotus_modules'] <= 8   # lotus_nb; running, store, files; metrics, metric_facts; core, registry
    assert rows['lotus_nb.metrics.evaluation']['lotus_modules'] < rows['lotus_nb.all']['lotus_modules'] and rows['lotus_nb.all']['torch']

def test_authors_side_by_side_cpu_smoke(tmp_path):
    """benchmarks/authors_side_by_side.py --workload fashionmnist --small: the authors' LoTUS and evaluation, ours on TensorDatasets and on
    splits, one round each, the table and the profile; our two inputs give the same weights. A smoke run, never a timing"""
    from lotus_nb.data.datasets import load_dataset
    try: load_dataset('fashionmnist', download=False)
    except FileNotFoundError: pytest.skip('Fashion-MNIST is not on this machine')
    res = run(['bash', ROOT/'tools'/'authors_checkout.sh', tmp_path/'authors'])
    if res.returncode != 0: pytest.skip(f"the authors' code is not fetched here: {res.stdout[-500:]}")
    out = tmp_path/'side.json'
    res = run([sys.executable, ROOT/'benchmarks'/'authors_side_by_side.py', '--authors', tmp_path/'authors', '--workload', 'fashionmnist',
               '--small', '--repeats', '1', '--skip-warmup', '--profile', '5', '--model-cache', tmp_path/'f_orig.pt', '--json', out],
              env={'PYTHONPATH': str(ROOT), 'OMP_NUM_THREADS': '1'}, timeout=900)
    assert res.returncode == 0, res.stdout[-5000:]
    j = json.loads(out.read_text())
    sides = load_script('authors_side_by_side').SIDES
    assert list(j['summary']) == list(sides) and len(j['rounds']) == 1 and set(j['rounds'][0]) == set(sides)
    row = j['rounds'][0]
    ours = row['ours: TensorDataset'], row['ours: Split']
    assert ours[0]['digest'] == ours[1]['digest'], "the same images as TensorDatasets or splits: the same run"
    assert 1 <= row['authors']['epochs_run'] <= 2 and all(r['unlearn_s'] > 0 and r['evaluate_s'] > 0 for r in row.values())
    assert np.isclose(j['summary']['ours: Split']['unlearn_ratio'], row['authors']['unlearn_s']/row['ours: Split']['unlearn_s'])
    assert '| unlearning |' in res.stdout and 'lotus_unlearn' in j['profile'] and 'cumulative' in j['profile']
    assert Path(j['ours']['root']) == Path(ROOT).resolve() and 'ours: lotus_nb from' in res.stdout   # --ours DIR would name DIR
