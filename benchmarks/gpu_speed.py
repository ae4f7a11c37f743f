"""LoTUS and the shared training step at the hardware's pace: each method's speed against a ceiling measured in the same run.

    PYTHONPATH=. python benchmarks/gpu_speed.py --device cuda --json gpu_speed.json   # paper shape, one GPU, about 4-5 minutes
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --small                  # the same table with small models, about a minute
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --small --papermill      # and papermill -p dataset digits, fast path off and on

The data are synthetic, of CIFAR-100's shape (50,000 training and 10,000 held-out 3x32x32 images, 100 classes, 10% forget; ViT-B/16
sees them resized to 224 px on the device), and the models are randomly initialised: nothing is downloaded, and speed does not
depend on the weights. Every method runs with the fast path off ('plain') and on ('fast', `lotus_nb.training.set_fast`).

The table, per model and method:
- time: the whole `unlearn` call (seconds, device synchronised), as `record['time_min']` reports it;
- samples/s: training samples processed (epochs x samples per epoch) per second of that time;
- ceiling/s: the bare inner step (teacher forward, student forward and backward, optimiser) replayed from a CUDA graph on batches
  already on the device, measured in this run (on the CPU: the same step, eager); ratio = samples/s over ceiling/s;
- MFU: model FLOPs (counted by `torch.utils.flop_counter` on one step) per second over the card's bf16 dense peak;
- steps: which path ran the steps (graph replays / warm-up / eager / plain).
Then `evaluate` (all metrics, reference outputs cached) against one forward pass over the same four splits, and LoTUS against Gold
retraining: Gold's epoch time measured (on `--gold-frac` of D_r, scaled up) and extrapolated to the recipe's epochs, no early stop.
Speed is never asserted here; run it alone on the machine and quote the device with the numbers.
"""
import argparse, contextlib, dataclasses, json, math, os, platform, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np, pandas as pd, torch, torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lotus_nb.data import ImageData, make_splits, tensor_splits
from lotus_nb.models import create_model, model_arch, model_input_size, reinit_copy
from lotus_nb.training import (FAST_STATS, RECIPES, Recipe, autocast, fast_path, fit, predict, set_seed, to_device, new_optimizer,
                               model_device)
from lotus_nb.methods import UnlearnTask, unlearn, method_config
from lotus_nb.lotus import lotus_loss
from lotus_nb.metrics import evaluate, reference_outputs

# bf16 dense tensor-core peaks (FLOP/s), by a substring of the device name, most specific first
PEAKS_BF16 = [('H200', 989e12), ('H100 PCIe', 756e12), ('H100 NVL', 835e12), ('H100', 989e12), ('A100', 312e12),
              ('RTX 4080', 97.5e12)]   # RTX 4080: bf16 with fp32 accumulate (the 194.9 of its sheet is with sparsity)

def device_info(dev) -> dict:
    "Name and bf16 peak of `dev` ('unknown' when not in `PEAKS_BF16`)"
    if dev.type != 'cuda': return dict(name=platform.processor() or platform.machine(), peak=None, threads=torch.get_num_threads())
    name = torch.cuda.get_device_name(dev)
    peak = next((p for k, p in PEAKS_BF16 if k.lower() in name.lower()), None)
    return dict(name=name, peak=peak, peak_name='unknown' if peak is None else f"{peak/1e12:.0f} TFLOP/s bf16")

def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize(dev)

# ---- data and models ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Shape:
    n_train: int; n_held: int; classes: int; img: int; forget_pct: float = 0.1

PAPER, SMALL = Shape(50_000, 10_000, 100, 32), Shape(1_200, 400, 10, 32)

def synthetic_splits(shape:Shape, dev, size=None, seed=0) -> dict:
    "Random `uint8` images and labels of `shape`, split as the paper's benchmark (forget, retain, retain_sub, val = D_u, test), on `dev`"
    g = torch.Generator().manual_seed(seed)
    img = lambda n: torch.randint(0, 256, (n, 3, shape.img, shape.img), generator=g, dtype=torch.uint8)
    lab = lambda n: torch.randint(0, shape.classes, (n,), generator=g)
    d = ImageData('synthetic', img(shape.n_train), lab(shape.n_train), img(shape.n_held), lab(shape.n_held),
                  [str(c) for c in range(shape.classes)], augment='crop_flip', mean=(0.5,)*3, std=(0.25,)*3)
    return tensor_splits(d, make_splits(d.y_train, d.y_heldout, shape.forget_pct, seed=seed), dev, size=size)

def make_model(name, shape:Shape, dev, seed=0):
    set_seed(seed)
    return to_device(create_model(name, shape.classes, 3, model_input_size(name) or shape.img, pretrained=False), dev).eval()

# ---- the ceiling: the bare inner step, graphed, on batches already on the device --------------------------------------

def bare_step(kind, student, teacher, opt, dev, cache=True):
    "The inner step of `kind` ('lotus': teacher forward, student forward and backward, AdamW; 'ce': cross-entropy, SGD) on static tensors"
    tau = torch.full((), 1.5, dtype=torch.float64, device=dev)
    def step(x, y, l, noise):
        with autocast(dev, cache):
            if kind == 'lotus':
                with torch.no_grad(): t = teacher(x)
                loss = lotus_loss(student(x), t, l, tau, True, noise)
            else: loss = F.cross_entropy(student(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        return loss
    return step

def ceiling(kind, model, shape:Shape, batch_size, dev, size=None, steps=100, warmup=5, pool=8):
    "Samples/s of the bare step of `kind` at `batch_size`: replayed from a CUDA graph (eager on the CPU), inputs copied from a pool on the device"
    student, teacher = reinit_copy(model).train(), reinit_copy(model).eval()
    for p in teacher.parameters(): p.requires_grad_(False)
    with fast_path(True):   # fused, capturable, device-tensor lr
        opt = new_optimizer('adamw', student.parameters(), 1e-4, weight_decay=5e-4) if kind == 'lotus' else \
              new_optimizer('sgd', student.parameters(), 1e-3, momentum=0.9, weight_decay=5e-4)
    side = size or shape.img
    mk = lambda: (torch.randn(batch_size, 3, side, side, device=dev).contiguous(memory_format=torch.channels_last if dev.type == 'cuda' else torch.contiguous_format),
                  torch.randint(0, shape.classes, (batch_size,), device=dev), torch.rand(batch_size, device=dev) < 0.3,
                  torch.empty(batch_size, shape.classes, device=dev).exponential_())
    batches = [mk() for _ in range(pool)]
    static = [t.clone() for t in batches[0]]
    step = bare_step(kind, student, teacher, opt, dev, cache=dev.type != 'cuda')
    if dev.type != 'cuda':
        for i in range(warmup): step(*batches[i % pool])
        t0 = time.perf_counter()
        for i in range(steps): step(*batches[i % pool])
        return steps*batch_size/(time.perf_counter() - t0), 'eager (CPU)'
    s = torch.cuda.Stream(dev); s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s), torch.backends.cudnn.flags(enabled=True, benchmark=True):
        for i in range(warmup): step(*batches[i % pool])
    torch.cuda.current_stream(dev).wait_stream(s)
    g = torch.cuda.CUDAGraph(); opt.zero_grad(set_to_none=True)
    with torch.backends.cudnn.flags(enabled=True, benchmark=True), torch.cuda.graph(g, stream=s): step(*static)
    def run(n):
        for i in range(n):
            for a, b in zip(static, batches[i % pool]): a.copy_(b, non_blocking=True)
            g.replay()
    run(10); sync(dev); t0 = time.perf_counter(); run(steps); sync(dev)
    return steps*batch_size/(time.perf_counter() - t0), 'CUDA graph'

def flops_per_sample(kind, model, shape:Shape, dev, size=None, batch=2) -> float:
    "FLOPs of one bare step of `kind` per sample, counted by `torch.utils.flop_counter` (matmuls and convolutions, forward and backward)"
    from torch.utils.flop_counter import FlopCounterMode
    student, teacher = reinit_copy(model).train(), reinit_copy(model).eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.)
    side = size or shape.img
    x = torch.randn(batch, 3, side, side, device=dev); y = torch.randint(0, shape.classes, (batch,), device=dev)
    args = (x, y, torch.ones(batch, dtype=torch.bool, device=dev), torch.empty(batch, shape.classes, device=dev).exponential_())
    with FlopCounterMode(display=False) as fc: bare_step(kind, student, teacher, opt, dev)(*args)
    return fc.get_total_flops()/batch

# ---- methods, evaluation, Gold -------------------------------------------------------------------------------------

def run_method(name, f_orig, task, arch, mode, graphs='auto', **overrides) -> dict:
    "One `unlearn` call with the fast path `mode`: its time and the steps each path ran"
    FAST_STATS.clear()
    with fast_path(mode, graphs=graphs):
        r = unlearn(name, f_orig, task, arch=arch, progress=False, **overrides)
    st = dict(FAST_STATS)
    steps = '/'.join(str(st.get(k, 0)) for k in ('graph_steps', 'warm_steps', 'eager_steps', 'plain_steps'))
    return dict(time_s=r.record['time_min']*60, steps=steps, captures=st.get('captures', 0), capture_failures=st.get('capture_failures', 0),
                epochs_run=len(r.record.get('trace', [])) or r.record['config']['epochs'])

def evaluate_vs_forward(model, ts, mode, repeats=3) -> dict:
    "Seconds of `evaluate` (reference outputs cached) and of one forward pass over the same four splits"
    dev = model_device(model)
    with fast_path(mode):
        ref = reference_outputs(ts['forget'], ts['val'], model, model, reinit_copy(model))
        splits = [ts[k] for k in ('forget', 'retain', 'test', 'val')]
        fns = dict(forward=lambda: [predict(model, s) for s in splits],
                   evaluate=lambda: evaluate(model, ts['forget'], ts['retain'], ts['test'], ts['val'], ref=ref))
        out = {}
        for k, f in fns.items():
            f(); sync(dev); t0 = time.perf_counter()
            for _ in range(repeats): f()
            sync(dev); out[k] = (time.perf_counter() - t0)/repeats
    return out

def gold_time(model, ts, arch, mode, frac=1.0, seed=0) -> dict:
    "Gold retraining time: one epoch of the recipe on `frac` of D_r (2 epochs minus 1), scaled to D_r and extrapolated to the recipe's epochs"
    rec = RECIPES[arch]; retain = ts['retain'] if frac >= 1 else ts['retain'].subset(frac, seed)
    t = {}
    with fast_path(mode):
        for e in (1, 2):
            m = reinit_copy(model, seed)
            t[e] = fit(m, retain, dataclasses.replace(rec, epochs=e, patience=None), seed=seed, progress=False)['time_min']*60
    epoch = max(t[2] - t[1], 1e-9)/min(frac, 1.0); first = t[1] + (1/min(frac, 1.0) - 1)*epoch
    return dict(epoch_s=epoch, first_epoch_s=first, epochs=rec.epochs, total_s=first + (rec.epochs - 1)*epoch, frac=frac,
                samples_s=len(ts['retain'])/epoch)

# ---- the run --------------------------------------------------------------------------------------------------------

def bench_model(name, shape, dev, args, info) -> tuple:
    arch, size = model_arch(name), model_input_size(name)
    ts = synthetic_splits(shape, dev, size=size)
    f_orig = make_model(name, shape, dev)
    task = lambda: UnlearnTask(ts['forget'], ts['retain'], ts['val'], seed=0, num_classes=shape.classes)
    methods = [m for m in args.methods if not (m == 'finetune' and arch == 'vit' and not args.vit_finetune)]
    paths = [('plain', False, 'auto'), ('fast', True, 'auto')] + ([('fast-emulated', True, 'emulate')] if dev.type != 'cuda' else [])
    rows, ceil, flops = [], {}, {}
    for m in methods:
        cfg = method_config(m, arch)
        kind = 'lotus' if m == 'lotus' else 'ce'
        if kind not in ceil:
            ceil[kind] = ceiling(kind, f_orig, shape, cfg.batch_size, dev, size, steps=args.ceiling_steps)
            flops[kind] = flops_per_sample(kind, f_orig, shape, dev, size)
        over = {} if m == 'lotus' else dict(epochs=args.ft_epochs)
        t0 = task()
        per_epoch = (len(ts['forget']) + len(t0.retain_subset())) if m == 'lotus' else len(ts['retain'])
        for path, mode, graphs in paths:
            r = run_method(m, f_orig, task(), arch, mode, graphs, **over)
            n = r['epochs_run']*per_epoch; sps = n/r['time_s']
            rows.append(dict(model=name, method=m, path=path, time_s=r['time_s'], samples=n, samples_s=sps,
                             ceiling_s=ceil[kind][0], ratio=sps/ceil[kind][0],
                             mfu=(sps*flops[kind]/info['peak']) if info.get('peak') else float('nan'),
                             steps=r['steps'], captures=r['captures'], capture_failures=r['capture_failures']))
            print(f"  {name} {m} {path}: {r['time_s']:.2f} s, {sps:,.0f} samples/s", flush=True)
    for kind, (sps, how) in ceil.items():
        rows.append(dict(model=name, method=f'ceiling:{kind}', path=how, time_s=float('nan'), samples=float('nan'), samples_s=sps,
                         ceiling_s=sps, ratio=1.0, mfu=(sps*flops[kind]/info['peak']) if info.get('peak') else float('nan'),
                         steps='', captures=0, capture_failures=0))
    ev = []
    if arch != 'vit' or args.vit_eval:
        for path, mode in (('plain', False), ('fast', True)):
            e = evaluate_vs_forward(f_orig, ts, mode)
            ev.append(dict(model=name, path=path, evaluate_s=e['evaluate'], forward_s=e['forward'], ratio=e['evaluate']/e['forward'],
                           images=sum(len(ts[k]) for k in ('forget', 'retain', 'test', 'val'))))
    gold = []
    frac = args.gold_frac if args.gold_frac is not None else (0.05 if (arch == 'vit' and dev.type == 'cuda') else 1.0)
    for path, mode in (('plain', False), ('fast', True)):
        g = gold_time(f_orig, ts, arch, mode, frac)
        lot = [r for r in rows if r['method'] == 'lotus' and r['path'] == path]
        gold.append(dict(model=name, path=path, **g, lotus_s=lot[0]['time_s'] if lot else float('nan'),
                         lotus_over_gold=(lot[0]['time_s']/g['total_s']) if lot else float('nan')))
    return rows, ev, gold, dict(flops_per_sample=flops)

def papermill_digits(mode:str) -> float:
    "Wall-clock seconds of `papermill nbs/experiments.ipynb -p dataset digits` with `LOTUS_FAST=mode`"
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, '-m', 'papermill', str(ROOT/'nbs/experiments.ipynb'), f'{tmp}/out.ipynb', '--no-progress-bar',
                        '-p', 'dataset', 'digits', '-p', 'out_dir', f'{tmp}/res'], check=True, capture_output=True,
                       env={**os.environ, 'LOTUS_FAST': mode})
        return time.perf_counter() - t

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--small', action='store_true', help='small models and data (resnet18_small, vit_small; 1,200 images)')
    ap.add_argument('--models', default=None, help="comma-separated; default resnet18,vit_b_16 (with --small: resnet18_small,vit_small)")
    ap.add_argument('--methods', default='lotus,finetune')
    ap.add_argument('--ft-epochs', type=int, default=None, help='epochs of Finetuning (default 2; 1 with --small)')
    ap.add_argument('--vit-finetune', action='store_true', help='also Finetuning on ViT (long at paper shape)')
    ap.add_argument('--vit-eval', action='store_true', help='also evaluate vs forward on ViT (long at paper shape)')
    ap.add_argument('--gold-frac', type=float, default=None, help='fraction of D_r that times a Gold epoch (default: 1; ViT on CUDA 0.05)')
    ap.add_argument('--ceiling-steps', type=int, default=None)
    ap.add_argument('--papermill', action='store_true', help='also time papermill -p dataset digits with LOTUS_FAST=0 and 1')
    ap.add_argument('--json', default=None, help='write every number to this file')
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    if dev.type == 'cuda' and dev.index is None: dev = torch.device('cuda', torch.cuda.current_device())
    shape = SMALL if args.small else PAPER
    args.models = (args.models or ('resnet18_small,vit_small' if args.small else 'resnet18,vit_b_16')).split(',')
    args.methods = args.methods.split(',')
    if args.ft_epochs is None: args.ft_epochs = 1 if args.small else 2
    if args.ceiling_steps is None: args.ceiling_steps = 20 if dev.type != 'cuda' else 100
    info = device_info(dev)
    print(f"torch {torch.__version__}, device {info['name']}" + (f", bf16 peak {info['peak_name']}" if dev.type == 'cuda' else
          f", {torch.get_num_threads()} threads") + f"; data {dataclasses.asdict(shape)} (synthetic), models random-init", flush=True)
    rows, evs, golds, extra = [], [], [], {}
    for name in args.models:
        r, e, g, x = bench_model(name, shape, dev, args, info)
        rows += r; evs += e; golds += g; extra[name] = x
    pd.set_option('display.width', 250)
    t = pd.DataFrame(rows)
    fmt = t.assign(time_s=t.time_s.map(lambda v: '' if math.isnan(v) else f'{v:.2f}'),
                   samples=t.samples.map(lambda v: '' if math.isnan(v) else f'{v:,.0f}'),
                   samples_s=t.samples_s.map('{:,.0f}'.format), ceiling_s=t.ceiling_s.map('{:,.0f}'.format),
                   ratio=t.ratio.map('{:.2f}'.format), mfu=t.mfu.map(lambda v: 'n/a' if math.isnan(v) else f'{100*v:.1f}%'))
    print(f"\nSpeed per method and model ({info['name']}); steps = graph replays/warm-up/eager/plain")
    print(fmt[['model', 'method', 'path', 'time_s', 'samples', 'samples_s', 'ceiling_s', 'ratio', 'mfu', 'steps']].to_string(index=False))
    if evs:
        print("\nevaluate (all metrics, references cached) vs one forward pass over forget, retain, test, unseen")
        print(pd.DataFrame(evs).round(4).to_string(index=False))
    print("\nLoTUS vs Gold retraining (Gold: epoch time measured, extrapolated to the recipe's epochs, no early stop)")
    print(pd.DataFrame(golds).round(3).to_string(index=False))
    pm = {}
    if args.papermill:
        try:
            import papermill  # noqa: F401
            for mode in ('0', '1'): pm[f'LOTUS_FAST={mode}'] = papermill_digits(mode)
            print("\npapermill nbs/experiments.ipynb -p dataset digits: " + ', '.join(f'{k}: {v:.1f} s' for k, v in pm.items()))
        except ImportError: print("\npapermill is not installed: the papermill side by side is skipped")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=info, torch=torch.__version__, shape=dataclasses.asdict(shape), rows=rows,
                                                   evaluate=evs, gold=golds, papermill=pm, extra=extra, args=vars(args)), indent=1, default=str))
        print(f"\nwritten: {args.json}")

if __name__ == '__main__': main()
