"Bad input fails early with a clear message and leaves the results already in out_dir untouched"
import re, shutil, subprocess, sys, tempfile
from pathlib import Path
import pytest
from helpers import papermill, show
from lotus_nb.running.benchmark import run_benchmark

@pytest.fixture(scope='module')
def done(tmp_path_factory):
    "An out_dir holding the results of a real (small) digits run"
    out = tmp_path_factory.mktemp('bad_input')/'res'
    run_benchmark('digits', 'resnet18_small', seeds=[1], methods=['original', 'gold'], out_dir=out, progress=False)
    assert (out/'results.csv').exists()
    return out

@pytest.fixture
def out(done, tmp_path):
    "A private copy of `done`, and its results.csv as bytes"
    d = tmp_path/'res'; shutil.copytree(done, d)
    return d, (d/'results.csv').read_bytes()

@pytest.mark.parametrize('param, value, message', [('dataset', 'cifar1000', 'valid datasets'),
                                                   ('forget_pct', '1.5', 'forget_pct')])
def test_papermill_refuses(out, tmp_path, param, value, message):
    d, before = out
    args = ['-p', param, value] + (['-p', 'dataset', 'digits'] if param != 'dataset' else [])
    res = papermill(tmp_path/'out.ipynb', *args, '-p', 'out_dir', d)
    assert res.returncode != 0, f"papermill accepted {param}={value}\n{show(res)}"
    assert message in res.stdout, show(res)
    assert (d/'results.csv').read_bytes() == before

@pytest.mark.parametrize('kw, exc, message', [
    (dict(seeds=[-3]), ValueError, 'non-negative'),
    (dict(methods=['original', 'oblivion']), ValueError, 'valid methods'),
    (dict(model='resnet99'), ValueError, 'valid models'),
    (dict(dataset='fashionmnist', data_root='/no/such'), FileNotFoundError, '/no/such'),
])
def test_api_refuses(out, kw, exc, message):
    d, before = out
    args = dict(dataset='digits', model='resnet18_small', seeds=[1], methods=['original', 'gold'], out_dir=d, progress=False) | kw
    with pytest.raises(exc) as e: run_benchmark(**args)
    assert message in str(e.value), str(e.value)
    assert (d/'results.csv').read_bytes() == before

def test_corrupt_checkpoint(out):
    d, before = out
    ck = sorted((d/'checkpoints').glob('gold_*.pt'))
    assert ck, f"no gold checkpoint under {d/'checkpoints'}"
    ck[0].write_bytes(ck[0].read_bytes()[:100])
    ckpts = sorted(p.name for p in (d/'checkpoints').iterdir())
    with pytest.raises(Exception) as e:
        run_benchmark('digits', 'resnet18_small', seeds=[1, 2], methods=['original', 'gold'], out_dir=d, progress=False)
    assert 'corrupt checkpoint' in str(e.value), str(e.value)
    assert (d/'results.csv').read_bytes() == before
    assert sorted(p.name for p in (d/'checkpoints').iterdir()) == ckpts, "a model was trained before the check"

def package_frames(text:str) -> list[str]:
    """The traceback frames in `text` that lie in lotus_nb's modules (`.../lotus_nb/data/datasets.py:123`). Matched by module file, not
    by the folder's name: papermill's first line names the input notebook, `<clone>/nbs/experiments.ipynb`, and a clone is
    often a folder named `lotus_nb` (`git clone .../lotus_nb.git`; GitHub Actions checks out into `.../lotus_nb/lotus_nb`)"""
    pkg = Path(__file__).resolve().parent.parent/'lotus_nb'
    modules = '|'.join(sorted(re.escape(p.relative_to(pkg).with_suffix('').as_posix()).replace('/', r'[/\\]') for p in pkg.rglob('*.py')))
    return re.findall(rf'[/\\]lotus_nb[/\\](?:{modules})\.py\b', text)

def test_package_frames_check_can_fail():
    "The frame check sees a module of lotus_nb in a traceback, wherever the clone lives, and not a notebook in a clone named lotus_nb"
    assert package_frames('File /x y/lotus_nb/lotus_nb/running/benchmark.py:12, in run_benchmark(...)') == ['/lotus_nb/running/benchmark.py']
    assert package_frames('File /x y/lotus_nb/lotus_nb/benchmark.py:12, in run_benchmark(...)') == []   # no such module
    assert package_frames('Input Notebook:  /home/me/lotus_nb/nbs/experiments.ipynb\nOutput Notebook: /tmp/lotus_nb/out.ipynb') == []

REFUSED = [(['-p', 'forget_pct', '1.5'], 'ValueError: forget_pct must be a fraction in (0, 1), got 1.5'),
           (['-p', 'dataset', 'cifar1000'], "ValueError: unknown dataset 'cifar1000'; valid datasets: cifake, cifar10, cifar100, digits, fashionmnist, "
                                            "imagenet, mufac, tinyimagenet"),
           (['-y', 'seeds: [-3]'], 'ValueError: seeds must be non-negative integers, got -3'),
           (['-y', 'methods: [original, oblivion]'], "ValueError: unknown method 'oblivion'; valid methods: "),
           (['-p', 'out_dir', '{file}/x'], 'NotADirectoryError: out_dir {file}/x cannot be created: {file} is a file'),
           (['-p', 'tracking', 'tensorboard'], "ValueError: unknown tracker 'tensorboard'; valid trackers: mlflow, wandb")]

@pytest.mark.parametrize('args, message', REFUSED, ids=['fraction', 'dataset', 'seed', 'method', 'out_dir', 'tracker'])
def test_papermill_refusal_in_one_line(tmp_path, args, message):
    """A refused parameter stops experiments.ipynb before any data is read. The terminal shows its message first, on a line of its own
    after papermill's header and the kernel's start, and, as the notebook's whole part of papermill's traceback, once more in a line: no
    frame of the notebook or of lotus_nb (papermill's own frames, ~26 lines of click and papermill, it prints for any failed notebook)"""
    f = tmp_path/'a_file'; f.write_text('x')
    args, message = [a.format(file=f) for a in args], message.format(file=f)
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'digits', '-p', 'out_dir', tmp_path/'res', *args)   # a later -p wins
    lines = res.stdout.splitlines()
    hits = [i for i, l in enumerate(lines) if l.startswith(message)]
    assert res.returncode != 0 and len(hits) == 2, show(res)
    assert hits[0] <= 6 and hits[0] < lines.index('Traceback (most recent call last):'), show(res)   # Input/Output Notebook, the kernel's start
    nb_part = [l for l in lines[next(i for i, l in enumerate(lines) if l.startswith('Exception encountered at')) + 1:] if l.strip()]
    assert nb_part == ['An exception has occurred, use %tb to see the full traceback.', lines[hits[1]]], show(res)
    assert 'Cell In[' not in res.stdout and not package_frames(res.stdout), show(res)
    assert not (tmp_path/'res').exists(), "out_dir was created: the refusal came after work began"

def test_papermill_error_past_the_checks_keeps_its_stack(tmp_path):
    "Past the checks an error is no refused parameter (here the data is missing): papermill shows the notebook's traceback, frames of lotus_nb included"
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'fashionmnist', '-p', 'data_root', tmp_path/'no_such', '-p', 'out_dir', tmp_path/'res')
    assert res.returncode != 0 and 'FileNotFoundError: data folder' in res.stdout, show(res)
    assert 'Cell In[' in res.stdout and 'lotus_nb/data/datasets.py' in res.stdout and '%tb' not in res.stdout, show(res)

def test_unwritable_out_dir_refused_before_any_data(tmp_path, monkeypatch):
    "run_benchmark refuses an out_dir under a regular file (root too) at once, naming the path and why, before any data is read"
    import lotus_nb.running.benchmark as E
    monkeypatch.setattr(E, 'prepare', lambda *a, **k: pytest.fail('data was read before out_dir was checked'))
    f = tmp_path/'a_file'; f.write_text('x')
    for out, what in [(f/'x', f'out_dir {f/"x"} cannot be created: {f} is a file'), (f, f'out_dir {f} exists and is not a folder')]:
        with pytest.raises(NotADirectoryError) as e:
            run_benchmark('digits', 'resnet18_small', seeds=[1], methods=['original', 'gold'], out_dir=out, progress=False)
        assert str(e.value) == what, str(e.value)
    with pytest.raises(NotADirectoryError, match=f'cache_dir {f/"ck"} cannot be created'):
        run_benchmark('digits', 'resnet18_small', seeds=[1], methods=['original', 'gold'], out_dir=tmp_path/'res', cache_dir=f/'ck', progress=False)

def test_read_only_out_dir_refused_before_any_data():
    """A read-only folder on out_dir's path is refused at once with the path and why. Root writes there anyway (so would the run):
    as root the check runs in a child that drops to an unprivileged user after importing"""
    base = Path(tempfile.mkdtemp()); base.chmod(0o755); ro = base/'ro'; ro.mkdir(); ro.chmod(0o555)
    code = f"""import os, sys
import lotus_nb.running.benchmark as E
E.prepare = lambda *a, **k: sys.exit('data was read before out_dir was checked')
if os.geteuid() == 0: os.setgid(65534); os.setuid(65534)
try: E.run_benchmark('digits', 'resnet18_small', seeds=[1], methods=['original', 'gold'], out_dir={str(ro/'x')!r}, progress=False)
except PermissionError as e: print(e); sys.exit(0)
sys.exit('accepted a read-only out_dir')"""
    try: res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    finally: ro.chmod(0o755); shutil.rmtree(base)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == f"out_dir {ro/'x'} cannot be written: {ro} refuses a new entry (Permission denied)", res.stdout + res.stderr

def test_readme_api_reads_what_a_dataloader_yields():
    "`lotus_unlearn` (the README's call) on a user's DataLoaders: one whose sampler draws other items than its Dataset's is refused, naming the set, before anything is read or trained; one with a SubsetRandomSampler unlearns exactly that subset (lotus_nb 0.4.1 read its whole Dataset)"
    import copy, torch, torch.nn as nn
    from torch.utils.data import TensorDataset, DataLoader, Subset, WeightedRandomSampler, SubsetRandomSampler
    from lotus_nb.methods.lotus import lotus_unlearn
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(120, 1, 8, 8, generator=g), torch.arange(120) % 4
    ds, retain, unseen = TensorDataset(x, y), TensorDataset(x[20:100], y[20:100]), TensorDataset(x[100:], y[100:])
    torch.manual_seed(0); model = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    weights = copy.deepcopy(model.state_dict())
    with pytest.raises(ValueError, match='the forget set: .*WeightedRandomSampler'):
        lotus_unlearn(model, DataLoader(ds, sampler=WeightedRandomSampler([1.] * 120, 20, generator=g)), retain, unseen, progress=False)
    with pytest.raises(ValueError, match='the retain set: labels must be class indices'):
        lotus_unlearn(model, ds, TensorDataset(x[20:100], nn.functional.one_hot(y[20:100]).float()), unseen, progress=False)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in weights.items())
    run = lambda forget: lotus_unlearn(model, forget, retain, unseen, seed=0, progress=False, epochs=2)[0].state_dict()
    by_sampler, by_subset, other = run(DataLoader(ds, batch_size=7, sampler=SubsetRandomSampler(range(20)))), run(Subset(ds, range(20))), run(Subset(ds, range(10)))
    assert all(torch.equal(v, by_subset[k]) for k, v in by_sampler.items()), "the SubsetRandomSampler's items are not the forget set"
    assert not all(torch.equal(v, other[k]) for k, v in by_sampler.items()), "the check cannot tell one forget set from another"   # (the whole Dataset overlaps the retain set: refused)

# ---------------------------------------------------------------- sets checked before any work
# lotus_nb.data.loaders' check_disjoint, check_model_fits and memorisation_warning, through the README's call and `evaluate`.
# Wired into UnlearnTask (check_disjoint), unlearn (check_model_fits), lotus_unlearn (both, and memorisation_warning) and evaluate.

@pytest.fixture(scope='module')
def memorised():
    "A 10-class MLP that memorised its 100 training items (random labels: nothing else to learn), and held-out items it never saw"
    import torch, torch.nn as nn, torch.nn.functional as F
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(300, 1, 4, 4, generator=g), torch.randint(0, 10, (300,), generator=g)
    torch.manual_seed(0); model = nn.Sequential(nn.Flatten(), nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for _ in range(300): opt.zero_grad(); F.cross_entropy(model(x[:100]), y[:100]).backward(); opt.step()
    return model.eval(), x, y

def _sets(x, y, **ranges):
    "TensorDatasets of the items in each named range"
    from torch.utils.data import TensorDataset
    return {k: TensorDataset(x[a:b], y[a:b]) for k, (a, b) in ranges.items()}

def _refused(call, model, match):
    "`call()` raises a ValueError matching `match` and leaves `model`'s weights as they were"
    import copy, torch
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(ValueError, match=match): call()
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items()), "the model changed"

def _lotus(model, s, **kw):
    from lotus_nb.methods.lotus import lotus_unlearn
    return lambda: lotus_unlearn(model, s['forget'], s['retain'], s['unseen'], progress=False, epochs=1, **kw)

def test_readme_call_refuses_a_forget_set_overlapping_the_retain_set(memorised):
    model, x, y = memorised
    _refused(_lotus(model, _sets(x, y, forget=(0, 20), retain=(10, 100), unseen=(100, 200))), model,
             'the forget and retain sets share 10 items')

def test_readme_call_refuses_an_unseen_set_equal_to_the_forget_set(memorised):
    "An unseen set built apart from the forget set (other tensors), with the same items: found by content"
    model, x, y = memorised
    s = _sets(x, y, forget=(0, 20), retain=(20, 100)); s['unseen'] = _sets(x.clone(), y.clone(), u=(0, 20))['u']
    _refused(_lotus(model, s), model, 'the forget and unseen sets share 20 items by content')

def test_readme_call_refuses_labels_the_model_has_no_output_for(memorised):
    "Forget labels 5 to 14 on a 10-class model: refused, naming the set and the labels, not torch's `Target 11 is out of bounds`"
    import torch
    model, x, y = memorised
    s = _sets(x, y, retain=(20, 100), unseen=(100, 200)); s['forget'] = _sets(x, 5 + torch.arange(300) % 10, f=(0, 20))['f']
    _refused(_lotus(model, s), model, r'the forget set: 10 labels outside \[0, 10\), from 10 to 14')

def test_readme_call_refuses_inputs_the_model_cannot_take(memorised):
    "A retain set of 5 x 5 images for a model of 4 x 4 ones: refused naming the retain set, not `Sizes of tensors must match`"
    import torch
    model, x, y = memorised
    s = _sets(x, y, forget=(0, 20), unseen=(100, 200)); s['retain'] = _sets(torch.randn(80, 1, 5, 5), y[20:100], r=(0, 80))['r']
    _refused(_lotus(model, s), model, 'the retain set: the model cannot take its inputs')

def test_readme_call_warns_of_a_forget_set_the_model_never_trained_on(memorised):
    "A forget set drawn from held-out data: LoTUS runs, with a MemorisationWarning; a memorised one runs without"
    import copy, warnings, torch
    from lotus_nb.models.model_checks import MemorisationWarning
    model, x, y = memorised
    before = copy.deepcopy(model.state_dict())
    with pytest.warns(MemorisationWarning, match='does not tell the forget set from the unseen set') as w:
        _lotus(model, _sets(x, y, forget=(200, 250), retain=(20, 100), unseen=(100, 200)))()
    assert 'tau_d' in str(w[0].message) and 'Avg Gap' in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter('error', MemorisationWarning)              # trained on: no warning
        _lotus(model, _sets(x, y, forget=(0, 50), retain=(50, 100), unseen=(100, 200)))()
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items()), "the model changed"

def test_evaluate_refuses_overlapping_sets(memorised):
    "evaluate: a forget set drawn from the test set, and a forget set overlapping the retain set, are refused, naming the sets"
    from lotus_nb.metrics.evaluation import evaluate
    model, x, y = memorised
    s = _sets(x, y, forget=(200, 220), retain=(0, 100), test=(200, 300), unseen=(100, 200))
    _refused(lambda: evaluate(model, s['forget'], s['retain'], s['test'], s['unseen']), model, 'the forget and test sets share 20 items')
    s = _sets(x, y, forget=(0, 20), retain=(10, 100), test=(200, 300), unseen=(100, 200))
    _refused(lambda: evaluate(model, s['forget'], s['retain'], s['test'], s['unseen']), model, 'the forget and retain sets share 10 items')
