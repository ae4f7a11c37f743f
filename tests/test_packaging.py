"""lotus_nb as a user gets it: one version everywhere, a README generated from index.ipynb, and a wheel and sdist
that install into a fresh virtual environment (no system site packages) with the dependencies they declare,
where the API example of index.ipynb runs."""
import configparser, difflib, email.parser, json, re, shlex, shutil, sys, tarfile, time, zipfile
from pathlib import Path
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
import lotus_nb
from helpers import ROOT, checkout_copy, run, show

def settings():
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(ROOT/'settings.ini', encoding='utf-8')
    return cfg['DEFAULT']

def engine_extras(cfg) -> dict:
    return {k[len('extra_requirements_'):]: shlex.split(v) for k, v in cfg.items() if k.startswith('extra_requirements_')}

_re_entry = re.compile(r'^##\s+\[?v?(\d+(?:\.\d+)+\S*?)\]?(\s+\(unreleased\))?\s*$', re.M)

def changelog_version(text: str, unreleased: bool = False) -> str:
    """The version of the CHANGELOG's top released entry (its first `## <version>` heading not marked `(unreleased)`);
    `unreleased`: of the unreleased entry above it, or None"""
    entries = [(m.group(1), bool(m.group(2))) for m in _re_entry.finditer(text)]
    if unreleased: return entries[0][0] if entries and entries[0][1] else None
    released = [v for v, u in entries if not u]
    assert released, "CHANGELOG.md has no '## <version>' entry"
    return released[0]

def test_version_single_source():
    """settings.ini's version is lotus_nb.__version__ and the CHANGELOG's top released entry; an unreleased entry may sit
    above it, for a later version"""
    from packaging.version import Version
    version = settings()['version']
    text = (ROOT/'CHANGELOG.md').read_text(encoding='utf-8')
    assert lotus_nb.__version__ == version, (lotus_nb.__version__, version)
    assert changelog_version(text) == version
    if (nxt := changelog_version(text, unreleased=True)): assert Version(nxt) > Version(version), (nxt, version)
    assert changelog_version("# Changelog\n\n## 1.2.0\n\n- x\n\n## 1.1.0\n") == '1.2.0'   # the top entry wins
    assert changelog_version("## 1.3.0 (unreleased)\n\n## 1.2.0\n") == '1.2.0'
    assert changelog_version("## 1.3.0 (unreleased)\n\n## 1.2.0\n", unreleased=True) == '1.3.0'
    assert changelog_version("## 1.2.0\n", unreleased=True) is None

def test_readme_is_generated_from_index(tmp_path):
    "README.md is what tools/make_readme.py (nbdev_readme's processors, without Quarto) makes of nbs/index.ipynb"
    out = tmp_path/'README.md'
    res = run([sys.executable, ROOT/'tools'/'make_readme.py', '--out', out], cwd=tmp_path, timeout=300)
    assert res.returncode == 0, show(res)
    want, have = out.read_text(encoding='utf-8'), (ROOT/'README.md').read_text(encoding='utf-8')
    diff = ''.join(list(difflib.unified_diff(have.splitlines(True), want.splitlines(True), 'README.md', 'generated'))[:80])
    assert have == want, f"README.md is out of date with nbs/index.ipynb: run `python tools/make_readme.py`\n{diff}"
    for heading in ['## Install', '## Quick start', '## Results', '## Where to go next', '## Citing', '## Licence']:
        assert re.search(f'^{heading}$', want, re.M), f"{heading!r} missing from the README"
    assert 'pip install lotus_nb' in want and 'pip install -e ".[dev,all]"' in want
    for extra in [*engine_extras(settings()), 'all']: assert f'lotus_nb[{extra}]' in want, f"the README does not name the {extra!r} extra"

def api_example(nb_path=ROOT/'nbs'/'index.ipynb', heading='Quick start') -> str:
    "The code cells of `nb_path`'s section titled `heading` (up to the next heading), as one script"
    cells = json.loads(Path(nb_path).read_text(encoding='utf-8'))['cells']
    src = [''.join(c['source']) for c in cells]
    start = next((i for i, (c, s) in enumerate(zip(cells, src)) if c['cell_type'] == 'markdown'
                  and re.search(rf'^#+\s+{re.escape(heading)}\s*$', s, re.M)), None)
    assert start is not None, f"{nb_path.name} has no section {heading!r}"
    code = []
    for c, s in zip(cells[start+1:], src[start+1:]):
        if c['cell_type'] == 'markdown' and re.search(r'^#+\s', s, re.M): break
        if c['cell_type'] == 'code': code.append(s)
    assert code, f"no code cells under {heading!r}"
    assert not any(re.search(r'^\s*[%!]', s, re.M) for s in code), "the example uses IPython magics; a plain python cannot run it"
    return '\n\n'.join(code) + '\n'

# what the sdist carries beside the package and the build files: the README, the changes, the licence, the citation
DIST_FILES = ['README.md', 'CHANGELOG.md', 'LICENSE', 'CITATION.cff']

def package_data() -> list:
    "The data files the package reads (published.csv, deviations.csv): MANIFEST.in's includes under lotus_nb/"
    return [l.split()[1] for l in (ROOT/'MANIFEST.in').read_text().splitlines() if l.startswith('include lotus_nb/')]

def test_license_in_sdist_and_wheel(tmp_path):
    """The sdist carries LICENSE and CITATION.cff, the wheel carries LICENSE (in its .dist-info/licenses/, and named by
    its METADATA's License-File); both carry the package's data files, as they are in the checkout. Built without build
    isolation (the installed setuptools; no network), in seconds; test_fresh_install builds them as a user does and
    installs the wheel"""
    src, dist = checkout_copy(tmp_path/'src'), tmp_path/'dist'
    res = run([sys.executable, '-m', 'build', '--no-isolation', '--outdir', dist, src], cwd=tmp_path, timeout=600)
    assert res.returncode == 0, show(res)
    (sdist,), (wheel,) = dist.glob('lotus_nb-*.tar.gz'), dist.glob('lotus_nb-*.whl')
    top = f"lotus_nb-{settings()['version']}"
    with tarfile.open(sdist) as tf:
        names = set(tf.getnames())
        assert not [f for f in DIST_FILES if f'{top}/{f}' not in names], sorted(names)
        assert tf.extractfile(f'{top}/LICENSE').read() == (ROOT/'LICENSE').read_bytes()
        data = package_data()
        assert {'lotus_nb/paper/published.csv', 'lotus_nb/paper/deviations.csv'} <= set(data), data
        assert [tf.extractfile(f'{top}/{f}').read() for f in data] == [(ROOT/f).read_bytes() for f in data]
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(f'{top}.dist-info/licenses/LICENSE') == (ROOT/'LICENSE').read_bytes()
        assert [zf.read(f) for f in data] == [(ROOT/f).read_bytes() for f in data]
        meta = email.parser.Parser().parsestr(zf.read(f'{top}.dist-info/METADATA').decode())
        assert 'LICENSE' in (meta.get_all('License-File') or []), meta.get_all('License-File')
        assert 'Classifier: License :: OSI Approved :: Apache Software License' in zf.read(f'{top}.dist-info/METADATA').decode()

def check_metadata(text: str, where: str):
    "Core metadata (PKG-INFO or METADATA) carries settings.ini's name, version, Python and requirements"
    cfg, meta = settings(), email.parser.Parser().parsestr(text)
    assert meta['Name'] == cfg['lib_name'] and meta['Version'] == cfg['version'], (where, meta['Name'], meta['Version'])
    assert meta['Requires-Python'] == f">={cfg['min_python']}", (where, meta['Requires-Python'])
    pys = [c.rsplit(' :: ', 1)[1] for c in meta.get_all('Classifier') or [] if c.startswith('Programming Language :: Python :: ')]
    assert pys == cfg['python_versions'].split(), (where, pys)
    extras = engine_extras(cfg)
    want = {(str(Requirement(r)), None) for r in shlex.split(cfg['requirements'])}
    want |= {(str(Requirement(r)), e) for e, rs in [*extras.items(), ('dev', shlex.split(cfg['dev_requirements']))] for r in rs}
    want |= {(str(Requirement(r)), 'all') for rs in extras.values() for r in rs}
    have = set()
    for line in meta.get_all('Requires-Dist') or []:
        r = Requirement(line)
        extra = re.search(r'extra == "([^"]+)"', str(r.marker)).group(1) if r.marker else None
        r.marker = None
        have.add((str(r), extra))
    assert have == want, f"{where}: Requires-Dist differs from settings.ini: missing {want - have}, extra {have - want}"
    assert set(meta.get_all('Provides-Extra') or []) == set(extras) | {'all', 'dev'}, (where, meta.get_all('Provides-Extra'))

def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob('*') if f.is_file() and not f.is_symlink()) / 2**20

def test_fresh_install(tmp_path):
    """Build the sdist and a wheel from it; install the wheel into a new venv without system site packages,
    resolving its declared dependencies (torch and torchvision first, at the pinned versions); run index.ipynb's
    API example there with `python -I` from outside the repository"""
    cfg = settings()
    src, dist, venv, work = checkout_copy(tmp_path/'src'), tmp_path/'dist', tmp_path/'venv', tmp_path/'work'
    work.mkdir()
    t0, times = time.monotonic(), {}
    def lap(name): times[name] = time.monotonic() - t0 - sum(times.values())
    try:
        # 1. sdist, then the wheel built from the unpacked sdist (so the sdist must hold all that setup.py reads)
        res = run([sys.executable, '-m', 'build', '--outdir', dist, src], cwd=tmp_path, timeout=600)
        assert res.returncode == 0, show(res)
        sdists, wheels = list(dist.glob('lotus_nb-*.tar.gz')), list(dist.glob('lotus_nb-*.whl'))
        assert len(sdists) == 1 and len(wheels) == 1, list(dist.iterdir())
        modules = sorted(p.relative_to(src/'lotus_nb').as_posix() for p in (src/'lotus_nb').rglob('*.py'))   # what was built (other files may come and go in ROOT)
        top = f"lotus_nb-{cfg['version']}"
        with tarfile.open(sdists[0]) as tf:
            names = set(tf.getnames())
            need = [f'{top}/lotus_nb/{m}' for m in modules] + [f'{top}/{f}' for f in DIST_FILES + ['setup.py', 'settings.ini', 'PKG-INFO']]
            assert not [n for n in need if n not in names], f"missing from the sdist: {[n for n in need if n not in names]}"
            check_metadata(tf.extractfile(f'{top}/PKG-INFO').read().decode(), 'sdist PKG-INFO')
        with zipfile.ZipFile(wheels[0]) as zf:
            names = set(zf.namelist())
            assert not [m for m in modules if f'lotus_nb/{m}' not in names], f"modules missing from the wheel: {modules}"
            assert f'{top}.dist-info/licenses/LICENSE' in names, [n for n in names if 'dist-info' in n]
            check_metadata(zf.read(f"{top}.dist-info/METADATA").decode(), 'wheel METADATA')
        lap('build')

        # 2. a venv that sees nothing of this machine's site-packages
        res = run([sys.executable, '-m', 'venv', venv], timeout=300)
        assert res.returncode == 0, show(res)
        assert re.search(r'include-system-site-packages\s*=\s*false', (venv/'pyvenv.cfg').read_text()), (venv/'pyvenv.cfg').read_text()
        py = venv/'bin'/'python'
        # pip runs with -I too: a PYTHONPATH naming a checkout with a lotus_nb.egg-info (left by a build there) would make
        # pip see lotus_nb as installed and skip the wheel
        # --no-compile: byte-compiling torch's thousands of modules costs a minute of CPU and proves nothing here
        res = run([py, '-I', '-m', 'pip', 'install', '-q', '--no-compile', 'torch==2.14.1', 'torchvision==0.29.1'], cwd=work, timeout=900)
        assert res.returncode == 0, show(res)
        with_torch = size_mb(venv); lap('venv + torch')
        res = run([py, '-I', '-m', 'pip', 'install', '-q', '--no-compile', wheels[0]], cwd=work, timeout=900)   # its dependencies, resolved
        assert res.returncode == 0, show(res)
        lap('lotus_nb + dependencies')
        # pip install carries the LICENSE: it is one of the installed distribution's files, with the repository's text
        code = ("import importlib.metadata as m; d = m.distribution('lotus_nb'); "
                "print([str(f) for f in d.files if f.name == 'LICENSE']); print(d.read_text('licenses/LICENSE') or '', end='')")
        res = run([py, '-I', '-c', code], cwd=work, timeout=300)
        assert res.returncode == 0, show(res)
        listed, text = res.stdout.split('\n', 1)
        assert listed == f"['{top}.dist-info/licenses/LICENSE']" and text == (ROOT/'LICENSE').read_text(encoding='utf-8'), show(res)
        res = run([py, '-I', '-m', 'pip', 'check'], cwd=work, timeout=300)
        assert res.returncode == 0, show(res)
        res = run([py, '-I', '-m', 'pip', 'list', '--format', 'json'], cwd=work, timeout=300)
        assert res.returncode == 0, show(res)
        installed = {canonicalize_name(p['name']) for p in json.loads(res.stdout[res.stdout.index('['):])}
        runtime = {canonicalize_name(Requirement(r).name) for r in shlex.split(cfg['requirements'])}
        assert runtime <= installed, f"declared but not installed: {runtime - installed}"
        optional = {canonicalize_name(Requirement(r).name) for rs in engine_extras(cfg).values() for r in rs}
        unwanted = (optional | {'nbdev', 'execnb', 'fastcore'}) & installed   # engines and the nbdev toolchain stay out
        assert not unwanted, f"a plain install brought {unwanted}"

        # 3. index.ipynb's API example, then a missing engine's message, with cwd outside the repository
        # (-I: no PYTHONPATH, user site or script folder on sys.path, so only the venv's copy can be imported)
        script = work/'api_example.py'
        script.write_text(api_example() + "\n\nimport lotus_nb\nfrom lotus_nb.data.datasets import optional_import\n"
                          "try: optional_import('ray', 'ray')\n"
                          "except ImportError as e: assert 'pip install \"lotus_nb[ray]\"' in str(e), e\n"
                          "else: raise AssertionError('ray imported in a plain install')\n"
                          "print(lotus_nb.__file__); print(lotus_nb.__version__)\n")
        res = run([py, '-I', script], cwd=work, timeout=600, env={'OMP_NUM_THREADS': '1'})
        assert res.returncode == 0, show(res)
        *_, file, version = res.stdout.strip().splitlines()
        assert version == cfg['version'], (version, cfg['version'])
        path = Path(file).resolve()
        assert path.is_relative_to(venv.resolve()) and not path.is_relative_to(ROOT), f"imported {path}, not the venv's copy"
        lap('API example')
        total = size_mb(venv)
        print(f"\nfresh venv: {total:.0f} MiB, of which torch and torchvision with their dependencies {with_torch:.0f} MiB and "
              f"lotus_nb with the rest {total - with_torch:.0f} MiB; {len(installed)} distributions; "
              + ', '.join(f'{k} {v:.0f} s' for k, v in times.items()))
    finally: shutil.rmtree(venv, ignore_errors=True)    # several GB: not left to pytest's tmp_path retention
