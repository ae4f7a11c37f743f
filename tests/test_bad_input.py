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
