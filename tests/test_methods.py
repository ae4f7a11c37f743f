"Every registered method, on tiny data: the original is left untouched, the result is a new model in eval mode, no batch of size 1"
import dataclasses
import pytest, torch
from lotus_nb.methods.base import list_methods, method_config, method_kinds, unlearn
from lotus_nb.methods.demo import demo_task
from lotus_nb.models.training import Recipe

from helpers import builtin_methods
EXPECTED = builtin_methods()[0]   # the default run's, then the field's run when named, read from lotus_nb.methods' sources

@pytest.fixture(scope='module')
def setup():
    "An instance task and a class task (class 3) on digits; a method runs on the first of its kinds"
    torch.set_num_threads(1)
    return {'instance': demo_task('digits', 'resnet18_tiny', epochs=2),
            'class': demo_task('digits', 'resnet18_tiny', epochs=2, forget_class=3)}

def test_registry_is_complete():
    "Every built-in method is registered, in the paper's column order, references first, the field's others last"
    assert list_methods() == EXPECTED

def quick(name):
    "The method's config for a one-epoch run (references: a one-epoch recipe)"
    fields = {f.name for f in dataclasses.fields(method_config(name))}
    return method_config(name, **({'epochs': 1} if 'epochs' in fields else {'recipe': Recipe(epochs=1, warmup=1, patience=None, schedule='cosine', keep='best')}))

@pytest.mark.parametrize('name', EXPECTED)
def test_method_contract(setup, name):
    kinds = method_kinds(name)
    f_orig, _, task = setup['instance' if 'instance' in kinds else 'class']
    f_orig.train()                                     # a model handed over in train mode must come back in it, untouched
    before = {k: v.clone() for k, v in f_orig.state_dict().items()}
    sizes = []
    # copies inherit the hook; a batch of one in train mode is BatchNorm's hazard (per-sample passes in eval mode are not)
    hook = f_orig.register_forward_pre_hook(lambda m, args: sizes.append((args[0].shape[0], m.training)))
    try: res = unlearn(name, f_orig, task, quick(name), progress=False)
    finally: hook.remove()
    after = f_orig.state_dict()
    changed = [k for k, v in before.items() if not torch.equal(v, after[k])]
    assert not changed, f"{name} modified the original model: {changed[:5]}"
    assert f_orig.training, f"{name} changed the original's mode"
    assert res.model is not f_orig, f"{name} returned the original object itself"
    assert not res.model.training, f"{name} returned a model in train mode"
    assert res.record['time_min'] > 0
    assert sizes or name == 'original', f"{name} ran no forward pass"
    ones = [n for n, training in sizes if training and n < 2]
    assert not ones, f"{name} ran a train-mode forward pass on a batch of size {min(ones)}"
