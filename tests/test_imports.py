"""No import runs up the floors, not even inside a function. tools/import_graph.py is the repository's
one import scanner: it sees module-level imports, imports inside functions, `import_module` on a literal name, and the
names a loader takes from a literal tuple (the catalog's `BUILTIN_PLUGINS`, which it prints as what it is). The graph of
lotus_nb/ has no loop and no arrow to a module on the same or a higher floor."""
import os, re, subprocess, sys
from helpers import ROOT, import_graph

SAMPLE = '''
import os, numpy as np
from .data import load_dataset
from . import checks
from lotus_nb.core.registry import Registry
import importlib
NAMES = ('pkg.alpha', 'pkg.beta')
class C:
    from .store import Store                 # a class body runs at import: not lazy
    def m(self):
        import pkg.gamma
def f():
    from .training import fit
    importlib.import_module('pkg.delta')
    for name in NAMES: importlib.import_module(name)
    for other in ('pkg.eps',): importlib.import_module(other)
    importlib.import_module(os.environ['X'])
    try: import psutil
    except ImportError: psutil = None
    return optional_import('ray', 'ray')
g = lambda: __import__('pkg.zeta')
'''

def test_scanner_sees_every_form():
    "Each way of importing, where it runs (module level or on use), and the loader's tuple, resolved and labelled"
    got = [(i.module, i.how, i.lazy, i.scope, i.via) for i in import_graph.scan(SAMPLE, 'pkg')]
    assert got == [('os', 'import', False, None, None), ('numpy', 'import', False, None, None),
                   ('pkg.data', 'from', False, None, None), ('pkg', 'from', False, None, None),
                   ('lotus_nb.core.registry', 'from', False, None, None), ('importlib', 'import', False, None, None),
                   ('pkg.store', 'from', False, 'C', None), ('pkg.gamma', 'import', True, 'C.m', None),
                   ('pkg.training', 'from', True, 'f', None), ('pkg.delta', 'import_module', True, 'f', None),
                   ('pkg.alpha', 'loader', True, 'f', 'NAMES'), ('pkg.beta', 'loader', True, 'f', 'NAMES'),
                   ('pkg.eps', 'loader', True, 'f', '<literal tuple>'), (None, 'dynamic', True, 'f', "os.environ['X']"),
                   ('psutil', 'import', True, 'f', None), ('ray', 'optional_import', True, 'f', 'ray'),
                   ('pkg.zeta', 'import_module', True, '<lambda>', None)], got
    imps = import_graph.scan(SAMPLE, 'pkg')
    assert [i.module for i in imps if i.soft] == ['psutil'] and [i.bound for i in imps if i.module == 'numpy'] == [('np',)]
    assert [i.names for i in imps if i.module == 'pkg'] == [('checks',)] and all(i.relative for i in imps if i.module in ('pkg', 'pkg.data'))

def test_graph_catches_each_fault(tmp_path):
    "A loop of module-level imports, a lazy import of a module above, and a literal import_module of one are each reported"
    pkg = tmp_path/'toy'; sub = pkg/'core'; sub.mkdir(parents=True)
    for d in (pkg, sub): (d/'__init__.py').write_text('')
    (sub/'low.py').write_text("import importlib\ndef f():\n    from .high import x\n    importlib.import_module('toy.core.mid')\n")
    (sub/'mid.py').write_text("from .low import f\n")
    (sub/'high.py').write_text("from .mid import f\nx = 1\n")
    (sub/'a.py').write_text("from .b import y\n"); (sub/'b.py').write_text("from toy.core.a import z\n")
    g = import_graph.graph(pkg, 'toy')
    p = import_graph.problems(g)
    assert ('core.low', 'core.high', 'lazy') in p['upward'] and ('core.low', 'core.mid', 'by_name') in p['upward'], p
    assert any(set(l) == {'core.a', 'core.b'} for l in p['loops']), p['loops']

def test_no_loop_no_upward_import():
    "lotus_nb's modules import each other without a loop, and no import (at the top, inside a function, by a literal name) runs up"
    p = import_graph.problems(import_graph.graph())
    assert p['loops'] == [], f"import loops: {p['loops']}"
    assert p['upward'] == [], "imports that run up the floors (module -> module it imports, kind):\n" + '\n'.join(map(str, p['upward']))
    assert p['dynamic'] == [], f"import_module on names the scanner cannot follow: {p['dynamic']}"

def test_the_loader_tuple_is_shown_as_such():
    "The catalog's loader is the one place modules are imported by names from a tuple; the tool prints each arrow of it, as plugins loaded by name"
    from lotus_nb.core.catalog import BUILTIN_PLUGINS
    g = import_graph.graph()
    loaders = {m: v['loader'] for m, v in g.items() if not m.startswith('__') and v['loader']}
    assert loaders == {'core.catalog': sorted((b.split('.', 1)[1], 'BUILTIN_PLUGINS') for b in BUILTIN_PLUGINS)}, loaders
    assert g['core.catalog']['top'] == ['core.registry'] and g['core.registry']['top'] == [] and g['core.registry']['lazy'] == []
    res = subprocess.run([sys.executable, str(ROOT/'tools'/'import_graph.py')], capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = next(l for l in res.stdout.splitlines() if l.startswith('loaded by name, as built-in plugins'))
    assert 'core.catalog.BUILTIN_PLUGINS' in line and all(f"core.catalog => {b.split('.', 1)[1]} " in line for b in BUILTIN_PLUGINS), line

def test_optional_imports_are_extras():
    "optional_import is called on literal names of other packages' modules only, never on a module of lotus_nb"
    g = import_graph.graph()
    opt = {o for m, v in g.items() if not m.startswith('__') for o in v['optional']}
    assert opt and None not in opt and not any(o.split('.')[0] == 'lotus_nb' for o in opt), opt

def test_no_module_loads_the_catalog_when_imported():
    "Importing any one module of lotus_nb (but lotus_nb.all) leaves the built-ins and plugins unloaded: only a resolved name loads them"
    mods = list(import_graph.modules())
    code = ("import importlib, sys\nfrom lotus_nb.core.catalog import _LOAD\n"
            f"for m in {mods!r}:\n    importlib.import_module('lotus_nb.' + m)\n    assert not _LOAD['done'], m\nprint('ok')")
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT)}
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == 'ok', res.stderr[-3000:]

def test_subpackages_by_kind_of_work():
    """lotus_nb is its seven subpackages and the two top-level modules (the lazy API in `__init__`, `all`); `nbs/` has a folder
    per subpackage holding exactly the chapters that export its modules, numbered in the subpackages' order; no module of a
    subpackage imports a later subpackage but `running.reporting`, which writes the paper's tables (`paper.paper_tables`)"""
    pkg, nbs = ROOT/'lotus_nb', ROOT/'nbs'
    assert sorted(p.name for p in pkg.iterdir() if p.is_dir() and p.name != '__pycache__') == sorted(import_graph.SUBPACKAGES)
    assert sorted(p.name for p in pkg.glob('*.py')) == ['__init__.py', '_modidx.py', 'all.py']
    mods = import_graph.modules()
    assert {m.split('.')[0] for m in mods} == set(import_graph.SUBPACKAGES)
    from nbdev.doclinks import nbglob
    numbers = {}
    for nb in nbglob(nbs, as_path=True):
        rel = nb.relative_to(nbs)
        src = nb.read_text(encoding='utf-8')
        exp = re.search(r'"#\|\s*default_exp\s+([\w.]+)', src)
        if exp and exp[1] not in ('__init__', 'all'):
            assert rel.parts[0] == exp[1].split('.')[0], f"{rel} exports {exp[1]}: it belongs in nbs/{exp[1].split('.')[0]}/"
            assert exp[1] in mods, (rel, exp[1])
        if len(rel.parts) == 2: numbers.setdefault(rel.parts[0], []).append(int(rel.name.split('_')[0]))
    order = [numbers[s] for s in import_graph.SUBPACKAGES]
    assert all(max(a) < min(b) for a, b in zip(order, order[1:])), "chapter numbers follow the subpackages' order"
    against = import_graph.problems(import_graph.graph())['against']
    assert against == [('running', 'paper')], against

MAX_LINE = 140   # characters a line of the package may have

def long_lines(pkg) -> list[str]:
    "`file:line` of each line longer than MAX_LINE in the modules under `pkg`, but nbdev's generated index `_modidx.py`"
    return [f'{p.relative_to(pkg.parent).as_posix()}:{i}' for p in sorted(pkg.rglob('*.py')) if p.name != '_modidx.py'
            for i, line in enumerate(p.read_text(encoding='utf-8').split('\n'), 1) if len(line) > MAX_LINE]

def test_package_lines_fit():
    """No line of lotus_nb's modules is longer than MAX_LINE characters (the generated `_modidx.py` aside): a long line is
    wrapped in its notebook (inside its brackets; a docstring over several lines; a module docstring is the chapter's
    `> description`), then exported"""
    long = long_lines(ROOT/'lotus_nb')
    assert long == [], f"lines over {MAX_LINE} characters (wrap them in their notebooks, then nbdev_export): {long}"

def test_long_line_check_can_fail(tmp_path):
    "A line one character over the limit is named by file and line; one at the limit and the generated index are not"
    pkg = tmp_path/'toy'; (pkg/'core').mkdir(parents=True)
    (pkg/'core'/'a.py').write_text('x = 1\n' + 'y = ' + '1'*(MAX_LINE - 4) + '\n' + 'z = ' + '1'*(MAX_LINE - 3) + '\n')
    (pkg/'_modidx.py').write_text('d = ' + '"x"'*MAX_LINE + '\n')
    assert long_lines(pkg) == ['toy/core/a.py:3']
