"""The import graph of lotus_nb, by floor, and the one import scanner of the repository (the tools and the tests use it).

A module's floor (layer) is one more than the highest floor of the lotus_nb modules it imports at its top level: what
`import lotus_nb.<module>` loads. Every other way a module reaches another one is an arrow too, and none may run up the
floors: an import inside a function (it runs on use), an `importlib.import_module` (or `__import__`) call on a literal
name, and a name taken from a literal tuple that a loop hands to `import_module`. That last form is the catalog's loader
(`lotus_nb.core.catalog.BUILTIN_PLUGINS`, after pytest's `default_plugins`): lotus_nb's registering modules named in a tuple
and imported by name when a name is first resolved. Those arrows run up by design; they are printed on their own, as
what they are, never hidden and never counted as back arrows. An `import_module` on any other expression cannot be
followed and is listed (`checks.optional_import`'s own, on its `module` parameter, imports third-party extras only: its
literal calls are scanned like imports).

    python tools/import_graph.py            # the floors of the working tree's lotus_nb/, the arrows, what is wrong
    python tools/import_graph.py --json     # the same as JSON (module -> layer, imports by kind, lines)

Exit status 1 when the graph has a loop or an arrow that runs up (module-level or lazy), else 0.
"""
from __future__ import annotations
import ast, json, sys, warnings
from dataclasses import dataclass, asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT/'lotus_nb'
IMPORT_FUNCS = ('import_module', '__import__')   # importlib.import_module(name), import_module(name), __import__(name)
OPTIONAL_IMPORT = 'optional_import'              # lotus_nb.core.checks.optional_import(module, extra): an extra's module

# ---------------------------------------------------------------- the scanner

@dataclass(frozen=True)
class Import:
    "One place a source file imports a module"
    module: str|None   # the absolute dotted name ('lotus_nb.data.datasets', 'numpy'); None when an argument is not a literal
    line: int          # where
    how: str           # 'import', 'from', 'import_module' (a literal name), 'loader' (from a literal tuple a loop hands over),
                       # 'dynamic' (any other expression), 'optional_import' (lotus_nb.core.checks.optional_import)
    lazy: bool = False # inside a function: runs when it is called, not when the module is imported
    names: tuple = ()  # the names a `from` import takes
    bound: tuple = ()  # the names the statement binds in its namespace
    scope: str = None  # the enclosing function ('f', 'C.m', 'f.<locals>.g'); None at module level
    soft: bool = False # in the body of a `try` (within the same function) that catches ImportError
    via: str = None    # 'loader': the tuple's name; 'dynamic': the expression; 'optional_import': the extra
    relative: bool = False # a relative `from` import (`from .data import x`), resolved against the package

def parse(source:str, filename:str='<source>') -> ast.Module:
    "`source` parsed, its warnings silenced (a docstring's invalid escape is not the scanner's business)"
    with warnings.catch_warnings():
        warnings.simplefilter('ignore'); return ast.parse(source, filename)

def _str(node) -> str|None: return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

def _strings(node) -> tuple|None:
    "The strings of a literal tuple or list of string constants, else None"
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(_str(e) is not None for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None

def _catches_import_error(handler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(getattr(n, 'id', getattr(n, 'attr', None)) in ('ImportError', 'ModuleNotFoundError') for n in names)

def scan_tree(tree:ast.AST, package:str=None) -> list:
    "Every `Import` of `tree`; `package` resolves relative imports (a module of lotus_nb: 'lotus_nb')"
    out, tuples = [], {}
    for n in getattr(tree, 'body', []):             # module-level literal tuples of names: what a loader may iterate over
        value = n.value if isinstance(n, (ast.Assign, ast.AnnAssign)) else None
        if value is not None and (s := _strings(value)) is not None:
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Name): tuples[t.id] = s
    def absolute(module, level):
        if not level: return module
        base = (package or '').split('.')
        if level > 1: base = base[:len(base) - (level - 1)]
        return '.'.join([*base, *([module] if module else [])])
    def record(node, scope, lazy, loops, soft):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append(Import(a.name, node.lineno, 'import', lazy, bound=(a.asname or a.name.split('.')[0],), scope=scope, soft=soft))
        elif isinstance(node, ast.ImportFrom):
            out.append(Import(absolute(node.module, node.level), node.lineno, 'from', lazy, tuple(a.name for a in node.names),
                              tuple(a.asname or a.name for a in node.names), scope, soft, relative=node.level > 0))
        elif isinstance(node, ast.Call):
            fname = getattr(node.func, 'id', getattr(node.func, 'attr', None))
            if fname in IMPORT_FUNCS and (node.args or node.keywords):
                arg = node.args[0] if node.args else node.keywords[0].value
                if (lit := _str(arg)) is not None: out.append(Import(lit, node.lineno, 'import_module', lazy, scope=scope, soft=soft)); return
                over = next((it for var, it in reversed(loops) if isinstance(arg, ast.Name) and var == arg.id), None)
                names = None if over is None else _strings(over) if _strings(over) is not None else tuples.get(getattr(over, 'id', None))
                if names is not None:
                    via = over.id if isinstance(over, ast.Name) else '<literal tuple>'
                    out.extend(Import(m, node.lineno, 'loader', lazy, scope=scope, soft=soft, via=via) for m in names)
                else: out.append(Import(None, node.lineno, 'dynamic', lazy, scope=scope, soft=soft, via=ast.unparse(arg)))
            elif fname == OPTIONAL_IMPORT:
                args = dict(zip(['module', 'extra'], node.args)) | {k.arg: k.value for k in node.keywords if k.arg}
                out.append(Import(_str(args.get('module')), node.lineno, 'optional_import', True, scope=scope, via=_str(args.get('extra'))))
    def visit(node, scope, lazy, loops, soft):
        hit = isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers if h.type)
        for child in ast.iter_child_nodes(node):
            sc, lz, lp, sf = scope, lazy, loops, soft or (hit and child in node.body)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):   # its body runs when it is called
                name = getattr(child, 'name', '<lambda>')
                sc, lz, lp, sf = (f"{scope}.{name}" if scope else name), True, (), False
            elif isinstance(child, ast.ClassDef): sc = f"{scope}.{child.name}" if scope else child.name   # a class body runs where it stands
            elif isinstance(child, (ast.For, ast.AsyncFor)) and isinstance(child.target, ast.Name): lp = loops + ((child.target.id, child.iter),)
            record(child, sc, lz, lp, sf)
            visit(child, sc, lz, lp, sf)
    visit(tree, None, False, (), False)
    return sorted(out, key=lambda i: i.line)   # source order (a stable sort keeps a line's imports in their order)

def scan(source:str, package:str=None, filename:str='<source>') -> list:
    "Every `Import` of the Python `source`"
    return scan_tree(parse(source, filename), package)

def package_of(path) -> str:
    "The dotted package of the file at `path`: its folder's name, and each folder above that holds an `__init__.py`"
    parts, d = [], Path(path).resolve().parent
    while True:
        parts.insert(0, d.name)
        if not (d.parent/'__init__.py').exists(): return '.'.join(parts)
        d = d.parent

def scan_file(path) -> list:
    "Every `Import` of the file at `path`; relative imports resolved against its package (`package_of`)"
    path = Path(path)
    return scan(path.read_text(encoding='utf-8'), package_of(path), str(path))

# ---------------------------------------------------------------- lotus_nb's graph

def _subpackages(pkg:Path=PKG) -> tuple:
    "The subpackages from the ground up, as `lotus_nb.all.SUBPACKAGES` lists them (read from its source: nothing is imported)"
    for n in ast.parse((Path(pkg)/'all.py').read_text(encoding='utf-8')).body:
        if isinstance(n, ast.Assign) and any(getattr(t, 'id', None) == 'SUBPACKAGES' for t in n.targets): return ast.literal_eval(n.value)
    raise RuntimeError(f"{pkg/'all.py'} defines no SUBPACKAGES")

SUBPACKAGES = _subpackages()   # the kinds of work, from the ground up: one list, the package's own

def modules(pkg:Path=PKG) -> dict:
    "dotted name within the package ('data.splits') -> path, for every module of every subpackage (not `__init__`); the top-level `__init__` (lazy names) and `all` (every name) import by name from nbdev's index and sit above the graph"
    return {'.'.join(p.relative_to(pkg).with_suffix('').parts): p for p in sorted(Path(pkg).rglob('*.py'))
            if p.parent != Path(pkg) and p.stem != '__init__' and '__pycache__' not in p.parts}

def subpackage(m:str) -> str: return m.split('.')[0]

def arrows(path, mods, imports=None, pkg:str='lotus_nb') -> list:
    "(module, Import) of each import of `path` (its `imports`, scanned when not given) that reaches one of `mods` (dotted names within `pkg`)"
    out = []
    for i in (scan_file(path) if imports is None else imports):
        if i.module is None: continue
        parts = i.module.split('.')
        if parts[0] != pkg: continue
        name = '.'.join(parts[1:])
        if name in mods: out.append((name, i))
        else: out.extend((f"{name}.{n}" if name else n, i) for n in i.names if (f"{name}.{n}" if name else n) in mods)   # from lotus_nb.data import splits
    return out

def graph(pkg:Path=PKG, name:str='lotus_nb') -> dict:
    "module -> {layer, lines, top, lazy, by_name, loader, dynamic}: its floor and its arrows by kind (dotted names within the package `name`)"
    mods = modules(pkg)
    g = {}
    for m, p in mods.items():
        imps = scan_file(p); ar = arrows(p, mods, imps, name)
        g[m] = dict(lines=len(p.read_text(encoding='utf-8').splitlines()),
                    top=sorted({d for d, i in ar if not i.lazy and i.how in ('import', 'from')} - {m}),
                    lazy=sorted({d for d, i in ar if i.lazy and i.how in ('import', 'from')}),
                    by_name=sorted({d for d, i in ar if i.how == 'import_module'}),
                    loader=sorted({(d, i.via) for d, i in ar if i.how == 'loader'}),
                    dynamic=[f"line {i.line}: {i.via}" for i in imps if i.how == 'dynamic'],
                    optional=sorted({i.module for i in imps if i.how == 'optional_import'}, key=str))
    layer, loops = {}, []
    def depth(m, path=()):
        if m in layer: return layer[m]
        if m in path:
            loops.append(path[path.index(m):] + (m,)); return 0
        layer[m] = 1 + max((depth(d, path + (m,)) for d in g[m]['top']), default=-1)
        return layer[m]
    for m in g: depth(m)
    for m in g: g[m]['layer'] = layer[m]
    g['__loops__'] = sorted(set(loops))
    return g

def problems(g:dict) -> dict:
    "What breaks the rule: loops of module-level imports, arrows (lazy or by a literal name) to a module on the same or a higher floor, names that cannot be followed"
    mods = {m: v for m, v in g.items() if not m.startswith('__')}
    upward = sorted((m, d, kind) for m, v in mods.items() for kind in ('top', 'lazy', 'by_name') for d in v[kind]
                    if d != m and mods[d]['layer'] >= v['layer'])
    dynamic = sorted((m, x) for m, v in mods.items() for x in v['dynamic'] if not (m == 'core.checks' and x.endswith(': module')))
    order = {s: k for k, s in enumerate(SUBPACKAGES)}
    against = sorted({(subpackage(m), subpackage(d)) for m, v in mods.items() for kind in ('top', 'lazy', 'by_name') for d in v[kind]
                      if order.get(subpackage(d), -1) > order.get(subpackage(m), -1)})
    return dict(loops=g['__loops__'], upward=upward, dynamic=dynamic, against=against)

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    g = graph(); mods = {m: v for m, v in g.items() if not m.startswith('__')}
    p = problems(g)
    if '--json' in argv:
        print(json.dumps({**{m: {**v, 'loader': [list(x) for x in v['loader']]} for m, v in mods.items()}, '__problems__': p}, indent=1, default=list))
        return 1 if p['loops'] or p['upward'] else 0
    for L in range(max(v['layer'] for v in mods.values()) + 1):
        ms = sorted(m for m, v in mods.items() if v['layer'] == L)
        print(f"layer {L:2d}: " + ', '.join(f"{m} ({mods[m]['lines']})" for m in ms))
    print(f"\n{len(mods)} modules, {sum(v['lines'] for v in mods.values())} lines; largest: " +
          ', '.join(f"{m} {v['lines']}" for m, v in sorted(mods.items(), key=lambda kv: -kv[1]['lines'])[:6]))
    for m, v in mods.items():
        by_tuple = {}
        for d, via in v['loader']: by_tuple.setdefault(via, []).append(d)
        for via, ds in by_tuple.items():
            print(f"\nloaded by name, as built-in plugins (the names in {m}.{via}, which its loader imports, as pytest does its "
                  f"default_plugins; up the floors by design, not counted below): " + ', '.join(f"{m} => {d} (layer {mods[d]['layer']})" for d in ds))
    lazy = sorted((m, d) for m, v in mods.items() for d in v['lazy'])
    print("\nimports inside functions (every one to a lower floor, else listed below): " + (', '.join(f"{m} -> {d}" for m, d in lazy) or 'none'))
    named = sorted((m, d) for m, v in mods.items() for d in v['by_name'])
    print("import_module on a literal name: " + (', '.join(f"{m} -> {d}" for m, d in named) or 'none'))
    opt = sorted((m, o) for m, v in mods.items() for o in v['optional'])
    print("optional_import (an extra's module, never lotus_nb's): " + (', '.join(f"{m} -> {o}" for m, o in opt) or 'none'))
    subs = sorted({(subpackage(m), subpackage(d)) for m, v in mods.items() for kind in ('top', 'lazy') for d in v[kind] if subpackage(d) != subpackage(m)},
                  key=lambda sd: (SUBPACKAGES.index(sd[0]), SUBPACKAGES.index(sd[1])))
    print("\nsubpackages (" + ', '.join(f"{s} {sum(subpackage(m) == s for m in mods)}" for s in SUBPACKAGES) + "), their arrows: "
          + ', '.join(f"{a} -> {b}" for a, b in subs))
    print("arrows against the subpackages' order (" + ' < '.join(SUBPACKAGES) + "): " + (', '.join(f"{a} -> {b}" for a, b in p['against']) or 'none'))
    print("\nloops: " + ('; '.join(' -> '.join(l) for l in p['loops']) or 'none'))
    print("arrows that run up (to a module on the same or a higher floor): " +
          (', '.join(f"{m} -> {d} ({k})" for m, d, k in p['upward']) or 'none'))
    print("import_module on a name that cannot be followed: " + (', '.join(f"{m} {x}" for m, x in p['dynamic']) or 'none')
          + " (checks.optional_import's own, on its module parameter, is the scanned optional_import above)")
    return 1 if p['loops'] or p['upward'] else 0

if __name__ == '__main__': sys.exit(main())
