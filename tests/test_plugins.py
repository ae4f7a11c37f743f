"""A package outside lotus_nb adds a method, a dataset and a metric by declaring entry points, and they show up in the registry,
the tables, `evaluate` and `unlearn` with no change to lotus_nb; a broken plugin is skipped with a warning that names it.
The plugin is a real distribution, built and installed (offline) into a virtual environment that sees this interpreter's packages.

A plugin package named `lotus_nb_extra` that registers a method under a built-in's name wins over the built-in, and your own
registration (a notebook's: a fresh interpreter's `__main__`) wins over both, whichever is imported or loaded first."""
import os, subprocess, sys, textwrap, venv
from pathlib import Path
import pytest
import lotus_nb
from helpers import builtin_methods

ROOT = Path(lotus_nb.__file__).parent.parent   # the checkout under test goes first on the venv's path

FILES = {
    'pyproject.toml': '''
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "lotus-nb-toy-plugin"
        version = "0.1"

        [tool.setuptools]
        packages = ["toy_plugin"]

        [project.entry-points."lotus_nb.methods"]
        noop = "toy_plugin.method"

        [project.entry-points."lotus_nb.datasets"]
        toy_blobs = "toy_plugin.data"

        [project.entry-points."lotus_nb.metrics"]
        conf_forget = "toy_plugin.metric:setup"
        broken = "toy_plugin.missing"
        ''',
    'toy_plugin/__init__.py': '',
    'toy_plugin/method.py': '''
        from lotus_nb.methods.base import register_method, Unlearned, frozen

        @register_method('noop', display='No-op', order=10.5)
        def noop(original, task, cfg, progress=True):
            "Unlearns nothing: a frozen copy of the original"
            return Unlearned(frozen(original), {})
        ''',
    'toy_plugin/data.py': '''
        import torch
        from lotus_nb.data.datasets import register_dataset, ImageData

        @register_dataset('toy_blobs', model='resnet18_tiny', img_size=8, augment='none', in_memory=True)
        def toy_blobs(root=None, download=True):
            "Four classes of 8x8 grey images, one brightness each, with noise: 200 training and 80 held-out images"
            g = torch.Generator().manual_seed(0)
            img = lambda y: (y[:, None, None, None]*60 + torch.randint(0, 40, (len(y), 1, 8, 8), generator=g)).to(torch.uint8)
            y_tr, y_ho = torch.arange(200) % 4, torch.arange(80) % 4
            return ImageData('toy_blobs', img(y_tr), y_tr, img(y_ho), y_ho, classes=['a', 'b', 'c', 'd'], augment='none')
        ''',
    'toy_plugin/metric.py': '''
        from lotus_nb.metrics.evaluation import register_metric

        def conf_forget(outputs, ref):
            "Mean softmax confidence on the forget set"
            logits, _ = outputs['forget']
            return logits.softmax(-1).max(-1).values.mean()

        def setup(): register_metric('conf_forget', conf_forget, label='Forget conf.', higher_better=True)
        ''',
}

CHECK = '''
import warnings, torch
from lotus_nb.core.catalog import PLUGINS
from lotus_nb.methods.base import list_methods, display_name, unlearn
from lotus_nb.methods.demo import demo_task
from lotus_nb.data.datasets import DATASETS
from lotus_nb.metrics.evaluation import evaluate, list_metrics
from lotus_nb.paper.paper_tables import table_hyperparams
from lotus_nb.metrics.report import extra_rows
assert list_methods(default_run=True)[-3:] == ['lotus', 'noop', 'lotus_salun'], list_methods()   # order 10.5: its column
assert display_name('noop') == 'No-op' and 'No-op' in table_hyperparams().index         # its label in the tables
assert 'toy_blobs' in DATASETS and list_metrics() == ['conf_forget'] and 'Forget conf.' in extra_rows()
f_orig, ts, task = demo_task('toy_blobs', 'resnet18_tiny', epochs=1)                   # the plugin's dataset, end to end
r = unlearn('noop', f_orig, task, progress=False)
assert r.record['method'] == 'noop' and r.model is not f_orig
assert all(torch.equal(a, b) for a, b in zip(r.model.state_dict().values(), f_orig.state_dict().values()))
ev = evaluate(r.model, ts['forget'], ts['retain'], ts['test'], ts['unseen'])
assert 0 < ev['conf_forget'] <= 1 and 'acc_forget' in ev
print('PLUGINS', PLUGINS)
'''

@pytest.fixture(scope='module')
def plugin_python(tmp_path_factory):
    "The python of a venv (this interpreter's packages visible) with the toy plugin installed"
    tmp = tmp_path_factory.mktemp('plugin')
    for name, text in FILES.items():
        (tmp/'src'/name).parent.mkdir(parents=True, exist_ok=True); (tmp/'src'/name).write_text(textwrap.dedent(text))
    try: venv.create(tmp/'venv', system_site_packages=True, with_pip=False)
    except Exception as e: pytest.skip(f"cannot create a virtual environment here: {e}")
    py = tmp/'venv'/('Scripts' if os.name == 'nt' else 'bin')/'python'
    r = subprocess.run([str(py), '-m', 'pip', 'install', '--no-deps', '--no-build-isolation', '--no-index', '-q', str(tmp/'src')],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return py

def test_plugin_registers_method_dataset_metric(plugin_python):
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT)}
    r = subprocess.run([str(plugin_python), '-c', CHECK], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "'lotus_nb.methods': ['noop']" in r.stdout and "'lotus_nb.datasets': ['toy_blobs']" in r.stdout
    assert "'lotus_nb.metrics': ['conf_forget']" in r.stdout, r.stdout       # the broken one did not load ...
    assert "PluginWarning: lotus_nb skips the plugin 'broken'" in r.stderr and "lotus-nb-toy-plugin" in r.stderr, r.stderr[-3000:]

def test_this_interpreter_has_no_plugin():
    "The plugin went into the venv only: the interpreter running the tests still has lotus_nb's built-in methods only"
    from lotus_nb.methods.base import list_methods
    assert 'noop' not in list_methods()

# ---------------------------------------------------------------- precedence: yours, then a plugin's, then lotus_nb's

EXTRA = {   # an installed distribution as importlib.metadata finds one: its package and its dist-info, in a folder on the path
    'lotus_nb_extra/__init__.py': '',
    'lotus_nb_extra/methods.py': '''
        from lotus_nb.methods.base import register_method, Unlearned, frozen

        @register_method('lotus', display='LoTUS (extra)', order=10, paper=True)
        def lotus(original, task, cfg, progress=True):
            "The plugin's own 'lotus': a frozen copy of the original"
            return Unlearned(frozen(original), {'by': 'lotus_nb_extra'})
        ''',
    'lotus_nb_extra-0.1.dist-info/METADATA': '''
        Metadata-Version: 2.1
        Name: lotus_nb_extra
        Version: 0.1
        ''',
    'lotus_nb_extra-0.1.dist-info/entry_points.txt': '''
        [lotus_nb.methods]
        extra = lotus_nb_extra.methods
        ''',
}

MINE = '''
from lotus_nb.methods.base import register_method, Unlearned, frozen
@register_method('lotus', display='Mine')
def mine(original, task, cfg, progress=True): return Unlearned(frozen(original), {'by': 'mine'})
'''
PLUGIN = 'import lotus_nb_extra.methods\n'    # the user imports the plugin's module by hand
BUILTIN = 'import lotus_nb.methods.lotus\n'           # ... or lotus_nb's own LoTUS chapter
LOAD = 'from lotus_nb.methods.base import list_methods; list_methods()\n'   # a function that resolves a name: loads the built-ins, then the plugins
ALL = 'from lotus_nb.all import *\n'
REPORT = '''
import torch
from torch.utils.data import TensorDataset, Subset
from lotus_nb.methods.base import METHODS, list_methods, unlearn, UnlearnTask
from lotus_nb.core.catalog import PLUGINS
tds = TensorDataset(torch.randn(8, 1, 2, 2), torch.arange(8) % 2)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))
r = unlearn('lotus', model, UnlearnTask(Subset(tds, range(2)), Subset(tds, range(2, 8))), progress=False)
print(METHODS['lotus'].display, '|', METHODS.layer('lotus'), '|', r.record['by'], '|', len(list_methods()), '|', PLUGINS['lotus_nb.methods'])
'''
ORDERS = {   # what a fresh interpreter runs before REPORT -> (the winner's display name, its layer, who unlearned)
    'plugin loaded': (LOAD, ('LoTUS (extra)', 'plugin', 'lotus_nb_extra')),
    'plugin imported, then built-in': (PLUGIN + BUILTIN, ('LoTUS (extra)', 'plugin', 'lotus_nb_extra')),
    'built-in imported, then plugin': (BUILTIN + PLUGIN, ('LoTUS (extra)', 'plugin', 'lotus_nb_extra')),
    'all': (ALL, ('LoTUS (extra)', 'plugin', 'lotus_nb_extra')),
    'mine, then everything loaded': (MINE + LOAD, ('Mine', 'user', 'mine')),
    'everything loaded, then mine': (LOAD + MINE, ('Mine', 'user', 'mine')),
    'all, then mine': (ALL + MINE, ('Mine', 'user', 'mine')),
    'plugin imported, then mine': (PLUGIN + MINE, ('Mine', 'user', 'mine')),
    'mine, then plugin imported': (MINE + PLUGIN, ('Mine', 'user', 'mine')),
    'mine, then built-in, then plugin': (MINE + BUILTIN + PLUGIN, ('Mine', 'user', 'mine')),
    'plugin, then built-in, then mine': (PLUGIN + BUILTIN + MINE, ('Mine', 'user', 'mine')),
}

@pytest.fixture(scope='module')
def extra_path(tmp_path_factory):
    "A folder holding the `lotus_nb_extra` package and its dist-info (entry point group lotus_nb.methods), for a PYTHONPATH"
    tmp = tmp_path_factory.mktemp('extra')
    for name, text in EXTRA.items():
        (tmp/name).parent.mkdir(parents=True, exist_ok=True); (tmp/name).write_text(textwrap.dedent(text).lstrip())
    return tmp

BUILTIN_NAMES = builtin_methods()[0]   # lotus_nb's built-ins (tests/test_registry.py checks them in order)

def test_yours_then_a_plugins_then_lotus_nbs(extra_path):
    "In every order of import, registration and loading, the plugin's 'lotus' wins over lotus_nb's and yours over both (in lookup, layer and unlearn)"
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': os.pathsep.join([str(extra_path), str(ROOT)])}
    procs = {k: subprocess.Popen([sys.executable, '-c', code + REPORT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=extra_path)
             for k, (code, _) in ORDERS.items()}
    for k, p in procs.items():
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"{k}: {err[-3000:]}"
        display, layer, by, n, loaded = [x.strip() for x in out.strip().splitlines()[-1].split('|')]
        assert (display, layer, by) == ORDERS[k][1], (k, out)
        assert n == str(len(BUILTIN_NAMES)) and loaded == "['extra']", (k, out)   # the same names (an entry replaced, none added); the entry point loaded
