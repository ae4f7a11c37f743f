"Hugging Face `datasets.Dataset`s are accepted wherever a torch Dataset is: the same unlearning as on tensors, images saved to disk, splits as views"
import warnings
import numpy as np, pytest, torch
from torch.utils.data import TensorDataset
datasets = pytest.importorskip('datasets')
from PIL import Image
from torchvision.transforms import ToTensor
from lotus_nb.methods.lotus import lotus_unlearn
from lotus_nb.metrics.evaluation import evaluate

def _mlp(d_in, k=3):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(d_in, 16), torch.nn.ReLU(), torch.nn.Linear(16, k))

def _unlearned(net, *sets):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')   # untrained model: MemorisationWarning
        return lotus_unlearn(net, *sets, progress=False, epochs=2, seed=1)[0].state_dict()

def _same(a, b): return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

def test_from_dict_unlearns_as_tensors():
    "lotus_unlearn on from_dict splits (any format) gives, bit for bit, the weights it gives on the same data as TensorDatasets"
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(60, 2, 3, 3, generator=g), torch.randint(0, 3, (60,), generator=g)
    net = _mlp(18)
    ref = _unlearned(net, TensorDataset(x[:15], y[:15]), TensorDataset(x[15:45], y[15:45]), TensorDataset(x[45:], y[45:]))
    ds = datasets.Dataset.from_dict({'pixels': x.numpy(), 'target': y.numpy()})   # found by feature: the array and the integer 'target'
    for d in (ds, ds.with_format('torch')):
        assert _same(ref, _unlearned(net, d.select(range(15)), d.select(range(15, 45)), d.select(range(45, 60))))
    assert not torch.equal(ref['1.weight'], net.state_dict()['1.weight'])

@pytest.fixture(scope='module')
def saved(tmp_path_factory):
    "(an Image + ClassLabel dataset written with save_to_disk and loaded with load_from_disk, its images as ToTensor gives them, its labels)"
    rng = np.random.default_rng(0)
    pics = [Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)) for _ in range(60)]
    labels = [i % 3 for i in range(60)]
    feats = datasets.Features({'img': datasets.Image(), 'cls': datasets.ClassLabel(names=['a', 'b', 'c']), 'row': datasets.Value('int64')})
    path = tmp_path_factory.mktemp('hf')/'pics'
    datasets.Dataset.from_dict({'img': pics, 'cls': labels, 'row': list(range(60))}, features=feats).save_to_disk(str(path))
    return datasets.load_from_disk(str(path)), torch.stack([ToTensor()(p) for p in pics]), torch.tensor(labels)

def test_saved_images_evaluate_and_unlearn(saved):
    "train_test_split halves of a dataset on disk serve as forget/retain/unseen/test: evaluate and lotus_unlearn give what they give on the tensors"
    ds, x, y = saved
    parts = ds.train_test_split(test_size=0.5, seed=0)
    held = parts['test'].train_test_split(test_size=0.5, seed=1)
    seen = parts['train'].train_test_split(test_size=0.3, seed=2)
    sets = dict(forget=seen['test'], retain=seen['train'], unseen=held['train'], test=held['test'])
    tens = {k: TensorDataset(x[torch.tensor(d['row'][:])], y[torch.tensor(d['row'][:])]) for k, d in sets.items()}   # the same rows as tensors
    for k in sets: assert torch.equal(tens[k].tensors[1], torch.tensor(sets[k]['cls'][:]))
    net = _mlp(3*8*8)
    a, b = evaluate(net, **sets), evaluate(net, **tens)
    assert a == b and {'acc_forget', 'acc_unseen', 'mia'} <= set(a), (a, b)
    assert _same(_unlearned(net, sets['forget'], sets['retain'], sets['unseen']), _unlearned(net, tens['forget'], tens['retain'], tens['unseen']))

def test_overlapping_views_refused(saved):
    "Views of a dataset on disk that share rows are refused by position, parts of an in-memory one by content; the message names both sets"
    ds, x, y = saved
    net = _mlp(3*8*8)
    with pytest.raises(ValueError, match=r'the forget and unseen sets share 4 items \(the same positions of one dataset\)'):
        evaluate(net, forget=ds.select(range(10)), retain=ds.select(range(10, 40)), unseen=ds.select([6, 7, 8, 9, 50, 51]), test=ds.select(range(52, 60)))
    with pytest.raises(ValueError, match=r'the forget and retain sets share 5 items \(the same positions of one dataset\)'):
        lotus_unlearn(net, ds.select(range(20)).shuffle(seed=3), ds.select(range(15, 40)), ds.select(range(40, 60)), progress=False)
    mem = datasets.Dataset.from_dict({'image': x.numpy(), 'label': y.numpy()})        # in memory: no positions, compared by content
    with pytest.raises(ValueError, match=r'the forget and retain sets share 3 items by content'):
        lotus_unlearn(net, mem.select(range(10)), mem.select(range(7, 40)), mem.select(range(40, 60)), progress=False)
