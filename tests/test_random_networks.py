"Every random network shares no tensor with its original: reinit_copy for every registered model, start_copy for a pretrained head"
import pytest, torch
from lotus_nb.core.catalog import load_plugins
from lotus_nb.models.architectures import MODELS, create_model, reinit_copy, start_copy, built_as

SMALL = {'vit_b_16': dict(img_size=32), 'vit_b_16_timm': dict(img_size=32), 'vit_small': dict(img_size=16),
         'vit_b_16_imagenet': dict(num_classes=1000)}   # the smallest each model allows; the others at their own size
load_plugins()

def moved(m):
    "`m` with every floating tensor moved off its initial value (stands for trained or pretrained weights)"
    with torch.no_grad():
        for t in m.state_dict().values():
            if t.is_floating_point(): t.add_(0.37)
    return m

def shared(a, b):
    "Names of the floating state_dict tensors `a` and `b` hold equal"
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    return [k for k in sa if sa[k].is_floating_point() and torch.equal(sa[k], sb[k])]

@pytest.mark.parametrize('name', list(MODELS))
def test_no_tensor_survives(name):
    kw = {'num_classes': 10, **SMALL.get(name, {})}
    m = moved(create_model(name, pretrained=False, **kw)).eval()
    state = torch.random.get_rng_state()
    r = reinit_copy(m, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state), "the global RNG is untouched"
    assert shared(m, r) == [], f"{name}: the random network kept tensors of its original"
    torch.manual_seed(5); fresh = create_model(name, pretrained=False, **kw)
    assert shared(fresh, r) == [k for k, t in r.state_dict().items() if t.is_floating_point()], "rebuilt as created, under the seed"
    assert not r.training and built_as(r)['pretrained'] is False

def test_the_check_fails_on_the_old_copy():
    "The old reinit_copy (each module's reset_parameters, no registry) left torchvision ViT's tensors: the test above sees it"
    m = moved(create_model('vit_b_16_imagenet', 1000, pretrained=False))
    r = moved(create_model('vit_b_16_imagenet', 1000, pretrained=False)); r.load_state_dict(m.state_dict())
    for mod in r.modules():
        if hasattr(mod, 'reset_parameters'): mod.reset_parameters()
    assert 'class_token' in shared(m, r) and 'encoder.pos_embedding' in shared(m, r)

def test_imagenet_start_is_random(tmp_path):
    "ImageNet's ViT-B/16 is pretrained head and all: the network it started from is a random one, as the authors' teacher (bad_teaching_class.py:129-130)"
    src = moved(create_model('vit_b_16_imagenet', 1000, pretrained=False)); torch.save(src.state_dict(), tmp_path/'w.pth')
    m = create_model('vit_b_16_imagenet', 1000, pretrained=str(tmp_path/'w.pth'))
    s = start_copy(m, 2)
    assert shared(m, s) == [] and shared(s, reinit_copy(m, 2)) == [k for k, t in s.state_dict().items() if t.is_floating_point()]
