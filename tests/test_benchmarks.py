"The benchmark scripts run on the CPU with small models and synthetic data and print their tables: a smoke run, never a timing"
import importlib.util, json, sys
import numpy as np
from conftest import ROOT, run

def load_script(name):
    "A script of benchmarks/ imported as a module (benchmarks/ is not a package)"
    spec = importlib.util.spec_from_file_location(name, ROOT/'benchmarks'/f'{name}.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

def test_gpu_speed_smoke(tmp_path):
    "benchmarks/gpu_speed.py --small on the CPU: every graph-safe method, each path ran the steps it names, the tables and the JSON"
    gs = load_script('gpu_speed')
    out = tmp_path/'gs.json'
    res = run([sys.executable, ROOT/'benchmarks'/'gpu_speed.py', '--device', 'cpu', '--small', '--models', 'resnet18_small',
               '--methods', 'all', '--ft-epochs', '2', '--check', '--json', out], env={'PYTHONPATH': str(ROOT), 'OMP_NUM_THREADS': '1'})
    assert res.returncode == 0, res.stdout[-5000:]
    for title in ('agreement, fast path vs plain', 'Speed per method and model', 'evaluate (all metrics', 'LoTUS vs Gold retraining'):
        assert title in res.stdout, title
    j = json.loads(out.read_text())
    assert {c['check'].split(':')[0] for c in j['checks']} == set(gs.GRAPHED)
    assert all(c['ok'] for c in j['checks']), j['checks']
    steps = {(r['method'], r['path']): [int(v) for v in r['steps'].split('/')] for r in j['rows'] if r['steps']}
    assert {m for m, _ in steps} == set(gs.GRAPHED)
    for m in gs.GRAPHED:      # steps = graph replays / warm-up / eager / plain
        graph, warm, eager, plain = steps[m, 'plain']; assert plain > 0 and graph == warm == eager == 0, (m, steps[m, 'plain'])
        graph, warm, eager, plain = steps[m, 'fast']; assert eager > 0 and graph == warm == plain == 0, (m, steps[m, 'fast'])
        graph, warm, eager, plain = steps[m, 'fast-emulated']; assert graph > 0 and warm > 0 and plain == 0, (m, steps[m, 'fast-emulated'])
    timed = [r for r in j['rows'] if r['steps']]
    assert all(r['time_s'] > 0 and r['samples_s'] > 0 and r['ratio'] > 0 for r in timed)
    assert {r['method'] for r in j['rows']} >= {'ceiling:ce', 'ceiling:lotus'}
    assert {e['path'] for e in j['evaluate']} == {'plain', 'fast'} and all(e['evaluate_s'] > 0 and e['forward_s'] > 0 for e in j['evaluate'])
    assert all(np.isfinite(g['lotus_over_gold']) and g['lotus_over_gold'] > 0 for g in j['gold'])

def test_samples_per_epoch():
    "The samples an epoch of each method trains on, against the task's set sizes"
    from lotus_nb.methods import demo_task, UnlearnTask
    gs = load_script('gpu_speed')
    _, ts, task = demo_task('digits', epochs=1)
    f, r, sub = len(task.forget), len(task.retain), len(task.retain_subset())
    got = {m: gs.samples_per_epoch(m, task) for m in gs.GRAPHED}
    assert got == dict(finetune=r, lotus=f + sub, neggrad_plus=2*r, random_label=f + r, bad_teacher=f + sub, scrub=f + r, salun=f + r), got

def test_bench_evaluate_vs_forward():
    "benchmarks/bench.py's evaluate-vs-forward figures on digits: both timed, evaluate the slower (it runs the forward passes too)"
    e = load_script('bench').evaluate_vs_forward('digits', repeats=1)
    assert e['forward'] > 0 and e['evaluate'] > e['forward'], e
