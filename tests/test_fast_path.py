"The fast path (fused optimisers, no host sync, CUDA graphs) trains to the same weights as the plain path, and its switch turns it off"
import contextlib, os, subprocess, sys
import numpy as np, pytest, torch
from helpers import ROOT
from lotus_nb.models.training import (FAST, path_stats, fast_path, fast_enabled, train_epoch, ce_loss, new_optimizer, accuracy_of,
                               fit, Recipe, set_seed, to_device)
from lotus_nb.methods.base import unlearn, make_optimizer, method_config, UnlearnTask
from lotus_nb.methods.demo import demo_task
from lotus_nb.models.architectures import create_model

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')

@pytest.fixture(scope='module')
def demo():
    "A small trained f_orig on digits, its splits and its task (CPU)"
    return demo_task('digits', epochs=5)

def flat(model) -> torch.Tensor: return torch.cat([v.detach().flatten().float().cpu() for v in model.state_dict().values()])

def run(name, f_orig, task, mode, **fast):
    with path_stats() as st, fast_path(mode, **fast): res = unlearn(name, f_orig, task, progress=False, epochs=2)
    return res, dict(st)

@contextlib.contextmanager
def no_host_sync():
    "Any tensor-to-Python conversion (a host sync on a GPU) inside the block raises"
    def boom(*a, **k): raise AssertionError("host sync inside the loop")
    names = ('item', 'tolist', '__float__', '__int__', '__bool__')
    saved = {n: getattr(torch.Tensor, n) for n in names}
    try:
        for n in names: setattr(torch.Tensor, n, boom)
        yield
    finally:
        for n, f in saved.items(): setattr(torch.Tensor, n, f)

def test_switch(demo):
    "The default is off on the CPU; the switch turns fused optimisers and the fast loop on and off; $LOTUS_FAST sets it per process"
    f_orig, ts, task = demo
    assert FAST['mode'] == 'auto' and not fast_enabled('cpu') and fast_enabled('cuda')
    cfg = method_config('finetune')
    with fast_path(False): assert not make_optimizer(f_orig.parameters(), cfg).defaults['fused']
    with fast_path(True): assert make_optimizer(f_orig.parameters(), cfg).defaults['fused']
    _, off = run('finetune', f_orig, task, False)
    _, on = run('finetune', f_orig, task, True)
    assert off['plain_steps'] > 0 and not off.get('eager_steps') and not off.get('graph_steps')
    assert on['eager_steps'] + on.get('graph_steps', 0) + on.get('warm_steps', 0) == off['plain_steps'] and not on.get('plain_steps')
    code = "from lotus_nb.models.training import FAST; print(FAST['mode'])"
    out = {v: subprocess.run([sys.executable, '-c', code], cwd=ROOT, env={**os.environ, 'LOTUS_FAST': v}, capture_output=True,
                             text=True, check=True).stdout.strip() for v in ('0', '1', 'auto')}
    assert out == {'0': 'False', '1': 'True', 'auto': 'auto'}, out

# every method trained by train_epoch; all of their losses are graph-safe (UNSIR's impair phase has its own loop)
TRAINED = ['finetune', 'lotus', 'neggrad_plus', 'random_label', 'bad_teacher', 'scrub', 'salun', 'lotus_salun', 'unsir']
GRAPHED = [n for n in TRAINED if n != 'unsir']   # every step graphable (UNSIR: only the repair epochs)

@pytest.mark.parametrize('graphs', [False, 'emulate'])
@pytest.mark.parametrize('name', TRAINED)
def test_fast_matches_plain_cpu(demo, name, graphs):
    "Every trained method from the same seed: the same weights (float precision) and the same trace, with or without graph bookkeeping"
    f_orig, ts, task = demo
    plain, _ = run(name, f_orig, task, False)
    fast, stats = run(name, f_orig, task, True, graphs=graphs, warmup=1, min_graph_steps=1)
    if graphs: assert stats['graph_steps'] > 0, stats
    w0, wp, wf = flat(f_orig), flat(plain.model), flat(fast.model)
    assert (wp - w0).abs().max() > 1e-3, "the method changed the model"
    # fused vs plain optimiser rounding, relative to how far training moved the weights: below 1e-6 for most methods;
    # SCRUB's max pass ascends and amplifies it (1.9e-5 here at 2 threads; 2e-4 on benchmarks/gpu_speed.py's small task)
    tol = 1e-3 if name == 'scrub' else 1e-5
    rel = ((wf - wp).norm()/(wp - w0).norm()).item()
    assert rel < tol, rel
    for a, b in zip(plain.record.get('trace', []), fast.record.get('trace', []), strict=True):
        assert a.keys() == b.keys()
        np.testing.assert_allclose(list(b.values()), list(a.values()), rtol=tol, atol=1e-6)

@pytest.mark.parametrize('name', GRAPHED)
def test_emulated_graph_is_the_eager_fast_path(demo, name):
    """Replaying from static buffers (emulated on the CPU) gives exactly the eager fast path's weights: Gumbel noise, random labels
    and NegGrad+'s forget batches drawn outside the step, SCRUB's two passes on one optimiser"""
    f_orig, ts, task = demo
    eager, _ = run(name, f_orig, task, True, graphs=False)
    emu, stats = run(name, f_orig, task, True, graphs='emulate', warmup=1, min_graph_steps=1)
    assert stats['graph_steps'] > 0 and stats['eager_steps'] > 0, stats   # replays, and the partial batches eagerly
    assert torch.equal(flat(emu.model), flat(eager.model))

@pytest.mark.parametrize('name', ['neggrad_plus', 'lotus'])
def test_graphed_epoch_steps_on_the_graph_stream(demo, name):
    """Every eager step of a graphed epoch (warm-up, a batch of another shape, NegGrad+'s partial forget batch) runs through
    StepGraph._eager, on the graph's own stream: one on the current stream made torch warn that the AccumulateGrad node's
    stream did not match (the GPU test below counts the warning itself)"""
    from lotus_nb.models.loops import StepGraph
    f_orig, ts, task = demo
    calls, real = [], StepGraph._eager
    def counted(self, *a, **k): calls.append(1); return real(self, *a, **k)
    StepGraph._eager = counted
    try: _, stats = run(name, f_orig, task, True, graphs='emulate', warmup=1, min_graph_steps=1)
    finally: StepGraph._eager = real
    assert stats['graph_steps'] > 0 and stats['eager_steps'] > 0, stats
    assert len(calls) == stats['warm_steps'] + stats['eager_steps'], (len(calls), stats)

@pytest.mark.parametrize('how', ['memory', 'stream'])
def test_user_data_feeds_the_graphed_step(demo, how):
    """A user's Dataset, read into memory (a split over Tensors) or streamed by a DataLoader with a worker (over Items, as one over the
    memory budget or with a random transform is), feeds the same graphed step: replays from static buffers (emulated on the CPU)
    give exactly the eager fast path's weights, and the eager fast path the plain path's (float precision)"""
    from torch.utils.data import TensorDataset
    import numpy as np
    from lotus_nb.data.loaders import Split, Tensors
    from lotus_nb.data.user_data import as_split, Items
    f_orig, ts, task = demo
    def user(s):   # the split as a practitioner holds it: normalised images and labels in a TensorDataset
        ds = TensorDataset(*map(torch.cat, zip(*s.loader(1024))))
        return as_split(ds) if how == 'memory' else Split(Items(ds, num_workers=1), np.arange(len(ds)))
    utask = UnlearnTask(user(task.forget), user(task.retain), user(task.unseen), seed=task.seed, num_classes=10)
    assert all(type(s.source) is (Tensors if how == 'memory' else Items) for s in (utask.forget, utask.retain, utask.unseen))
    plain, _ = run('lotus', f_orig, utask, False)
    eager, _ = run('lotus', f_orig, utask, True, graphs=False)
    emu, stats = run('lotus', f_orig, utask, True, graphs='emulate', warmup=1, min_graph_steps=1)
    assert stats['graph_steps'] > 0 and not stats.get('capture_failures'), stats
    assert torch.equal(flat(emu.model), flat(eager.model))
    w0, wp = flat(f_orig), flat(plain.model)
    assert ((flat(eager.model) - wp).norm()/(wp - w0).norm()).item() < 1e-5

def test_no_host_sync_in_the_loop(demo):
    "On the fast path an epoch, an accuracy and tau_d stay on the device: no tensor is read by the host inside them"
    f_orig, ts, task = demo
    with fast_path(True):
        m = create_model('resnet18_tiny', 10, in_chans=1)
        opt, loader, loss_fn = new_optimizer('adamw', m.parameters(), 1e-3), ts['retain'].loader(128, train=True), ce_loss(m)
        train_epoch(m, loader, loss_fn, opt)                        # first epoch: optimiser state
        with no_host_sync():
            loss = train_epoch(m, loader, loss_fn, opt, sync=False)
            acc = accuracy_of(m, ts['forget'], sync=False)
        assert torch.is_tensor(loss) and torch.is_tensor(acc)
        import lotus_nb.methods.lotus as L
        real_epoch, real_acc, calls = L.train_epoch, L.accuracy_of, []
        def epoch(*a, **k):
            with no_host_sync(): calls.append(k.get('sync')); return real_epoch(*a, **k)
        def acc_of(*a, **k):
            if k.get('sync', True): return real_acc(*a, **k)      # Acc(f_orig, D_u), once, before the loop
            with no_host_sync(): return real_acc(*a, **k)
        L.train_epoch, L.accuracy_of = epoch, acc_of
        try: unlearn('lotus', f_orig, task, progress=False, epochs=2)
        finally: L.train_epoch, L.accuracy_of = real_epoch, real_acc
    assert calls == [False, False]
    with pytest.raises(AssertionError, match='host sync'):         # the check can fail: the plain path does read the loss
        with fast_path(False), no_host_sync(): train_epoch(m, loader, loss_fn, opt)

# ---- on a GPU (skipped without one) --------------------------------------------------------------------------

def cuda_task(n=2400, classes=10, seed=0):
    "Synthetic CIFAR-shaped data on the GPU, a random-init resnet18_small, and its LoTUS task"
    from lotus_nb.data.datasets import ImageData
    from lotus_nb.data.splits import make_splits
    from lotus_nb.data.loaders import device_splits
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randint(0, 256, (n, 3, 32, 32), generator=g, dtype=torch.uint8), torch.randint(0, classes, (n,), generator=g)
    xh, yh = torch.randint(0, 256, (n//4, 3, 32, 32), generator=g, dtype=torch.uint8), torch.randint(0, classes, (n//4,), generator=g)
    d = ImageData('synthetic', x, y, xh, yh, [str(c) for c in range(classes)])
    ts = device_splits(d, make_splits(d.y_train, d.y_heldout, 0.1, seed=seed), 'cuda')
    set_seed(seed); m = to_device(create_model('resnet18_small', classes), 'cuda').eval()
    return m, ts, UnlearnTask(ts['forget'], ts['retain'], ts['unseen'], seed=seed, num_classes=classes)

def rel_diff(fast, plain, start) -> float:
    "How far the fast run's weights are from the plain run's, relative to how far training moved them"
    return ((flat(fast) - flat(plain)).norm()/(flat(plain) - flat(start)).norm()).item()

@cuda
@pytest.mark.parametrize('name', GRAPHED)
def test_gpu_fast_matches_plain(name):
    "On a GPU, with the step captured as a CUDA graph: the same training to bf16 precision, and the graph did run"
    m, ts, task = cuda_task()
    plain, _ = run(name, m, task, False)
    fast, stats = run(name, m, task, True, graphs=True, warmup=1)   # warmup 1: SCRUB's max pass has 2 full batches in 2 epochs
    two = ('scrub', 'random_label', 'salun')   # SCRUB: its max and its min pass; Random Labeling and SalUn: a forget pass, then a retain pass (passes='sequential')
    assert stats.get('captures') == (2 if name in two else 1), stats   # one graph per kind of step (measured on an H100: 2 for each of the three)
    assert stats['graph_steps'] > 0 and not stats.get('capture_failures'), stats
    assert rel_diff(fast.model, plain.model, m) < 0.05
    for a, b in zip(plain.record.get('trace', []), fast.record.get('trace', []), strict=True):
        assert_trace_close(a, b)

def assert_trace_close(a:dict, b:dict):
    """Two rows of a method's trace agree to bf16 precision: every accuracy within 0.02, every other number within 2% (+1e-3);
    the keys are the method's own (SCRUB traces max_kl and min_loss, not acc_forget and loss)"""
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    for k, v in a.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)): assert v == b[k], (k, v, b[k]); continue
        tol = 0.02 if k.startswith('acc') else 0.02*abs(v) + 1e-3
        assert abs(v - b[k]) <= tol, (k, v, b[k])

def test_trace_check_can_fail():
    "The trace comparison of the GPU test passes on close rows and fails on far ones, for any method's keys"
    assert_trace_close(dict(epoch=1, max_kl=None, min_loss=1.0), dict(epoch=1, max_kl=None, min_loss=1.01))
    assert_trace_close(dict(acc_forget=0.5, loss=2.0), dict(acc_forget=0.51, loss=2.03))
    for a, b in [(dict(min_loss=1.0), dict(min_loss=1.2)), (dict(acc_forget=0.5), dict(acc_forget=0.6)),
                 (dict(max_kl=None), dict(max_kl=0.3)), (dict(loss=1.0), dict(min_loss=1.0))]:
        with pytest.raises(AssertionError): assert_trace_close(a, b)

@cuda
def test_gpu_graph_is_the_emulated_replay():
    "A replayed CUDA graph computes what the same steps run eagerly from the static buffers compute"
    m, ts, task = cuda_task()
    emu, _ = run('lotus', m, task, True, graphs='emulate')
    graph, stats = run('lotus', m, task, True, graphs=True)
    assert stats.get('captures') == 1, stats
    assert rel_diff(graph.model, emu.model, m) < 1e-3

@cuda
def test_gpu_fit_with_schedule():
    "The recipe (fused SGD, a scheduler writing a device-tensor learning rate read by the graph) matches the plain recipe"
    m, ts, task = cuda_task()
    rec = Recipe(epochs=3, batch_size=128, lr=0.05, warmup=1, patience=None, schedule='cosine', keep='best')
    out = {}
    for mode in (False, True):
        with path_stats() as st, fast_path(mode, graphs=True):
            mm = create_model('resnet18_small', 10); mm.load_state_dict(m.state_dict()); mm = to_device(mm, 'cuda')
            fit(mm, ts['retain'], rec, seed=0, progress=False); out[mode] = (mm, dict(st))
    assert out[True][1].get('captures') == 1, out[True][1]
    assert rel_diff(out[True][0], out[False][0], m) < 0.05

# ---- precision: bf16 autocast only when asked for AND with the fast path on -----------------------------

class _Spy:
    "A stand-in for CUDA's bf16 autocast region: counts the regions entered, computes nothing differently"
    entered = 0
    def __init__(self, **kw): pass
    def __enter__(self): type(self).entered += 1; return self
    def __exit__(self, *exc): return False

def test_autocast_follows_precision_and_fast_path(demo, monkeypatch):
    """With the CPU standing in for CUDA (`AUTOCAST_TYPES`), a spy in place of `torch.autocast('cuda')`: no region is entered with
    the fast path off (whatever precision was asked) nor in fp32 (the default), and regions are entered in bf16 with the fast path
    on (the check can fail), over LoTUS, SSD, UNSIR, SalUn and one evaluation"""
    import lotus_nb.core.device as D
    from lotus_nb.metrics.evaluation import evaluate
    f_orig, ts, task = demo
    monkeypatch.setattr(D, '_cuda_autocast', _Spy); monkeypatch.setattr(D, 'AUTOCAST_TYPES', ('cuda', 'cpu'))
    def entered(prec, fast):
        _Spy.entered = 0
        with D.precision(prec), fast_path(fast, graphs=False):
            for name in ('lotus', 'ssd', 'unsir', 'salun'): unlearn(name, f_orig, task, progress=False, epochs=1)
            evaluate(f_orig, ts['forget'], ts['retain'], ts['test'], ts['unseen'], check_sets=False)
        return _Spy.entered
    assert entered('bf16', False) == 0      # LOTUS_FAST=0: full precision, as the README says
    assert entered('fp32', True) == 0       # the authors' numerics (the default)
    assert entered('bf16', True) > 0        # bf16 asked for, fast path on

def test_only_device_builds_autocast():
    "`torch.autocast` appears in the package only in device.py: every other pass goes through device.autocast"
    hits = sorted(p.relative_to(ROOT/'lotus_nb').as_posix() for p in (ROOT/'lotus_nb').rglob('*.py') if 'torch.autocast' in p.read_text())
    assert hits == ['core/device.py'], hits

def test_lotus_fast_0_forces_fp32():
    "$LOTUS_FAST=0 with $LOTUS_PRECISION=bf16: a CUDA pass would run in fp32; with the fast path left on, in bf16; a bad value is refused"
    code = "import lotus_nb.models.loops; from lotus_nb.core.device import precision_of; print(precision_of('cuda'))"
    def out(fast, prec):
        return subprocess.run([sys.executable, '-c', code], cwd=ROOT, env={**os.environ, 'LOTUS_FAST': fast, 'LOTUS_PRECISION': prec},
                              capture_output=True, text=True)
    assert out('0', 'bf16').stdout.strip() == 'fp32'
    assert out('auto', 'bf16').stdout.strip() == 'bf16'
    assert out('auto', '').stdout.strip() == 'fp32'
    bad = out('auto', 'fp16'); assert bad.returncode != 0 and "'fp32', 'bf16'" in bad.stderr

def test_keys_and_rows_carry_the_precision_that_runs(tmp_path):
    """$LOTUS_FAST=0 with precision='bf16': fp32 runs, so the spec, the checkpoint keys and the setup are fp32's (as with no bf16 asked),
    and a digits row records fp32; with the fast path on, a GPU plan's keys are bf16's, and on the CPU (run_grid's device) fp32's"""
    code = ("import sys, lotus_nb.models.loops; from lotus_nb.running.benchmark import BenchmarkSpec, resolve_spec, prepare, run_benchmark\n"
            "s = BenchmarkSpec('digits', 'resnet18_tiny', precision=sys.argv[1] or None); p = prepare(resolve_spec(s), ['gold'])\n"
            "r = run_benchmark('digits', 'resnet18_tiny', seeds=[1], methods=['gold'], out_dir=sys.argv[2], train_epochs=1,\n"
            "                  progress=False)\n"
            "print(p.spec.precision, p.base.get('precision'), p.setup['gold'], r.results.precision.tolist(), r.results.setup.tolist())")
    def out(fast, prec, env_prec=''):
        env = {**os.environ, 'LOTUS_FAST': fast, 'LOTUS_PRECISION': env_prec, 'OMP_NUM_THREADS': '1'}
        res = subprocess.run([sys.executable, '-c', code, prec, str(tmp_path/f'{fast}{prec}{env_prec}')], cwd=ROOT, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-3000:]
        return res.stdout.split()
    fp32 = out('auto', '')
    assert fp32[:2] == ['fp32', 'None'] and "['fp32']" in fp32
    off = out('0', 'bf16')
    assert off == fp32, (off, fp32)                      # LOTUS_FAST=0: the fp32 benchmark, keys and row, whatever was asked
    assert out('0', '', 'bf16') == fp32                  # $LOTUS_PRECISION=bf16 likewise
    on = out('auto', 'bf16')
    assert on[:2] == ['bf16', 'bf16'] and on[2] != fp32[2]   # a GPU plan: bf16's keys
    assert on[3:] == fp32[3:]                            # run here (the CPU, run_grid's device): fp32 runs, its keys and row

@cuda
def test_gpu_no_stream_warning():
    """NegGrad+ with a partial forget batch (240 forget images in batches of 128) on a CUDA graph prints no AccumulateGrad
    stream warning (three in an H100 run, 2026-11-27); in a fresh process, since torch may warn once per process"""
    code = ("import torch; from test_fast_path import cuda_task, run\n"
            "m, ts, task = cuda_task()\n"
            "res, st = run('neggrad_plus', m, task, True, graphs=True, warmup=1)\n"
            "print('STATS', st)\n"
            "assert st.get('graph_steps', 0) > 0 and st.get('eager_steps', 0) > 0, st\n")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=str(ROOT/'tests'),
                       env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT), str(ROOT/'tests')])})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "AccumulateGrad node's stream" not in r.stdout + r.stderr, r.stderr
