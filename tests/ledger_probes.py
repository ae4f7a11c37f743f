"""The probes of the deviations ledger's switches (nbs/paper/90_deviations.ipynb): for every ledger row that offers a switch, a
function that applies it and returns what the row's value or behaviour is without and with it. They run the package's
higher modules (metrics, methods, training, the runner's resolution of a benchmark, the paper tables), so they live
here, with the tests, and not in `lotus_nb.paper.deviations`, which holds the ledger as data: `check_switches(switch_probes())`
runs them, in tests/test_deviations.py (the chapter imports nothing from the tests)."""
from __future__ import annotations
import tempfile, warnings
from pathlib import Path
import numpy as np, pandas as pd, torch, torch.nn as nn
from torch.utils.data import TensorDataset, Subset
from PIL import Image
from lotus_nb.paper.deviations import Deviation, stand_in_rows
from lotus_nb.data.datasets import ImageData, load_dataset
from lotus_nb.data.splits import dataset_splits, validation_splits, split_rule
from lotus_nb.models.architectures import create_model, model_arch, model_input_size
from lotus_nb.core.device import precision, precision_of, autocast
from lotus_nb.models.training import RECIPES, OUR_RECIPES, Recipe, recipe_from, lr_schedule, fit, val_loss_of
from lotus_nb.methods.base import UnlearnTask, method_config
from lotus_nb.models.model_checks import MemorisationWarning
from lotus_nb.metrics.evaluation import evaluate, jsd, rf_jsd, zrf, mia_entropy
from lotus_nb.methods.lotus import lotus_unlearn, authors_stop_reached
from lotus_nb.data.loaders import Split, Tensors
from lotus_nb.models.loops import predict
from lotus_nb.methods.base import unlearn
from lotus_nb.metrics.evaluation import Reference
from lotus_nb.running.runner import SeedContext, eval_unseen_of
from types import SimpleNamespace
from lotus_nb.methods.unsir import error_maximizing_noise, impair_epoch
from lotus_nb.running.benchmark import BenchmarkSpec, resolve_spec, method_overrides, benchmark_defaults, benchmark_augment
from lotus_nb.running.benchmark_spec import step_budget, step_scale, paper_scale, budget_share
from lotus_nb.paper.paper_tables import table_avg_gap_authors, table_avg_gap
from lotus_nb.metrics.report import EXTRA_ROWS, OURS_AVG_GAP, as_logged
from lotus_nb.paper.paper_plan import PAPER_BENCHMARKS, PB, SYNTHETIC_UNSEEN, plan_benchmark
from lotus_nb.paper.paper_tables import pcc_jsd_rf_authors, pcc_jsd_rf, PCC_METHODS

def _cfg(method:str, arch:str='resnet', kind:str='instance', **over): # a registered method; its config with `over` applied
    return method_config(method, arch, kind, **over)

def config_probe(method:str,           # registry name of the method whose config the switch changes
                 kind:str='instance',  # 'instance' or 'class' unlearning
                 arch:str='resnet',    # 'resnet' or 'vit'
                 **switch):            # the row's switch: config fields and the values that restore the other behaviour
    "A probe of a config switch: the fields `switch` names, by default and with `switch` applied"
    def probe():
        d, s = _cfg(method, arch, kind), _cfg(method, arch, kind, **switch)
        return {k: getattr(d, k) for k in switch}, {k: getattr(s, k) for k in switch}
    return probe

def _probs(n:int=60, k:int=7, seed:int=0): # two N x K probability matrices (confident rows) and N labels
    g = torch.Generator().manual_seed(seed)
    p, q = [(torch.randn(n, k, generator=g)*3).softmax(-1) for _ in range(2)]
    return p, q, torch.arange(n) % k

def flip_sets():
    "A fixed linear model and four disjoint splits of random 8x8 images augmented by flips, labelled by the model's own clean predictions"
    g = torch.Generator().manual_seed(0); x = torch.randint(0, 256, (90, 1, 8, 8), generator=g, dtype=torch.uint8)
    torch.manual_seed(0); m = nn.Sequential(nn.Flatten(), nn.Linear(64, 4))
    y = predict(m, Split(Tensors(x, torch.zeros(90, dtype=torch.long)), np.arange(90)))[0].argmax(1)   # clean accuracy 1 by construction
    src = Tensors(x, y); sp = lambda a, b: Split(src, np.arange(a, b), augment='flip')
    return m, dict(forget=sp(0, 30), retain=sp(30, 60), test=sp(60, 75), unseen=sp(75, 90))

def mia_sets(synthetic:bool=False): # a model that passes its inputs through: the entropy of each set is set by how peaked its rows are
    rng = np.random.RandomState(7)
    def rows(n, lo, hi):
        x = rng.randn(n, 5)*0.3; x[np.arange(n), rng.randint(0, 5, n)] += rng.uniform(lo, hi, n)
        return TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(rng.randint(0, 5, n)))
    ident = nn.Linear(5, 5, bias=False); nn.init.eye_(ident.weight)
    sets = dict(forget=rows(300, 0, 8), retain=rows(600, 5, 8), test=rows(300, 0, 3), unseen=rows(300, 2, 5))
    return (ident, sets, rows(300, 6, 8)) if synthetic else (ident, sets)   # a synthetic D_u of confident rows, unlike the held-out one

def bn_net(): # a small convolutional network with BatchNorm, in eval mode, for flip_sets' 8 x 8 images
    torch.manual_seed(0)
    layers = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 4)
    return nn.Sequential(*layers).eval()

def _metric_probes() -> dict:
    "Probes of the metric switches: each metric by default and switched, on the same fixed outputs"
    p, q, y = _probs()
    def mia_mode(mode):   # a BatchNorm network's Finetuning row, scored by the runner's SeedContext: its statistics moved? its MIA
        m, s = bn_net(), flip_sets()[1]; before = m[1].running_mean.clone()
        mia = SeedContext(s, None, None, SimpleNamespace(seed=0), Reference(), mia_mode=mode).evaluate(m, 'finetune')['mia']
        return not torch.equal(before, m[1].running_mean), round(float(mia), 4)
    def smallest_batch(mode):   # the smallest batch a forward pass of evaluate gives the model (flip_sets: 15 to 30 images a set)
        m, seen = bn_net(), []; h = m.register_forward_hook(lambda mod, i, o: seen.append(len(i[0])))
        try: evaluate(m, **flip_sets()[1], mia_mode=mode, check_sets=False)
        finally: h.remove()
        return min(seen)
    def mia():
        m, s = mia_sets(); return evaluate(m, **s)['mia'], evaluate(m, **s, mia_nonmember='unseen')['mia']
    def mia_c():
        r = np.random.RandomState(0); mem, non = r.gamma(2, 0.1, 40), r.gamma(2, 0.1, 15) + 0.6*r.rand(15); grid = np.arange(0.2, 0.5, 1e-4)
        return mia_entropy(mem, non, grid), mia_entropy(mem, non, grid, C=1.)
    def eval_unseen():   # the entropy MIA of one model through the runner's SeedContext, its D_u chosen by the switch
        m, s, synth = mia_sets(synthetic=True)
        def mia(how):
            u = eval_unseen_of(how, s, synth)
            return SeedContext(s, m, None, SimpleNamespace(seed=0), Reference(), unseen_eval=None if u is s['unseen'] else u).evaluate(m)['mia']
        return mia('methods'), mia('heldout')
    return {('Metrics', 'JSD formula'): lambda: (jsd(p, q), jsd(p, q, authors=True)),
            ('Metrics', 'RF-JSD scale and reference set'): lambda: (rf_jsd(p, y, q, y), rf_jsd(p, y, q, y, authors=True)),
            ('Metrics', 'ZRF'): lambda: (zrf(p, q), zrf(p, q, authors=True)),
            ('Metrics', "entropy MIA's non-members"): mia,
            ('Metrics', "entropy MIA's logistic regression"): mia_c,
            ('Metrics', "the metrics' D_u with a synthetic D_u"): eval_unseen,
            ('Metrics', 'model mode during evaluation'): lambda: (mia_mode('eval'), mia_mode('authors')),
            ('Metrics', 'batch size of metric passes'): lambda: (smallest_batch('eval'), smallest_batch('authors')),
            ('Metrics', 'images the metrics score'): lambda: (lambda m, s: (evaluate(m, **s)['acc_forget'], evaluate(m, **s, augmented=('forget', 'retain'))['acc_forget']))(*flip_sets())}

def _setup_probes() -> dict:
    "Probes of the set-up switches: the network, the augmentation, the recipe and the kept weights"
    def lrs(recipe, epochs=40):   # the learning rate of each of the first epochs, one step an epoch
        opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=recipe.lr); per_step, per_epoch = lr_schedule(opt, 1, recipe); out = []
        for _ in range(min(epochs, recipe.epochs)):
            out.append(round(opt.param_groups[0]['lr'], 6)); opt.step()
            for s in (per_step, per_epoch):
                if s is not None: s.step()
        return tuple(out)
    def kept(keep):               # the epoch whose weights fit returns, when the validation loss rises from the first epoch on
        torch.manual_seed(0); x, yy = torch.randn(64, 8), torch.randint(0, 4, (64,))
        m = nn.Linear(8, 4); r = Recipe(epochs=5, batch_size=16, lr=0.5, warmup=1, patience=10, schedule='constant', keep=keep)
        return fit(m, TensorDataset(x, yy), r, val=TensorDataset(x, (yy + 1) % 4), progress=False)['kept_epoch']
    pool = lambda name: type(create_model(name, 10).maxpool).__name__
    def vit(name):                # every LayerNorm's eps, and whether the new head's bias is zero
        m = create_model(name, 10, pretrained=False)
        return {x.eps for x in m.modules() if isinstance(x, nn.LayerNorm)}, bool(m.head.bias.abs().max() == 0)
    v = torch.arange(1., 11.); lp, one = torch.stack([torch.log1p(-torch.exp(-v)), -v], 1), torch.ones(10, dtype=torch.long)   # losses 1, ..., 10 on label 1
    def retain_counts(**kw):      # the class counts of LoTUS's retain subset of a 4-class D_r of 100 (25 each), the seed fixed
        g = torch.Generator().manual_seed(0)
        forget, retain = (TensorDataset(torch.randn(n, 3, generator=g), torch.arange(n) % 4) for n in (8, 100))
        return tuple(np.bincount(UnlearnTask(forget, retain, seed=3, **kw).retain_subset().labels.numpy(), minlength=4).tolist())
    def vit_mufac(augment='default'):   # a ViT's first MUFAC training batch (four 8 x 8 checkerboards): its mean pixel
        kind, size = benchmark_augment('mufac', 'vit_b_16', augment), model_input_size('vit_b_16')
        board = ((torch.arange(8)[:, None] + torch.arange(8)) % 2*255).to(torch.uint8).expand(4, 3, 8, 8).clone()
        split = Split(Tensors(board, torch.zeros(4, dtype=torch.long)), np.arange(4), kind, size=size)
        xb = next(iter(split.loader(4, train=True, seed=1)))[0]
        return kind, round(float(xb.mean()), 4)
    def numerics(mode):           # what a pass on CUDA would run in, and whether a bf16 region would be built (building one without CUDA only warns)
        with precision(mode), warnings.catch_warnings():
            warnings.simplefilter('ignore'); return precision_of('cuda'), isinstance(autocast('cuda'), torch.autocast)
    return {('Models', 'ResNet18 network'): lambda: (pool('resnet18'), pool('resnet18_tv')),
            ('Data', 'CIFAR-10/100 augmentation, ResNet18'): lambda: (benchmark_augment('cifar10', 'resnet18'), benchmark_augment('cifar10', 'resnet18', 'crop_flip')),
            ('Data', 'CIFAR-10/100 augmentation, ViT'): lambda: (benchmark_augment('cifar100', 'vit_b_16'), benchmark_augment('cifar100', 'vit_b_16', 'crop_flip')),
            ('Data', 'MUFAC with ViT: order of resize and augmentation'): lambda: (vit_mufac(), vit_mufac('mufac_resized')),
            ('Data', 'TinyImageNet augmentation, ResNet18'): lambda: (benchmark_augment('tinyimagenet', 'resnet18'), benchmark_augment('tinyimagenet', 'resnet18', 'flip')),
            ('Training', 'recipe of f_orig and f_gold, ResNet18'): lambda: (lrs(RECIPES['resnet']), lrs(OUR_RECIPES['resnet'])),
            ('Training', 'recipe of f_orig and f_gold, ViT'): lambda: (lrs(RECIPES['vit']), lrs(OUR_RECIPES['vit'])),
            ('Training', 'weights kept after early stopping'): lambda: (kept('last'), kept(recipe_from({'keep': 'best'}, RECIPES['resnet']).keep)),
            ('Models', 'ViT-B/16 head and LayerNorm eps'): lambda: (vit('vit_b_16'), vit('vit_b_16_timm')),
            ('Precision', 'numerics on CUDA'): lambda: (numerics(None), numerics('bf16')),
            ('Training', 'validation loss of early stopping'): lambda: tuple(round(val_loss_of(lp, one, 4, r.val_loss), 4) for r in (RECIPES['resnet'], recipe_from({'val_loss': 'samples'}, RECIPES['resnet']))),
            ('Data', 'the retain subset of LoTUS and Bad Teacher'): lambda: (retain_counts(), retain_counts(retain_draw='stratified'))}

def _method_probes() -> dict:
    "Probes of the methods' switches: config values, and the behaviour where a config value alone would prove little"
    def stops():   # over the 100 one-point gaps (acc_forget one point below acc_unseen): how many epochs would end the run
        fires = sum(authors_stop_reached(i/100, (i+1)/100) for i in range(100))
        return (_cfg('lotus').authors_stop, 0), (_cfg('lotus', authors_stop=True).authors_stop, fires)
    def noise(**kw):   # UNSIR's noise optimisation: the number of Adam steps, and whether BatchNorm's running mean moved
        torch.manual_seed(0); m, x = create_model('resnet18_tiny', 10, 1).eval(), torch.randn(8, 1, 8, 8)
        lo, hi = torch.full((1, 1, 1, 1), -3.), torch.full((1, 1, 1, 1), 3.); before = m.bn1.running_mean.clone()
        steps = error_maximizing_noise(m, x, lo, hi, **kw)[1]
        return steps, not torch.equal(before, m.bn1.running_mean)
    def pairs(full):   # UNSIR's impair pass over one retain batch of 4 and one forget batch of 3: the pairs it impairs on
        torch.manual_seed(0); m = create_model('resnet18_tiny', 10, 1); opt = torch.optim.SGD(m.parameters(), lr=0.)
        lo, hi = torch.full((1, 1, 1, 1), -3.), torch.full((1, 1, 1, 1), 3.)
        rb, fb = [(torch.randn(4, 1, 8, 8), torch.arange(4))], [(torch.randn(3, 1, 8, 8), torch.arange(3))]
        return len(impair_epoch(m, rb, fb, opt, lo, hi, noise_steps=1, full=full)['noise_steps'])
    def forget_acc(**kw):   # the first epoch's forget accuracy (the one tau_d reads) of LoTUS on flip-augmented sets where the clean accuracy is 1
        m, s = flip_sets(); task = UnlearnTask(s['forget'], s['retain'], s['unseen'])
        return unlearn('lotus', m, task, progress=False, epochs=1, **kw).record['trace'][0]['acc_forget']
    def ssd_run(**kw):   # SSD on flip-augmented sets: how many entries it dampens, and the sum of the dampened weights
        m, s = flip_sets(); res = unlearn('ssd', m, UnlearnTask(s['forget'], s['retain'], s['unseen']), progress=False, **kw)
        return res.record['selected'], round(sum(float(p.detach().sum()) for p in res.model.parameters()), 6)
    def masked_run(method, **kw):   # SalUn or LoTUS+SalUn, one shuffled epoch on flip-augmented sets: the sum of the trained weights
        m, s = flip_sets(); task = UnlearnTask(s['forget'], s['retain'], s['unseen'])
        over = dict(passes='shuffled', weight_decay=0.) if method == 'salun' else dict(weight_decay=0.)
        res = unlearn(method, m, task, progress=False, epochs=1, mask_fraction=0.3, **over, **kw)
        return round(sum(float(p.detach().sum()) for p in res.model.parameters()), 6)
    def unsir_run(**kw):   # UNSIR, two rounds on flip-augmented sets in batches of 8: the norm of the trained weights
        m, s = flip_sets(); task = UnlearnTask(s['forget'], s['retain'], s['unseen'])
        res = unlearn('unsir', m, task, progress=False, epochs=2, batch_size=8, **kw)
        return round(float(torch.cat([p.detach().flatten() for p in res.model.parameters()]).norm()), 6)
    def bad_teacher_run(**kw):   # Bad Teacher, one epoch on flip-augmented sets in batches of 8: the norm of the trained weights
        m, s = flip_sets(); task = UnlearnTask(s['forget'], s['retain'], s['unseen'])
        res = unlearn('bad_teacher', m, task, progress=False, epochs=1, batch_size=8, **kw)
        return round(float(torch.cat([p.detach().flatten() for p in res.model.parameters()]).norm()), 6)
    def neggrad_run(**kw):   # NegGrad+, one epoch on flip-augmented sets in batches of 8: the norm of the trained weights
        m, s = flip_sets(); task = UnlearnTask(s['forget'], s['retain'], s['unseen'])
        res = unlearn('neggrad_plus', m, task, progress=False, epochs=1, batch_size=8, **kw)
        return round(float(torch.cat([p.detach().flatten() for p in res.model.parameters()]).norm()), 6)
    c = config_probe
    mask_switch = lambda method: lambda: (masked_run(method), masked_run(method, mask_images='augmented'))
    return {('SalUn', 'images of the saliency mask'): mask_switch('salun'),
            ('LoTUS+SalUn', 'images of the saliency mask'): mask_switch('lotus_salun'),
            ('LoTUS', 'images of the forget accuracy in tau_d'): lambda: (forget_acc(), forget_acc(forget_acc='clean')),
            ('SSD', 'batches of the importance passes'): lambda: (ssd_run(), ssd_run(batches='authors')),
            ('SSD', 'how often dampening is applied'): lambda: (ssd_run(alpha=2.), ssd_run(alpha=2., repeats=10)),   # alpha 10: none
            ('UNSIR', 'Adam steps on each noise batch'): lambda: (noise()[0], noise(steps=1)[0]),
            ('LoTUS', 'rounding and early stop'): stops,
            ('SalUn', 'learning rate'): c('salun', lr=0.1), ('SalUn', 'mask fraction k'): c('salun', mask_fraction=0.5),
            ('LoTUS+SalUn', 'mask fraction k'): c('lotus_salun', mask_fraction=0.5),
            ('LoTUS+SalUn', 'class-unlearning target and alpha'): c('lotus_salun', 'class', class_unlearning=True, alpha=32.),
            ('LoTUS+SalUn', 'ViT learning rate'): c('lotus_salun', arch='vit', lr=1e-4),
            ('Random Labeling', 'how forget and retain are passed over'): c('random_label', passes='shuffled'),
            ('UNSIR', 'schedule and momentum'): c('unsir', epochs=2, momentum=0.),
            ('UNSIR', "the model's mode while the noise is optimised"): lambda: (noise()[1], noise(mode='eval')[1]),
            ('UNSIR', 'batch size'): c('unsir', arch='vit', batch_size=32),
            ('UNSIR', 'retain sample'): c('unsir', retain_per_class=50),
            ('UNSIR', 'pairs of retain and forget batches'): lambda: (pairs(None), pairs(4)),
            ('UNSIR', 'augmentation of the retain sample'): lambda: (unsir_run(), unsir_run(retain_augment='once')),
            ('Bad Teacher', 'shuffling of the batches'): lambda: (bad_teacher_run(), bad_teacher_run(order='blocks')),
            ('SSD', 'batch size of the importance passes'): c('ssd', batch_size=256),
            ('LoTUS', 'alpha in class unlearning'): c('lotus', 'class', alpha=2.),
            ('SCRUB', 'weight decay, max steps, retain-KL weight'): c('scrub', weight_decay=0.1, msteps=10, alpha=1.),
            ('SCRUB', 'msteps, lr milestones, temperature'): c('scrub', lr_decay=1.),
            ('NegGrad+', 'beta'): c('neggrad_plus', beta=0.5),
            ('NegGrad+', 'gradient ascent on the forget set'): lambda: (neggrad_run(), neggrad_run(loop='authors')),
            ('Bad Teacher', 'the incompetent teacher'): c('bad_teacher', arch='vit', teacher='random')}

def _benchmark_probes() -> dict:
    "Probes of the benchmark-level switches: data rules, per-benchmark overrides, the aggregation, tuning's sets, the set checks"
    def imagenet():   # the first forget set of a small ImageNet tree (2 classes of 50 training images), drawn by seed (ours) and by the authors' rule
        with tempfile.TemporaryDirectory() as root:
            for split, n in (('train', 50), ('val', 10)):
                for w in ('n01', 'n02'):
                    (Path(root)/'imagenet'/split/w).mkdir(parents=True)
                    for i in range(n): Image.new('RGB', (4, 4), (i, 0, 0)).save(Path(root)/'imagenet'/split/w/f'{w}_{i:03d}.png')
            f = lambda **o: tuple(dataset_splits(load_dataset('imagenet', root=root, img_size=8, **o), 0.1, 13).forget.tolist())
            return f(), f(forget_rule='first')
    def pipelines(**o):   # mean |difference| (grey levels) of the first training image as the unlearned rows and as the Original row see it, on a small ImageNet tree of 40 x 60 photos
        with tempfile.TemporaryDirectory() as root:
            rng = np.random.RandomState(0)
            for split, n in (('train', 50), ('val', 10)):
                for w in ('n01', 'n02'):
                    (Path(root)/'imagenet'/split/w).mkdir(parents=True)
                    for i in range(n): Image.fromarray(rng.randint(0, 256, (40, 60, 3), dtype=np.uint8)).save(Path(root)/'imagenet'/split/w/f'{w}_{i:03d}.png')
            d = load_dataset('imagenet', root=root, **o)
            seen = (d.views or {}).get('original', (d.x_train,))[0]
            return round(float((d.x_train[0].float() - seen[0].float()).abs().mean()), 2)
    def overridden(dataset, method, field, value, **spec):   # a config field as the runner resolves it for `dataset`'s benchmark (of `spec`), by default and overridden
        kind = lambda s: 'instance' if s.forget_class is None else 'class'
        f = lambda **o: (lambda s: getattr(method_config(method, model_arch(s.model), kind(s), **method_overrides(s, [method])[method]), field))(resolve_spec(BenchmarkSpec(dataset, **spec, **o)))
        return f(), f(method_overrides={method: {field: value}})
    def per_seed_rows():   # two seeds where LoTUS's per-seed gaps and its gap of rounded means disagree
        return pd.DataFrame(dict(method=['gold', 'gold', 'lotus', 'lotus', 'scrub', 'scrub'], seed=[1, 2]*3, mia=[.5, .5, .45, .55, .5, .56],
                                 acc_forget=.8, acc_retain=.9, acc_test=.8, jsd_authors=[0, 0, 1e-5, 3e-5, 2e-5, 2e-5],
                                 rf_jsd_authors=[1e-5, 1e-5, 2e-5, 2e-5, 3e-5, 3e-5], avg_gap=[0, 0, .0125, .0125, 0, .015], time_min=.1))
    def aggregation():
        r = per_seed_rows()
        return table_avg_gap_authors(r).loc['Avg Gap', 'LoTUS'], table_avg_gap(r, EXTRA_ROWS).loc[OURS_AVG_GAP, 'LoTUS']
    def pcc():
        r = pd.DataFrame(dict(method=list(PCC_METHODS) + ['salun'], seed=1, jsd=np.arange(10)*1e-4, jsd_authors=np.arange(10)*1e-5,
                              rf_jsd=np.arange(10)**2*1e-4, rf_jsd_authors=np.arange(10)**2*1e-5))
        return round(pcc_jsd_rf_authors(r)[0], 4), round(pcc_jsd_rf(r)[0], 4)
    def tuning():   # images of the validation test set that are also in a reported seed's test set
        x = torch.zeros(400, 1, 4, 4, dtype=torch.uint8); y = torch.arange(400) % 4
        d = ImageData('toy', x, y, x.clone(), y.clone(), list('abcd')); seeds = [3407, 13, 12]
        reported = np.concatenate([dataset_splits(d, 0.1, s).test for s in seeds])
        shared = lambda **o: int(np.intersect1d(validation_splits(d, 0.1, 0, exclude_seeds=seeds, **o).test, reported).size)
        return shared(), shared(heldout='paper')
    toy = ImageData('toy', torch.zeros(400, 1, 4, 4, dtype=torch.uint8), torch.arange(400) % 4,
                    torch.zeros(401, 1, 4, 4, dtype=torch.uint8), torch.arange(401) % 4, list('abcd'))   # held out: 101, 100, 100, 100
    def forget_sets(rule):   # whether seeds 1 and 2 draw the same forget set under the rule, and seed 1's first positions
        a, b = (split_rule(rule)(toy, 0.1, s).forget for s in (1, 2))
        return bool(np.array_equal(a, b)), tuple(a[:4].tolist())
    def cut(c):   # seed 3's unseen positions among the first 20 held-out images
        u = split_rule('random', None, c)(toy, 0.1, 3, heldout_cut=c).unseen; return tuple(u[u < 20].tolist())
    def inputs():   # an UnlearnTask whose forget set is inside its retain set
        tds = TensorDataset(torch.randn(20, 1, 8, 8), torch.arange(20) % 4)
        def make(**kw):
            try: UnlearnTask(Subset(tds, range(4)), tds, **kw); return 'accepted'
            except ValueError as e: return 'refused: ' + str(e).split(':')[0]
        return make(), make(check_sets=False)
    def memorised():   # MemorisationWarnings of lotus_unlearn on a model that never saw its forget set (an untrained network)
        g = torch.Generator().manual_seed(0); sets = [TensorDataset(torch.randn(n, 6, generator=g), torch.arange(n) % 3) for n in (30, 60, 30)]
        torch.manual_seed(0); m = nn.Linear(6, 3)
        def count(**kw):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter('always'); lotus_unlearn(m, *sets, progress=False, epochs=1, **kw)
            return sum(issubclass(x.category, MemorisationWarning) for x in w)
        return count(), count(check_sets=False)
    return {('Data', 'the ImageNet forget set'): imagenet,
            ('Data', 'the forget set'): lambda: (forget_sets('random'), forget_sets('first')),
            ('Data', 'the unseen/test cut of the held-out split'): lambda: (cut('stratified'), cut('sklearn')),
            ('Data', 'ImageNet preprocessing'): lambda: (pipelines(), pipelines(preprocess='one')),
            ('Inputs', 'a forget set the model never memorised'): memorised,
            ('Benchmarks', 'ImageNet batch size'): lambda: overridden('imagenet', 'lotus', 'batch_size', 32),
            ('LoTUS', 'alpha on CIFAR-10 ResNet18'): lambda: tuple(zip(*(overridden('cifar10', 'lotus', 'alpha', 2., **k) for k in ({}, {'forget_class': 3})))),
            ('Aggregation', "how a benchmark's seeds become a cell of the paper-shaped tables and of compare_published"): aggregation,
            ('Aggregation', 'the points of tab:pcc'): pcc,
            ('Aggregation', "rounding of each seed's MIA"): lambda: tuple(as_logged(pd.DataFrame(dict(mia=[25/5000])), **kw).mia[0] for kw in ({}, dict(rounding={'mia': 'python'}))),
            ('Tuning', 'validation unseen and test sets'): tuning,
            ('Inputs', 'sets checked before any work'): inputs}

def _stand_in_probe(row:Deviation): # a row of stand_in_rows
    "The probe of a stand-in row: what runs at embedded scale, and at scale='paper'"
    name = next((row.what[len(p):].strip("'") for p in ('dataset ', 'model ', 'forgotten class ') if row.what.startswith(p)), None)
    if name is not None:
        pbs = [pb for v in PAPER_BENCHMARKS.values() for pb in v] + [PB('cifar10', 'resnet18', unseen=SYNTHETIC_UNSEEN['paper'])]   # CIFAKE: tab:cifar's D_u
        pb = next(pb for pb in pbs if name in (pb.dataset, pb.model, pb.forget_class, pb.unseen))
        spec = lambda scale: (lambda p: None if p is None else (p.spec.dataset, p.spec.model, p.spec.forget_class, p.spec.unseen))(plan_benchmark(pb, scale))
        return lambda: (spec('embedded'), spec('paper'))
    if row.what == 'network of the embedded stand-ins':
        return lambda: (type(create_model('resnet18_small', 10).maxpool).__name__, type(create_model('resnet18', 10).maxpool).__name__)
    if row.what == 'embedded scale':   # LoTUS's epochs and batch size on the embedded benchmark (2,500 training images), and the share of its paper steps
        def lotus_run(budget):
            spec = resolve_spec(BenchmarkSpec('fashionmnist', step_budget=budget)); c = method_config('lotus')
            run = step_budget(c, step_scale(spec, 2_500))
            return run.epochs, run.batch_size, round(budget_share(c, run, paper_scale(spec, 2_500)), 3)
        return lambda: (lotus_run('capped'), lotus_run('unscaled'))
    if row.what == 'training recipe of the embedded stand-ins':
        r = lambda: benchmark_defaults('fashionmnist', 'resnet18_small')['recipe']
        return lambda: (r().schedule, recipe_from({'schedule': 'linear'}, r()).schedule)
    ds = row.what.split(' ')[0]   # '<dataset> benchmark defaults'
    return lambda: (benchmark_defaults(ds, 'resnet18_small')['recipe'].epochs, recipe_from({'epochs': 1}, benchmark_defaults(ds, 'resnet18_small')['recipe']).epochs)


def switch_probes() -> dict: # (topic, what) -> probe() returning (default, switched)
    "The probe of every ledger row that offers a switch: it applies the switch and returns what the row's value or behaviour is without and with it"
    out = {**_metric_probes(), **_setup_probes(), **_method_probes(), **_benchmark_probes()}
    out.update({(r.topic, r.what): _stand_in_probe(r) for r in stand_in_rows()})
    return out

