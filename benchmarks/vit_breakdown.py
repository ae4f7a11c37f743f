"""Where ViT-B/16's LoTUS time goes: the teacher's forward, the student's step, tau_d's accuracy pass and the evaluation, each
timed alone (CUDA events, device synchronised), scaled to the paper's call, beside a real LoTUS call on a slice of the sets.

    PYTHONPATH=. python benchmarks/vit_breakdown.py --device cuda --json vit.json    # about 30-40 s on an H200
    PYTHONPATH=. python benchmarks/vit_breakdown.py --device cpu --small             # a dry run (vit_small)

The workload is gpu_speed.py's (CIFAR-100 shape, resized to 224 px on the device; batch 32, 3 epochs, lr 1e-6: LoTUS's ViT
settings). Parts, each in samples (or images) per second:
- step: LoTUS's whole training step (the teacher's forward, the student's forward and backward, AdamW), CUDA-graphed on
  batches already on the device (gpu_speed's ceiling of kind 'lotus');
- student: the student's step alone (cross-entropy in place of the teacher: kind 'ce'); teacher = step - student;
- accuracy: `accuracy_of` (a forward pass in batches of 1,024, resized on the device) over the forget set: tau_d's pass, once
  per epoch, and Acc(f_orig, D_u) once per call;
- evaluation: one forward pass over forget, retain, test and unseen at the accuracy pass's rate (the lower bound of `evaluate`;
  its attacks run on the CPU).
The paper's call is 3 epochs of 5,000 + 13,500 samples, 3 accuracy passes over D_f and one over D_u: its predicted time is the
sum; `slice` is a real `unlearn('lotus')` call on `--frac` of every set, against the same sum for its sets: the excess is what
the parts do not explain (loading and resizing batches, graph captures and warm-up, host waits), not scaled up.
"""
import argparse, dataclasses, json, sys, time
from pathlib import Path
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT/'benchmarks'))
from gpu_speed import synthetic_splits, make_model, ceiling, PAPER, SMALL, sync
from lotus_nb.methods.base import UnlearnTask, unlearn, method_config
from lotus_nb.models.architectures import model_input_size
from lotus_nb.models.training import fast_path, accuracy_of

def timed(fn, dev, repeats=1) -> float:
    "Seconds of fn() (mean of `repeats`), by CUDA events on CUDA, else the wall clock"
    if dev.type == 'cuda':
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync(dev); a.record()
        for _ in range(repeats): fn()
        b.record(); sync(dev); return a.elapsed_time(b)/1000/repeats
    t0 = time.perf_counter()
    for _ in range(repeats): fn()
    return (time.perf_counter() - t0)/repeats

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--small', action='store_true')
    ap.add_argument('--frac', type=float, default=None, help='the slice of every set the real call runs on (default 0.05; 0.5 with --small)')
    ap.add_argument('--steps', type=int, default=None, help='graph replays per ceiling (default 30; 2 with --small)')
    ap.add_argument('--json', default=None)
    a = ap.parse_args(argv)
    dev = torch.device(a.device)
    if dev.type == 'cuda' and dev.index is None: dev = torch.device('cuda', torch.cuda.current_device())
    shape, name = (SMALL, 'vit_small') if a.small else (PAPER, 'vit_b_16')
    frac, steps = a.frac or (0.5 if a.small else 0.05), a.steps or (2 if a.small else 30)
    size = model_input_size(name)
    ts, f = synthetic_splits(shape, dev, size=size), make_model(name, shape, dev)
    cfg = method_config('lotus', 'vit'); epochs = cfg.epochs
    n_f, n_r = len(ts['forget']), len(ts['retain'])
    n_rs = int(0.3*n_r); n_u, n_all = len(ts['unseen']), sum(len(ts[k]) for k in ('forget', 'retain', 'test', 'unseen'))
    out = dict(device=torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu', model=name, size=size, batch=cfg.batch_size,
               epochs=epochs, sets=dict(forget=n_f, retain_subset=n_rs, unseen=n_u, all=n_all), frac=frac)
    dump = lambda: a.json and Path(a.json).write_text(json.dumps(out, indent=1))
    rate = {}
    for kind in ('lotus', 'ce'):   # samples/s of the bare step, graphed on CUDA (eager on the CPU)
        rate[kind] = ceiling(kind, f, shape, cfg, dev, size, steps=steps, warmup=3 if dev.type == 'cuda' else 1)[0]
        print(f"vit ceiling {kind}: {rate[kind]:,.0f} samples/s", flush=True)
    with fast_path(True):
        sub = ts['forget'].subset(min(1.0, max(frac, 2048/n_f)), 0) if hasattr(ts['forget'], 'subset') else ts['forget']
        accuracy_of(f, sub)   # warm-up: cuDNN, the resize kernels
        t = timed(lambda: accuracy_of(f, sub), dev); rate['forward'] = len(sub)/t
    print(f"vit forward (accuracy pass): {rate['forward']:,.0f} images/s", flush=True)
    n_train = epochs*(n_f + n_rs)
    parts = dict(step=n_train/rate['lotus'], student=n_train/rate['ce'])
    parts['teacher'] = parts['step'] - parts['student']
    parts['accuracy_passes'] = (epochs*n_f + n_u)/rate['forward']
    parts['predicted_lotus'] = parts['step'] + parts['accuracy_passes']
    parts['evaluation_forward'] = n_all/rate['forward']
    out.update(rates=rate, parts_s=parts); dump()
    # a real call on a slice of every set, scaled up
    sl = {k: ts[k].subset(frac, 0) for k in ('forget', 'retain', 'unseen')}
    task = UnlearnTask(sl['forget'], sl['retain'], sl['unseen'], seed=0, num_classes=shape.classes)
    with fast_path(True):
        sync(dev); t0 = time.perf_counter(); unlearn('lotus', f, task, arch='vit', progress=False); sync(dev)
    t_slice = time.perf_counter() - t0
    fs, rs, us = len(sl['forget']), len(task.retain_subset()), len(sl['unseen'])
    pred = epochs*(fs + rs)/rate['lotus'] + (epochs*fs + us)/rate['forward']
    out['slice'] = dict(seconds=t_slice, sets=dict(forget=fs, retain_subset=rs, unseen=us), predicted_s=pred, unexplained_s=t_slice - pred,
                        note='unexplained: graph captures and warm-up, loading and resizing batches, host waits (one-offs not scaled up)'); dump()
    print(f"vit LoTUS call on {frac:.0%} of the sets: {t_slice:.2f} s against {pred:.2f} s predicted by the parts ({t_slice - pred:.2f} s unexplained); "
          f"the paper's call predicted from the parts {parts['predicted_lotus']:.1f} s (step {parts['step']:.1f} = teacher {parts['teacher']:.1f} + student {parts['student']:.1f}; "
          f"accuracy passes {parts['accuracy_passes']:.1f}); evaluation's forward passes {parts['evaluation_forward']:.1f} s", flush=True)
    if a.json: print(f"written: {a.json}")

if __name__ == '__main__': main()
