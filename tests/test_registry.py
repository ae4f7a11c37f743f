"""The method registry owns every fact about a method: its role, its column, its label. Outside a method's own module no code
compares a method's name with a literal, and a registry imports nothing (the import graph itself is
tests/test_imports.py's)."""
import ast, os, subprocess, sys
from pathlib import Path
import pytest
import lotus_nb
from lotus_nb.methods.base import METHODS, ROLES, list_methods, role_method, method_role, is_reference, display_name
from helpers import import_graph, builtin_methods   # the repository's one import scanner: tools/import_graph.py

PKG = Path(lotus_nb.__file__).parent
PAPER = ['original', 'gold', 'finetune', 'neggrad_plus', 'random_label', 'bad_teacher', 'scrub', 'ssd', 'unsir', 'salun', 'lotus',
         'lotus_salun']   # the default run: the paper's methods and LoTUS + SalUn
BUILTIN, FIELD = builtin_methods()   # every built-in, read from lotus_nb.methods' sources; the field's beyond the paper's run when named
COMPARE = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)

def method_modules() -> set:
    "Dotted names (within lotus_nb) of the modules that define a registered method: the only places a method may name itself"
    list_methods()   # the built-ins loaded (load_plugins), as any function that resolves a name loads them
    return {f.__module__.split('.', 1)[1] for f in METHODS.values() if f.__module__.startswith('lotus_nb.')}

def _strings(node) -> list:
    "The string literals of `node`: a constant, or the constants of a tuple, list or set display"
    if isinstance(node, ast.Constant) and isinstance(node.value, str): return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)): return [s for e in node.elts for s in _strings(e)]
    return []

def _asks_role(node) -> bool:
    "A comparison of a role ('gold' is a role and a method name): `method_role(m) == 'gold'`, `f.role == 'gold'`"
    return any(isinstance(e, ast.Call) and getattr(e.func, 'id', getattr(e.func, 'attr', None)) == 'method_role'
               or isinstance(e, ast.Attribute) and e.attr == 'role' for e in [node.left, *node.comparators])

def _parse(src:str): return import_graph.parse(src)   # warnings silenced: a module's invalid escapes (a docstring's \m) are not this test's business

def literal_method_names(src:str, names:set) -> list:
    "`(line, code, names)` of each comparison, `.isin`/`.get` call or subscript of `src` that uses a literal method name"
    out = []
    for n in ast.walk(_parse(src)):
        found = []
        if isinstance(n, ast.Compare) and any(isinstance(o, COMPARE) for o in n.ops) and not _asks_role(n):
            found = [s for e in [n.left, *n.comparators] for s in _strings(e)]   # ==, !=, in, not in; x in ('a', 'b')
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ('isin', 'get') and n.args:
            found = _strings(n.args[0])                                           # df.method.isin([...]), d.get('gold')
        elif isinstance(n, ast.Subscript): found = _strings(n.slice)              # mean.loc['gold'], d['lotus']
        if set(found) & names: out.append((n.lineno, ast.get_source_segment(src, n), sorted(set(found) & names)))
    return sorted(out, key=lambda h: h[0])

def scan(folder=PKG, names=None) -> list:
    "`file:line: code` of every literal method-name comparison in `folder`'s modules, the method modules left out"
    names, skip = set(names or list_methods()), method_modules()
    return [f"{p.relative_to(folder).as_posix()}:{ln}: {code}" for p in sorted(Path(folder).rglob('*.py'))
            if '.'.join(p.relative_to(folder).with_suffix('').parts) not in skip and not p.stem.startswith('_')
            for ln, code, _ in literal_method_names(p.read_text(), names)]

def test_scanner_finds_every_form():
    "The scan sees each way of asking for a method by its name, and not the ways that ask the registry or name a role"
    src = '''
a = results.method == 'gold'
b = m != 'lotus'
c = 'gold' in mean.index
d = m not in ('scrub', 'ssd')
e = df.method.isin(['gold', *ms])
f = mean.loc['gold', 'AUC']
g = acc.get('lotus')
ok = [results.method == role_method('gold'), method_role(m) == 'gold', f.role != 'gold', m == focus, x == 'forget', cfg['lr']]
FIG = ('original', 'gold', 'lotus')   # a constant naming methods: not a comparison
'''
    hits = literal_method_names(src, set(PAPER))
    assert [h[0] for h in hits] == [2, 3, 4, 5, 6, 7, 8], hits

def test_no_literal_method_names():
    "Outside the method modules, the package asks the registry (role_method, is_reference, display_name), never a name"
    hits = scan()
    assert not hits, "literal method names outside the method modules:\n" + "\n".join(hits)

def test_roles_and_order():
    assert list_methods() == BUILTIN and list_methods(default_run=True) == PAPER and list_methods(default_run=False) == FIELD
    assert list_methods(reference=True) == ['original', 'gold'] and list_methods(reference=False) == BUILTIN[2:]
    assert [role_method(r) for r in ('original', 'gold')] == ['original', 'gold']
    assert {method_role(m) for m in BUILTIN} == set(ROLES) and all(is_reference(m) == (method_role(m) != 'method') for m in BUILTIN)
    assert [METHODS[m].order for m in BUILTIN] == sorted(METHODS[m].order for m in BUILTIN), "every built-in column has its order"
    assert display_name('gold') == 'Gold Std' and display_name('not_a_method') == 'not_a_method'
    with pytest.raises(ValueError, match='expected exactly one'): role_method('method')

def test_registries_import_nothing():
    "A registry imports nothing: lotus_nb.core.registry imports no lotus_nb module, at its top or inside a function; the catalog's loader is the one place the registering modules are loaded (by name), and the method interface imports no method"
    g = import_graph.graph()
    assert (g['core.registry']['top'], g['core.registry']['lazy'], g['core.registry']['by_name']) == ([], [], []), g['core.registry']
    assert g['core.catalog']['top'] == ['core.registry'] and g['core.catalog']['lazy'] == [], g['core.catalog']
    assert not (set(g['methods.base']['top']) | set(g['methods.base']['lazy'])) & method_modules(), "methods.base imports a method module"
    assert [m for m, v in g.items() if not m.startswith('__') and v['loader'] and m != 'core.catalog'] == []

def test_fresh_process_has_every_method():
    "Whatever module a process imports first, the registry is complete (a Ray worker's `unlearn('lotus', ...)` too), with no import loop"
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    code = "import {}; from lotus_nb.methods.base import list_methods; print(','.join(list_methods()))"
    procs = {m: subprocess.Popen([sys.executable, '-c', code.format(m)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for m in ('lotus_nb.methods.base', 'lotus_nb.running.benchmark', 'lotus_nb.methods.lotus', 'lotus_nb.metrics.report', 'lotus_nb')}
    for m, p in procs.items():
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, f"import {m}: {err[-2000:]}"
        assert out.strip().split(',') == BUILTIN, (m, out)

def test_modules_and_notebooks_have_different_names():
    "A module never shares its name with a notebook of nbs/ (paper.py beside paper.ipynb confused readers)"
    nbs = {p.stem for p in (PKG.parent/'nbs').rglob('*.ipynb')}
    clash = sorted(nbs & {p.stem for p in PKG.rglob('*.py')})
    assert not clash, f"modules named like a notebook: {clash}"
