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

def test_samples_trained():
    "samples_trained (the benchmark's samples/s numerator) against the samples that went forward through the student with gradients"
    import dataclasses, torch
    from torch.nn.modules.module import register_module_forward_pre_hook
    from lotus_nb.methods import demo_task, unlearn, method_config
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
    "benchmarks/bench.py's evaluate-vs-forward figures on digits: both timed, evaluate the slower (it runs the forward passes too)"
    e = load_script('bench').evaluate_vs_forward('digits', repeats=1)
    assert e['forward'] > 0 and e['evaluate'] > e['forward'], e
