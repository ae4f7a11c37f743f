"""tools/paper_data.py, the paper's datasets at their sizes without the pixels: at a small --fraction it writes every
format, the package's loaders read each tree with the planned sizes and every label (`label_of`); at fraction 1 its plan
gives the registered sizes (MUFAC: the paper's cleaned sizes, ImageNet: the 60,000 images the benchmark reads). It
refuses, before any work, an unknown dataset and an --out holding data it did not write; it skips its own finished
output, rewrites an unfinished one, and rewrites one of other settings only with --replace."""
import json, os, sys
from pathlib import Path
import numpy as np, pytest, torch
from helpers import ROOT
sys.path.insert(0, str(ROOT/'tools'))
import paper_data as PD
from lotus_nb.data.datasets import load_dataset, dataset_defaults
from lotus_nb.core.testing import label_of, write_cifar10
from lotus_nb.data.mufac import MUFAC_CLEAN_SIZES
from lotus_nb.data.formats_folders import IMAGENET_FORGET, IMAGENET_RETAIN, IMAGENET_HELDOUT

FRACTION = 0.005   # CIFAR: 25 + 5 images per class; TinyImageNet: 2-3 per class; ImageNet: 5 classes of 60 images at about 400 x 350 px

@pytest.fixture(autouse=True)
def only_written_folders(tmp_path_factory, monkeypatch):
    "The loaders search only --out: $LOTUS_DATA and the cache point to an empty folder"
    empty = tmp_path_factory.mktemp('empty')
    monkeypatch.setenv('LOTUS_DATA', str(empty)); monkeypatch.setenv('XDG_CACHE_HOME', str(empty))

@pytest.fixture(scope='module')
def written(tmp_path_factory):
    pytest.importorskip('imagehash', reason='MUFAC needs the mufac extra')
    out = tmp_path_factory.mktemp('paper_data')/'data'
    summary = PD.main(['--out', str(out), '--fraction', str(FRACTION), '--workers', '1', '--verify', 'none'])
    return out, summary

def test_every_format_loads(written):
    "Each tree loads through load_dataset from --out, with the planned sizes and classes, and label_of reads every label"
    out, summary = written
    assert sorted(summary) == sorted(PD.TREES) and json.loads((out/PD.MARKER).read_text())['synthetic'] is True
    for name, tree in PD.TREES.items():
        m = json.loads((out/tree/PD.MARKER).read_text())
        assert m['complete'] and m['dataset'] == name and m['fraction'] == FRACTION and m['bytes'] > 0
        p = PD.plan(name, FRACTION, 0)
        d = load_dataset(name, root=out, download=False, **p.get('options', {}))
        assert (len(d.y_train), len(d.y_heldout), d.num_classes) == (p['expect']['train'], p['expect']['heldout'], p['expect']['classes']), name
        for x, y in ((d.x_train, d.y_train), (d.x_heldout, d.y_heldout)):
            if not len(y): continue
            if not isinstance(x, torch.Tensor):
                assert Path(x.paths[0]).is_relative_to(out), name
                x = x.load(num_workers=0)
            assert torch.equal(label_of(x), y), name
        if name == 'mufac': assert d.notes['cleaning'].after == p['expect']['cleaned']
    dd = dataset_defaults('cifar100')
    per_class = round(dd.train_images/dd.num_classes*FRACTION)                      # the registered sizes, scaled per class
    assert np.bincount(load_dataset('cifar100', root=out).y_train).tolist() == [per_class]*dd.num_classes

def test_the_paper_named_classes_resolve(written):
    """The classes the paper forgets by name (tab:class: TinyImageNet's pizza, CIFAR-100's beaver) are named so in the
    written trees, and each class-unlearning benchmark of the paper resolves its class there (the whole-paper rehearsal
    stopped on 'unknown class pizza' before)"""
    from lotus_nb.data.splits import resolve_class
    from lotus_nb.paper.paper_plan import PAPER_BENCHMARKS
    out, _ = written
    assert {n: set(v.values()) for n, v in PD.NAMED.items()} == PD.paper_named_classes()
    for pb in PAPER_BENCHMARKS['tab:class']:
        d = load_dataset(pb.dataset, root=out, download=False)
        k = resolve_class(d, pb.forget_class)
        assert d.classes[k] == pb.forget_class and PD.NAMED[pb.dataset][k] == pb.forget_class
        assert sum(c == pb.forget_class for c in d.classes) == 1, pb

def test_images_differ_within_a_class(written):
    "Per-image noise and band offsets: two images of one class differ in their bands, not only in the random bottom quarter"
    out, _ = written
    d = load_dataset('cifar10', root=out)
    a, b = d.x_train[d.y_train == 3][:2]
    assert (a[:, :24] != b[:, :24]).float().mean() > 0.5

def test_rerun_skips_its_own_output(written):
    out, _ = written
    f = out/'cifar-10-batches-py'/'data_batch_1'; before = f.stat().st_mtime_ns
    PD.main(['--out', str(out), '--fraction', str(FRACTION), '--datasets', 'cifar10', 'cifake', '--verify', 'none'])
    assert f.stat().st_mtime_ns == before

def test_full_size_plan():
    "At fraction 1: the registered sizes; MUFAC's planted copies leave the paper's cleaned sizes; ImageNet's 60,000 images"
    for name in ('cifar10', 'cifar100', 'tinyimagenet', 'cifake'):
        dd, p = dataset_defaults(name), PD.plan(name, 1, 0)
        assert (p['expect']['train'], p['expect']['heldout'], p['expect']['classes']) == (dd.train_images, dd.heldout_images, dd.num_classes), name
    mu = PD.plan('mufac', 1, 0)
    assert mu['expect']['cleaned'] == MUFAC_CLEAN_SIZES and mu['images'] == dataset_defaults('mufac').train_images + dataset_defaults('mufac').heldout_images
    inet = PD.plan('imagenet', 1, 0)
    assert inet['images'] == dataset_defaults('imagenet').num_classes*(IMAGENET_FORGET + IMAGENET_RETAIN + 2*IMAGENET_HELDOUT) == 60_000
    assert PD.plan('tinyimagenet', 1, 0)['images'] == 120_000   # 100,000 train, 10,000 val, 10,000 unlabelled test, as in the zip

def test_refuses_real_data(tmp_path):
    "An --out holding a dataset tree without the marker (here a CIFAR-10 tree) is refused before anything is written"
    write_cifar10(tmp_path)
    with pytest.raises(SystemExit, match=r'holds cifar-10-batches-py, which tools/paper_data.py did not write'):
        PD.main(['--out', str(tmp_path), '--datasets', 'cifake', '--fraction', '0.01'])
    assert sorted(p.name for p in tmp_path.iterdir()) == ['cifar-10-batches-py'] and not (tmp_path/'cifar-10-batches-py'/PD.MARKER).exists()
    (tmp_path/'cifar-10-batches-py'/PD.MARKER).write_text('{"synthetic": false}')   # a marker that is not the tool's
    with pytest.raises(SystemExit, match='did not write'): PD.main(['--out', str(tmp_path), '--datasets', 'cifake', '--fraction', '0.01'])
    (tmp_path/'notes.txt').write_text('x')
    with pytest.raises(SystemExit, match='notes.txt'): PD.main(['--out', str(tmp_path/'notes.txt')])

def test_bad_input(tmp_path):
    "Unknown names are named with the valid ones; bad numbers refused; nothing written"
    for args, msg in ((['--datasets', 'cifar10', 'svhn'], "unknown dataset 'svhn'; valid: cifar10, cifar100, tinyimagenet, mufac, imagenet, cifake"),
                      (['--fraction', '1.5'], r'--fraction 1.5: a share in \(0, 1\]'), (['--workers', '0'], '--workers 0: at least 1')):
        with pytest.raises(SystemExit, match=msg): PD.main(['--out', str(tmp_path/'out'), *args])
    assert not (tmp_path/'out').exists()

def test_other_settings_and_unfinished(tmp_path):
    "A tree of other settings is kept unless --replace; an unfinished one (complete false) is written again"
    out = tmp_path/'d'; args = ['--out', str(out), '--datasets', 'cifar10', '--verify', 'sample']
    PD.main(args + ['--fraction', '0.002'])
    with pytest.raises(SystemExit, match='written with other settings'): PD.main(args + ['--fraction', '0.004'])
    assert json.loads((out/'cifar-10-batches-py'/PD.MARKER).read_text())['expect']['train'] == 100
    PD.main(args + ['--fraction', '0.004', '--replace'])
    m = json.loads((out/'cifar-10-batches-py'/PD.MARKER).read_text()); assert m['expect']['train'] == 200 and m['verified']['labels_wrong'] == 0
    m['complete'] = False; (out/'cifar-10-batches-py'/PD.MARKER).write_text(json.dumps(m))
    f = out/'cifar-10-batches-py'/'data_batch_1'; f.write_bytes(b'truncated')
    PD.main(args + ['--fraction', '0.004'])
    assert len(load_dataset('cifar10', root=out).y_train) == 200 and json.loads((out/'cifar-10-batches-py'/PD.MARKER).read_text())['complete']

def test_workers_write_the_same_files(tmp_path):
    "Two processes write the same bytes as one (each image has its own seed)"
    for w in ('1', '2'): PD.main(['--out', str(tmp_path/w), '--datasets', 'tinyimagenet', '--fraction', '0.002', '--workers', w, '--verify', 'none'])
    files = sorted(p.relative_to(tmp_path/'1') for p in (tmp_path/'1').rglob('*.JPEG'))
    assert len(files) == 200*1 + 200 + 20
    assert all((tmp_path/'1'/f).read_bytes() == (tmp_path/'2'/f).read_bytes() for f in files)

@pytest.mark.parametrize('name,side,first,classes,least', [('cifar100', 32, 0, 20, 0.35), ('tinyimagenet', 64, 150, 20, 0.35), ('mufac', 128, 0, 8, 0.5)])
def test_learnable_at_each_resolution(name, side, first, classes, least):
    """The tool's images (its noise and jitter at each dataset's side; from label 150 on, the third digit in blue) carry a
    signal a linear probe learns: 400 training images, 200 test, 8 x 8 pooled pixels. Measured over 5 draws: 0.56-0.62
    (CIFAR-100's side), 0.58-0.70 (TinyImageNet's), 0.77-0.88 (MUFAC's); chance 0.05, 0.05, 0.125. `least` is 7x and 4x chance."""
    from sklearn.linear_model import LogisticRegression
    import torch.nn.functional as F
    from lotus_nb.core.testing import label_image
    y = np.random.RandomState(0).randint(0, classes, 600) + first
    x = torch.from_numpy(np.stack([label_image(int(l), side, i, None, PD.NOISE[name], PD.JITTER) for i, l in enumerate(y)])).permute(0, 3, 1, 2)
    assert torch.equal(label_of(x), torch.as_tensor(y))
    f = F.adaptive_avg_pool2d(x.float()/255, 8).flatten(1).numpy()
    assert LogisticRegression(max_iter=1000).fit(f[:400], y[:400]).score(f[400:], y[400:]) >= least
