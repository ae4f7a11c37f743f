"""DataLoader workers started by `spawn` (macOS's and Windows' default) unpickle the Dataset, and cannot import a class defined in
`__main__` (a notebook, `python -c`): `nbdev_proc_nbs` printed `AttributeError: Can't get attribute 'Flipped' on <module '__main__'>`.
lotus_nb reads such a dataset without workers (`lotus_nb.core.spawning.spawn_safe`), with a WorkersWarning saying why."""
import sys
from helpers import ROOT, run, show

# run by `python -c`: its __main__ has no file, as a notebook's has none, so a spawned worker cannot define Flipped
SCRIPT = r'''
import multiprocessing, os, sys
multiprocessing.set_start_method('spawn')
os.environ['LOTUS_WORKERS'] = '1'                 # a worker even for a few items (default_workers starts none below 512)
import torch, torch.nn as nn
from torch.utils.data import Dataset
import lotus_nb.data.memory_cache, lotus_nb.data.user_data
if sys.argv[1] == 'unchecked':                    # what lotus_nb did before: the two readers that ask spawn_safe, told yes
    lotus_nb.data.memory_cache.spawn_safe = lotus_nb.data.user_data.spawn_safe = lambda ds, n, method=None: n
from lotus_nb.methods.lotus import lotus_unlearn

class Flipped(Dataset):
    "Items of x, y, each flipped left-right at random: a random transform, so the set is streamed through a DataLoader"
    def __init__(self, x, y): self.x, self.y = x, y
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        return (x.flip(-1) if torch.rand(()) < 0.5 else x), self.y[i]

g = torch.Generator().manual_seed(0)
x, y = torch.randn(96, 1, 4, 4, generator=g), torch.arange(96) % 3
torch.manual_seed(0); model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
split = lambda a, b: Flipped(x[a:b], y[a:b])
f_un, rec = lotus_unlearn(model, split(0, 16), split(16, 64), split(64, 96), epochs=1, progress=False)
assert len(rec['trace']) == 1
print('UNLEARNED')
'''

def _run(mode):
    return run([sys.executable, '-c', SCRIPT, mode], timeout=300, env=dict(OMP_NUM_THREADS='1', PYTHONPATH=str(ROOT)))

def test_spawned_workers_not_started_for_a_main_dataset():
    "LoTUS unlearns a notebook-defined Dataset with a random transform under `spawn`: in the main process, with a WorkersWarning naming the class"
    res = _run('checked')
    assert res.returncode == 0 and 'UNLEARNED' in res.stdout, show(res)
    assert "Can't get attribute" not in res.stdout, show(res)
    assert 'WorkersWarning' in res.stdout and 'Flipped is defined in __main__' in res.stdout, show(res)

def test_without_the_check_spawned_workers_fail():
    "The same run with workers started regardless dies as nbdev_proc_nbs did: the test above can fail"
    res = _run('unchecked')
    assert res.returncode != 0 and "Can't get attribute 'Flipped' on <module '__main__'" in res.stdout, show(res)
