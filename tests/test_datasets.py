"""Every dataset loader on a small fixture in its exact on-disk format (CIFAR's Python 2 pickles, JPEG trees, MUFAC's CSVs,
ImageNet's folders and devkit labels, CIFAKE's file names): images and labels stay aligned through every split, the search
order and the missing-data message, MUFAC's cleaning report, streaming from disk and resizing on the device. Hostile files:
a planted CIFAR pickle is refused before it runs, annotation paths stay inside their dataset folder. The parts of the data
package: one declared split interface, and the fixture writers (`lotus_nb.core.testing`) never imported at run time."""
import ast, os, pickle, subprocess, sys
from pathlib import Path
import numpy as np, pytest, torch
from PIL import Image
from fixtures import *
from helpers import import_graph   # the repository's one import scanner: tools/import_graph.py
import lotus_nb.data.datasets as D, lotus_nb.data.formats_idx as FI, lotus_nb.data.formats_cifar as FC, lotus_nb.data.formats_folders as FF
import lotus_nb.data.mufac as MU
from lotus_nb.data.datasets import load_dataset, dataset_defaults
from lotus_nb.data.splits import dataset_splits, make_splits
from lotus_nb.data.loaders import device_splits, unseen_split

@pytest.fixture(autouse=True)
def only_test_folders(tmp_path_factory, monkeypatch):
    "Loaders search only the test's folders: $LOTUS_DATA, the cache and Debian's Fashion-MNIST folder point to an empty one"
    empty = tmp_path_factory.mktemp('empty')
    monkeypatch.setenv('LOTUS_DATA', str(empty)); monkeypatch.setenv('XDG_CACHE_HOME', str(empty))
    monkeypatch.setattr(FI, 'DEFAULT_FMNIST_DIRS', (str(empty),))
    return empty

def labels_in(split, mean, std, train=False, batch_size=7):
    "(labels read from the pixels, labels served) over one pass of `split`'s loader"
    read, served = [], []
    for xb, yb in split.loader(batch_size, train=train, seed=1):
        read.append(label_of(unnormalize(xb, mean, std)).cpu()); served.append(yb.cpu())
    empty = torch.zeros(0, dtype=torch.long)
    return torch.cat(read or [empty]), torch.cat(served or [empty])

def check_aligned(data, splits, train=False):
    "Every split of `data` serves each image with its own label, and serves each sample once"
    for name, split in device_splits(data, splits).items():
        read, served = labels_in(split, data.mean, data.std)
        assert torch.equal(read, served), name
        assert len(served) == len(split) and torch.equal(served, split.labels.cpu()), name
        if train:                                  # shuffled and augmented: still aligned
            read, served = labels_in(split, data.mean, data.std, train=True)
            assert torch.equal(read, served), f'{name} (train)'
            assert torch.equal(served.sort().values, split.labels.cpu().sort().values), f'{name} (train)'

# CIFAR

def test_cifar10_pickles(tmp_path):
    write_cifar10(tmp_path, per_class=3, test_per_class=4)
    raw = (tmp_path/'cifar-10-batches-py'/'data_batch_2').read_bytes()
    with pytest.raises(UnicodeDecodeError): pickle.loads(raw)          # Python 2 pickles: a plain load fails, as on the real files
    d = load_dataset('cifar10', root=tmp_path, download=False)
    assert (len(d.y_train), len(d.y_heldout), d.num_classes, d.in_memory) == (30, 40, 10, True)
    assert d.x_train.dtype == torch.uint8 and d.x_train.shape[1:] == (3, 32, 32)
    assert d.classes == ['airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck']
    assert (d.mean, d.std, d.augment) == (FC.CIFAR_MEAN, FC.CIFAR_STD, 'crop')   # the authors' ResNet18 augmentation: crop, no flip
    assert torch.equal(label_of(d.x_train), d.y_train) and torch.equal(label_of(d.x_heldout), d.y_heldout)
    sp = dataset_splits(d, 0.34, seed=3407)
    assert len(sp.forget) == 10 and np.bincount(d.y_train[sp.forget]).tolist() == [1]*10
    assert not np.array_equal(sp.forget, dataset_splits(d, 0.34, seed=13).forget)
    check_aligned(d, sp, train=True)

def test_cifar100_fine_labels(tmp_path):
    write_cifar100(tmp_path, per_class=2, test_per_class=2)
    d = load_dataset('cifar100', root=tmp_path/'cifar-100-python', download=False)   # the dataset's own folder works too
    assert (len(d.y_train), len(d.y_heldout), d.num_classes, d.classes[42]) == (200, 200, 100, 'class42')
    assert torch.equal(label_of(d.x_train), d.y_train) and d.y_train.max() == 99     # fine, not coarse, labels
    check_aligned(d, dataset_splits(d, forget_class=7, seed=0))

def test_cifar_incomplete(tmp_path):
    write_cifar10(tmp_path, per_class=1, test_per_class=1)
    (tmp_path/'cifar-10-batches-py'/'data_batch_3').unlink()
    with pytest.raises(FileNotFoundError, match='data_batch_3 missing'): load_dataset('cifar10', root=tmp_path, download=False)

def test_cifar_download_goes_to_the_first_place(tmp_path, monkeypatch):
    "With no data anywhere, torchvision's download is asked to fill the first folder searched"
    import torchvision
    calls = []
    def fake_cifar10(root, train=True, download=False):
        calls.append((root, download)); write_cifar10(root, per_class=1, test_per_class=1)
    monkeypatch.setattr(torchvision.datasets, 'CIFAR10', fake_cifar10)
    d = load_dataset('cifar10', root=tmp_path)
    assert calls == [(str(tmp_path), True)] and len(d.y_train) == 10

# TinyImageNet

def test_tinyimagenet_tree(tmp_path):
    write_tinyimagenet(tmp_path, n_classes=5, per_class=6, n_val=23)
    base = tmp_path/'tiny-imagenet-200'
    modes = {Image.open(p).mode for p in base.rglob('*.JPEG')}
    assert modes == {'L', 'RGB'}                                     # greyscale images are mixed in, as in the real set
    d = load_dataset('tinyimagenet', root=tmp_path, download=False)
    assert (len(d.y_train), len(d.y_heldout), d.x_train.shape[1:], d.in_memory) == (30, 23, (3, 64, 64), True)
    assert d.classes == [f'class {c}' for c in range(5)]             # line order of wnids.txt, first name of words.txt
    assert torch.equal(label_of(d.x_train), d.y_train) and torch.equal(label_of(d.x_heldout), d.y_heldout)
    assert (d.augment, d.mean) == ('crop_edge_flip', tuple(v/255 for v in (122.4786, 114.2755, 101.3963)))
    # the fixture catches the authors' misalignment: annotation order paired with the file listing mislabels images
    ann = [l.split('\t')[1] for l in (base/'val'/'val_annotations.txt').read_text().splitlines()]
    wnids = (base/'wnids.txt').read_text().split()
    listed = sorted((base/'val'/'images').glob('*.JPEG'))
    naive = torch.tensor([wnids.index(w) for w in ann])
    truth = label_of(torch.stack([D.read_image(p, 64) for p in listed]))
    assert not torch.equal(naive, truth)
    check_aligned(d, dataset_splits(d, 0.5, seed=12), train=True)
    check_aligned(d, dataset_splits(d, forget_class=2, seed=12))

def test_tinyimagenet_streams_the_same_images(tmp_path):
    write_tinyimagenet(tmp_path, n_classes=3, per_class=4, n_val=11)
    mem = load_dataset('tinyimagenet', root=tmp_path, download=False)
    disk = load_dataset('tinyimagenet', root=tmp_path, download=False, in_memory=False)
    assert not disk.in_memory and torch.equal(disk.y_train, mem.y_train)
    sp = dataset_splits(mem, 0.5, seed=3407)
    for name, split in device_splits(disk, sp).items():
        (xf, yf), = list(split.loader(64)); (xm, ym), = list(device_splits(mem, sp)[name].loader(64))
        assert torch.equal(yf, ym) and torch.allclose(xf, xm), name
    check_aligned(disk, sp)

def test_tinyimagenet_in_memory_when_it_fits(tmp_path, monkeypatch):
    write_tinyimagenet(tmp_path, n_classes=2, per_class=2, n_val=3)
    monkeypatch.setattr(D, 'available_memory', lambda: 10_000)       # 10 kB: the 7 x 12 kB images do not fit
    assert not load_dataset('tinyimagenet', root=tmp_path, download=False).in_memory
    monkeypatch.setattr(D, 'available_memory', lambda: 10**9)
    assert load_dataset('tinyimagenet', root=tmp_path, download=False).in_memory

def test_tinyimagenet_missing_val_image(tmp_path):
    write_tinyimagenet(tmp_path, n_classes=2, per_class=2, n_val=4)
    (tmp_path/'tiny-imagenet-200'/'val'/'images'/'val_3.JPEG').unlink()
    with pytest.raises(FileNotFoundError, match='val_3.JPEG'): load_dataset('tinyimagenet', root=tmp_path, download=False)

# MUFAC

def test_mufac_cleaning(tmp_path):
    pytest.importorskip('imagehash', reason='MUFAC needs the mufac extra')   # listed in the dev requirements, so CI runs it
    info = write_mufac(tmp_path, n_train=24, n_val=10, n_test=10, forget_rows=8)
    d = load_dataset('mufac', root=tmp_path, forget_rows=info['forget_rows'])
    rep = d.notes['cleaning']
    assert rep.before == dict(forget=8, retain=16, val=10, test=10) and rep.after == info['sizes']
    removed = {r: sorted(g.image_path) for r, g in rep.removed.assign(r=rep.removed.split + ' ' + rep.removed.reason).groupby('r')}
    expect = {'forget in retain': info['planted']['forget in retain'], 'forget duplicate': info['planted']['forget duplicate'],
              'retain duplicate': info['planted']['retain duplicate'], 'val in test': info['planted']['val in test'],
              'val duplicate': info['planted']['val duplicate'], 'test in train': info['planted']['test in train'],
              'test duplicate': info['planted']['test duplicate']}
    assert removed == {k: v for k, v in expect.items()}
    assert 'removed 7 images' in repr(rep) and rep.summary().sum() == 7
    assert d.classes[3] == '20-30 years' and not d.in_memory and d.augment == 'mufac'
    # the forget set is the cleaned first `forget_rows` rows of the training CSV, in CSV order
    import pandas as pd
    csv = pd.read_csv(tmp_path/MU.MUFAC_DIR/'custom_train_dataset.csv')
    gone = set(rep.removed.image_path)
    first = [p for p in csv.image_path[:8] if p not in gone]
    sp = dataset_splits(d, seed=3407)
    assert [Path(p).name for p in d.x_train.paths[sp.forget]] == first
    assert np.array_equal(sp.forget, dataset_splits(d, seed=13).forget) and np.array_equal(sp.test, dataset_splits(d, seed=13).test)
    assert (len(sp.forget), len(sp.retain), len(sp.unseen), len(sp.test)) == tuple(info['sizes'].values())
    with pytest.raises(ValueError, match='class unlearning'): dataset_splits(d, forget_class=1)
    check_aligned(d, sp)
    # MUFAC is not normalised: an evaluation batch is exactly the files' pixels / 255, in the split's order
    retain = device_splits(d, sp)['retain']
    pixels = lambda idx: torch.stack([torch.from_numpy(np.asarray(Image.open(p).convert('RGB'))).permute(2, 0, 1)
                                      for p in d.x_train.paths[retain.idx[idx]]]).float()/255
    xb, yb = next(iter(retain.loader(6)))
    assert torch.equal(xb, pixels(np.arange(6))) and torch.equal(yb, d.y_train[retain.idx[:6]])
    # training batches: the seed's order, and each image changed by the flip + affine + jitter (none is its file's pixels)
    xt, yt = next(iter(retain.loader(6, train=True, seed=4)))
    order = torch.randperm(len(retain), generator=torch.Generator().manual_seed(4))[:6].numpy()
    assert torch.equal(yt, retain.labels[order]) and xt.shape == (6, 3, 128, 128)
    assert not any(torch.equal(a, b) for a, b in zip(xt, pixels(order)))

def test_mufac_workers_serve_the_same_batches(tmp_path):
    pytest.importorskip('imagehash')
    info = write_mufac(tmp_path)
    d = load_dataset('mufac', root=tmp_path, forget_rows=info['forget_rows'])
    sp = dataset_splits(d, seed=0)
    one = [b for b in device_splits(d, sp, num_workers=0)['retain'].loader(4, train=True, seed=5)]
    two = [b for b in device_splits(d, sp, num_workers=2)['retain'].loader(4, train=True, seed=5)]
    assert all(torch.equal(a[1], b[1]) and torch.equal(a[0], b[0]) for a, b in zip(one, two)) and len(one) == len(two)

def test_mufac_needs_imagehash(tmp_path, monkeypatch):
    write_mufac(tmp_path, n_train=16, n_val=10, n_test=10, forget_rows=6)
    monkeypatch.setitem(sys.modules, 'imagehash', None)               # as if the extra were not installed
    with pytest.raises(ImportError, match=r'lotus_nb\[mufac\]'): load_dataset('mufac', root=tmp_path, forget_rows=6)

def test_mufac_bad_age_class(tmp_path):
    write_mufac(tmp_path, n_train=16, n_val=10, n_test=10, forget_rows=6)
    csv = tmp_path/MU.MUFAC_DIR/'custom_val_dataset.csv'
    csv.write_text(csv.read_text().replace(',a,', ',z,', 1))
    with pytest.raises(ValueError, match="unknown age classes"): MU.read_mufac_csv(tmp_path/MU.MUFAC_DIR, 'val')

# ImageNet

@pytest.mark.parametrize('val_layout', ['folders', 'flat'])
def test_imagenet_selection(tmp_path, val_layout):
    write_imagenet(tmp_path, n_classes=3, per_class=53, val_per_class=11, val_layout=val_layout)
    d = load_dataset('imagenet', root=tmp_path)
    assert (len(d.y_train), len(d.y_heldout), d.classes, d.in_memory) == (150, 33, ['class 0', 'class 1', 'class 2'], False)
    sp = dataset_splits(d, seed=3407)
    assert (len(sp.forget), len(sp.retain), len(sp.unseen), len(sp.test)) == (15, 135, 15, 15)
    for c, w in enumerate(sorted(p.name for p in (tmp_path/'imagenet'/'train').iterdir())):
        files = sorted(p.name for p in (tmp_path/'imagenet'/'train'/w).iterdir())
        mine = lambda idx: [Path(p).name for p in d.x_train.paths[idx] if Path(p).parent.name == w]
        assert sorted(mine(sp.forget) + mine(sp.retain)) == files[:50]   # the class's first 50 images: 5 forget, 45 retain
        assert len(mine(sp.forget)) == 5 and len(mine(sp.retain)) == 45
    assert np.bincount(d.y_heldout[sp.unseen]).tolist() == [5]*3 and np.intersect1d(sp.unseen, sp.test).size == 0
    assert not np.array_equal(sp.unseen, dataset_splits(d, seed=13).unseen)
    assert torch.equal(label_of(torch.stack([d.x_heldout[i] for i in range(33)])), d.y_heldout)
    ds = device_splits(d, sp)
    for name in ('forget', 'unseen', 'test'):
        read, served = labels_in(ds[name], FF.IMAGENET_MEAN, FF.IMAGENET_STD, batch_size=16)
        assert torch.equal(read, served), name
    xb, _ = next(iter(ds['forget'].loader(2)))
    assert xb.shape == (2, 3, 224, 224)
    assert dataset_defaults('imagenet').model == 'vit_b_16_imagenet' and not dataset_defaults('imagenet').gold

def test_imagenet_forget_sets_drawn_per_seed(tmp_path):
    "Each seed draws its own forget set, 5 of each class's 50 images; the same seed the same set"
    write_imagenet(tmp_path, n_classes=3, per_class=52, val_per_class=10)
    d = load_dataset('imagenet', root=tmp_path)
    y = d.y_train.numpy()
    sps = {s: dataset_splits(d, seed=s) for s in (3407, 13, 12)}
    for s, sp in sps.items():
        assert np.bincount(y[sp.forget]).tolist() == [5]*3 and np.bincount(y[sp.retain]).tolist() == [45]*3
        assert np.intersect1d(sp.forget, sp.retain).size == 0 and np.array_equal(np.union1d(sp.forget, sp.retain), np.arange(150))
        assert set(sp.retain_sub) <= set(sp.retain)
        assert np.array_equal(sp.forget, dataset_splits(d, seed=s).forget)          # same seed, same set
    assert not np.array_equal(sps[3407].forget, sps[13].forget) and not np.array_equal(sps[13].forget, sps[12].forget)
    names = lambda sp: {Path(p).name for p in d.x_train.paths[sp.forget]}
    assert names(sps[3407]) != names(sps[13])
    firsts = {n for w in (tmp_path/'imagenet'/'train').iterdir() for n in sorted(p.name for p in w.iterdir())[:5]}
    assert names(sps[3407]) != firsts

def test_imagenet_first_rule(tmp_path):
    "forget_rule='first': the authors' first 5 of each class forgotten, the next 45 retained, for every seed"
    write_imagenet(tmp_path, n_classes=3, per_class=53, val_per_class=11)
    d = load_dataset('imagenet', root=tmp_path, forget_rule='first')
    sp, sp13 = dataset_splits(d, seed=3407), dataset_splits(d, seed=13)
    for w in sorted(p.name for p in (tmp_path/'imagenet'/'train').iterdir()):
        files = sorted(p.name for p in (tmp_path/'imagenet'/'train'/w).iterdir())
        mine = lambda idx: [Path(p).name for p in d.x_train.paths[idx] if Path(p).parent.name == w]
        assert mine(sp.forget) == files[:5] and mine(sp.retain) == files[5:50]   # first 5 forget, next 45 retain
    assert np.array_equal(sp.forget, sp13.forget) and not np.array_equal(sp.unseen, sp13.unseen)
    with pytest.raises(ValueError, match='fixed forget set'): dataset_splits(d, forget_pct=0.5)
    with pytest.raises(ValueError, match='valid forget_rules: first, seeded'): load_dataset('imagenet', root=tmp_path, forget_rule='random')

def test_imagenet_train_size_keeps_the_rule(tmp_path):
    write_imagenet(tmp_path, n_classes=2, per_class=50, val_per_class=10)
    d = load_dataset('imagenet', root=tmp_path, train_size=40)
    sp = dataset_splits(d, seed=0)
    assert len(sp.forget) + len(sp.retain) == 40 and np.bincount(d.y_train.numpy()[sp.forget]).tolist() == [2, 2]  # 10% of each class kept
    d = load_dataset('imagenet', root=tmp_path, train_size=40, forget_rule='first')
    sp = dataset_splits(d, seed=0)
    assert len(sp.forget) + len(sp.retain) == 40 and 0 < len(sp.forget) < 10
    firsts = {n for w in (tmp_path/'imagenet'/'train').iterdir() for n in sorted(p.name for p in w.iterdir())[:5]}
    assert {Path(p).name for p in d.x_train.paths[sp.forget]} <= firsts
    assert not {Path(p).name for p in d.x_train.paths[sp.retain]} & firsts

def test_imagenet_too_few_images(tmp_path):
    write_imagenet(tmp_path, n_classes=2, per_class=30, val_per_class=2)
    with pytest.raises(ValueError, match='needs 50 per class'): load_dataset('imagenet', root=tmp_path)

# CIFAKE

def test_cifake_unseen_set(tmp_path):
    write_cifake(tmp_path, per_class=4)
    names = sorted(p.name for p in (tmp_path/'cifake'/'test'/'FAKE').iterdir())
    assert '1000.jpg' in names and '1001 (1).jpg' in names and '1003 (10).jpg' in names
    d = load_dataset('cifake', root=tmp_path)
    assert (len(d.y_train), len(d.y_heldout), d.classes[9], d.mean) == (0, 40, 'truck', FC.CIFAR_MEAN)
    assert np.bincount(d.y_heldout).tolist() == [4]*10                 # test/REAL ignored
    assert torch.equal(label_of(d.x_heldout), d.y_heldout)
    read, served = labels_in(unseen_split(d), d.mean, d.std)
    assert torch.equal(read, served) and len(served) == 40
    assert dataset_defaults('cifake').unseen_for == 'cifar10'
    with pytest.raises(ValueError, match='unseen set only'): dataset_splits(d)

def test_cifake_regrouped_folders(tmp_path):
    "The authors' regrouped cifake_classes/0..9 layout gives the same labels"
    write_cifake(tmp_path/'raw', per_class=2)
    for p in (tmp_path/'raw'/'cifake'/'test'/'FAKE').iterdir():
        dst = tmp_path/'cifake_classes'/str(FF.cifake_label(p.name))/p.name; dst.parent.mkdir(parents=True, exist_ok=True); dst.write_bytes(p.read_bytes())
    a, b = load_dataset('cifake', root=tmp_path/'raw'), load_dataset('cifake', root=tmp_path)
    assert torch.equal(a.y_heldout.sort().values, b.y_heldout.sort().values) and torch.equal(label_of(b.x_heldout), b.y_heldout)

# where data is looked for

def test_search_order(tmp_path, monkeypatch):
    "`root` first, then $LOTUS_DATA, then the cache"
    for place, n in (('root', 1), ('env', 2), ('xdg/lotus_nb/data', 3)): write_cifar10(tmp_path/place, per_class=n, test_per_class=1)
    monkeypatch.setenv('LOTUS_DATA', str(tmp_path/'env')); monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path/'xdg'))
    assert len(load_dataset('cifar10', root=tmp_path/'root', download=False).y_train) == 10
    assert len(load_dataset('cifar10', download=False).y_train) == 20
    monkeypatch.delenv('LOTUS_DATA')
    assert len(load_dataset('cifar10', download=False).y_train) == 30

@pytest.mark.parametrize('name,hint', [('cifar10', 'cifar-10-python.tar.gz'), ('cifar100', 'cifar-100-python.tar.gz'),
    ('tinyimagenet', 'http://cs231n.stanford.edu/tiny-imagenet-200.zip'), ('mufac', 'custom_korean_family_dataset_resolution_128.zip'),
    ('imagenet', 'image-net.org'), ('cifake', 'kaggle.com'), ('fashionmnist', 'apt-get install dataset-fashion-mnist')])
def test_missing_data_message(tmp_path, only_test_folders, name, hint):
    "One message, before any work, naming every place searched and how to get the data"
    with pytest.raises(FileNotFoundError) as e: load_dataset(name, root=tmp_path, download=False)
    msg = str(e.value)
    assert hint in msg and str(tmp_path) in msg and str(only_test_folders/'lotus_nb'/'data') in msg, msg
    assert msg.count(str(only_test_folders)) >= 2, msg       # $LOTUS_DATA and the cache are both named

def test_failed_download_is_reported(tmp_path, monkeypatch):
    def no_network(folder): raise OSError('Name or service not known')
    monkeypatch.setattr(FF, '_tiny_download', no_network)
    with pytest.raises(FileNotFoundError, match=f'download into {tmp_path} failed: OSError: Name or service not known'):
        load_dataset('tinyimagenet', root=tmp_path)

# batches for a model with a larger input

def test_resize_on_the_device(tmp_path):
    "ViT-B/16 sees 224 px batches of 32 px CIFAR images, resized batch by batch; the dataset stays at 32 px"
    write_cifar10(tmp_path, per_class=2, test_per_class=1)
    d = load_dataset('cifar10', root=tmp_path, download=False)
    ds = device_splits(d, make_splits(d.y_train, d.y_heldout, 0.5, seed=0), size=224)
    xb, yb = next(iter(ds['retain'].loader(4, train=True)))
    assert xb.shape == (4, 3, 224, 224) and d.x_train.shape[-1] == 32 and ds['retain'].source.x.shape[-1] == 32
    read, served = labels_in(ds['forget'], d.mean, d.std)
    assert torch.equal(read, served)

def test_defaults_of_the_paper_datasets():
    want = dict(cifar10=('resnet18', 32, 'crop'), cifar100=('resnet18', 32, 'crop'), tinyimagenet=('resnet18', 64, 'crop_edge_flip'),
                mufac=('resnet18', 128, 'mufac'), imagenet=('vit_b_16_imagenet', 224, 'none'),
                digits=('resnet18_small', 8, 'crop'), fashionmnist=('resnet18_small', 28, 'crop_flip'))
    assert {n: (dataset_defaults(n).model, dataset_defaults(n).img_size, dataset_defaults(n).augment) for n in want} == want
    assert all(dataset_defaults(n).seeds == (3407, 13, 12) for n in D.list_datasets())

def test_registration_is_the_one_source():
    "A dataset's benchmark defaults, official sizes, paper label and stand-in are registered with it, once: a dataset registered from outside the package is seen by benchmark_defaults, the preview, the paper's plans and labels, and the views built from them"
    from lotus_nb.running.benchmark import BenchmarkSpec, BENCHMARK_DEFAULTS, benchmark_defaults, benchmark_augment
    from lotus_nb.paper.paper_plan import PB, STAND_INS, LABELS, plan_benchmark
    from lotus_nb.paper.preview import _shape
    from lotus_nb.core.registry import registered
    with registered(D.DATASETS):                          # registered for this block only
        @D.register_dataset('outside', model='resnet18_small', img_size=20, augment='flip', train_images=700, heldout_images=70, num_classes=7,
                            in_chans=1, label='Out-7', in_paper=True, stand_in='digits',
                            benchmark=dict(train_size=350, img_size=10, recipe=dict(epochs=3, batch_size=32, patience=None)),
                            benchmark_by_arch={'vit': dict(augment='none', method_overrides={'lotus': {'alpha': 4.}})})
        def load_outside(root=None, download=True): raise FileNotFoundError('outside: never here')
        rn, vit = benchmark_defaults('outside', 'resnet18_small'), benchmark_defaults('outside', 'vit_small')
        assert (rn['train_size'], rn['img_size'], rn['recipe'].epochs, rn['method_overrides']) == (350, 10, 3, {})
        assert (vit['augment'], vit['method_overrides']) == ('none', {'lotus': {'alpha': 4.}})
        assert (benchmark_augment('outside', 'resnet18_small'), benchmark_augment('outside', 'vit_small')) == ('flip', 'none')
        assert BENCHMARK_DEFAULTS[('outside', 'vit')]['augment'] == 'none' and BENCHMARK_DEFAULTS['outside']['recipe'].batch_size == 32
        assert _shape(BenchmarkSpec('outside', 'resnet18_small'), None) == (350, 70, 7, 1, 10)      # the preview counts it from its registered sizes
        assert (STAND_INS['outside'], LABELS['outside']) == ('digits', 'Out-7')
        pb = PB('outside', 'resnet18')
        assert plan_benchmark(pb, 'paper').label == 'RN18 / Out-7'
        p = plan_benchmark(pb, 'embedded'); assert (p.spec.dataset, p.label) == ('digits', 'RN18-small / digits (for Out-7)')
    assert 'outside' not in BENCHMARK_DEFAULTS and 'outside' not in STAND_INS and 'outside' not in LABELS

def test_fashionmnist_dataset_and_benchmark_settings():
    "Fashion-MNIST loaded alone keeps its native 28 px and crop-and-flip augmentation; its embedded benchmark (the main job's) runs 2,500 images at 14 px without augmentation, both read from its one registration"
    from lotus_nb.running.benchmark import benchmark_defaults, benchmark_augment
    dd, b = dataset_defaults('fashionmnist'), benchmark_defaults('fashionmnist', 'resnet18_small')
    assert (dd.img_size, dd.augment) == (28, 'crop_flip')
    assert (b['train_size'], b['img_size'], b['augment'], benchmark_augment('fashionmnist', 'resnet18_small')) == (2_500, 14, 'none', 'none')
    assert (b['recipe'].epochs, b['recipe'].batch_size, b['recipe'].warmup, b['recipe'].schedule) == (25, 256, 2, 'cosine')

def test_imagenet_forget_rule_through_a_benchmark(tmp_path):
    "BenchmarkSpec.data_options reaches the loader: the authors' fixed forget set is one override away, with its own setup"
    from lotus_nb.running.benchmark import BenchmarkSpec, resolve_spec, prepare
    write_imagenet(tmp_path, n_classes=2, per_class=50, val_per_class=10)
    seeded = prepare(resolve_spec(BenchmarkSpec('imagenet', data_root=str(tmp_path))), ['lotus'])
    first = prepare(resolve_spec(BenchmarkSpec('imagenet', data_root=str(tmp_path), data_options={'forget_rule': 'first'})), ['lotus'])
    assert not np.array_equal(seeded.splits(3407).forget, seeded.splits(13).forget)
    assert np.array_equal(first.splits(3407).forget, first.splits(13).forget)
    assert seeded.setup['lotus'] != first.setup['lotus'], "the rule is part of the run's identity"
    assert seeded.cfgs['lotus'].batch_size == 256, "ImageNet: one batch size, 256, for every method"
    with pytest.raises(TypeError): prepare(resolve_spec(BenchmarkSpec('imagenet', data_root=str(tmp_path), data_options={'bogus': 1})), ['lotus'])

# hostile files

class Payload:
    "What a planted pickle holds: loading it calls `open(marker, 'w')`, and the marker file shows that code ran"
    def __init__(self, marker): self.marker = marker
    def __reduce__(self): return (open, (str(self.marker), 'w'))

@pytest.mark.parametrize('planted', ['data_batch_4', 'batches.meta'])
def test_cifar_pickle_payload_is_refused(tmp_path, planted):
    "A planted CIFAR pickle runs its code under a plain pickle.load; the reader refuses it, naming the file, before anything runs"
    write_cifar10(tmp_path, per_class=1, test_per_class=1)
    marker, raw = tmp_path/'ran', pickle.dumps({'data': Payload(tmp_path/'ran'), 'labels': [0]}, protocol=2)
    pickle.loads(raw)['data'].close(); assert marker.exists(); marker.unlink()          # the payload is live
    (tmp_path/'cifar-10-batches-py'/planted).write_bytes(raw)
    with pytest.raises(pickle.UnpicklingError, match=rf"{planted} is refused: it names \S*open, which CIFAR's files never hold"):
        load_dataset('cifar10', root=tmp_path, download=False)
    assert not marker.exists(), "the planted call ran"

def outside_image(tmp_path, like) -> Path:
    "A real image outside the dataset's tree, so that only the folder check can stop a reader from using it"
    p = tmp_path/'outside'/'elsewhere.JPEG'; p.parent.mkdir(); p.write_bytes(Path(like).read_bytes()); return p

@pytest.mark.parametrize('kind', ['dotdot', 'absolute'])
def test_tinyimagenet_annotation_outside_is_refused(tmp_path, kind):
    "val_annotations.txt naming a file outside val/images (through '..' or an absolute path) stops the load"
    write_tinyimagenet(tmp_path, n_classes=2, per_class=2, n_val=3)
    base = tmp_path/'tiny-imagenet-200'; ann = base/'val'/'val_annotations.txt'
    target = outside_image(tmp_path, base/'val'/'images'/'val_1.JPEG')
    bad = '../../../outside/elsewhere.JPEG' if kind == 'dotdot' else str(target)
    assert (base/'val'/'images'/bad).resolve() == target.resolve()                       # the entry does reach the file
    ann.write_text(ann.read_text().replace('val_0.JPEG', bad, 1))
    with pytest.raises(ValueError, match=r"val_annotations.txt names '.*elsewhere.JPEG', a path outside"):
        load_dataset('tinyimagenet', root=tmp_path, download=False)

def test_tinyimagenet_class_folder_outside_is_refused(tmp_path):
    write_tinyimagenet(tmp_path, n_classes=2, per_class=2, n_val=3)
    base = tmp_path/'tiny-imagenet-200'
    (tmp_path/'outside'/'images').mkdir(parents=True)
    (tmp_path/'outside'/'images'/'x.JPEG').write_bytes(next((base/'train').rglob('*.JPEG')).read_bytes())
    (base/'wnids.txt').write_text((base/'wnids.txt').read_text() + '../../outside\n')
    with pytest.raises(ValueError, match=r"wnids.txt names '../../outside', a path outside"): load_dataset('tinyimagenet', root=tmp_path, download=False)

@pytest.mark.parametrize('kind', ['dotdot', 'absolute'])
def test_mufac_csv_path_outside_is_refused(tmp_path, kind):
    "A MUFAC CSV naming an image outside its split's image folder stops the read"
    import pandas as pd
    write_mufac(tmp_path, n_train=16, n_val=10, n_test=10, forget_rows=6)
    base = tmp_path/MU.MUFAC_DIR; csv = base/'custom_val_dataset.csv'
    target = outside_image(tmp_path, next((base/'val_images').iterdir()))
    bad = '../../outside/elsewhere.JPEG' if kind == 'dotdot' else str(target)
    assert (base/'val_images'/bad).resolve() == target.resolve()
    df = pd.read_csv(csv); df.loc[0, 'image_path'] = bad; df.to_csv(csv, index=False)
    with pytest.raises(ValueError, match=r"custom_val_dataset.csv names '.*elsewhere.JPEG', a path outside"): MU.read_mufac_csv(base, 'val')

# the parts of the data package

def test_one_split_type():
    """Every split the package makes is one type, `Split`, whatever holds its items (tensors, files, a Dataset read or streamed); no other
    class of the package makes batches (defines `loader`), and no module above the data asks which source a split reads"""
    from torch.utils.data import TensorDataset, Subset, Dataset
    from lotus_nb.data.loaders import Split, device_splits, unseen_split
    from lotus_nb.data.user_data import as_split
    from lotus_nb.data.splits import make_splits
    d = D.load_dataset('digits')
    made = [*device_splits(d, make_splits(d.y_train, d.y_heldout, 0.1, seed=0)).values(), unseen_split(d)]
    t = TensorDataset(torch.randn(6, 1, 2, 2), torch.arange(6) % 2)
    class Plain(Dataset):   # read into memory, or streamed when asked
        def __len__(self): return 6
        def __getitem__(self, i): return t[i]
    made += [as_split(t), as_split(Subset(t, [1, 2])), as_split(Plain(), progress=False), as_split(Plain(), cache=False)]
    assert {type(s) for s in made} == {Split} and not isinstance(t, Split)
    assert {type(s.source).__name__ for s in made} == {'Tensors', 'Items'}
    pkg = Path(D.__file__).parent.parent
    trees = {p.relative_to(pkg).as_posix(): ast.parse(p.read_text()) for p in pkg.rglob('*.py')}
    loaders = [f"{p}:{c.name}" for p, t_ in trees.items() for c in ast.walk(t_)
               if isinstance(c, ast.ClassDef) and any(isinstance(f, ast.FunctionDef) and f.name == 'loader' for f in c.body)]
    assert loaders == ['data/loaders.py:Split'], loaders
    asks = [f"{p}:{n.lineno}" for p, t_ in trees.items() if not p.startswith('data/') for n in ast.walk(t_)
            if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == 'isinstance' and len(n.args) == 2
            and any(isinstance(a, ast.Name) and a.id in ('Tensors', 'Files', 'Items') for a in ast.walk(n.args[1]))]
    assert asks == [], f"a module above the data asks which source a split reads: {asks}"

def _imports_of(path: Path) -> set:
    "The lotus_nb modules `path` imports, anywhere in the file (the repository's one scanner: tools/import_graph.py)"
    return {d for d, _ in import_graph.arrows(path, import_graph.modules())}

def test_data_parts_import_one_way():
    "The data core imports no other lotus_nb module but the floors below it (registry, catalog, checks) (so no reader), nothing but tests and notebooks imports lotus_nb.core.testing"
    pkg = Path(D.__file__).parent.parent
    assert _imports_of(pkg/'data'/'datasets.py') == {'core.registry', 'core.catalog', 'core.checks'}   # Registry: the tables the readers fill (nbs/core/01_registry.ipynb); the loader its resolvers call (06_catalog); the checks of user input (02_checks)
    assert _imports_of(pkg/'core'/'registry.py') == set()            # which imports no lotus_nb module
    assert _imports_of(pkg/'core'/'checks.py') == set()              # nor do the checks
    importers = sorted(p.name for p in pkg.rglob('*.py') if p.parent != pkg and p.stem != 'testing' and 'core.testing' in _imports_of(p))
    assert importers == [], f"runtime modules import lotus_nb.core.testing: {importers}"
    code = ("import sys, lotus_nb.running.benchmark, lotus_nb.running.grid; from lotus_nb.data.datasets import list_datasets; "   # list_datasets loads every reader
            "names = ','.join(sorted(list_datasets())); print('lotus_nb.core.testing' in sys.modules, names)")
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'}, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ['False', 'cifake,cifar10,cifar100,digits,fashionmnist,imagenet,mufac,tinyimagenet'], res.stdout

def test_reference_outputs_take_a_users_datasets():
    "reference_outputs makes a user's Datasets splits once, as evaluate does: the same outputs as on the splits themselves"
    from torch.utils.data import TensorDataset
    from lotus_nb.data.user_data import as_split
    from lotus_nb.metrics.evaluation import reference_outputs
    torch.manual_seed(0)
    f, u = (TensorDataset(torch.randn(n, 1, 4, 4), torch.arange(n) % 3) for n in (5, 7))
    net = lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    gold, orig, rand = net(), net(), net()
    a = reference_outputs(f, u, gold, orig, rand, test=u)
    b = reference_outputs(as_split(f), as_split(u), gold, orig, rand, test=as_split(u))
    for k in ('gold_forget', 'orig_unseen', 'y_unseen', 'rand_forget', 'orig_test', 'y_test'):
        assert getattr(a, k) is not None and torch.equal(getattr(a, k), getattr(b, k)), k
