"""CF-k, EU-k, l1-sparse, Fisher forgetting, Boundary Shrink, Boundary Expanding, DELETE, SCAR and SFR-on: the authors' code
against ours, on the same small model, data, seed and settings.

    # their files, out of a fetched copy of each repository (never into this one):
    G=<git dir of shash42/Evaluating-Inexact-Unlearning>; mkdir -p /tmp/eiu
    for f in methods.py learn.py models.py utils.py; do git --git-dir=$G show HEAD:src/$f > /tmp/eiu/$f; done
    G=<git dir of OPTML-Group/Unlearn-Sparse>; mkdir -p /tmp/us/unlearn
    for f in FT.py impl.py; do git --git-dir=$G show HEAD:unlearn/$f > /tmp/us/unlearn/$f; done
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method cf_k --authors /tmp/eiu
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method eu_k --authors /tmp/eiu --kind class
    G=<git dir of AdityaGolatkar/SelectiveForgetting>; mkdir -p /tmp/fisher_authors
    git --git-dir=$G show HEAD:Forgetting.ipynb > /tmp/fisher_authors/Forgetting.ipynb
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method l1_sparse --authors /tmp/us
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method fisher --authors /tmp/fisher_authors --kind class
    G=<git dir of TY-LEE-KR/Boundary-Unlearning-Code (the authors' Dropbox release)>; A=/tmp/boundary_authors; mkdir -p $A
    for f in boundary_unlearning.py adv_generator.py expand_exp.py models.py trainer.py utils.py; do
        git --git-dir=$G show HEAD:$f > $A/$f; done
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method boundary_shrink --authors $A --kind class
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method boundary_expanding --authors $A --kind class
    G=<git dir of shaaaaron/DELETE>; mkdir -p /tmp/delete_authors/method
    git --git-dir=$G show HEAD:method/delete.py > /tmp/delete_authors/method/delete.py
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method delete --authors /tmp/delete_authors --kind class
    G=<git dir of jbonato1/SCAR>; mkdir -p /tmp/scar_authors
    git --git-dir=$G show HEAD:src/Unlearning_methods.py > /tmp/scar_authors/Unlearning_methods.py
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method scar --authors /tmp/scar_authors --kind class --epochs 2
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method scar --authors /tmp/scar_authors --kind instance --epochs 2
    G=<git dir of K1nght/Unified-Unlearning-w-Remain-Geometry>; mkdir -p /tmp/sfron_authors/unlearn
    for f in unlearn/sfron.py unlearn/unlearn_method.py; do git --git-dir=$G show HEAD:Classification/$f > /tmp/sfron_authors/$f; done
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method sfr_on --authors /tmp/sfron_authors
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/field_side_by_side.py --method sfr_on --authors /tmp/sfron_authors --kind class

The workload: `demo_task` (digits, the small ResNet18, 15 epochs of training; `--kind class`: class 3 forgotten), the
method's defaults but `--epochs` (3: CF-k's and EU-k's rate restarts after epochs 1 and 3). Both sides start from the same
f_orig, get the same seed (lotus_nb's `set_seed(task.seed)`, as `unlearn` seeds a method) and the same batches: their loops
are handed a loader of our retain split built as our methods build theirs (`task.retain.loader(batch_size, train=True,
seed=task.seed)`), in place of the loaders their scripts build from CIFAR files.

What their code needs to run here, and nothing that changes a step:
- CF-k, EU-k (Goel et al., src/): their `cat_forget_finetune` and `retrain_lastK` (methods.py) are imported and called with
  our model, loader and an `args` namespace of the config's values; their training loop (learn.py `train_loop`) runs as it
  stands. `.cuda()` (learn.py:146, 183, 199) is made a no-op on tensors and modules for the call (no GPU here);
  `load_datasets` (imported by learn.py for its CIFAR loaders, which need their `datasets` package) is an empty module;
  their logger is a disabled `logging.Logger`. Their loop also evaluates on a validation and a test loader after each
  epoch (eval mode, no gradient): it is given our unseen split for both, and that time is in theirs.
- l1-sparse (Jia et al.): `FT_l1` (unlearn/FT.py, wrapped by `iterative_unlearn`, unlearn/impl.py) is imported from their
  two files as the package `unlearn`; the modules those files import for logging, pruning and ImageNet (`utils`:
  AverageMeter and accuracy, `pruner`, `trainer`, `imagenet`) are stubs, unused on this path but the meters; `.cuda()` is
  a no-op; their per-epoch prints are silenced. `args.no_l1_epochs`, which FT.py reads and their arg_parser.py never
  defines, is 0.
- Fisher forgetting (Golatkar et al.): their cells defining `hessian` and `get_mean_var` and the first loop of their noise
  cell (`torch.manual_seed(seed)`, then `p.data = mu + var.sqrt() * ...normal_()` over `modelf`'s parameters) are read out of
  Forgetting.ipynb and executed as they stand, in a namespace holding what their earlier cells define: `args.device`
  'cpu', `num_classes`, `class_to_forget` (the task's class, else None), `num_to_forget` (None for a class, else the forget
  set's size), `seed` (the task's; their noise cell sets alpha = 1e-6 itself), and `p.data0` (their copy of each
  parameter, Forgetting.ipynb:1424). `hessian` is given our retain split, unaugmented and in order, as a list of
  (image, label); its progress bar is silenced. The noise cell's second loop (on their retrained model) is not run. `--epochs` is unused.
- Boundary Shrink and Boundary Expanding (Chen et al., boundary_unlearning.py, class unlearning only): their functions are
  imported from their files and called with `device='cpu'` (they take one; nothing in them asks for a GPU) and the forget
  loader of our class split (`task.forget.loader(64, train=True, seed=task.seed)`, as ours), in place of their CIFAR loader.
  Their epochs are set to `--epochs`: `poison_epoch` is a parameter of `boundary_shrink`; `finetune_epochs = 10` is written in
  `boundary_expanding` (line 127) and is replaced in its source. Boundary Shrink: their FGSM unnormalises with CIFAR-10's
  constants and three channels written out (adv_generator.py:13-15, 28-44); it is given our split's mean and std, the same
  formula over its one channel. Boundary Expanding is written for their AllCNN: it reads `.features` and `.classifier` and
  has the feature width 96 written in (`n_filter2 = int(192 * 0.5)`, line 105); it is handed our ResNet as those two (the
  network with `fc` an identity, and `fc`), the width replaced by the ResNet's in its source, and `optimization='sgd'`
  (main.py:25's default); its result, `nn.Sequential(features, pruned classifier)`, is read back into our network's layout
  to compare. After their loops they evaluate on their test loaders and save the model: `utils.get_forget_loader` and
  `trainer.eval` are stubbed, the saved files go to a temporary folder, and their progress bar and prints are silenced. Both
  sides get a model in train mode: their Boundary Expanding's first forward comes before its `widen_model.train()` (lines
  139, 146).
- DELETE (Zhou et al.; class unlearning only: `--kind class`): their `delete` (method/delete.py) is imported as it stands, as
  the module `method.delete` of a stub package `method`; the modules it imports for its timer, logging, per-epoch
  evaluation and plots are stubs: `method.utils` (`keys`, `eval_opt`; `evaluate_model_on_all_loaders` returns no
  accuracies, `plot_unlearn_remain_acc_figure` draws nothing: their per-epoch evaluation, delete.py:76-80, is neither run
  nor timed), `utils` (`timer` returns the function), `trainer` (empty), `log_utils` (`enable_console_logging` does
  nothing). `.to("cuda")` (delete.py:27-28, 46) returns the tensor or module unchanged, for the call; the logger is a
  disabled `logging.Logger`; `soft_label` is 'inf' (their only one, main.py:88). Their `train_forget_loader` is our
  forget split's loader, as ours builds it (`task.forget.loader(batch_size, train=True, seed=task.seed)`).
- SCAR (Bonato et al.; `--kind class` is their class removal, CR, `--kind instance` their homogeneous removal, HR): their
  class `SCAR` (src/Unlearning_methods.py) is imported as it stands. The modules it imports at import time are stubs:
  `opts` (an `OPT` holding the settings of our config, the mode, `device='cpu'`, `model='resnet18'`, `dataset='cifar10'`,
  `num_retain_samp` = our `surrogate_batches` - 1, `num_classes` and `target_accuracy`, set as their main.py:63-64, 77
  sets it: CR 0.01, HR Acc(f_orig, D_u) - 0.015) and `utils` (`accuracy`, written as theirs, utils.py:36-67). Their
  loaders are the ones ours builds: the forget split in order, the retain split (augmented in CR, as their dsets.py:99),
  and the surrogate: our seeded Gaussian noise (their generate_random_noise.py, which writes it to files), shuffled each
  pass in CR, and in HR `WeightedSurrogate` (our version of their dsets.py:263-302, which is not run: it reads their
  folders). Their prints and progress bar are silenced. Nothing was needed for CUDA: their `.to(opt.device)` gets 'cpu'.
- SFR-on (Huang et al., Classification/): their class `SFRon` (unlearn/sfron.py) is imported as it stands, as the module
  `unlearn.sfron` of a stub package `unlearn` beside their unlearn/unlearn_method.py (their package's `__init__` imports
  every method of theirs: it is not run); the modules it imports for logging and evaluation are stubs: `utils`
  (`accuracy`, used only for their running log, returns 0), `trainer` (`validate` does nothing: it is called every 500
  iterations only, past the runs here). `.cuda()` (sfron.py:195, 215, 278-279, 305-306) is a no-op on tensors for the call; their
  Fisher files go to a new temporary folder each run, so both Fishers are measured, not read back (lines 269-271,
  296-298); their per-step print and mask print are silenced. Their hyperparameters, set in `SFRon.__init__`, are set on
  the instance from the config: `opt`, `momentum`, `weight_decay`, `retain_lr`, `forget_freq`, `forget_alpha`, `max_norm`,
  `ema_beta`, `lambd`, `th`, and `n_iters` = epochs x the retain loader's batches (ours counts passes over D_r). Their
  `prepare_unlearn` is handed our loaders as `forget_train` and `retain_train` (`task.forget.loader` and
  `task.retain.loader`, `(batch_size, train=True, seed=task.seed)`, as ours builds them; the other two None), then their
  `get_unlearned_model` runs.

Printed: the largest absolute difference of any parameter (and of any BatchNorm buffer) between their result and ours,
the relative distance ||ours - theirs|| / ||theirs - f_orig|| over all parameters, and each side's wall-clock seconds.
"""
import argparse, contextlib, copy, io, json, logging, sys, time, types
from pathlib import Path
import torch, torch.nn as nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lotus_nb.methods.demo import demo_task
from lotus_nb.methods.base import unlearn, method_config, check_kind
from lotus_nb.core.device import set_seed

@contextlib.contextmanager
def no_cuda():
    "`.cuda()` on tensors and modules returns them unchanged, for the call"
    t, m = torch.Tensor.cuda, nn.Module.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self; nn.Module.cuda = lambda self, *a, **k: self
    try: yield
    finally: torch.Tensor.cuda, nn.Module.cuda = t, m

def eiu_run(method, authors, model, task, cfg):
    "Goel et al.'s CF-k (`cat_forget_finetune`) or EU-k (`retrain_lastK`) on `model`, in place"
    sys.path.insert(0, str(authors)); sys.modules.setdefault('load_datasets', types.ModuleType('load_datasets'))
    import methods as eiu   # their src/methods.py
    args = argparse.Namespace(device='cpu', maxlr=cfg.lr, minlr=cfg.min_lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay,
                              scheduler='CosineAnnealingWarmRestarts', disable_bn=False, regularization=None, clip=cfg.clip,
                              cutmix_prob=0.5, cutmix_alpha=1.0)
    log = logging.getLogger('their_eiu'); log.disabled = True
    retain = task.retain.loader(cfg.batch_size, train=True, seed=task.seed)
    held = task.unseen.loader(256)
    set_seed(task.seed)
    with no_cuda():
        if method == 'cf_k':
            out, _ = eiu.cat_forget_finetune(args, model, 'resnet', retain, held, held, cfg.epochs, log, '/tmp/unused', K=cfg.k)
        else: out, _ = eiu.retrain_lastK(cfg.k, args, model, 'resnet', retain, held, held, cfg.epochs, log, '/tmp/unused')
    return out

def us_run(authors, model, task, cfg):
    "Jia et al.'s l1-sparse (`FT_l1`, the step of `--unlearn FT_prune`) on `model`, in place"
    class Meter:
        def __init__(self): self.sum, self.count, self.avg = 0., 0, 0.
        def update(self, v, n=1): self.sum += v*n; self.count += n; self.avg = self.sum/self.count
    stubs = dict(utils=dict(AverageMeter=Meter, accuracy=lambda out, y: [(out.argmax(1) == y).float().mean()*100], warmup_lr=None),
                 pruner=dict(extract_mask=None, prune_model_custom=None, remove_prune=None), trainer=dict(validate=None),
                 imagenet=dict(get_x_y_from_data_dict=None))
    for name, attrs in stubs.items():
        m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
    pkg = types.ModuleType('unlearn'); pkg.__path__ = [str(Path(authors)/'unlearn')]; sys.modules['unlearn'] = pkg
    import importlib
    FT = importlib.import_module('unlearn.FT')
    args = argparse.Namespace(decreasing_lr='91,136', rewind_epoch=0, unlearn_lr=cfg.lr, momentum=cfg.momentum,
                              weight_decay=cfg.weight_decay,
                              imagenet_arch=False, arch='resnet18', unlearn='FT_prune', unlearn_epochs=cfg.epochs, warmup=0,
                              alpha=cfg.alpha, no_l1_epochs=cfg.no_l1_epochs, print_freq=10**9)
    retain = task.retain.loader(cfg.batch_size, train=True, seed=task.seed)
    set_seed(task.seed)
    with no_cuda(), contextlib.redirect_stdout(io.StringIO()):
        FT.FT_l1({'retain': retain}, model, nn.CrossEntropyLoss(), args)
    return model

def fisher_run(authors, model, task, cfg):
    "Golatkar et al.'s Fisher forgetting (Forgetting.ipynb: `hessian`, `get_mean_var`, the noise loop) on `model`, in place"
    import torch.nn.functional as F
    cells = [''.join(c['source']) for c in json.loads((Path(authors)/'Forgetting.ipynb').read_text())['cells'] if c['cell_type'] == 'code']
    pick = lambda key: next(c for c in cells if key in c)
    noise = pick('fisher_dir = []').split('for i, p in enumerate(modelf0.parameters())')[0]
    K = task.num_classes
    ns = dict(torch=torch, nn=nn, F=F, copy=copy, tqdm=lambda it: it, args=argparse.Namespace(device='cpu'), num_classes=K,
              class_to_forget=task.forget_class, num_to_forget=None if task.forget_class is not None else len(task.forget),
              modelf=model, seed=task.seed)
    exec(pick('def hessian('), ns); exec(pick('def get_mean_var('), ns)
    data = [(x, y) for xb, yb in task.retain.loader(256) for x, y in zip(xb, yb)]
    for p in model.parameters(): p.data0 = copy.deepcopy(p.data.clone())   # theirs: Forgetting.ipynb:1424
    ns['hessian'](data, model)
    exec(noise, ns)   # sets alpha = 1e-6 and the seed, then noises modelf's parameters in order
    assert ns['alpha'] == cfg.alpha, f"their alpha {ns['alpha']} is not the config's {cfg.alpha}"
    return model

def boundary_run(method, authors, model, task, cfg, epochs):
    "Chen et al.'s `boundary_shrink` or `boundary_expanding` (boundary_unlearning.py) from `model`; returns the result in our layout"
    import inspect, tempfile
    sys.path.insert(0, str(authors))
    import boundary_unlearning as bu, adv_generator
    mean, std = task.forget.mean, task.forget.std
    class SplitFGSM(adv_generator.FGSM):
        "their FGSM, normalised with the split's per-channel mean and std (theirs: CIFAR-10's, three channels written out)"
        def __init__(self, *a, **k): super().__init__(*a, **k); self.mean, self.std = mean, std
        def normalize(self, x):
            y = x.clone()
            for c in range(y.shape[1]): y[:, c, :, :] = (y[:, c, :, :] - self.mean[c]) / self.std[c]
            return y
        def inverse_normalize(self, x):
            y = x.clone()
            for c in range(y.shape[1]): y[:, c, :, :] = y[:, c, :, :] * self.std[c] + self.mean[c]
            return y
    bu.FGSM = SplitFGSM
    bu.eval = lambda **k: (None, 0.)                                 # their evaluation after the loop
    bu.utils.get_forget_loader = lambda *a, **k: (None, None)
    forget = task.forget.loader(cfg.batch_size, train=True, seed=task.seed)
    out = tempfile.mkdtemp() + '/'
    set_seed(task.seed)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if method == 'boundary_shrink':
            assert cfg.bound == 0.1 and cfg.lr == 1e-5, "their bound and lr are written in (lines 15, 31): the config's must be theirs"
            return bu.boundary_shrink(model, forget, None, None, None, 'cpu', False, bound=cfg.bound, poison_epoch=epochs,
                                      forget_class=task.forget_class, path=out)
        assert cfg.lr == 1e-5 and cfg.optimizer == 'sgd', "their lr is written in (line 130): the config's must be theirs"
        src = inspect.getsource(bu.boundary_expanding)
        for old, new in (('int(192 * 0.5)', str(model.fc.in_features)), ('finetune_epochs = 10', f'finetune_epochs = {epochs}')):
            assert src.count(old) == 1, old; src = src.replace(old, new)
        exec(src, bu.__dict__)
        features = copy.deepcopy(model); features.fc = nn.Identity()
        ours_layout = copy.deepcopy(model)
        as_theirs = nn.Module(); as_theirs.features, as_theirs.classifier = features, copy.deepcopy(model.fc)
        pruned = bu.boundary_expanding(as_theirs, forget, None, None, None, None, 'sgd', 'cpu', False, path=out)
    state = dict(pruned[0].state_dict()) | {'fc.' + k: v for k, v in pruned[1].state_dict().items()}   # features, then the head
    ours_layout.load_state_dict(state)
    return ours_layout

@contextlib.contextmanager
def no_cuda_to():
    "`.to('cuda')` on tensors and modules returns them unchanged, for the call (other `.to` calls as they are)"
    t, m = torch.Tensor.to, nn.Module.to
    def tensor_to(self, *a, **k): return self if a[:1] == ('cuda',) else t(self, *a, **k)
    def module_to(self, *a, **k): return self if a[:1] == ('cuda',) else m(self, *a, **k)
    torch.Tensor.to, nn.Module.to = tensor_to, module_to
    try: yield
    finally: torch.Tensor.to, nn.Module.to = t, m

def delete_run(authors, model, task, cfg):
    "Zhou et al.'s DELETE (`delete`, method/delete.py) on a copy of `model`: their result"
    stubs = {'method.utils': dict(keys=['train_forget', 'train_remain', 'test_forget', 'test_remain'], eval_opt={},
                                  plot_unlearn_remain_acc_figure=lambda *a, **k: None,
                                  evaluate_model_on_all_loaders=lambda *a, **k: dict.fromkeys(
                                      ['train_forget', 'train_remain', 'test_forget', 'test_remain'], float('nan'))),
             'utils': dict(timer=lambda f: f), 'trainer': {}, 'log_utils': dict(enable_console_logging=lambda *a, **k: None)}
    for name, attrs in stubs.items():
        m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
    pkg = types.ModuleType('method'); pkg.__path__ = [str(Path(authors)/'method')]; sys.modules['method'] = pkg
    import importlib
    their = importlib.import_module('method.delete')
    log = logging.getLogger('their_delete'); log.disabled = True
    forget = task.forget.loader(cfg.batch_size, train=True, seed=task.seed)
    set_seed(task.seed)
    with no_cuda_to(), contextlib.redirect_stderr(io.StringIO()):   # their tqdm.trange over epochs
        return their.delete(model, forget, cfg.epochs, cfg.lr, log, None, {}, '/tmp/unused', soft_label='inf')

def scar_run(authors, model, task, cfg):
    "Bonato et al.'s SCAR (class `SCAR`, src/Unlearning_methods.py) on a copy of `model`: their result"
    from lotus_nb.methods.scar import gaussian_surrogate, WeightedSurrogate
    from lotus_nb.methods.base import frozen
    cr = task.forget_class is not None
    forget = task.forget.loader(cfg.batch_size)
    teacher = frozen(model)
    with torch.no_grad(): K = teacher(next(iter(forget))[0][:2]).shape[1]   # eval mode: their model's statistics untouched
    def accuracy(net, loader, single_class=False):   # their utils.accuracy (utils.py:36-67)
        correct, total, preds, ys = 0, 0, [], []
        for b in loader:
            p = net(b[0]).max(1)[1]; total += b[1].size(0); correct += p.eq(b[1]).sum().item(); preds.append(p); ys.append(b[1])
        if not single_class: return correct / total
        p, y = torch.cat(preds), torch.cat(ys)
        return correct / total, torch.stack([((p == i) & (y == i)).sum().float() / (y == i).sum() for i in range(K)])
    target = 0.01
    if not cr: target = accuracy(teacher, task.unseen.loader(cfg.batch_size)) - 0.015
    OPT = type('OPT', (), dict(device='cpu', model='resnet18', dataset='cifar10', mode='CR' if cr else 'HR', num_classes=K,
                               num_retain_samp=cfg.surrogate_batches - 1, lr_unlearn=cfg.lr, wd_unlearn=cfg.weight_decay,
                               momentum_unlearn=cfg.momentum, epochs_unlearn=cfg.epochs, target_accuracy=target, scheduler=[25, 40],
                               temperature=cfg.temperature, lambda_1=cfg.lambda_1, lambda_2=cfg.lambda_2, delta=cfg.delta,
                               gamma1=cfg.gamma1, gamma2=cfg.gamma2))
    for name, attrs in {'opts': dict(OPT=OPT), 'utils': dict(accuracy=accuracy)}.items():
        m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
    sys.path.insert(0, str(authors)); sys.modules.pop('Unlearning_methods', None)
    import importlib
    their = importlib.import_module('Unlearning_methods')
    x0 = next(iter(task.forget.loader(1)))[0]
    sur = gaussian_surrogate(cfg.surrogate_size, tuple(x0.shape[1:]), task.seed, x0.device)
    retain = task.retain.loader(cfg.batch_size, train=cr, seed=task.seed)
    sur = sur.loader(cfg.batch_size, train=True, seed=task.seed) if cr else WeightedSurrogate(sur, teacher, cfg.batch_size, K, task.seed)
    test = forget if cr else task.unseen.loader(cfg.batch_size)
    set_seed(task.seed)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return their.SCAR(model, retain, sur, forget, test, class_to_remove=[task.forget_class] if cr else None).run()

def sfron_run(authors, model, task, cfg):
    "Huang et al.'s SFR-on (`SFRon`, Classification/unlearn/sfron.py: `prepare_unlearn`, then `get_unlearned_model`) on `model`"
    import importlib, tempfile
    stubs = dict(utils=dict(accuracy=lambda out, y, topk=(1,): [torch.zeros(())]), trainer=dict(validate=lambda *a, **k: {}))
    for name, attrs in stubs.items():
        m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
    pkg = types.ModuleType('unlearn'); pkg.__path__ = [str(Path(authors)/'unlearn')]; sys.modules['unlearn'] = pkg
    their = importlib.import_module('unlearn.sfron')
    forget = task.forget.loader(cfg.batch_size, train=True, seed=task.seed)
    retain = task.retain.loader(cfg.batch_size, train=True, seed=task.seed)
    with tempfile.TemporaryDirectory() as save:
        m = their.SFRon(model, nn.CrossEntropyLoss(), save, argparse.Namespace(num_classes=task.num_classes, seed=task.seed))
        m.opt, m.momentum, m.weight_decay, m.retain_lr = cfg.optimizer, cfg.momentum, cfg.weight_decay, cfg.lr
        m.n_iters, m.forget_freq, m.forget_alpha, m.max_norm = cfg.epochs * len(retain), cfg.forget_freq, cfg.forget_alpha, cfg.max_norm
        m.ema_beta, m.lambd, m.th = cfg.ema_beta, cfg.lambd, cfg.threshold
        set_seed(task.seed)
        with no_cuda(), contextlib.redirect_stdout(io.StringIO()):
            m.prepare_unlearn(dict(forget_train=forget, retain_train=retain, forget_valid=None, retain_valid=None))
            return m.get_unlearned_model()

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--method', required=True, choices=['cf_k', 'eu_k', 'l1_sparse', 'fisher', 'boundary_shrink', 'boundary_expanding',
                                                            'delete', 'scar', 'sfr_on'])
    ap.add_argument('--authors', required=True,
                    help="their files: src/ of Evaluating-Inexact-Unlearning, a folder holding Unlearn-Sparse's unlearn/, or one holding "
                         "SelectiveForgetting's Forgetting.ipynb, one holding Boundary-Unlearning-Code's files, or one holding "
                         "DELETE's method/delete.py, one holding SCAR's src/Unlearning_methods.py, or one holding SFR-on's "
                         "unlearn/sfron.py and unlearn/unlearn_method.py")
    ap.add_argument('--kind', default='instance', choices=['instance', 'class'])
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--forget-class', type=int, default=3, help='the class forgotten with --kind class')
    ap.add_argument('--json', default=None, help='also write the figures here')
    a = ap.parse_args()
    torch.set_num_threads(1)
    try: check_kind(a.method, a.kind)   # DELETE: class unlearning only, refused in one line
    except ValueError as e: sys.exit(str(e))
    f_orig, ts, task = demo_task(forget_class=a.forget_class if a.kind == 'class' else None)
    cfg = method_config(a.method, 'resnet', a.kind, **({} if a.method == 'fisher' else dict(epochs=a.epochs)))
    t0 = time.perf_counter(); r = unlearn(a.method, f_orig, task, cfg=cfg, progress=False); t_ours = time.perf_counter() - t0
    ours, steps_ours = r.model, r.record['steps']
    theirs = copy.deepcopy(f_orig).train()
    for p in theirs.parameters(): p.requires_grad_(True)
    t0 = time.perf_counter()
    if a.method == 'fisher': theirs = fisher_run(a.authors, theirs, task, cfg)
    elif a.method.startswith('boundary'): theirs = boundary_run(a.method, a.authors, theirs, task, cfg, a.epochs)
    elif a.method == 'delete': theirs = delete_run(a.authors, theirs, task, cfg)
    elif a.method == 'scar': theirs = scar_run(a.authors, theirs, task, cfg)
    elif a.method == 'sfr_on': theirs = sfron_run(a.authors, theirs, task, cfg)
    elif a.method == 'l1_sparse': theirs = us_run(a.authors, theirs, task, cfg)
    else: theirs = eiu_run(a.method, a.authors, theirs, task, cfg)
    t_theirs = time.perf_counter() - t0
    po, pt, p0 = dict(ours.named_parameters()), dict(theirs.named_parameters()), dict(f_orig.named_parameters())
    bo, bt = dict(ours.named_buffers()), dict(theirs.named_buffers())
    diff = lambda x, y: (x.double() - y.double()).abs().max().item()
    sq = lambda a, b: sum(((a[n] - b[n]).double()**2).sum() for n in po)
    trained = task.forget if a.method.startswith('boundary') or a.method == 'delete' else task.retain   # the set the method steps over
    steps = 0 if a.method == 'fisher' else a.epochs*len(trained.loader(max(cfg.batch_size, 1), train=True, seed=task.seed))
    out = dict(method=a.method, kind=a.kind, epochs=a.epochs, steps=steps,
               params_max_abs_diff=max(diff(po[n], pt[n]) for n in po),
               buffers_max_abs_diff=max((diff(bo[n], bt[n]) for n in bo if bo[n].is_floating_point()), default=0.),
               rel_distance=(sq(po, pt)**0.5 / sq(pt, p0)**0.5).item(),
               moved_params_theirs=sum(not torch.equal(pt[n], p0[n]) for n in po),
               moved_params_ours=sum(not torch.equal(po[n], p0[n]) for n in po),
               seconds_ours=round(t_ours, 2), seconds_theirs=round(t_theirs, 2), device='cpu', threads=torch.get_num_threads())
    print(json.dumps(out))
    if a.json: Path(a.json).write_text(json.dumps(out, indent=1) + '\n')

if __name__ == '__main__': main()
