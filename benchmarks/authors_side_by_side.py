"""The authors' LoTUS and evaluation against ours, on the same workload, original model and device (synthetic, or Fashion-MNIST).

    bash tools/authors_checkout.sh _authors                                     # their src/, kept out of this repository (.gitignore)
    PYTHONPATH=. python benchmarks/authors_side_by_side.py --authors _authors --device cuda --json side.json
    PYTHONPATH=. python benchmarks/authors_side_by_side.py --authors _authors --device cpu --small   # a dry run, about a minute

Their code is imported at run time from `--authors DIR` (DIR/src, as `tools/authors_checkout.sh` writes it): `LoTUS.unlearn`
(src/unlearning_methods/lotus_class.py) and the evaluation their `unlearn.py` runs after it (`log_mia`, `log_js_proxy`, `log_js`
and `compute_accuracy` on retain, forget, test and val; src/helpers/eval.py). What their imports need and the GPU machine lacks is
stubbed in `sys.modules` here, never written to disk: `mlflow` (their logging: every call a no-op) and `transformers` (imported by
helpers/models.py for their ViT, unused by their ResNet18); where scikit-learn no longer takes `multi_class` (1.8), their
MIA's `LogisticRegression(multi_class='multinomial', ...)` is called without it (the JSON's `shims` says so). Their `set_config` parses `sys.argv`: it is given their
`bash_scripts/reproduce_results.sh` line for CIFAR-100 (`--epochs 10 --method our --alpha 2`, their defaults otherwise: lr 1e-4,
weight decay 5e-4, batch 128, subset 0.3, Gumbel-softmax, cuDNN 'slow' = deterministic, no autotuning: what their
`set_seed` sets, restored after each of their calls so that it never reaches ours).

The workload (the `gpu_speed` shape): 50,000 training and 10,000 held-out random 3x32x32 images, 100 classes, 10% forget, the
held-out half unseen (their 'val', our D_u) and half test; the original model is the authors' ResNet18 randomly initialised,
as our `create_model('resnet18')` and as their `helpers.models.ResNet18` holding the same weights (loaded by name, checked by
a forward pass). Labels: every class in every set (item i of a set, in random order, of class i mod 100), and on D_u a class other
than the original model's answer (its unseen accuracy exactly 0), so that their early stop (`acc_diff <= -0.01`, lotus_class.py) cannot fire and both sides
run every epoch: the same work. Both sides get the same `TensorDataset`s of normalised float
images on the CPU: ours through the README's calls (`lotus_unlearn`, `evaluate` with `f_orig` and `f_gold`), theirs wrapped in
the `DataLoader`s their data_utils builds (batch 128, 4 workers, pinned). `f_gold` is another random initialisation (seed 1)
of the same network, the same weights on both sides.

Timing: wall clock, device synchronised before and after. Each side first runs once untimed on a small slice of the sets
(one epoch on 512 + 512 images and their evaluation) so that neither pays the process's first CUDA and cuDNN calls; after
that, each timed call counts everything it does, on both sides: their DataLoader workers starting each epoch and their
cuDNN deterministic kernels, our reading of the TensorDatasets into the device, cuDNN autotuning and CUDA graph captures.
Their evaluation scores every image one at a time (their MIA's `collect_prob` and `log_js` use batches of 1); with
`--authors-eval-frac f < 1` it is timed on that fraction of every set and its time divided by f (the per-image loops are
linear in the images), and the JSON says so. Ours evaluates more than theirs: three MIAs (entropy, loss, SVC) where theirs
runs one (entropy, logistic regression).

`--workload fashionmnist` (the CPU's side by side): 6,000 Fashion-MNIST training images (a stratified subset, no augmentation), the
held-out 10,000 halved into D_u and test, resnet18_small trained as `demo_task` trains it (15 epochs; cached in `--model-cache`, trained
once), 10 epochs of LoTUS. Three sides, each unlearning then evaluating: the authors' code on `DataLoader`s over the user's
`TensorDataset`s (as above: their data_utils' loaders, their model a copy of the same network), ours through the README's API on the
same `TensorDataset`s (`lotus_unlearn`, `evaluate`), and ours on lotus_nb's splits of the same images. The sides run in
`--repeats` interleaved rounds in this one process, each round in another order, every round on fresh copies of the
`TensorDataset`s (a user's call reads and checks its sets once: nothing of an earlier round is reused); the table gives each side's
median seconds and the median over rounds of the authors' seconds over ours. The thread count (`OMP_NUM_THREADS`, the same for
every side) is printed. `--profile N` then prints the N top entries of a cProfile of one more `lotus_unlearn` on fresh `TensorDataset`s.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/authors_side_by_side.py --authors _authors --workload fashionmnist \
        --repeats 3 --profile 25

`--ours DIR` imports lotus_nb from another checkout (its commit is printed): an earlier release's code timed against the same
authors' code, on the same machine, for a before-and-after table (the script itself stays this one):

    git worktree add --detach /tmp/before main && PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/authors_side_by_side.py \
        --authors _authors --workload fashionmnist --ours /tmp/before --repeats 3 --profile 25
"""
import argparse, contextlib, copy, cProfile, hashlib, io, json, math, os, pstats, statistics, sys, time, types
from pathlib import Path
import numpy as np, torch

ROOT = Path(__file__).resolve().parents[1]

def import_ours(root:Path=ROOT) -> dict:
    "lotus_nb imported from the checkout `root` (this one; `--ours DIR`: another, e.g. a worktree of an earlier commit): its folder and commit"
    root = Path(root).resolve(); sys.path.insert(0, str(root))
    global create_model, to_device, set_seed, lotus_unlearn, evaluate
    from lotus_nb.models.architectures import create_model
    from lotus_nb.models.training import to_device, set_seed
    from lotus_nb.methods.lotus import lotus_unlearn
    from lotus_nb.metrics.evaluation import evaluate
    import lotus_nb, subprocess
    if Path(lotus_nb.__file__).resolve().parent != root/'lotus_nb':
        raise SystemExit(f"lotus_nb was imported from {Path(lotus_nb.__file__).parent}, not from {root}")
    git = lambda *a: subprocess.run(['git', '-C', str(root), *a], capture_output=True, text=True).stdout.strip()
    return dict(root=str(root), commit=git('rev-parse', '--short', 'HEAD') or None,
                dirty=bool(git('status', '--porcelain', '--untracked-files=no', '--', 'lotus_nb')))

THEIR_ARGS = ['--epochs', '10', '--method', 'our', '--alpha', '2', '--lr', '1e-4', '--weight_decay', '5e-4', '--batch_size', '128',
              '--subset_size', '0.3', '--probTransformer', 'gumbel-softmax']   # reproduce_results.sh:32 (CIFAR-100), defaults spelled out

def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize(dev)

def stub_modules():
    "Stand-ins for what the authors' imports need and the GPU machine lacks: mlflow (every call a no-op) and transformers.ViTModel"
    class _Any(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith('__'): raise AttributeError(name)
            return _noop
    def _noop(*a, **k): return None
    mods = {'mlflow': _Any('mlflow'), 'mlflow.pytorch': _Any('mlflow.pytorch'), 'mlflow.pyfunc': _Any('mlflow.pyfunc')}
    mods['mlflow'].metrics = []   # (key, value, step) of every log_metric call: their epochs are counted from it
    mods['mlflow'].log_metric = lambda key, value, step=None, **k: mods['mlflow'].metrics.append((key, value, step))
    tr = types.ModuleType('transformers')
    class ViTModel:   # their ViT only; never built here
        @classmethod
        def from_pretrained(cls, *a, **k): raise RuntimeError("transformers is stubbed: the authors' ViT is not benchmarked here")
    tr.ViTModel = ViTModel; mods['transformers'] = tr
    return mods

@contextlib.contextmanager
def cudnn_flags_kept():
    "torch.backends.cudnn's flags restored after the block (their set_seed sets deterministic on, benchmark off, for the process)"
    b = torch.backends.cudnn; prev = (b.enabled, b.deterministic, b.benchmark)
    try: yield
    finally: b.enabled, b.deterministic, b.benchmark = prev

def load_authors(src:Path, epochs:int) -> dict:
    "Their modules, imported from `src` with the stubs in sys.modules and `THEIR_ARGS` (epochs replaced) as sys.argv"
    if not (src/'unlearning_methods'/'lotus_class.py').exists():
        raise SystemExit(f"{src} holds no unlearning_methods/lotus_class.py: run `bash tools/authors_checkout.sh DIR` and pass --authors DIR")
    sys.modules.update(stub_modules())   # in this process only: their mlflow calls are no-ops even where mlflow is installed
    argv, sys.argv = sys.argv, ['unlearn.py', *THEIR_ARGS]
    i = sys.argv.index('--epochs'); sys.argv[i + 1] = str(epochs)
    sys.path.insert(0, str(src))
    try:
        import importlib
        mods = {n: importlib.import_module(n) for n in ('helpers.models', 'helpers.eval', 'helpers.seed',
                                                        'unlearning_methods.unlearning_base_class', 'unlearning_methods.lotus_class')}
    finally: sys.argv = argv
    import inspect, sklearn.linear_model
    if 'multi_class' not in inspect.signature(sklearn.linear_model.LogisticRegression).parameters:   # removed in scikit-learn 1.8
        def LogisticRegression(multi_class=None, **kw): return sklearn.linear_model.LogisticRegression(**kw)
        mods['helpers.eval'].LogisticRegression = LogisticRegression   # their log_mia passes multi_class='multinomial'
        mods['shimmed'] = "LogisticRegression without multi_class='multinomial' (this scikit-learn has no such argument)"
    return mods

def workload(n_train, n_held, classes, img, forget_pct=0.1, seed=0):
    "Random uint8 images, normalised to float on the CPU, and the forget/retain/unseen/test positions"
    g = torch.Generator().manual_seed(seed)
    norm = lambda x: (x.float()/255 - 0.5)/0.25
    x_tr = norm(torch.randint(0, 256, (n_train, 3, img, img), generator=g, dtype=torch.uint8))
    x_he = norm(torch.randint(0, 256, (n_held, 3, img, img), generator=g, dtype=torch.uint8))
    p_tr, p_he = torch.randperm(n_train, generator=g), torch.randperm(n_held, generator=g)
    nf = int(round(forget_pct*n_train))
    return x_tr, x_he, dict(forget=p_tr[:nf], retain=p_tr[nf:], unseen=p_he[:n_held//2], test=p_he[n_held//2:])

@torch.no_grad()
def predictions(model, x, dev, bs=1024) -> torch.Tensor:
    model.eval()
    return torch.cat([model(x[i:i+bs].to(dev)).argmax(1).cpu() for i in range(0, len(x), bs)])

def datasets(x_tr, x_he, pos, y_tr, y_he, take=None) -> dict:
    from torch.utils.data import TensorDataset
    out = {}
    for k, p in pos.items():
        p = p[:take] if take else p
        x, y = (x_tr, y_tr) if k in ('forget', 'retain') else (x_he, y_he)
        out[k] = TensorDataset(x[p].contiguous(), y[p].contiguous())
    return out

def their_loaders(ds:dict, seed=0) -> dict:
    "The DataLoaders their data_utils builds (batch 128, pinned, 4 workers; forget and retain shuffled); 'val' is D_u"
    from torch.utils.data import DataLoader
    mk = lambda d, sh: DataLoader(d, batch_size=128, pin_memory=True, shuffle=sh, num_workers=4)
    return dict(forget=mk(ds['forget'], True), retain=mk(ds['retain'], True), val=mk(ds['unseen'], False), test=mk(ds['test'], False))

def theirs_unlearn(A, model, dl, classes, epochs, dev):
    "Their unlearn.py's path for `--method our`: UnlearningBaseClass, LoTUS(uc), unlearn(subset_size, is_class_unlearning)"
    with cudnn_flags_kept():
        sync(dev); t0 = time.perf_counter()
        log = sys.modules['mlflow'].metrics; log.clear()
        uc = A['unlearning_methods.unlearning_base_class'].UnlearningBaseClass(dl, 128, classes, model, epochs, 'cifar-100', 0)
        lot = A['unlearning_methods.lotus_class'].LoTUS(uc)
        m, run_time_min = lot.unlearn(subset_size=0.3, is_class_unlearning=False)
        sync(dev); t = time.perf_counter() - t0
    return m, t, dict(their_run_time_s=run_time_min*60, epochs_run=sum(k == 'temperature' for k, _, _ in log),
                      tau=[float(v) for k, v, _ in log if k == 'temperature'])

def theirs_evaluate(A, model, original, gold, dl, dev):
    "Their unlearn.py's evaluation (lines after `mlflow.log_metric('t', ...)`): log_mia, log_js_proxy, log_js, four accuracies"
    E = A['helpers.eval']
    with cudnn_flags_kept():
        sync(dev); t0 = time.perf_counter()
        res = dict(mia=E.log_mia(dl['retain'], dl['forget'], dl['test'], dl['val'], model),
                   js_proxy=E.log_js_proxy(unlearned=model, original=original, forget_dl=dl['forget'], test_dl=dl['test']),
                   js=E.log_js(unlearned=model, gold_model=gold, forget_dl=dl['forget']),
                   **{f'acc_{k}': E.compute_accuracy(model, dl[k]) for k in ('retain', 'forget', 'test', 'val')})
        sync(dev); t = time.perf_counter() - t0
    return res, t

def ours_unlearn(model, ds, epochs, dev):
    sync(dev); t0 = time.perf_counter()
    m, rec = lotus_unlearn(model, ds['forget'], ds['retain'], ds['unseen'], seed=0, arch='resnet', progress=False, epochs=epochs, alpha=2.)
    sync(dev); return m, time.perf_counter() - t0, dict(epochs_run=len(rec['trace']), time_min_s=rec['time_min']*60)

def ours_evaluate(model, original, gold, ds, dev):
    sync(dev); t0 = time.perf_counter()
    res = evaluate(model, ds['forget'], ds['retain'], ds['test'], ds['unseen'], f_gold=gold, f_orig=original)
    sync(dev); return res, time.perf_counter() - t0

FMNIST = dict(train_size=6000, epochs=15)   # the CPU workload: demo_task('fashionmnist', train_size=6000, augment='none')'s

def fmnist_workload(cache:Path, small=False):
    "Fashion-MNIST's splits (no augmentation) and f_orig (resnet18_small, demo_task's recipe), trained once and cached at `cache`"
    from lotus_nb.data.datasets import load_dataset
    from lotus_nb.data.splits import make_splits
    from lotus_nb.data.loaders import device_splits
    from lotus_nb.models.training import Recipe, train_cached
    from lotus_nb.models.architectures import create_model
    n = 600 if small else FMNIST['train_size']
    d = load_dataset('fashionmnist', train_size=n); d.augment = 'none'
    ts = device_splits(d, make_splits(d.y_train, d.y_heldout, 0.1, seed=0))
    if small: ts = {k: v.with_idx(v.idx[:200]) if k in ('unseen', 'test') else v for k, v in ts.items()}
    recipe = Recipe(epochs=1 if small else FMNIST['epochs'], batch_size=128, warmup=1, patience=None, schedule='cosine',
                    keep='best')   # demo_task's
    make = lambda: create_model('resnet18_small', d.num_classes, d.in_chans, d.img_size)
    f_orig, _ = train_cached(cache, make, ts['forget'] + ts['retain'], recipe, seed=0, progress=False)
    return f_orig.eval(), ts, d.num_classes

def user_tensordatasets(ts:dict, take=None) -> dict:
    "The sets as a practitioner holds them (the README's quick start): TensorDatasets of normalised float images, fresh tensors each call"
    from torch.utils.data import TensorDataset
    out = {}
    for k in ('forget', 'retain', 'unseen', 'test'):
        s = ts[k] if take is None else ts[k].with_idx(ts[k].idx[:take])
        xs, ys = zip(*[(x.float().cpu(), y.cpu()) for x, y in s.loader(1024)])
        out[k] = TensorDataset(torch.cat(xs).contiguous(), torch.cat(ys))
    return out

def digest(model) -> str:
    "SHA-256 of every state_dict tensor's bytes (16 hex digits): equal digests, the same weights bit for bit"
    return hashlib.sha256(b''.join(v.detach().cpu().contiguous().numpy().tobytes() for v in model.state_dict().values())).hexdigest()[:16]

def ours_on(f_orig, gold, sets, epochs):
    "Ours through the README's calls on `sets` (TensorDatasets or splits): lotus_unlearn, then evaluate; seconds of each"
    t0 = time.perf_counter()
    m, rec = lotus_unlearn(f_orig, sets['forget'], sets['retain'], sets['unseen'], seed=0, progress=False, epochs=epochs)
    t1 = time.perf_counter()
    res = evaluate(m, sets['forget'], sets['retain'], sets['test'], sets['unseen'], f_gold=gold, f_orig=f_orig)
    t2 = time.perf_counter()
    return dict(unlearn_s=t1 - t0, evaluate_s=t2 - t1, digest=digest(m), acc_forget=float(res['acc_forget']),
                acc_test=float(res['acc_test']), mia=float(res['mia']), trace=[r['acc_forget'] for r in rec['trace']])

def theirs_on(A, f_orig, gold, ds, classes, epochs, dev):
    "The authors' LoTUS.unlearn and evaluation on their DataLoaders over the TensorDatasets `ds`; seconds of each"
    dl = their_loaders(ds)
    m, t, info = theirs_unlearn(A, copy.deepcopy(f_orig), dl, classes, epochs, dev)
    res, te = theirs_evaluate(A, m, f_orig, gold, dl, dev)
    return dict(unlearn_s=t, evaluate_s=te, epochs_run=info['epochs_run'], acc_forget=res['acc_forget'], acc_test=res['acc_test'],
                mia=float(res['mia']))

def profile_user_path(f_orig, ts, epochs, top) -> str:
    "cProfile of one lotus_unlearn on fresh TensorDatasets: the `top` entries by cumulative time, then by own time"
    ds = user_tensordatasets(ts)
    pr = cProfile.Profile(); pr.enable()
    lotus_unlearn(f_orig, ds['forget'], ds['retain'], ds['unseen'], seed=0, progress=False, epochs=epochs)
    pr.disable(); s = io.StringIO(); st = pstats.Stats(pr, stream=s).strip_dirs()
    st.sort_stats('cumulative').print_stats(top); st.sort_stats('tottime').print_stats(top)
    return s.getvalue()

SIDES = ('authors', 'ours: TensorDataset', 'ours: Split')

def run_fashionmnist(args, A, out, dump):
    "The CPU side by side: the three SIDES in interleaved rounds, medians and ratios; the profile of the user's path"
    from lotus_nb.models.architectures import reinit_copy
    dev = torch.device('cpu')
    name = f"side_by_side_fashionmnist_{'small' if args.small else FMNIST['train_size']}.pt"
    cache = Path(args.model_cache or Path('~/.cache/lotus_nb').expanduser()/name)
    f_orig, ts, classes = fmnist_workload(cache, args.small)
    gold = reinit_copy(f_orig, seed=1).eval()   # their log_js and our JSD need a gold model: a random one, the same weights on both sides
    epochs = args.epochs or (2 if args.small else 10)
    out.update(workload='fashionmnist', device='cpu', epochs=epochs, threads=torch.get_num_threads(), rounds=[],
               omp_num_threads=os.environ.get('OMP_NUM_THREADS'), model_cache=str(cache),
               sets={k: len(ts[k]) for k in ('forget', 'retain', 'unseen', 'test')})
    print(f"Fashion-MNIST side by side on the CPU: {out['sets']}, resnet18_small, {epochs} epochs, {out['threads']} threads "
          f"(OMP_NUM_THREADS={out['omp_num_threads']}), {args.repeats} interleaved rounds", flush=True)
    A['unlearning_methods.lotus_class'].args.epochs = epochs
    if not args.skip_warmup:   # every side once on a slice, one epoch: first calls (oneDNN's kernels, lazy imports) paid by no timed run
        t0 = time.perf_counter(); w = user_tensordatasets(ts, take=512)
        ours_on(f_orig, gold, w, 1); ours_on(f_orig, gold, {k: v.with_idx(v.idx[:512]) for k, v in ts.items()}, 1)
        theirs_on(A, f_orig, gold, w, classes, 1, dev)
        out['warmup_s'] = time.perf_counter() - t0; print(f"warm-up (untimed): {out['warmup_s']:.1f} s", flush=True)
    for r in range(args.repeats):
        ds, row = user_tensordatasets(ts), {}
        for side in SIDES[r % 3:] + SIDES[:r % 3]:
            if side == 'authors': row[side] = theirs_on(A, f_orig, gold, ds, classes, epochs, dev)
            else: row[side] = ours_on(f_orig, gold, ds if side == 'ours: TensorDataset' else ts, epochs)
            print(f"round {r + 1} {side:20s} unlearning {row[side]['unlearn_s']:6.2f} s  evaluation {row[side]['evaluate_s']:6.2f} s  "
                  f"forget/test/MIA {row[side]['acc_forget']:.3f}/{row[side]['acc_test']:.3f}/{row[side]['mia']:.3f}"
                  + (f"  weights {row[side]['digest']}" if 'digest' in row[side] else ''), flush=True)
        out['rounds'].append(row); dump()
    med = lambda side, k: statistics.median(row[side][k] for row in out['rounds'])
    ratio = lambda side, k: statistics.median(row['authors'][k]/row[side][k] for row in out['rounds'])
    out['summary'] = {side: dict(unlearn_s=med(side, 'unlearn_s'), evaluate_s=med(side, 'evaluate_s'),
                                 unlearn_ratio=ratio(side, 'unlearn_s'), evaluate_ratio=ratio(side, 'evaluate_s'),
                                 result=[out['rounds'][0][side][k] for k in ('acc_forget', 'acc_test', 'mia')]) for side in SIDES}
    out['tensordataset_over_split'] = statistics.median(row['ours: TensorDataset']['unlearn_s']/row['ours: Split']['unlearn_s']
                                                              for row in out['rounds'])
    dump()
    S = out['summary']
    cell = lambda side, k: f"{S[side][k + '_s']:.2f} s" + ('' if side == 'authors' else f" ({S[side][k + '_ratio']:.2f}x)")
    print(f"\nmedians of {args.repeats} interleaved rounds (ratio: the authors' seconds over ours, median over rounds), "
          f"{out['threads']} threads")
    print('| | ' + ' | '.join(SIDES) + ' |')
    print('| unlearning | ' + ' | '.join(cell(s, 'unlearn') for s in SIDES) + ' |')
    print('| evaluation | ' + ' | '.join(cell(s, 'evaluate') for s in SIDES) + ' |')
    print('| forget/test/MIA | ' + ' | '.join('/'.join(f'{v:.3f}' for v in S[s]['result']) for s in SIDES) + ' |')
    print(f"TensorDataset over Split, unlearning: {out['tensordataset_over_split']:.3f} (median over rounds); "
          f"our weights: {sorted({row[s]['digest'] for row in out['rounds'] for s in SIDES[1:]})}", flush=True)
    if args.profile:
        out['profile'] = profile_user_path(f_orig, ts, epochs, args.profile); dump()
        print(f"\ncProfile of one lotus_unlearn on TensorDatasets:\n{out['profile']}", flush=True)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--authors', required=True, help="a folder holding the authors' src/ (tools/authors_checkout.sh DIR)")
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--small', action='store_true', help='a dry run on the CPU, 2 epochs: synthetic, 600 + 200 images of 8 px, 10 classes; '
                    'fashionmnist, 600 training and 200 + 200 held-out images, f_orig trained 1 epoch')
    ap.add_argument('--epochs', type=int, default=None, help='LoTUS epochs on both sides (default 10, the paper\'s; 2 with --small)')
    ap.add_argument('--authors-eval-frac', type=float, default=1.0, help='time their evaluation on this fraction of every set, scaled up')
    ap.add_argument('--skip-warmup', action='store_true', help='no untimed warm-up call on either side')
    ap.add_argument('--json', default=None)
    ap.add_argument('--workload', choices=('synthetic', 'fashionmnist'), default='synthetic',
                    help="synthetic: the GPU shape above; fashionmnist: the CPU's side by side (6,000 images, resnet18_small, three sides)")
    ap.add_argument('--repeats', type=int, default=3, help='fashionmnist: interleaved rounds of the three sides (medians reported)')
    ap.add_argument('--model-cache', default=None, help="fashionmnist: f_orig's checkpoint, trained once (default under ~/.cache/lotus_nb)")
    ap.add_argument('--profile', type=int, default=0,
                    help="fashionmnist: print this many top entries of a cProfile of lotus_unlearn on TensorDatasets")
    ap.add_argument('--ours', default=None, help="import lotus_nb from this checkout instead of the script's own (e.g. a worktree of an "
                    "earlier commit: that code's seconds against the same authors' code); its commit is printed and written to the JSON")
    args = ap.parse_args(argv)
    ours = import_ours(args.ours or ROOT)
    if args.workload == 'fashionmnist':
        out = dict(torch=torch.__version__, their_argv=THEIR_ARGS, ours=ours)
        print(f"ours: lotus_nb from {ours['root']} at {ours['commit']}{' (with uncommitted changes)' if ours['dirty'] else ''}", flush=True)
        def dump():
            if args.json: Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        src = Path(args.authors)/'src' if (Path(args.authors)/'src').exists() else Path(args.authors)
        commit = Path(args.authors)/'COMMIT'
        out['authors_commit'] = commit.read_text().strip() if commit.exists() else None
        A = load_authors(src, args.epochs or (2 if args.small else 10))
        out['shims'] = ['mlflow: every call a no-op', 'transformers.ViTModel: unused stand-in'] + ([A['shimmed']] if 'shimmed' in A else [])
        if str(A['helpers.eval'].DEVICE) != 'cpu':
            raise SystemExit(f"their DEVICE is {A['helpers.eval'].DEVICE}: the fashionmnist workload runs on the CPU")
        run_fashionmnist(args, A, out, dump)
        if args.json: print(f"written: {args.json}")
        return
    dev = torch.device(args.device)
    if dev.type == 'cuda' and dev.index is None: dev = torch.device('cuda', torch.cuda.current_device())
    n_train, n_held, classes, img = (600, 200, 10, 8) if args.small else (50_000, 10_000, 100, 32)
    epochs = args.epochs or (2 if args.small else 10)
    out = dict(device=torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu', torch=torch.__version__, ours=ours,
               shape=dict(n_train=n_train, n_held=n_held, classes=classes, img=img, forget_pct=0.1), epochs=epochs,
               their_argv=THEIR_ARGS, authors_eval_frac=args.authors_eval_frac,
               warmup='untimed warm-up call on both sides (one epoch on 512+512 images, then its evaluation)' if not args.skip_warmup else 'none')
    def dump():
        if args.json: Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    src = Path(args.authors)/'src' if (Path(args.authors)/'src').exists() else Path(args.authors)
    commit = Path(args.authors)/'COMMIT'
    out['authors_commit'] = commit.read_text().strip() if commit.exists() else None
    A = load_authors(src, epochs)
    out['shims'] = ['mlflow: every call a no-op', 'transformers.ViTModel: unused stand-in'] + ([A['shimmed']] if 'shimmed' in A else [])
    if str(A['helpers.eval'].DEVICE) != str(torch.device(dev.type)):
        raise SystemExit(f"their DEVICE is {A['helpers.eval'].DEVICE} (cuda when available), ours {dev}: run both on the same device")
    # the original model: ours, and theirs holding the same weights
    set_seed(0); ours = to_device(create_model('resnet18', classes, 3, img, pretrained=False), dev).eval()
    theirs = A['helpers.models'].ResNet18(input_channels=3, num_classes=classes)
    sd = {k: v.detach().cpu().contiguous() for k, v in ours.state_dict().items()}
    missing = theirs.load_state_dict(sd, strict=True); theirs = theirs.to(dev).eval()
    set_seed(1); gold_ours = to_device(create_model('resnet18', classes, 3, img, pretrained=False), dev).eval()
    gold_theirs = A['helpers.models'].ResNet18(input_channels=3, num_classes=classes)
    gold_theirs.load_state_dict({k: v.detach().cpu().contiguous() for k, v in gold_ours.state_dict().items()}); gold_theirs = gold_theirs.to(dev).eval()
    x_tr, x_he, pos = workload(n_train, n_held, classes, img)
    with torch.no_grad():
        xb = x_tr[:64].to(dev); a, b = ours(xb).float(), theirs(xb).float()
        out['same_network'] = dict(state_dict_keys=len(sd), max_abs_logit_diff=(a - b).abs().max().item(), logit_scale=a.abs().max().item())
    print(f"the same network: {len(sd)} tensors loaded by name into their ResNet18; logits differ by at most "
          f"{out['same_network']['max_abs_logit_diff']:.2e} (scale {out['same_network']['logit_scale']:.2e})", flush=True)
    # labels: the i-th item of each set (its positions are a random permutation) gets class i mod K, so that every set, and the
    # warm-up's first 512 items of each, holds every class (their log_js_proxy asserts it of forget and test); D_u's label is
    # never the original model's answer (its unseen accuracy exactly 0: their early stop cannot fire)
    y_tr, y_he = torch.empty(n_train, dtype=torch.long), torch.empty(n_held, dtype=torch.long)
    cyc = lambda n: torch.arange(n) % classes
    y_tr[pos['forget']], y_tr[pos['retain']], y_he[pos['test']] = cyc(len(pos['forget'])), cyc(len(pos['retain'])), cyc(len(pos['test']))
    pred_u = predictions(theirs, x_he[pos['unseen']], dev)
    y_he[pos['unseen']] = (pred_u + 1 + torch.arange(len(pred_u)) % (classes - 1)) % classes
    ds = datasets(x_tr, x_he, pos, y_tr, y_he)
    dl = their_loaders(ds)
    out['sets'] = {k: len(v) for k, v in ds.items()}
    dump()
    if not args.skip_warmup:   # both sides once on a slice: the process's first CUDA/cuDNN calls paid by neither timed call
        dsw = datasets(x_tr, x_he, pos, y_tr, y_he, take=512)
        m, t, _ = ours_unlearn(ours, dsw, 1, dev); _, te = ours_evaluate(m, ours, gold_ours, dsw, dev)
        out['warmup_ours_s'] = t + te
        A['unlearning_methods.lotus_class'].args.epochs = 1
        m, t, _ = theirs_unlearn(A, copy.deepcopy(theirs), their_loaders(dsw), classes, 1, dev); _, te = theirs_evaluate(A, m, theirs, gold_theirs, their_loaders(dsw), dev)
        out['warmup_theirs_s'] = t + te
        print(f"warm-up (untimed in the comparison): ours {out['warmup_ours_s']:.2f} s, theirs {out['warmup_theirs_s']:.2f} s", flush=True)
    A['unlearning_methods.lotus_class'].args.epochs = epochs
    m_ours, t_ours, info_ours = ours_unlearn(ours, ds, epochs, dev)
    out['ours_unlearn'] = dict(seconds=t_ours, **info_ours); dump()
    print(f"ours   lotus_unlearn: {t_ours:.2f} s ({info_ours['epochs_run']} epochs)", flush=True)
    m_theirs, t_theirs, info_theirs = theirs_unlearn(A, copy.deepcopy(theirs), dl, classes, epochs, dev)
    out['theirs_unlearn'] = dict(seconds=t_theirs, **info_theirs); dump()
    print(f"theirs LoTUS.unlearn: {t_theirs:.2f} s ({info_theirs['epochs_run']} epochs; their own run_time: {info_theirs['their_run_time_s']:.2f} s)", flush=True)
    if info_theirs['epochs_run'] != info_ours['epochs_run']: print(f"WARNING: not the same work: {info_theirs['epochs_run']} epochs theirs, {info_ours['epochs_run']} ours")
    out['unlearn_ratio'] = t_theirs/t_ours
    res_ours, te_ours = ours_evaluate(m_ours, ours, gold_ours, ds, dev)
    out['ours_evaluate'] = dict(seconds=te_ours, metrics={k: (float(v) if isinstance(v, (int, float, np.floating)) else str(v)) for k, v in res_ours.items()}); dump()
    print(f"ours   evaluate: {te_ours:.2f} s", flush=True)
    f = args.authors_eval_frac
    dse = ds if f >= 1 else {k: torch.utils.data.Subset(v, range(max(1, math.ceil(f*len(v))))) for k, v in ds.items()}
    res_theirs, te_theirs = theirs_evaluate(A, m_theirs, theirs, gold_theirs, their_loaders(dse) if f < 1 else dl, dev)
    out['theirs_evaluate'] = dict(seconds=te_theirs/min(f, 1.0), measured_seconds=te_theirs, frac=f,
                                  scaled=f < 1, metrics={k: float(v) for k, v in res_theirs.items()})
    out['evaluate_ratio'] = out['theirs_evaluate']['seconds']/te_ours
    out['total_ratio'] = (t_theirs + out['theirs_evaluate']['seconds'])/(t_ours + te_ours)
    print(f"theirs evaluation: {out['theirs_evaluate']['seconds']:.2f} s" + (f" (measured {te_theirs:.2f} s on {f:.0%} of every set, scaled)" if f < 1 else ''), flush=True)
    # what each side's unlearning did, for the record (same workload and hyperparameters, not the same random draws)
    out['acc_forget_after'] = dict(ours=float(res_ours['acc_forget']), theirs=res_theirs['acc_forget'])
    dump()
    print(f"\nside by side ({out['device']}), {epochs} epochs of LoTUS, seconds: unlearning theirs {t_theirs:.2f} / ours {t_ours:.2f} = "
          f"{out['unlearn_ratio']:.2f}x; evaluation theirs {out['theirs_evaluate']['seconds']:.2f} / ours {te_ours:.2f} = {out['evaluate_ratio']:.2f}x; "
          f"both {out['total_ratio']:.2f}x", flush=True)
    if args.json: print(f"written: {args.json}")

if __name__ == '__main__': main()
