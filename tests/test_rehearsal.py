"""The rehearsal at the paper's sizes, the slice CI runs: nbs/experiments.ipynb through papermill with `-p fast_dev_run 1` on
the full CIFAR-100 that tools/paper_data.py writes (50,000 + 10,000 images): one ResNet18 benchmark (every method) and one
ViT-B/16 method (LoTUS, beside the Gold it is measured against), the ViT with a random network in place of its ImageNet weights
where they are missing. On this CPU every batch is capped (`-p rehearsal_batch`, named in every caption): the real batch of
an evaluation pass is 1,024 images. The rows go to `out_dir/rehearsal`, never to the real run's store."""
import json, os, sys
from pathlib import Path
import pandas as pd, pytest
from helpers import ROOT, papermill, show, outputs
sys.path.insert(0, str(ROOT/'tools'))
import paper_data as PD
from lotus_nb.running.store import Store

BATCH, VIT_BATCH = 16, 8   # rehearsal_batch: a CPU cap (ViT-B/16 at 224 px: 8 images a batch, a pass in seconds)

@pytest.fixture(scope='module')
def cifar100(tmp_path_factory):
    "The full CIFAR-100 (tools/paper_data.py, the paper's sizes) in a folder of its own"
    out = tmp_path_factory.mktemp('paper_data')/'data'
    PD.main(['--out', str(out), '--datasets', 'cifar100', '--workers', str(min(2, os.cpu_count() or 1)), '--verify', 'none'])
    return out

@pytest.fixture(autouse=True)
def only_data_root(tmp_path_factory, monkeypatch):
    "$LOTUS_DATA and the cache point to an empty folder: the rehearsal reads data_root or refuses"
    empty = tmp_path_factory.mktemp('empty')
    monkeypatch.setenv('LOTUS_DATA', str(empty)); monkeypatch.setenv('XDG_CACHE_HOME', str(empty))

def rehearse(tmp_path, data_root, *args, batch=BATCH):
    res_dir = tmp_path/'res'
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'cifar100', '-p', 'data_root', str(data_root), '-p', 'out_dir', str(res_dir),
                    '-p', 'fast_dev_run', '1', '-p', 'rehearsal_batch', str(batch), '-y', 'seeds: [3407]', *args, timeout=1200)
    assert res.returncode == 0, show(res)
    assert not (res_dir/'results.csv').exists()                      # nothing in the real run's store
    store = Store(res_dir/'rehearsal'); assert store.rehearsal == 1 and store.rehearsal_batch == batch
    return res, store, pd.read_csv(store.root/'stages.csv').set_index('stage')

def test_resnet18_cifar100(cifar100, tmp_path):
    "Every method of the ResNet18 benchmark on the full CIFAR-100: one batch of each loop, one of each evaluation split"
    res, store, st = rehearse(tmp_path, cifar100)
    rows = store.read()
    assert len(rows) == 12 and set(rows.model) == {'resnet18'}, rows[['method', 'avg_gap']]
    assert st.loc['f_orig', 'train_batches'] == 1 and st.loc['f_orig', 'train_images'] == BATCH
    assert st.loc['unlearn finetune', 'train_batches'] == 1 and st.loc['unlearn lotus', 'train_batches'] == 1
    assert st.loc['evaluate lotus', 'eval_images'] <= 8*BATCH        # a batch of each split, not the 60,000 images
    md = next(store.tables.glob('*_avg_gap.md')).read_text()
    assert md.startswith(f'rehearsal: 1 batches of at most {BATCH} images (rehearsal_batch), not results.'), md[:120]
    assert 'The 10 slowest stages' in outputs(tmp_path/'out.ipynb')

def test_vit_lotus_cifar100(cifar100, tmp_path):
    "LoTUS with ViT-B/16 on the full CIFAR-100 at 224 px (beside Gold, which it is measured against); without the ImageNet weights, a random network in their place, said once"
    res, store, st = rehearse(tmp_path, cifar100, '-p', 'model', 'vit_b_16', '-y', 'methods: [gold, lotus]', batch=VIT_BATCH)
    rows = store.read()
    assert sorted(rows.method) == ['gold', 'lotus'] and set(rows.model) == {'vit_b_16'}
    assert st.loc['unlearn lotus', 'train_batches'] == 1
    from lotus_nb.paper.preview import weights_status
    if weights_status('vit_b_16') != 'cached':
        assert res.stdout.count('runs with a randomly initialised network in place of its pretrained weights') == 1, show(res)
