"""Several LoTUS units on one GPU at once against one at a time: the throughput ratio, and each unit's weights against its run alone.

    PYTHONPATH=. python benchmarks/packing.py --device cuda --json packing.json     # resnet18, CIFAR-100 shape; about a minute
    PYTHONPATH=. python benchmarks/packing.py --device cpu --small                  # a dry run

A unit is one LoTUS call (`unlearn('lotus', ...)`, the fast path on) of the authors' ResNet18 on the synthetic CIFAR-100-shaped
workload of `gpu_speed.py` (50,000 + 10,000 images of 32 px, 100 classes, 10% forget), from the same original model, seeded
0, 1, 2, 3 (seed: the retain subset, the batch order, the Gumbel noise). Units are processes, as the grid's would be on Ray's
fractional GPUs: each has its own CUDA context, its own CUDA graphs and the package's process-wide fast-path settings, which a
thread per unit would share. Without MPS the GPU time-slices between processes rather than running their kernels side by
side, so what packing can win is the time one unit leaves the GPU idle (its host work, its waits), not a second stream's
kernels beside the first's.

- alone: one process runs units 0..N-1 one after another; each unit's time is from its start to its end (device synchronised).
- packed k (k = 2, 4): k processes, unit i in process i, started together after every process has built its data and model
  and run an untimed warm-up unit (one epoch on the same sets): the makespan is from the common start to the last unit's end.
- throughput ratio = (k / makespan) / (1 / the alone units' mean time); each packed unit's weights are compared with the same
  seed's alone: bitwise, and |w_packed - w_alone| / |w_alone - w_orig| (cuDNN's autotuner, timed under another process's load,
  may pick other kernels: bf16 rounding, not another computation).
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT/'benchmarks'))

def unit_main(a):
    "A worker: build the workload, warm up, wait for the start file, run its seeds one after another, save each unit's weights"
    from gpu_speed import synthetic_splits, make_model, PAPER, SMALL, sync
    from lotus_nb.methods.base import UnlearnTask, unlearn
    from lotus_nb.models.architectures import model_arch
    dev = torch.device(a.device)
    if dev.type == 'cuda' and dev.index is None: dev = torch.device('cuda', torch.cuda.current_device())
    shape = SMALL if a.small else PAPER
    ts, f = synthetic_splits(shape, dev), make_model(a.model, shape, dev)
    task = lambda s: UnlearnTask(ts['forget'], ts['retain'], ts['unseen'], seed=s, num_classes=shape.classes)
    unlearn('lotus', f, task(99), arch=model_arch(a.model), progress=False, epochs=1); sync(dev)   # untimed: CUDA, cuDNN, first captures
    Path(a.ready).write_text('ready')
    while not Path(a.go).exists(): time.sleep(0.002)
    out = []
    for s in map(int, a.seeds.split(',')):
        sync(dev); t0 = time.time()
        r = unlearn('lotus', f, task(s), arch=model_arch(a.model), progress=False, epochs=a.epochs); sync(dev)
        t1 = time.time()
        torch.save({k: v.detach().cpu() for k, v in r.model.state_dict().items()}, f'{a.save}_{s}.pt')
        out.append(dict(seed=s, start=t0, end=t1, seconds=t1 - t0, epochs_run=len(r.record['trace'])))
    torch.save({k: v.detach().cpu() for k, v in f.state_dict().items()}, f'{a.save}_orig.pt')
    print('UNITS ' + json.dumps(out), flush=True)

def launch(k, seeds_per_proc, a, tmp, tag) -> dict:
    "Start `k` worker processes (seeds per process as given), release them together once all are ready; their reports and the makespan"
    go = Path(tmp)/f'go_{tag}'
    procs = []
    for i in range(k):
        cmd = [sys.executable, __file__, '--worker', '--device', a.device, '--model', a.model, '--epochs', str(a.epochs),
               '--seeds', seeds_per_proc[i], '--ready', f'{tmp}/ready_{tag}_{i}', '--go', str(go), '--save', f'{tmp}/w_{tag}']
        if a.small: cmd.append('--small')
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      env={**os.environ, 'PYTHONPATH': str(ROOT)}))
    while not all(Path(f'{tmp}/ready_{tag}_{i}').exists() for i in range(k)):
        if any(p.poll() not in (None, 0) for p in procs): break
        time.sleep(0.01)
    t_go = time.time(); go.write_text('go')
    units, logs = [], []
    for p in procs:
        text = p.communicate()[0]; logs.append(text[-2000:])
        units += [u for line in text.splitlines() if line.startswith('UNITS ') for u in json.loads(line[6:])]
    if len(units) != sum(len(s.split(',')) for s in seeds_per_proc):
        raise RuntimeError(f"packed {k}: a unit failed:\n" + '\n---\n'.join(logs))
    return dict(units=units, makespan=max(u['end'] for u in units) - t_go)

def compare(tmp, tag, seed) -> dict:
    flat = lambda sd: torch.cat([v.float().flatten() for v in sd.values()])
    w = flat(torch.load(f'{tmp}/w_{tag}_{seed}.pt')); w1 = flat(torch.load(f'{tmp}/w_alone_{seed}.pt'))
    w0 = flat(torch.load(f'{tmp}/w_alone_orig.pt'))
    return dict(bitwise=bool(torch.equal(w, w1)), rel_diff=((w - w1).norm()/(w1 - w0).norm()).item())

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--small', action='store_true', help="gpu_speed's small shape and resnet18_small (a dry run)")
    ap.add_argument('--model', default=None, help='default resnet18 (resnet18_small with --small)')
    ap.add_argument('--epochs', type=int, default=None, help='LoTUS epochs per unit (default 4; 2 with --small)')
    ap.add_argument('--units', default='2,4', help='packings to measure against one at a time')
    ap.add_argument('--json', default=None)
    ap.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    for k in ('--seeds', '--ready', '--go', '--save'): ap.add_argument(k, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.model = a.model or ('resnet18_small' if a.small else 'resnet18'); a.epochs = a.epochs or (2 if a.small else 4)
    if a.worker: return unit_main(a)
    ks = [int(k) for k in a.units.split(',')]; n = max(ks)
    out = dict(device=torch.cuda.get_device_name() if a.device.startswith('cuda') else 'cpu', model=a.model, epochs=a.epochs,
               how='processes, started together after their setup and an untimed warm-up unit; no MPS', packed={})
    dump = lambda: a.json and Path(a.json).write_text(json.dumps(out, indent=1))
    with tempfile.TemporaryDirectory() as tmp:
        alone = launch(1, [','.join(map(str, range(n)))], a, tmp, 'alone')
        t1 = sum(u['seconds'] for u in alone['units'])/len(alone['units'])
        out['alone'] = dict(units=alone['units'], mean_unit_s=t1, throughput_units_per_s=1/t1); dump()
        print(f"units one at a time: {t1:.2f} s each ({', '.join('%.2f' % u['seconds'] for u in alone['units'])})", flush=True)
        for k in ks:
            r = launch(k, [str(i) for i in range(k)], a, tmp, f'k{k}')
            same = [dict(seed=u['seed'], seconds=u['seconds'], **compare(tmp, f'k{k}', u['seed'])) for u in r['units']]
            ratio = (k/r['makespan'])/(1/t1)
            out['packed'][k] = dict(makespan_s=r['makespan'], throughput_ratio=ratio, units=same,
                                    all_bitwise=all(s['bitwise'] for s in same), max_rel_diff=max(s['rel_diff'] for s in same)); dump()
            print(f"packing {k} units: makespan {r['makespan']:.2f} s, throughput {ratio:.2f}x one at a time; weights vs alone: "
                  f"{'bitwise equal' if out['packed'][k]['all_bitwise'] else 'max rel diff %.2e' % out['packed'][k]['max_rel_diff']}", flush=True)
    if a.json: print(f"written: {a.json}")

if __name__ == '__main__': main()
