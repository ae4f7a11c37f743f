"""lotus_nb declares exactly what it imports: the third-party imports of `lotus_nb/*.py` are the runtime
`requirements` of settings.ini (both ways), and each module reached only through
`optional_import('<module>', '<extra>')` is in that extra (`extra_requirements_<extra>`), which setup.py turns
into `pip install "lotus_nb[<extra>]"`. The only exceptions are the commented lists below: packages a library
imports on our behalf (INDIRECT), imports with an ImportError fallback (SOFT) and extras whose feature is not written
yet (PENDING_EXTRAS). The test reads whatever modules lotus_nb/ holds when it runs."""
import ast, configparser, functools, json, importlib.metadata as md, re, shlex, sys
from pathlib import Path
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from helpers import ROOT, import_graph   # the repository's one import scanner: tools/import_graph.py

LIB = ROOT/'lotus_nb'

# Import names whose distribution is named otherwise. Checked before `packages_distributions()` (which only knows
# installed packages and may name a variant, e.g. opencv-python-headless for cv2), so that an engine's module
# maps to the distribution we declare even where the engine is not installed.
IMPORT_TO_DIST = {'sklearn': 'scikit-learn', 'PIL': 'pillow', 'pytorch_grad_cam': 'grad-cam', 'imagehash': 'imagehash',
                  'ray': 'ray', 'cv2': 'opencv-python', 'yaml': 'pyyaml', 'skimage': 'scikit-image'}

# Runtime requirements that no module imports by name, because a library imports them on demand.
# Each is kept only while the call that needs it is in lotus_nb's source (regex searched in lotus_nb/*.py).
INDIRECT = {
    'tabulate': r'\.to_markdown\(',   # pandas' DataFrame.to_markdown imports tabulate
    'jinja2': r'\.to_latex\(',        # pandas' DataFrame.to_latex renders through Styler, which needs jinja2
}

# Modules imported only inside `try: ... except ImportError:` with a fallback, so lotus_nb works without them and
# they are not requirements. Each must still be imported that way, and any new one must be listed here.
SOFT = {
    # 'module': 'what lotus_nb does without it',
}

# Extras declared before any module uses them (their features are being written). Once a module calls
# optional_import for one, the test fails until its entry is removed here, so the list cannot go stale.
PENDING_EXTRAS = {
}

def settings():
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(ROOT/'settings.ini', encoding='utf-8')
    return cfg['DEFAULT']

def req_names(spec: str) -> set:
    "Canonical distribution names of a settings.ini requirement list"
    return {canonicalize_name(Requirement(r).name) for r in shlex.split(spec)}

def declared_extras() -> dict:
    "extra name -> canonical distribution names, from settings.ini's `extra_requirements_<extra>` keys"
    cfg = settings()
    return {k[len('extra_requirements_'):]: req_names(v) for k, v in cfg.items() if k.startswith('extra_requirements_')}

@functools.cache
def installed_dists() -> dict: return md.packages_distributions()

def dists_of(module: str) -> set:
    "Canonical names of the distributions that may provide top-level `module`"
    if module in IMPORT_TO_DIST: return {canonicalize_name(IMPORT_TO_DIST[module])}
    found = installed_dists().get(module)
    if found: return {canonicalize_name(d) for d in found}
    pytest.fail(f"cannot tell which distribution provides {module!r}: install it or add it to IMPORT_TO_DIST")

def scan(lib: Path = LIB):
    """Third-party imports of the modules in `lib`, read by the repository's one import scanner (tools/import_graph.py):
    (static, optional, soft). `static` maps each top-level module imported with `import`/`from` or `import_module` on a
    literal name (at any depth) to the places it is imported, except where the enclosing function calls optional_import
    for it; `optional` lists the (module, extra, place) of every optional_import call; `soft` maps the modules imported
    in the body of a `try` that catches ImportError (within the same function) to their places."""
    static, optional, soft = {}, [], {}
    files = sorted(lib.rglob('*.py'))
    assert files, f"no modules in {lib}"
    for path in files:
        where = f"lotus_nb/{path.relative_to(lib).as_posix()}"
        imps = import_graph.scan_file(path)
        opt = [i for i in imps if i.how == 'optional_import']
        for i in opt:
            if i.module is None or i.via is None:
                pytest.fail(f"{where}:{i.line}: optional_import needs literal strings (module, extra) so that they can be checked")
            optional.append((i.module, i.via, f"{where}:{i.line}"))
        for i in imps:
            if i.how not in ('import', 'from', 'import_module') or i.relative: continue
            m = i.module.split('.')[0]
            if m in sys.stdlib_module_names or m == 'lotus_nb': continue
            # guarded: inside a function that calls optional_import for the same module
            if i.scope is not None and any(o.module.split('.')[0] == m and (o.scope == i.scope or (o.scope or '').startswith(i.scope + '.')) for o in opt): continue
            (soft if i.soft else static).setdefault(m, []).append(f"{where}:{i.line}")
    return static, optional, soft

def test_scan_sees_imports_everywhere(tmp_path):
    "The scanner finds imports inside functions, `from` imports and optional_import calls, and honours the guard"
    (tmp_path/'a.py').write_text("import os, numpy as np\nfrom sklearn.metrics import f1_score\nfrom . import b\n"
                                 "def f():\n    import seaborn\n    return seaborn\n"
                                 "def g():\n    ray = optional_import('ray', 'ray')\n    from ray import tune\n"
                                 "def h(): return data.optional_import(module='imagehash', extra='mufac')\n"
                                 "def k():\n    try: import psutil\n    except (ModuleNotFoundError, OSError): psutil = None\n"
                                 "    try: import tabulate\n    except ValueError: pass\n")
    static, optional, soft = scan(tmp_path)
    assert set(static) == {'numpy', 'sklearn', 'seaborn', 'tabulate'}, static
    assert soft == {'psutil': ['lotus_nb/a.py:12']}, soft
    assert [(m, e) for m, e, _ in optional] == [('ray', 'ray'), ('imagehash', 'mufac')], optional
    (tmp_path/'c.py').write_text("def f(name): return optional_import(name, 'ray')\n")
    with pytest.raises(pytest.fail.Exception, match='literal strings'): scan(tmp_path)

def runtime_problems(static: dict, declared: set, source: str, soft: dict = {}, allowed_soft=SOFT) -> list:
    "What is wrong between the imports (module -> places; `soft`: with a fallback), the declared runtime requirements and the source"
    out = [f"{m} is imported only with an ImportError fallback ({', '.join(p)}): list it in SOFT with that fallback, or declare it"
           for m, p in soft.items() if m not in allowed_soft and m not in static]
    out += [f"SOFT lists {m}, which no module imports with an ImportError fallback any more" for m in allowed_soft if m not in soft]
    out += [f"{m} (imported at {', '.join(places)}) is not in settings.ini's requirements: declare it, or for an optional "
           "engine import it through optional_import(module, extra) inside the function that needs it"
           for m, places in static.items() if not dists_of(m) & declared]
    used = set().union(*(dists_of(m) for m in static))
    for dist, pattern in INDIRECT.items():
        if dist not in declared: out.append(f"INDIRECT lists {dist}, which settings.ini does not declare")
        elif not re.search(pattern, source): out.append(f"{dist} was declared for {pattern!r}, which lotus_nb no longer calls: drop it")
    out += [f"{d} is declared in settings.ini's requirements but imported by no module of lotus_nb"
            for d in sorted(declared - used - set(INDIRECT))]
    return out

def extra_problems(optional: list, extras: dict, runtime: set, pending=PENDING_EXTRAS) -> list:
    "What is wrong between the optional_import calls, the declared extras and the runtime requirements"
    out, used = [], {}
    if not extras: out.append("settings.ini declares no extra_requirements_<engine>")
    if {'all', 'dev'} & set(extras): out.append("'all' (the union) and 'dev' are built by setup.py, not engine extras")
    for module, extra, where in optional:
        if module.split('.')[0] in sys.stdlib_module_names: continue
        dists = dists_of(module.split('.')[0])
        if extra not in extras:
            out.append(f"{where}: optional_import({module!r}, {extra!r}) names an extra settings.ini lacks (extra_requirements_{extra})")
            continue
        if not dists & extras[extra]: out.append(f"{where}: {module!r} comes from {sorted(dists)}, not in the {extra!r} extra {sorted(extras[extra])}")
        if dists & runtime: out.append(f"{where}: {module!r} is optional, yet {sorted(dists & runtime)} is a runtime requirement")
        used.setdefault(extra, set()).update(dists & extras[extra])
    for extra, dists in extras.items():
        if extra in pending:
            if extra in used: out.append(f"the {extra!r} extra is now used ({sorted(used[extra])}): remove it from PENDING_EXTRAS")
        elif not dists <= used.get(extra, set()):
            out.append(f"the {extra!r} extra declares {sorted(dists - used.get(extra, set()))}, which no optional_import(..., {extra!r}) in lotus_nb uses")
    out += [f"PENDING_EXTRAS names {e!r}, which settings.ini lacks" for e in pending if e not in extras]
    return out

def test_runtime_requirements_are_the_imports():
    "Every third-party module that lotus_nb imports is a runtime requirement, and every requirement is imported"
    static, _, soft = scan()
    declared = req_names(settings()['requirements'])
    source = '\n'.join(p.read_text(encoding='utf-8') for p in LIB.rglob('*.py'))
    problems = runtime_problems(static, declared, source, soft)
    assert not problems, '\n'.join(problems)
    assert not {'fastcore', 'nbdev', 'execnb'} & declared, "the nbdev toolchain belongs in dev_requirements"

def test_runtime_check_fails_on_drift():
    "The check reports an undeclared import, an unused requirement, an indirect one whose call is gone, an unlisted or stale soft import"
    static = {'numpy': ['a.py:1'], 'sklearn': ['a.py:2'], 'seaborn': ['b.py:3']}
    declared = {'numpy', 'scikit-learn', 'seaborn', 'tabulate', 'jinja2'}
    soft = {'psutil': ['d.py:5']}
    assert runtime_problems(static, declared, 'df.to_markdown(); df.to_latex()', soft, allowed_soft={'psutil': ''}) == []
    problems = runtime_problems({**static, 'timm': ['c.py:4']}, declared - {'seaborn'} | {'scipy'}, 'df.to_markdown()',
                                soft, allowed_soft={'resource': ''})
    assert len(problems) == 6, problems
    for s in ['seaborn (imported at b.py:3)', 'timm (imported at c.py:4)', 'jinja2 was declared', 'scipy is declared',
              'psutil is imported only with an ImportError fallback', 'SOFT lists resource']:
        assert any(p.startswith(s) for p in problems), (s, problems)

def test_optional_engines_are_their_extras():
    "Each optional_import names an extra that installs its module; each extra is used by one (or is pending)"
    _, optional, _ = scan()
    problems = extra_problems(optional, declared_extras(), req_names(settings()['requirements']))
    assert not problems, '\n'.join(problems)

def test_extras_check_fails_on_drift():
    "The check reports a wrong or missing extra, an engine that is also a runtime requirement, an unused or stale pending extra"
    extras = {'ray': {'ray'}, 'gradcam': {'grad-cam'}, 'mufac': {'imagehash'}}
    calls = [('ray', 'ray', 'x.py:1'), ('pytorch_grad_cam', 'gradcam', 'y.py:2'), ('imagehash', 'mufac', 'z.py:3'), ('math', 'core', 'w.py:4')]
    assert extra_problems(calls, extras, {'torch'}, pending={}) == []
    assert extra_problems([], extras, {'torch'}, pending=dict.fromkeys(extras)) == []
    cases = {'names an extra settings.ini lacks': ([('ray', 'parallel', 'x.py:1')], {'torch'}, {}),
             "not in the 'mufac' extra": ([('ray', 'mufac', 'x.py:1')], {'torch'}, {}),
             'is a runtime requirement': (calls, {'torch', 'ray'}, {}),
             'which no optional_import': (calls[:2], {'torch'}, {}),
             'remove it from PENDING_EXTRAS': (calls, {'torch'}, {'ray': ''})}
    for msg, (cs, runtime, pending) in cases.items():
        problems = extra_problems(cs, extras, runtime, pending=pending)
        assert any(msg in p for p in problems), (msg, problems)
    assert any('not engine extras' in p for p in extra_problems([], {**extras, 'all': {'ray'}}, set(), pending=dict.fromkeys(extras)))

def setup_kwargs() -> dict:
    "The keyword arguments setup.py passes to setuptools.setup (run with setup() replaced by a recorder)"
    import setuptools, os
    seen, real, cwd = {}, setuptools.setup, os.getcwd()
    setuptools.setup = lambda **kw: seen.update(kw)
    try:
        os.chdir(ROOT)
        exec(compile((ROOT/'setup.py').read_text(encoding='utf-8'), 'setup.py', 'exec'), {'__name__': '__main__'})
    finally: setuptools.setup = real; os.chdir(cwd)
    return seen

def test_setup_builds_the_extras():
    "setup.py: install_requires = requirements; one extra per engine, `all` = their union, `dev` = dev_requirements"
    kw, cfg = setup_kwargs(), settings()
    assert kw['install_requires'] == shlex.split(cfg['requirements'])
    ex = kw['extras_require']
    engines = {k[len('extra_requirements_'):]: shlex.split(v) for k, v in cfg.items() if k.startswith('extra_requirements_')}
    assert {k: ex[k] for k in engines} == engines
    assert set(ex) == set(engines) | {'all', 'dev'}, sorted(ex)
    assert sorted(ex['all']) == sorted({r for rs in engines.values() for r in rs})
    assert ex['dev'] == shlex.split(cfg['dev_requirements'])
    dev = req_names(cfg['dev_requirements'])
    assert {'nbdev', 'execnb', 'fastcore', 'pytest', 'build', 'jupytext', 'papermill'} <= dev, sorted(dev)

def test_python_versions_are_the_tested_ones():
    "The declared Python versions (settings.ini's python_versions: classifiers, min_python) are the one CI runs"
    kw, cfg = setup_kwargs(), settings()
    versions, here = cfg['python_versions'].split(), f"{sys.version_info.major}.{sys.version_info.minor}"
    assert versions == [here], (f"settings.ini declares Python {versions}, this suite runs on {here}: declare exactly "
                                "the versions that CI tests")
    assert cfg['min_python'] == versions[0] and kw['python_requires'] == f">={versions[0]}"
    declared = [c.rsplit(' :: ', 1)[1] for c in kw['classifiers'] if c.startswith('Programming Language :: Python :: ')]
    assert declared == versions, declared

# How the README names a distribution where it is not its own name (case aside)
README_NAMES = {'torch': 'PyTorch'}

def readme_install() -> str:
    "The README's Install section: from '## Install' to the next '## '"
    text = (ROOT/'README.md').read_text(encoding='utf-8')
    return text.split('## Install', 1)[1].split('\n## ', 1)[0]

def install_misses(section:str, cfg) -> list:
    "The runtime requirements and the extras' packages of settings.ini that the Install section does not name"
    names = [Requirement(r).name for r in shlex.split(cfg['requirements'])]
    names += [Requirement(r).name for k in cfg if k.startswith('extra_requirements_') for r in shlex.split(cfg[k])]
    low = section.lower()
    return [n for n in names if README_NAMES.get(n, n).lower() not in low]

def guide_install() -> str:
    "The text of the install page the README links to (nbs/guide_install.ipynb): its markdown cells"
    cells = json.loads((ROOT/'nbs'/'guide_install.ipynb').read_text(encoding='utf-8'))['cells']
    return '\n\n'.join(''.join(c['source']) for c in cells if c['cell_type'] == 'markdown')

def test_readme_install_names_every_requirement():
    """The README's install list is settings.ini's: every runtime requirement and every extra's package is named there,
    and on the install page it links to (which says so of its own list)"""
    assert install_misses(readme_install(), settings()) == []
    assert install_misses(guide_install(), settings()) == []

def test_readme_install_check_can_fail():
    cfg = dict(settings()); cfg['requirements'] = cfg['requirements'] + ' someunlistedpackage'
    assert install_misses(readme_install(), cfg) == ['someunlistedpackage']
