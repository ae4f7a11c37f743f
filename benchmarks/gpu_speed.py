"""LoTUS and the shared training step at the hardware's pace: each method's speed against a ceiling measured in the same run.

    PYTHONPATH=. python benchmarks/gpu_speed.py --device cuda --json gpu_speed.json   # paper shape, one GPU, about 4-5 minutes
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --small                  # the same table with small models, about a minute
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --medium --methods lotus --models resnet18_small   # the CPU's user-path table
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --small --methods all    # every graph-safe method (GRAPHED), about 20 s (CI's smoke run)
    PYTHONPATH=. python benchmarks/gpu_speed.py --device cpu --small --papermill      # and papermill -p dataset digits, fast path off and on

The data are synthetic, of CIFAR-100's shape (50,000 training and 10,000 held-out 3x32x32 images, 100 classes, 10% forget; ViT-B/16
sees them resized to 224 px on the device), and the models are randomly initialised: nothing is downloaded, and speed does not
depend on the weights. Every method runs with the fast path off ('plain') and on ('fast', `lotus_nb.models.training.set_fast`).

The table, per model and method:
- time: the whole `unlearn` call (seconds, device synchronised), as `record['time_min']` reports it;
- samples/s: training samples processed (epochs x samples per epoch) per second of that time;
- ratio: the time the method's own bare steps take at their ceiling, over its time. A method's steps are of one or more kinds (`work`):
  Bad Teacher's step runs two teachers, SCRUB's max and min steps one, NegGrad+'s a retain and a forget batch, SalUn's a masked
  gradient after a gradient pass over D_f. Each kind's ceiling is that step and nothing around it (the method's own loss, optimiser and
  batch size), replayed from a CUDA graph on batches already on the device, measured in this run (on the CPU: the same step, eager);
  ceiling/s = samples over that time;
- steps_ratio and fixed_s (fast path, with --more-epochs): the method rerun with more epochs; steps_ratio = the extra epochs' ceiling
  time over their measured time (the steps' own pace), fixed_s = the time that pace leaves unexplained (copies, the saliency mask,
  warm-up, captures, cuDNN's autotuning: paid once per call);
- MFU: model FLOPs (counted by `torch.utils.flop_counter` on one step of each kind) per second over the card's bf16 dense peak;
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
from lotus_nb.data.datasets import ImageData
from lotus_nb.data.splits import make_splits
from lotus_nb.data.loaders import device_splits, Split
from lotus_nb.data.user_data import Items, as_split
from lotus_nb.models.architectures import create_model, model_arch, model_input_size, reinit_copy
from lotus_nb.models.training import (path_stats, RECIPES, Recipe, autocast, fast_path, fit, predict, set_seed, to_device, new_optimizer,
                               model_device)
from lotus_nb.methods.base import UnlearnTask, unlearn, method_config
from lotus_nb.methods.lotus import lotus_loss, lotus_unlearn
from lotus_nb.metrics.evaluation import evaluate, reference_outputs, resolve

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

PAPER, MEDIUM, SMALL = Shape(50_000, 10_000, 100, 32), Shape(5_000, 1_000, 10, 32), Shape(400, 200, 10, 8)

def synthetic_splits(shape:Shape, dev, size=None, seed=0) -> dict:
    "Random `uint8` images and labels of `shape`, split as the paper's benchmark (forget, retain, retain_sub, val = D_u, test), on `dev`"
    g = torch.Generator().manual_seed(seed)
    img = lambda n: torch.randint(0, 256, (n, 3, shape.img, shape.img), generator=g, dtype=torch.uint8)
    lab = lambda n: torch.randint(0, shape.classes, (n,), generator=g)
    d = ImageData('synthetic', img(shape.n_train), lab(shape.n_train), img(shape.n_held), lab(shape.n_held),
                  [str(c) for c in range(shape.classes)], augment='crop_flip', mean=(0.5,)*3, std=(0.25,)*3)
    return device_splits(d, make_splits(d.y_train, d.y_heldout, shape.forget_pct, seed=seed), dev, size=size)

def make_model(name, shape:Shape, dev, seed=0):
    set_seed(seed)
    return to_device(create_model(name, shape.classes, 3, model_input_size(name) or shape.img, pretrained=False), dev).eval()

# ---- the ceiling: each method's bare inner step, graphed, on batches already on the device --------------------------------

# the methods trained by `train_epoch` with graph-safe steps
GRAPHED = ('finetune', 'lotus', 'neggrad_plus', 'random_label', 'bad_teacher', 'scrub', 'salun')

def work(name, task, cfg, epochs) -> dict:
    """The bare steps `epochs` epochs of method `name` with `cfg` on `task` are made of: {step kind: samples it processes}.
    Every kind but 'saliency' trains the student (forward and backward, then the optimiser); 'saliency' is SalUn's gradient pass on D_f"""
    f, r, bs = len(task.forget), len(task.retain), cfg.batch_size
    rs = len(task.retain_subset())
    if name == 'scrub': return {'scrub_max': min(epochs, cfg.msteps)*f, 'scrub_min': epochs*r}   # max passes in the first msteps epochs
    if name == 'neggrad_plus': return {'neggrad_plus': epochs*(r + math.ceil(r/bs)*f/math.ceil(f/bs))}  # each retain batch with the next forget batch
    if name == 'salun': return {'saliency': f, 'salun': epochs*f, 'ce': epochs*r}                    # the mask acts on the forget pass only
    if name == 'random_label': return {'ce': epochs*(f + r)}                                         # wrong labels: a cross-entropy step
    if name in ('lotus', 'bad_teacher'): return {name: epochs*(f + rs)}
    return {'ce': epochs*r}

def samples_trained(name, task, cfg, epochs) -> float:
    "Training samples (forward and backward through the student, then a step) in `epochs` epochs of method `name` with `cfg` on `task`"
    return sum(n for k, n in work(name, task, cfg, epochs).items() if k != 'saliency')

def bare_step(kind, student, teachers, opt, dev, cfg, mask=None, cache=True):
    """The inner step of `kind` (see `work`) on static tensors, built from the methods' own losses, with nothing around it:
    'ce' cross-entropy; 'salun' the same, gradients masked; 'neggrad_plus' a retain and a forget batch; 'lotus' one teacher and LoTUS's
    loss; 'bad_teacher' two teachers; 'scrub_max' / 'scrub_min' one teacher, -KL / CE + KL; 'saliency' -CE's gradient summed, no step"""
    from lotus_nb.methods.bad_teacher import bad_teacher_loss
    from lotus_nb.methods.scrub import scrub_kl
    tau = torch.full((), 1.5, dtype=torch.float64, device=dev)
    good, bad = teachers
    def step(x, y, l, noise, xf, yf):
        with autocast(dev, cache):
            if kind == 'lotus':
                with torch.no_grad(): t = good(x)
                loss = lotus_loss(student(x), t, l, tau, True, noise)
            elif kind == 'bad_teacher':
                with torch.no_grad(): g, b = good(x), bad(x)
                loss = bad_teacher_loss(student(x), g, b, l, cfg.T)
            elif kind in ('scrub_max', 'scrub_min'):
                with torch.no_grad(): t = good(x)
                s = student(x)
                loss = -scrub_kl(s, t, cfg.T) if kind == 'scrub_max' else cfg.gamma*F.cross_entropy(s, y) + cfg.alpha*scrub_kl(s, t, cfg.T)
            elif kind == 'neggrad_plus': loss = cfg.beta*F.cross_entropy(student(x), y) - (1 - cfg.beta)*F.cross_entropy(student(xf), yf)
            elif kind == 'saliency': loss = -F.cross_entropy(student(x), y)
            else: loss = F.cross_entropy(student(x), y)
        if kind == 'saliency': loss.backward(); return loss          # gradients summed over the pass: no step, no zeroing
        opt.zero_grad(set_to_none=True); loss.backward()
        if mask is not None: torch._foreach_mul_([p.grad for p in student.parameters()], mask)
        opt.step()
        return loss
    return step

def ceiling(kind, model, shape:Shape, cfg, dev, size=None, steps=100, warmup=5, pool=8):
    """Samples/s of the bare step of `kind` with the optimiser and batch size of `cfg`: replayed from a CUDA graph (eager on the CPU),
    inputs copied from a pool on the device"""
    from lotus_nb.methods.base import make_optimizer
    student, good, bad = reinit_copy(model).train(), reinit_copy(model).eval(), reinit_copy(model, 1).eval()
    for p in [*good.parameters(), *bad.parameters()]: p.requires_grad_(False)
    with fast_path(True): opt = make_optimizer(student.parameters(), cfg)    # fused, capturable, device-tensor lr
    mask = [(torch.rand_like(p) < 0.1).float() for p in student.parameters()] if kind == 'salun' else None
    bs, side = cfg.batch_size, size or shape.img
    fmt = torch.channels_last if dev.type == 'cuda' else torch.contiguous_format
    img = lambda: torch.randn(bs, 3, side, side, device=dev).contiguous(memory_format=fmt)
    mk = lambda: (img(), torch.randint(0, shape.classes, (bs,), device=dev), torch.rand(bs, device=dev) < 0.3,
                  torch.empty(bs, shape.classes, device=dev).exponential_(), img(), torch.randint(0, shape.classes, (bs,), device=dev))
    batches = [mk() for _ in range(pool)]
    static = [t.clone() for t in batches[0]]
    per_step = 2*bs if kind == 'neggrad_plus' else bs
    step = bare_step(kind, student, (good, bad), opt, dev, cfg, mask, cache=dev.type != 'cuda')
    if dev.type != 'cuda':
        for i in range(warmup): step(*batches[i % pool])
        t0 = time.perf_counter()
        for i in range(steps): step(*batches[i % pool])
        return steps*per_step/(time.perf_counter() - t0), 'eager (CPU)'
    s = torch.cuda.Stream(dev); s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s), torch.backends.cudnn.flags(enabled=True, benchmark=True):
        for i in range(warmup): step(*batches[i % pool])
    torch.cuda.current_stream(dev).wait_stream(s)
    g = torch.cuda.CUDAGraph()
    if kind != 'saliency': opt.zero_grad(set_to_none=True)
    with torch.backends.cudnn.flags(enabled=True, benchmark=True), torch.cuda.graph(g, stream=s): step(*static)
    def run(n):
        for i in range(n):
            for a, b in zip(static, batches[i % pool]): a.copy_(b, non_blocking=True)
            g.replay()
    run(10); sync(dev); t0 = time.perf_counter(); run(steps); sync(dev)
    return steps*per_step/(time.perf_counter() - t0), 'CUDA graph'

def flops_per_sample(kind, model, shape:Shape, cfg, dev, size=None, batch=2) -> float:
    "FLOPs of one bare step of `kind` per sample, counted by `torch.utils.flop_counter` (matmuls and convolutions, forward and backward)"
    from torch.utils.flop_counter import FlopCounterMode
    student, good, bad = reinit_copy(model).train(), reinit_copy(model).eval(), reinit_copy(model, 1).eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.)
    side = size or shape.img
    img = lambda: torch.randn(batch, 3, side, side, device=dev)
    lab = lambda: torch.randint(0, shape.classes, (batch,), device=dev)
    args = (img(), lab(), torch.ones(batch, dtype=torch.bool, device=dev), torch.empty(batch, shape.classes, device=dev).exponential_(), img(), lab())
    with FlopCounterMode(display=False) as fc: bare_step(kind, student, (good, bad), opt, dev, cfg)(*args)
    return fc.get_total_flops()/(2*batch if kind == 'neggrad_plus' else batch)

# ---- methods, evaluation, Gold -------------------------------------------------------------------------------------

def run_method(name, f_orig, task, arch, mode, graphs='auto', **overrides) -> dict:
    "One `unlearn` call with the fast path `mode`: its time and the steps each path ran"
    cpu0 = time.process_time()
    with path_stats() as counted, fast_path(mode, graphs=graphs, **(dict(warmup=1) if graphs == 'emulate' else {})):   # emulated: replays from the 2nd full batch
        r = unlearn(name, f_orig, task, arch=arch, progress=False, **overrides)
    cpu = time.process_time() - cpu0
    st = dict(counted)
    steps = '/'.join(str(st.get(k, 0)) for k in ('graph_steps', 'warm_steps', 'eager_steps', 'plain_steps'))
    return dict(time_s=r.record['time_min']*60, cpu_s=cpu, steps=steps, captures=st.get('captures', 0), capture_failures=st.get('capture_failures', 0),
                epochs_run=len(r.record.get('trace', [])) or r.record['config']['epochs'])

def evaluate_vs_forward(model, ts, mode, repeats=3, with_evaluate=True) -> dict:
    "Seconds of one forward pass over forget, retain, test and unseen (mean of `repeats`), and of `evaluate` on them (references cached)"
    dev = model_device(model)
    import sklearn.linear_model, sklearn.model_selection, sklearn.svm  # noqa: F401  (imported before the clock starts)
    with fast_path(mode):
        splits = [ts[k] for k in ('forget', 'retain', 'test', 'unseen')]
        fwd = lambda: [predict(model, s) for s in splits]
        fwd(); sync(dev); t0 = time.perf_counter()
        for _ in range(repeats): fwd()
        sync(dev); out = dict(forward=(time.perf_counter() - t0)/repeats, evaluate=float('nan'))
        if with_evaluate:   # once: its CPU part (the scikit-learn attacks) is the slow one, and needs no warm-up
            ref = reference_outputs(ts['forget'], ts['unseen'], model, model, reinit_copy(model))
            sync(dev); t0 = time.perf_counter()
            evaluate(model, ts['forget'], ts['retain'], ts['test'], ts['unseen'], ref=ref, check_sets=False)   # as the runner scores (its seed checked once)
            sync(dev); out['evaluate'] = time.perf_counter() - t0
            t0 = time.perf_counter()   # the attacks deferred to the background thread, as run_seed does on CUDA: the time the device waits
            res = evaluate(model, ts['forget'], ts['retain'], ts['test'], ts['unseen'], ref=ref, defer_attacks=True, check_sets=False)
            sync(dev); out['evaluate_deferred'] = time.perf_counter() - t0
            resolve(res)
    return out

class ItemDataset(torch.utils.data.Dataset):
    "A torchvision-style Dataset: uint8 H x W x C images and int labels, `transform` applied to each item as it is read"
    def __init__(self, images, labels, transform): self.images, self.targets, self.transform = images, labels, transform
    def __len__(self): return len(self.targets)
    def __getitem__(self, i): return self.transform(self.images[i]), self.targets[i]

def generic_datasets(ts, size=None, random_flip=False) -> dict:
    "The splits as torchvision-style Datasets (ToTensor, Normalize, a Resize to `size`, with `random_flip` a RandomHorizontalFlip too)"
    from torchvision import transforms as T
    out = {}
    for k in ('forget', 'retain', 'unseen', 'test'):
        sp = ts[k]; ix = torch.as_tensor(sp.idx, device=sp.source.x.device)
        ops = [T.ToTensor(), T.Normalize(sp.mean, sp.std)] + ([T.Resize(size, antialias=True)] if size else [])
        ops += [T.RandomHorizontalFlip()] if random_flip and k != 'test' else []
        out[k] = ItemDataset(sp.source.x[ix].permute(0, 2, 3, 1).cpu().numpy(), sp.source.y[ix].cpu().tolist(), T.Compose(ops))
    return out

def user_datasets(ts) -> dict:
    "The splits as a practitioner holds them: `TensorDataset`s of normalised float images on the CPU (what the README passes)"
    from torch.utils.data import TensorDataset
    out = {}
    for k in ('forget', 'retain', 'unseen', 'test'):
        xs, ys = zip(*[(x.float().cpu(), y.cpu()) for x, y in ts[k].loader(1024)])
        out[k] = TensorDataset(torch.cat(xs).contiguous(), torch.cat(ys))
    return out

def user_paths(name, shape, dev, args) -> list:
    """LoTUS (`lotus_unlearn`, the README's call) and evaluate on one model through the inputs a user has: our splits on the device; the user's TensorDatasets; a
    torchvision-style Dataset (read into memory once); the same with a random flip (streamed by a DataLoader with workers); and the
    TensorDatasets streamed item by item with no workers (lotus_nb 0.3's path for any Dataset). The fast path on."""
    arch, size = model_arch(name), model_input_size(name)
    ts, f_orig = synthetic_splits(shape, dev, size=size), make_model(name, shape, dev)
    ds = user_datasets(ts)
    inputs = {'ours: Split on the device': {k: ts[k] for k in ds},
              "user's TensorDataset (read as Tensors)": ds,
              'torchvision-style Dataset (read into memory)': generic_datasets(ts, size),
              'the same with RandomHorizontalFlip (streamed)': generic_datasets(ts, size, random_flip=True),
              'TensorDataset streamed per item (0.3)': {k: Split(Items(v), np.arange(len(v))) for k, v in ds.items()}}
    over = dict(epochs=args.lotus_epochs) if args.lotus_epochs else {}
    out = []
    for label, sp in list(inputs.items())[:getattr(args, 'user_inputs', None) or None]:
        with fast_path(True):          # the README's call; it builds the task, reading the user's data, inside
            sync(dev); t0 = time.perf_counter()
            _, rec = lotus_unlearn(f_orig, sp['forget'], sp['retain'], sp['unseen'], seed=0, arch=arch, progress=False, **over); sync(dev)
        lotus_s = time.perf_counter() - t0; read = lotus_s - rec['time_min']*60   # what the task's reading of the data took
        ref = reference_outputs(as_split(sp['forget']), as_split(sp['unseen']), f_orig, f_orig, reinit_copy(f_orig))   # the references read splits
        with fast_path(True):
            sync(dev); t0 = time.perf_counter()
            evaluate(f_orig, sp['forget'], sp['retain'], sp['test'], sp['unseen'], ref=ref); sync(dev)
        out.append(dict(model=name, input=label, read_s=read, lotus_s=lotus_s, evaluate_s=time.perf_counter() - t0))
        print(f"  {name} user path, {label}: LoTUS {lotus_s:.2f} s, evaluate {out[-1]['evaluate_s']:.2f} s", flush=True)
    for o in out: o.update(lotus_vs_ours=o['lotus_s']/out[0]['lotus_s'], evaluate_vs_ours=o['evaluate_s']/out[0]['evaluate_s'])
    return out

def gold_time(model, ts, arch, mode, frac=1.0, seed=0) -> dict:
    "Gold retraining time: an epoch of the recipe on `frac` of D_r ((3 epochs - 1 epoch)/2), scaled to D_r and extrapolated to the recipe's epochs"
    rec = RECIPES[arch]; retain = ts['retain'] if frac >= 1 else ts['retain'].subset(frac, seed)
    t = {}
    with fast_path(mode):
        for e in (1, 3):
            m = reinit_copy(model, seed)
            t[e] = fit(m, retain, dataclasses.replace(rec, epochs=e, patience=None), seed=seed, progress=False)['time_min']*60
    epoch = max(t[3] - t[1], 1e-9)/2/min(frac, 1.0); first = t[1] + (1/min(frac, 1.0) - 1)*epoch
    return dict(epoch_s=epoch, first_epoch_s=first, epochs=rec.epochs, total_s=first + (rec.epochs - 1)*epoch, frac=frac,
                samples_s=len(ts['retain'])/epoch)

def agreement_checks(dev) -> list:
    "Fast vs plain on `dev` from the same seed (every method in `GRAPHED`), and on CUDA LoTUS's graph replays vs the same steps run eagerly"
    shape = SMALL if dev.type != 'cuda' else Shape(2_400, 600, 10, 32)
    ts, m = synthetic_splits(shape, dev), make_model('resnet18_small', shape, dev)
    flat = lambda mod: torch.cat([v.detach().float().flatten() for v in mod.state_dict().values()])
    def run(name, mode, graphs):
        with path_stats() as counted, fast_path(mode, graphs=graphs, min_graph_steps=1, warmup=1):   # SCRUB's max pass: 2 full batches in 2 epochs
            r = unlearn(name, m, UnlearnTask(ts['forget'], ts['retain'], ts['unseen'], seed=0, num_classes=shape.classes), progress=False, epochs=2)
        return r.model, dict(counted)
    graphs, out = (True if dev.type == 'cuda' else 'emulate'), []
    def check(what, a, b, limit, st):
        rel = ((flat(a) - flat(b)).norm()/(flat(b) - flat(m)).norm()).item()
        want = 2 if what.split(':')[0] in ('scrub', 'random_label', 'salun') else 1   # SCRUB: its max and min passes; RndLbl, SalUn: forget then retain pass
        ok = rel < limit and st.get('graph_steps', 0) > 0 and not st.get('capture_failures') and (dev.type != 'cuda' or st.get('captures') == want)
        out.append(dict(check=what, rel_diff=rel, limit=limit, ok=ok, captures=st.get('captures', 0), graph_steps=st.get('graph_steps', 0)))
    for name in GRAPHED:
        (p, _), (f, st) = run(name, False, 'auto'), run(name, True, graphs)
        check(f'{name}: fast vs plain (|w_fast - w_plain| / |w_plain - w_0|)', f, p, 0.05 if dev.type == 'cuda' else 1e-3, st)
    if dev.type == 'cuda':
        (e, _), (g, st) = run('lotus', True, 'emulate'), run('lotus', True, True)
        check('lotus: CUDA graph vs the same steps eager from static buffers', g, e, 1e-3, st)
    return out

# ---- the run --------------------------------------------------------------------------------------------------------

def bench_model(name, shape, dev, args, info, first=True) -> tuple:
    arch, size = model_arch(name), model_input_size(name)
    ts = synthetic_splits(shape, dev, size=size)
    f_orig = make_model(name, shape, dev)
    task = lambda: UnlearnTask(ts['forget'], ts['retain'], ts['unseen'], seed=0, num_classes=shape.classes)
    methods = [m for m in args.methods if not (m != 'lotus' and arch == 'vit' and not args.vit_finetune)]
    # on the CPU, also the fast path with emulated graphs (the graph bookkeeping, replays run eagerly), on the first model
    paths = [('plain', False, 'auto'), ('fast', True, 'auto')] + ([('fast-emulated', True, 'emulate')] if dev.type != 'cuda' and first else [])
    rows, ceil, flops = [], {}, {}
    def ceiling_time(cfg, w) -> float:   # seconds the bare steps of work `w` take at their ceilings (measured on first use)
        for kind in w:
            key = (kind, cfg.optimizer, cfg.batch_size)
            if key not in ceil:
                ceil[key] = ceiling(kind, f_orig, shape, cfg, dev, size, steps=args.ceiling_steps, warmup=5 if dev.type == 'cuda' else 1)
                flops[key] = flops_per_sample(kind, f_orig, shape, cfg, dev, size)
                print(f"  {name} ceiling {kind} ({cfg.optimizer}, batch {cfg.batch_size}, {ceil[key][1]}): {ceil[key][0]:,.0f} samples/s", flush=True)
        return sum(n/ceil[(k, cfg.optimizer, cfg.batch_size)][0] for k, n in w.items())
    for m in methods:
        cfg = method_config(m, arch)
        over = dict(epochs=args.lotus_epochs) if m == 'lotus' and args.lotus_epochs else {} if m == 'lotus' else dict(epochs=args.ft_epochs)
        t0, run_cfg = task(), dataclasses.replace(cfg, **over)
        for path, mode, graphs in paths:
            r = run_method(m, f_orig, task(), arch, mode, graphs, **over)
            w = work(m, t0, run_cfg, r['epochs_run']); n = samples_trained(m, t0, run_cfg, r['epochs_run']); sps = n/r['time_s']
            ct = ceiling_time(run_cfg, w)
            fl = sum(v*flops[(k, run_cfg.optimizer, run_cfg.batch_size)] for k, v in w.items())
            row = dict(model=name, method=m, path=path, time_s=r['time_s'], cpu_s=r['cpu_s'], samples=n, samples_s=sps,
                       ceiling_s=n/ct, ratio=ct/r['time_s'], mfu=(fl/r['time_s']/info['peak']) if info.get('peak') else float('nan'),
                       steps_ratio=float('nan'), fixed_s=float('nan'),
                       steps=r['steps'], captures=r['captures'], capture_failures=r['capture_failures'])
            if path == 'fast' and args.more_epochs:   # the same method with more epochs: the steps' own pace, and the one-off cost
                e2 = r['epochs_run'] + args.more_epochs
                r2 = run_method(m, f_orig, task(), arch, mode, graphs, **{**over, 'epochs': e2})
                ct2 = ceiling_time(run_cfg, work(m, t0, run_cfg, r2['epochs_run']))
                if r2['time_s'] > r['time_s'] and ct2 > ct:
                    row['steps_ratio'] = (ct2 - ct)/(r2['time_s'] - r['time_s']); row['fixed_s'] = r['time_s'] - ct/row['steps_ratio']
            rows.append(row)
            print(f"  {name} {m} {path}: {r['time_s']:.2f} s, {sps:,.0f} samples/s, {row['ratio']:.2f} of its ceiling" +
                  (f"; with {args.more_epochs} more epochs: the steps at {row['steps_ratio']:.2f}, {row['fixed_s']:.2f} s one-off"
                   if not math.isnan(row['steps_ratio']) else ''), flush=True)
    for (kind, opt, bs), (sps, how) in ceil.items():
        rows.append(dict(model=name, method=f'ceiling:{kind}', path=f'{how}, {opt}, batch {bs}', time_s=float('nan'), cpu_s=float('nan'),
                         samples=float('nan'), samples_s=sps, ceiling_s=sps, ratio=1.0,
                         mfu=(sps*flops[(kind, opt, bs)]/info['peak']) if info.get('peak') else float('nan'),
                         steps_ratio=float('nan'), fixed_s=float('nan'), steps='', captures=0, capture_failures=0))
    ev = []
    if arch != 'vit' or args.vit_eval:
        for path, mode in (('plain', False), ('fast', True)):
            e = evaluate_vs_forward(f_orig, ts, mode, repeats=3, with_evaluate=path in args.eval_paths)
            print(f"  {name} evaluate vs forward {path}: {e['evaluate']:.3f} s ({e.get('evaluate_deferred', float('nan')):.3f} s with the attacks deferred) vs {e['forward']:.3f} s", flush=True)
            ev.append(dict(model=name, path=path, evaluate_s=e['evaluate'], forward_s=e['forward'], ratio=e['evaluate']/e['forward'],
                           deferred_s=e.get('evaluate_deferred', float('nan')), deferred_ratio=e.get('evaluate_deferred', float('nan'))/e['forward'],
                           images=sum(len(ts[k]) for k in ('forget', 'retain', 'test', 'unseen'))))
    gold = []
    frac = args.gold_frac if args.gold_frac is not None else (0.05 if (arch == 'vit' and dev.type == 'cuda') else 1.0)
    for path, mode in (('plain', False), ('fast', True)):
        g = gold_time(f_orig, ts, arch, mode, frac)
        print(f"  {name} Gold {path}: {g['epoch_s']:.2f} s per epoch, {g['total_s']:.1f} s for {g['epochs']} epochs", flush=True)
        lot = [r for r in rows if r['method'] == 'lotus' and r['path'] == path]
        gold.append(dict(model=name, path=path, **g, lotus_s=lot[0]['time_s'] if lot else float('nan'),
                         lotus_over_gold=(lot[0]['time_s']/g['total_s']) if lot else float('nan')))
    return rows, ev, gold, dict(flops_per_sample={f'{k} ({o}, batch {b})': v for (k, o, b), v in flops.items()})

def papermill_digits(mode:str, *params) -> dict:
    "Wall-clock and CPU seconds of `papermill nbs/experiments.ipynb -p dataset digits` (or `params`) with `LOTUS_FAST=mode`"
    import resource
    cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    with tempfile.TemporaryDirectory() as tmp:
        t, c = time.perf_counter(), cpu()
        subprocess.run([sys.executable, '-m', 'papermill', str(ROOT/'nbs/experiments.ipynb'), f'{tmp}/out.ipynb', '--no-progress-bar',
                        '-p', 'out_dir', f'{tmp}/res', *(params or ('-p', 'dataset', 'digits'))], check=True, capture_output=True,
                       env={**os.environ, 'LOTUS_FAST': mode})
        return dict(wall_s=time.perf_counter() - t, cpu_s=cpu() - c)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--small', action='store_true', help='small models and data (resnet18_small, vit_small; 600 images of 8 px)')
    ap.add_argument('--medium', action='store_true', help='data of 5,000 + 1,000 images of 32 px (a CPU table of some size), small models')
    ap.add_argument('--models', default=None, help="comma-separated; default resnet18,vit_b_16 (with --small: resnet18_small,vit_small)")
    ap.add_argument('--methods', default='lotus,finetune', help=f"comma-separated, or all: {','.join(GRAPHED)}")
    ap.add_argument('--ft-epochs', type=int, default=None, help='epochs of the methods other than LoTUS (default 2; 1 with --small)')
    ap.add_argument('--lotus-epochs', type=int, default=None, help="epochs of LoTUS (default: the paper's; 2 with --small)")
    ap.add_argument('--vit-finetune', action='store_true', help='also the methods other than LoTUS on ViT (long at paper shape)')
    ap.add_argument('--vit-eval', action='store_true', help='also evaluate vs forward on ViT (long at paper shape)')
    ap.add_argument('--eval-paths', default=None, help="paths that time `evaluate` (default: plain,fast on the CPU, fast on CUDA)")
    ap.add_argument('--gold-frac', type=float, default=None, help='fraction of D_r that times a Gold epoch (default: 1; ViT on CUDA 0.05)')
    ap.add_argument('--ceiling-steps', type=int, default=None)
    ap.add_argument('--more-epochs', type=int, default=None,
                    help="rerun each method's fast path with this many more epochs: the steps' own pace and the one-off cost (default: 2 on CUDA, 0 on the CPU)")
    ap.add_argument('--papermill', action='store_true', help='also time papermill -p dataset digits with LOTUS_FAST=0 and 1')
    ap.add_argument('--check', action=argparse.BooleanOptionalAction, default=None,
                    help='first check that fast and plain agree (default: on CUDA)')
    ap.add_argument('--user-path', action=argparse.BooleanOptionalAction, default=True,
                    help="also LoTUS and evaluate through a user's TensorDatasets, against our splits (the first model)")
    ap.add_argument('--user-inputs', type=int, default=None, help="the user path's first N inputs only (default: all five; the streamed ones are the slow ones)")
    ap.add_argument('--json', default=None, help='write every number to this file')
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    if dev.type == 'cuda' and dev.index is None: dev = torch.device('cuda', torch.cuda.current_device())
    shape = SMALL if args.small else MEDIUM if args.medium else PAPER
    args.models = (args.models or ('resnet18_small,vit_small' if args.small or args.medium else 'resnet18,vit_b_16')).split(',')
    args.methods = list(GRAPHED) if args.methods == 'all' else args.methods.split(',')
    if args.ft_epochs is None: args.ft_epochs = 1 if args.small or args.medium else 2
    args.eval_paths = (args.eval_paths or ('fast' if dev.type == 'cuda' else 'plain,fast')).split(',')
    if args.lotus_epochs is None and (args.small or args.medium): args.lotus_epochs = 2
    if args.check is None: args.check = dev.type == 'cuda'
    if args.ceiling_steps is None: args.ceiling_steps = 3 if dev.type != 'cuda' else 100
    if args.more_epochs is None: args.more_epochs = 2 if dev.type == 'cuda' else 0
    info = device_info(dev)
    print(f"torch {torch.__version__}, device {info['name']}" + (f", bf16 peak {info['peak_name']}" if dev.type == 'cuda' else
          f", {torch.get_num_threads()} threads") + f"; data {dataclasses.asdict(shape)} (synthetic), models random-init", flush=True)
    checks = agreement_checks(dev) if args.check else []
    if checks:
        print("\nagreement, fast path vs plain (weights after 2 epochs from the same seed):")
        print(pd.DataFrame(checks).to_string(index=False), flush=True)
    rows, evs, golds, extra = [], [], [], {}
    for i, name in enumerate(args.models):
        r, e, g, x = bench_model(name, shape, dev, args, info, first=i == 0)
        rows += r; evs += e; golds += g; extra[name] = x
    pd.set_option('display.width', 250)
    t = pd.DataFrame(rows)
    fmt = t.assign(time_s=t.time_s.map(lambda v: '' if math.isnan(v) else f'{v:.2f}'), cpu_s=t.cpu_s.map(lambda v: '' if math.isnan(v) else f'{v:.2f}'),
                   samples=t.samples.map(lambda v: '' if math.isnan(v) else f'{v:,.0f}'),
                   samples_s=t.samples_s.map('{:,.0f}'.format), ceiling_s=t.ceiling_s.map('{:,.0f}'.format),
                   ratio=t.ratio.map('{:.2f}'.format), steps_ratio=t.steps_ratio.map(lambda v: '' if math.isnan(v) else f'{v:.2f}'),
                   fixed_s=t.fixed_s.map(lambda v: '' if math.isnan(v) else f'{v:.2f}'), mfu=t.mfu.map(lambda v: 'n/a' if math.isnan(v) else f'{100*v:.1f}%'))
    print(f"\nSpeed per method and model ({info['name']}); time_s: wall clock, cpu_s: this process's CPU time; steps = graph replays/warm-up/eager/plain")
    print(fmt[['model', 'method', 'path', 'time_s', 'cpu_s', 'samples', 'samples_s', 'ceiling_s', 'ratio', 'steps_ratio', 'fixed_s', 'mfu', 'steps']].to_string(index=False))
    if evs:
        print("\nevaluate (all metrics, references cached) vs one forward pass over forget, retain, test, unseen;"
              " evaluate - forward is mostly the CPU's scikit-learn attacks")
        print(pd.DataFrame(evs).round(4).to_string(index=False))
    print("\nLoTUS vs Gold retraining (Gold: epoch time measured, extrapolated to the recipe's epochs, no early stop)")
    print(pd.DataFrame(golds).round(3).to_string(index=False))
    users = user_paths(args.models[0], shape, dev, args) if args.user_path else []
    if users:
        print("\nThe path a user takes: LoTUS and evaluate (fast path on) from our splits, from TensorDatasets on the CPU, from a"
              " torchvision-style Dataset (deterministic, then with a random flip), and from the TensorDatasets streamed item by item"
              " (lotus_nb 0.3); lotus_s includes read_s (building the task from the user's data); ratios to ours")
        print(pd.DataFrame(users).round(3).to_string(index=False))
    pm = {}
    if args.papermill:
        try:
            import papermill  # noqa: F401
            for mode in ('0', '1'): pm[f'LOTUS_FAST={mode}'] = papermill_digits(mode)
            print("\npapermill nbs/experiments.ipynb -p dataset digits: " +
                  ', '.join(f"{k}: {v['wall_s']:.1f} s wall, {v['cpu_s']:.1f} s CPU" for k, v in pm.items()))
        except ImportError: print("\npapermill is not installed: the papermill side by side is skipped")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=info, torch=torch.__version__, shape=dataclasses.asdict(shape), checks=checks, rows=rows,
                                                   evaluate=evs, gold=golds, users=users, papermill=pm, extra=extra, args=vars(args)), indent=1, default=str))
        print(f"\nwritten: {args.json}")

if __name__ == '__main__': main()
