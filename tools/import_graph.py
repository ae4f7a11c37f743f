"""The import graph of lotus_nb, by layer: a module's layer is one more than the highest layer of the lotus_nb modules it
imports at its top level (imports inside functions, which run on use, are listed apart). Prints each layer's modules with
their line counts, then every module-level import that points to the same or a higher layer (a back arrow: there should
be none), and the modules whose only lotus_nb imports are lazy ones.

    python tools/import_graph.py            # the layers of the working tree's lotus_nb/
    python tools/import_graph.py --json     # the same as JSON (module -> layer, imports, lines)
"""
from __future__ import annotations
import ast, json, sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent/'lotus_nb'

def imports(path:Path) -> tuple:
    "(top-level lotus_nb imports, imports inside functions) of the module at `path`"
    tree, top, lazy = ast.parse(path.read_text()), set(), set()
    def names(node):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1: return {(node.module or '').split('.')[0]} if node.module else {a.name for a in node.names}
            if node.module and node.module.startswith('lotus_nb.'): return {node.module.split('.')[1]}
            if node.module == 'lotus_nb': return {a.name for a in node.names}
        if isinstance(node, ast.Import): return {a.name.split('.')[1] for a in node.names if a.name.startswith('lotus_nb.')}
        return set()
    for node in tree.body: top |= names(node)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node): lazy |= names(sub)
    mods = {p.stem for p in PKG.glob('*.py')}
    return {m for m in top if m in mods}, {m for m in lazy if m in mods} - top

def graph() -> dict:
    mods = {p.stem: p for p in sorted(PKG.glob('*.py')) if p.stem not in ('_modidx', '__init__')}
    g = {m: dict(zip(('top', 'lazy'), imports(p)), lines=len(p.read_text().splitlines())) for m, p in mods.items()}
    layer = {}
    def depth(m, seen=()):
        if m in layer: return layer[m]
        if m in seen: raise ValueError(f"import loop: {' -> '.join(seen + (m,))}")
        layer[m] = 1 + max((depth(d, seen + (m,)) for d in g[m]['top'] if d in g), default=-1)
        return layer[m]
    for m in g: g[m]['layer'] = depth(m)
    return g

if __name__ == '__main__':
    g = graph()
    if '--json' in sys.argv: print(json.dumps({m: {**v, 'top': sorted(v['top']), 'lazy': sorted(v['lazy'])} for m, v in g.items()}, indent=1)); sys.exit()
    for L in range(max(v['layer'] for v in g.values()) + 1):
        ms = sorted(m for m, v in g.items() if v['layer'] == L)
        print(f"layer {L:2d}: " + ', '.join(f"{m} ({g[m]['lines']})" for m in ms))
    back = [(m, d) for m, v in g.items() for d in v['lazy'] if d in g and g[d]['layer'] >= v['layer'] and m != 'catalog']
    print(f"\n{len(g)} modules, {sum(v['lines'] for v in g.values())} lines; largest: " +
          ', '.join(f"{m} {v['lines']}" for m, v in sorted(g.items(), key=lambda kv: -kv[1]['lines'])[:6]))
    print("lazy imports of a module at the same or a higher layer (a use on demand, not a back arrow of the import graph): " +
          (', '.join(f"{m} -> {d}" for m, d in sorted(back)) or 'none'))
