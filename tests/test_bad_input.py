"Bad input fails early with a clear message and leaves the results already in out_dir untouched"
import shutil
import pytest
from conftest import papermill, show
from lotus_nb.experiment import run_benchmark

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

def test_readme_api_reads_what_a_dataloader_yields():
    "`lotus_unlearn` (the README's call) on a user's DataLoaders: one whose sampler draws other items than its Dataset's is refused, naming the set, before anything is read or trained; one with a SubsetRandomSampler unlearns exactly that subset (lotus_nb 0.4.1 read its whole Dataset)"
    import copy, torch, torch.nn as nn
    from torch.utils.data import TensorDataset, DataLoader, Subset, WeightedRandomSampler, SubsetRandomSampler
    from lotus_nb.lotus import lotus_unlearn
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
    by_sampler, by_subset, whole = run(DataLoader(ds, batch_size=7, sampler=SubsetRandomSampler(range(20)))), run(Subset(ds, range(20))), run(ds)
    assert all(torch.equal(v, by_subset[k]) for k, v in by_sampler.items()), "the SubsetRandomSampler's items are not the forget set"
    assert not all(torch.equal(v, whole[k]) for k, v in by_sampler.items()), "the check cannot tell the subset from the whole Dataset"
