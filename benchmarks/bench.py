"""Speed figures of lotus_nb, printed side by side (not a test).

    python benchmarks/bench.py            # digits end to end, evaluate vs forward passes
    python benchmarks/bench.py --main     # also the embedded Fashion-MNIST main job and LoTUS/Gold time ratio

Figures depend on the machine: run it alone (no other CPU load) and quote the machine with them.
Per-method speed against a ceiling, MFU, the GPU at paper shape and the fast path off and on: `benchmarks/gpu_speed.py`.
"""
import argparse, subprocess, sys, tempfile, time
from pathlib import Path
import pandas as pd, torch

ROOT = Path(__file__).resolve().parents[1]

def papermill(out_dir, *params):
    "Wall-clock seconds of one papermill run of the experiments notebook"
    t = time.perf_counter()
    subprocess.run([sys.executable, '-m', 'papermill', str(ROOT/'nbs/experiments.ipynb'), str(Path(out_dir)/'out.ipynb'),
                    '-p', 'out_dir', str(Path(out_dir)/'res'), *params], check=True, capture_output=True)
    return time.perf_counter() - t

def lotus_vs_gold(results_csv):
    "Per-seed LoTUS unlearning time over Gold retraining time, from a results file"
    df = pd.read_csv(results_csv)
    t = df.pivot_table(index='seed', columns='method', values='time_min')
    return t['lotus']/t['gold'], t

def evaluate_vs_forward(dataset='fashionmnist', repeats=3):
    "Seconds of `evaluate` (reference outputs cached) and of one plain forward pass over the same four splits"
    from lotus_nb.running.benchmark import benchmark_defaults
    from lotus_nb.data.datasets import load_dataset
    from lotus_nb.data.splits import make_splits
    from lotus_nb.data.loaders import device_splits
    from lotus_nb.models.architectures import create_model, reinit_copy
    from lotus_nb.models.training import predict, get_device, to_device
    from lotus_nb.metrics.evaluation import evaluate, reference_outputs
    dflt = benchmark_defaults(dataset, 'resnet18_small'); dev = get_device()
    d = load_dataset(dataset, img_size=dflt['img_size'], train_size=dflt['train_size'])
    ts = device_splits(d, make_splits(d.y_train, d.y_heldout, 0.1, seed=0), dev)
    m = to_device(create_model('resnet18_small', d.num_classes, d.in_chans, d.img_size), dev)
    ref = reference_outputs(ts['forget'], ts['unseen'], m, m, reinit_copy(m))
    splits = [ts[k] for k in ('forget', 'retain', 'test', 'unseen')]
    def fwd(): [predict(m, s) for s in splits]
    def ev(): evaluate(m, ts['forget'], ts['retain'], ts['test'], ts['unseen'], ref=ref, check_sets=False)   # the runner's path
    out = {}
    for name, f in (('forward', fwd), ('evaluate', ev)):
        f(); t = time.perf_counter()
        for _ in range(repeats): f()
        out[name] = (time.perf_counter() - t)/repeats
    return out

if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--main', action='store_true', help='also run the embedded main job')
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cuda={torch.cuda.is_available()}")
    with tempfile.TemporaryDirectory() as tmp:
        s = papermill(tmp, '-p', 'dataset', 'digits')
        print(f"papermill -p dataset digits, end to end:   {s/60:6.2f} min   (target <= 2)")
    e = evaluate_vs_forward()
    print(f"evaluate (4 splits, all metrics):           {e['evaluate']:6.3f} s")
    print(f"one forward pass over the same 4 splits:    {e['forward']:6.3f} s   ratio {e['evaluate']/e['forward']:.2f} (target <= 2)")
    if args.main:
        with tempfile.TemporaryDirectory() as tmp:
            s = papermill(tmp)
            print(f"papermill (embedded default), end to end:   {s/60:6.2f} min   (target <= 10)")
            r, t = lotus_vs_gold(Path(tmp)/'res'/'results.csv')
            print(t.round(3).to_string())
            print(f"LoTUS / Gold time per seed: {', '.join(f'{v:.3f}' for v in r)}; mean {r.mean():.3f} (target <= 0.2)")
