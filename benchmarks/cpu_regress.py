"""This checkout against another commit on the CPU, side by side: has the code got slower? (not a test)

    PYTHONPATH=. python benchmarks/cpu_regress.py --against 1535091               # per-method times on digits, 3 rounds
    PYTHONPATH=. python benchmarks/cpu_regress.py --against 1535091 --papermill   # and papermill -p dataset digits, end to end
    PYTHONPATH=. python benchmarks/cpu_regress.py --against 1535091 --main        # and the embedded main job (about 10 min each)

The other commit is checked out into a temporary git worktree; each measurement runs in a fresh Python process whose
`PYTHONPATH` puts one tree's `lotus_nb` first, the two trees taking turns round by round, so that drift in the machine's
speed falls on both. Per round and tree: `demo_task('digits')` (loading the data and training f_orig, 15 epochs), `unlearn`
of every method both trees register (2 epochs each, the same task), and `predict` over the four splits. Reported: the
median over rounds, the ratio this/other, and whether the two trees give the method the same hyperparameters (a changed
config changes the work, not just the speed). Run it alone on the machine: 2 threads unless --threads.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def worker(epochs:int) -> dict:
    "Times of this process's lotus_nb (the first on its path): data and f_orig, each method's unlearn, predict over four splits"
    import dataclasses, torch
    from lotus_nb.methods.base import unlearn, method_config, METHODS
    try: from lotus_nb.methods.demo import demo_task                         # 0.8 on: its own module, above training
    except ImportError: from lotus_nb.methods.base import demo_task
    from lotus_nb.models.training import predict
    import lotus_nb
    t = time.perf_counter(); f_orig, ts, task = demo_task('digits'); out = dict(demo_task=time.perf_counter() - t)
    try: from lotus_nb.methods.base import load_methods; load_methods()   # lotus_nb < 0.3 registers its methods on demand
    except ImportError: pass                                          # 0.3 on: lotus_nb.core.catalog, imported with the package
    try: from lotus_nb.core.catalog import load_plugins; load_plugins()  # 0.8 on: loaded by what resolves a name, here before METHODS is listed
    except ImportError: pass
    methods, configs = sorted(METHODS), {}
    for m in methods:
        cfg = method_config(m); configs[m] = {k: repr(v) for k, v in dataclasses.asdict(cfg).items()}
        if 'epochs' in configs[m]: cfg = dataclasses.replace(cfg, epochs=epochs)
        t = time.perf_counter(); unlearn(m, f_orig, task, cfg=cfg, progress=False); out[m] = time.perf_counter() - t
    unseen = task.unseen if hasattr(task, 'unseen') else task.val
    t = time.perf_counter()
    for s in (task.forget, task.retain, ts['test'], unseen): predict(f_orig, s)
    out['predict'] = time.perf_counter() - t
    return dict(times=out, configs=configs, package=lotus_nb.__file__, torch=torch.__version__, threads=torch.get_num_threads())

def run_worker(tree:Path, threads:int, epochs:int) -> dict:
    env = {**os.environ, 'PYTHONPATH': str(tree), 'OMP_NUM_THREADS': str(threads), 'LOTUS_FAST': 'auto'}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, '--worker', f'{tmp}/w.json', '--epochs', str(epochs)], cwd=tree, env=env, check=True)
        out = json.loads(Path(f'{tmp}/w.json').read_text())
    if not Path(out['package']).resolve().is_relative_to(tree.resolve()):   # an installed copy must not shadow the tree's
        raise RuntimeError(f"measured {out['package']}, not the lotus_nb of {tree}")
    return out

def papermill(tree:Path, threads:int, *params) -> float:
    "Wall-clock seconds of `papermill nbs/experiments.ipynb` in `tree` (its own notebook and package)"
    env = {**os.environ, 'PYTHONPATH': str(tree), 'OMP_NUM_THREADS': str(threads)}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, '-m', 'papermill', str(tree/'nbs/experiments.ipynb'), f'{tmp}/out.ipynb', '--no-progress-bar',
                        '-p', 'out_dir', f'{tmp}/res', *params], cwd=tree, env=env, check=True, capture_output=True)
        return time.perf_counter() - t

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--against', help='the other commit (any git revision)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--epochs', type=int, default=2, help='epochs of every method')
    ap.add_argument('--papermill', action='store_true', help='also papermill -p dataset digits in each tree')
    ap.add_argument('--main', action='store_true', help="also the embedded main job in each tree, with this tree's train_size and epochs")
    ap.add_argument('--worker', help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker: Path(args.worker).write_text(json.dumps(worker(args.epochs))); return
    if not args.against: ap.error('--against REV is required')
    import pandas as pd
    rev = subprocess.run(['git', 'rev-parse', '--short', args.against], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    here = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    dirty = bool(subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=ROOT, capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp)/'other'
        subprocess.run(['git', 'worktree', 'add', '--detach', '-f', str(other), rev], cwd=ROOT, check=True, capture_output=True)
        try:
            trees = {f'this ({here}{"+changes" if dirty else ""})': ROOT, f'other ({rev})': other}
            runs = {k: [] for k in trees}
            for i in range(args.rounds):
                for k, tree in (trees.items() if i % 2 == 0 else reversed(trees.items())):
                    runs[k].append(run_worker(tree, args.threads, args.epochs)); print(f"round {i+1}: {k} done", flush=True)
            (a, ra), (b, rb) = runs.items()
            steps = [s for s in ra[0]['times'] if s in rb[0]['times']]
            rows = [dict(step=s, **{a: statistics.median(r['times'][s] for r in ra), b: statistics.median(r['times'][s] for r in rb)},
                         same_config=('' if s in ('demo_task', 'predict') else ra[0]['configs'][s] == rb[0]['configs'][s])) for s in steps]
            t = pd.DataFrame(rows); t['this/other'] = t[a]/t[b]
            print(f"\nseconds, median of {args.rounds} rounds; torch {ra[0]['torch']}, {ra[0]['threads']} threads; methods at {args.epochs} epochs on digits")
            print(t.round(3).to_string(index=False))
            tot = t[t.step.isin([s for s in steps if s not in ('demo_task', 'predict')])]
            print(f"all methods: {tot[a].sum():.2f} s vs {tot[b].sum():.2f} s, ratio {tot[a].sum()/tot[b].sum():.3f}")
            for s in steps:
                if s not in ('demo_task', 'predict') and ra[0]['configs'][s] != rb[0]['configs'][s]:
                    diff = {k: (ra[0]['configs'][s].get(k), rb[0]['configs'][s].get(k)) for k in set(ra[0]['configs'][s]) | set(rb[0]['configs'][s])
                            if ra[0]['configs'][s].get(k) != rb[0]['configs'][s].get(k)}
                    print(f"  {s}: hyperparameters differ (this, other): {diff}")
            jobs = []
            if args.papermill: jobs.append(('papermill -p dataset digits', ('-p', 'dataset', 'digits')))
            if args.main:
                from lotus_nb.running.benchmark import benchmark_defaults
                d = benchmark_defaults('fashionmnist', 'resnet18_small')
                jobs.append((f"main job (fashionmnist, train_size {d['train_size']}, {d['recipe'].epochs} epochs)",
                             ('-p', 'train_size', str(d['train_size']), '-p', 'train_epochs', str(d['recipe'].epochs))))
            for name, params in jobs:
                secs = {k: papermill(tree, args.threads, *params) for k, tree in trees.items()}
                print(f"{name}: " + ', '.join(f"{k} {v/60:.2f} min" for k, v in secs.items()) + f", ratio {secs[a]/secs[b]:.3f}", flush=True)
        finally:
            subprocess.run(['git', 'worktree', 'remove', '--force', str(other)], cwd=ROOT, capture_output=True)
            subprocess.run(['git', 'worktree', 'prune'], cwd=ROOT, capture_output=True)

if __name__ == '__main__': main()
