"""The documentation site: tools/build_docs.py builds pages from the notebooks (executed or from their stored outputs,
processed by nbdev, rendered by nbconvert) and a headless Chromium checks what a reader sees: the title, equations typeset by MathJax, figures
loaded, links that resolve, no cell that raised. Also: the checker itself catches each of those faults, every
exported function and class has a docstring and a `show_doc` entry on its page, and the Quarto sidebar lists every
notebook. Screenshots of the checked pages go to a temporary folder (LOTUS_SCREENSHOTS=docs/screenshots refreshes the
committed ones)."""
import importlib, inspect, json, os, pkgutil, re, shutil, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/'tools'))
import build_docs as bd
from helpers import checkout_copy, run, script
import import_graph   # the repository's one import scanner (tools/import_graph.py)

PAGES = ['index', '37_theory', '36_lotus', '63_evaluation', '90_deviations']   # 37_theory: the figures (tau curve, histogram)
no_chromium = pytest.mark.skipif(not Path(bd.CHROMIUM).exists(),
    reason=f"no Chromium at {bd.CHROMIUM} (Debian: apt-get install chromium, as tools/setup.sh does as root; or set CHROMIUM)")

# ---------------------------------------------------------------- the checker catches each fault

GOOD = """<!DOCTYPE html><html><head><title>Good</title>
<script type="text/x-mathjax-config">MathJax.Hub.Config({tex2jax: {inlineMath: [['$','$'], ['\\\\(','\\\\)']]}});</script>
<script src="mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"></script></head><body>
<h1>Good</h1><p>Inline $x^2$ and display $$\\sum_i y_i$$</p><pre>$not math$ in code</pre>
<img src="data:image/png;base64,{png}"><img src="fig.png">
<a href="other.html#there">built page, anchor</a> <a href="#here">here</a> <a id="here"></a>
<a href="unbuilt.html">a page of the site that this build skipped</a> <a href="https://example.org/x.html">external</a>
</body></html>"""

BAD = """<!DOCTYPE html><html><head><title>Wrong title</title></head><body>
<h1>Bad</h1><p>Raw $x^2$ and \\(y\\) left, a link left as [text](https://md.example/a)</p><img src="missing.png">
<pre>def f(x, # from [`g`](https://md.example/g.html#g)</pre>
<a href="nowhere.html">not a page</a> <a href="other.html#gone">missing anchor</a> <a href="#nope">missing local anchor</a>
<div class="nb-error"><pre>ZeroDivisionError: division by zero</pre></div>
</body></html>"""

def _png() -> bytes:
    import io
    from PIL import Image
    b = io.BytesIO(); Image.new('RGB', (4, 3), 'red').save(b, 'PNG'); return b.getvalue()

@no_chromium
def test_checker_catches_faults(tmp_path):
    "A synthetic good page passes; a page with raw TeX, a missing image, broken links, an error and the wrong title fails"
    import base64
    from playwright.sync_api import sync_playwright
    site = tmp_path/'site'; site.mkdir()
    assert bd.link_mathjax(site).startswith('mathjax/'), "no local MathJax: apt-get install libjs-mathjax"
    (site/'fig.png').write_bytes(_png())
    (site/'good.html').write_text(GOOD.replace('{png}', base64.b64encode(_png()).decode()))
    (site/'bad.html').write_text(BAD)
    (site/'other.html').write_text('<html><body><h2 id="there">There</h2></body></html>')
    pages = {'good.html', 'bad.html', 'other.html', 'unbuilt.html'}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=bd.CHROMIUM, args=['--no-sandbox'])
        try:
            pg = b.new_page()
            good = bd.check_page(pg, site/'good.html', site, pages, title='Good', images=2)
            bad = bd.check_page(pg, site/'bad.html', site, pages, title='Bad', images=1)
            # the same good page with an image removed from disk, and claimed to need more figures than it has
            (site/'fig.png').unlink()
            gone = bd.check_page(pg, site/'good.html', site, pages, title='Good', images=3)
        finally: b.close()
    assert good == [], good
    text = '\n'.join(bad)
    for fault in ("title is 'Wrong title'", 'TeX not rendered', '$x^2$', '(y', 'MathJax did not load',
                  'images not loaded', 'missing.png', 'broken link nowhere.html', 'broken anchor other.html#gone',
                  'broken anchor #nope', 'cells raised', 'ZeroDivisionError', 'Markdown links not rendered', '[`g`]'):
        assert fault in text, f"checker missed {fault!r}: {bad}"
    assert not any('unbuilt' in p or 'example.org' in p for p in bad)
    assert any('fig.png' in p for p in gone) and any('2 images on the page, 3 figures expected' in p for p in gone), gone

@no_chromium
def test_cell_that_raises_fails(tmp_path):
    "Through the real pipeline (execute, process, render, check): a notebook whose cell raises gives a failing page"
    import nbformat, os
    from playwright.sync_api import sync_playwright
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell('# Broken\n\n> A page whose cell raises'),
                                         nbformat.v4.new_code_cell('x = 1/0'), nbformat.v4.new_markdown_cell('$a^2$')])
    src, site = tmp_path/'99_broken.ipynb', tmp_path/'site'; site.mkdir()
    nbformat.write(nb, src)
    import lotus_nb   # imported first, as in any session: torchvision's import sets TORCHINDUCTOR_CACHE_DIR, which is no trace of ours
    cwd, env = os.getcwd(), dict(os.environ)
    info = bd.execute_and_process(str(src), str(tmp_path/'proc.ipynb'))
    assert os.getcwd() == cwd and dict(os.environ) == env     # no trace: IN_TEST left set would stop nbdev_export
    assert info['page'] == 'broken.html' and info['title'] == 'Broken'
    assert [e['error'] for e in info['errors']] == ['ZeroDivisionError: division by zero'], info
    bd.render(tmp_path/'proc.ipynb', site/info['page'], info, nav='', mathjax_url=bd.link_mathjax(site))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=bd.CHROMIUM, args=['--no-sandbox'])
        try: probs = bd.check_page(b.new_page(), site/info['page'], site, {info['page']}, title='Broken')
        finally: b.close()
    assert len(probs) == 1 and probs[0].startswith('cells raised') and 'ZeroDivisionError' in probs[0], probs

def test_links_and_slugs():
    "Notebook links become nbdev's page names, site links become relative, headings get Pandoc's ids"
    assert bd.page_name('methods/36_lotus.ipynb') == 'lotus.html' and bd.page_name('index') == 'index.html'
    assert bd.slug('Seen vs unseen: entropy and accuracy on a trained model') == 'seen-vs-unseen-entropy-and-accuracy-on-a-trained-model'
    cfg = bd.config()
    site = cfg.doc_host + cfg.doc_baseurl
    out = bd.link_html(f'<h2>Eq. (12), as printed</h2><a href="methods/36_lotus.ipynb#the-authors-stop">a</a>'
                       f'<a href="{site}/metrics.html#evaluate">b</a><a href="https://pytorch.org/x.ipynb">c</a>')
    assert 'href="lotus.html#the-authors-stop"' in out and 'href="metrics.html#evaluate"' in out
    assert 'href="https://pytorch.org/x.ipynb"' in out and 'id="eq.-12-as-printed"' in out
    md = '[source](https://github.com/x/y.py#L3){target="_blank" style="float:right"}'
    assert bd.attr_links(md) == '<a href="https://github.com/x/y.py#L3" target="_blank" style="float:right">source</a>'

# ---------------------------------------------------------------- the real pages

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """index, theory, LoTUS, metrics and the ledger, rendered from their stored outputs with their API reference: what is
    checked here is the page a reader sees. Running them is checked elsewhere, once each (tests/test_notebooks.py,
    tests/test_outputs.py, which also holds those outputs fresh), and the build's own execution on a small notebook
    (test_cell_that_raises_fails)"""
    out = tmp_path_factory.mktemp('site')
    man = bd.build(PAGES, out, execute=False)
    return out, man

@no_chromium
def test_pages_in_chromium(site, tmp_path):
    "Each page shows its title, typeset equations, loaded figures, working links, no cell that raised; screenshots saved"
    import os
    out, man = site
    SHOTS = ROOT/os.environ['LOTUS_SCREENSHOTS'] if os.environ.get('LOTUS_SCREENSHOTS') else tmp_path
    for name in map(bd.page_name, PAGES):
        info = man['built'][name]
        assert not info.get('failed'), info.get('failed')
        assert info['errors'] == [], f"{name}: cells raised {info['errors']}"
    assert man['built']['theory.html']['images'] >= 2        # the tau curve and the entropy histogram
    res = bd.check_site(out, PAGES, screenshots=SHOTS)
    assert res == {n: [] for n in map(bd.page_name, PAGES)}, res
    for p in PAGES:
        f = SHOTS/f'{p}.png'
        assert f.exists() and 10_000 < f.stat().st_size < 1_500_000, f

def test_api_reference_on_pages(site):
    "Every exported function and class of lotus and metrics has its show_doc entry (nbdev's anchor) on its page"
    from bs4 import BeautifulSoup
    from lotus_nb._modidx import d as modidx
    out, _ = site
    for mod in ('lotus_nb.methods.lotus', 'lotus_nb.metrics.evaluation', 'lotus_nb.methods.theory'):
        m = importlib.import_module(mod)
        names = [n for n in m.__all__ if inspect.isfunction(getattr(m, n)) or inspect.isclass(getattr(m, n))]
        assert names, mod
        for n in names:
            page, _, anchor = modidx['syms'][mod][f'{mod}.{n}'][0].partition('#')
            soup = BeautifulSoup((out/Path(page).name).read_text(encoding='utf-8'), 'html.parser')   # nbdev's methods/lotus.html: the flat site's lotus.html
            h = soup.find(id=anchor)
            h = h if h is None or h.name[0] == 'h' else h.find_parent(re.compile('^h[1-6]$'))
            assert h is not None and n in h.get_text(), f"{mod}.{n}: no show_doc heading #{anchor} on {page}"

# ---------------------------------------------------------------- docstrings, sidebar, settings

def _exported():
    import lotus_nb
    for m in sorted(pkgutil.walk_packages(lotus_nb.__path__, 'lotus_nb.'), key=lambda m: m.name):
        if m.ispkg or m.name.rsplit('.', 1)[-1].startswith('_'): continue
        mod = importlib.import_module(m.name)
        for n in getattr(mod, '__all__', []):
            o = getattr(mod, n)
            if inspect.isfunction(o) or inspect.isclass(o): yield m.name, n, o

def own_doc(name, obj) -> str:
    "The docstring `obj` was given (a class's own, not a base class's nor a dataclass's generated signature)"
    doc = (obj.__dict__.get('__doc__') if inspect.isclass(obj) else obj.__doc__) or ''
    return '' if doc.startswith(f'{name}(') else doc.strip()

def test_exports_have_docstrings():
    "Every function and class in a module's `__all__` has a docstring (show_doc shows it under the signature)"
    missing = [f'{m}.{n}' for m, n, o in _exported() if not own_doc(n, o)]
    assert len(list(_exported())) > 100
    assert missing == [], f"exported without a docstring: {missing}"

def test_own_doc_can_fail():
    from dataclasses import dataclass
    @dataclass
    class Bare: x: int = 0
    def f(): pass
    assert own_doc('Bare', Bare) == '' and own_doc('f', f) == ''

def docment_faults(obj) -> list[str]:
    """Parameters of `obj` (a function; a class's constructor or dataclass fields) with no docment, and docments
    holding a backtick (nbdev links a backticked name even inside the signature's code block, where it shows raw)"""
    import dataclasses
    from fastcore.docments import docments
    out = []
    # a dataclass field is documented where it is declared: fastcore reads only a class's own source, so an inherited
    # field's docment is its base class's (shown on that class's page)
    bases = [b for b in getattr(obj, '__mro__', ())[1:] if dataclasses.is_dataclass(b)]
    for p, v in docments(obj, full=True, args_kwargs=True).items():
        if p in ('self', 'cls'): continue
        doc = v.get('docment') or next((d for b in bases if (d := docments(b, full=True).get(p, {}).get('docment'))), '')
        if p != 'return' and not doc: out.append(f'{p}: no docment')
        if '`' in doc: out.append(f'{p}: backtick in {doc!r}')
    return out

def test_exports_have_docments():
    "Every parameter of every exported function and class has a docment (show_doc's table), written without backticks"
    faults = {f'{m}.{n}': f for m, n, o in _exported() if (f := docment_faults(o))}
    assert faults == {}, f"{sum(map(len, faults.values()))} faults: {faults}"

def test_docment_check_can_fail():
    from dataclasses import dataclass
    def f(a:int,     # what a is
          b=1,
          c=2,       # see `f`
         ): pass
    @dataclass
    class C:
        x: int = 0   # documented
        y: int = 1
    assert docment_faults(f) == ['b: no docment', "c: backtick in 'see `f`'"]
    assert docment_faults(C) == ['y: no docment']
    @dataclass
    class D(C):
        z: int = 2   # documented here; x is documented in C, y nowhere
    assert docment_faults(D) == ['y: no docment']

def test_sidebar_lists_every_notebook():
    "nbs/sidebar.yml (used: custom_sidebar = True) names every notebook of the site once, and nothing that is not a page"
    listed = bd.sidebar_notebooks()
    nbs = {p.relative_to(bd.nbs_path()).as_posix() for p in bd.site_notebooks()}
    assert sorted(listed) == sorted(nbs), f"missing: {nbs - set(listed)}; not notebooks: {set(listed) - nbs}"
    assert len(listed) == len(set(listed))
    import yaml
    flat = json.dumps(yaml.safe_load((bd.nbs_path()/'sidebar.yml').read_text()))
    assert not any(x in flat for x in ('.yml', '.css')), flat
    assert bd.config().custom_sidebar is True

def test_page_names_unique():
    "No two notebooks are rendered to the same page"
    assert bd.page_collisions() == {}

# ---------------------------------------------------------------- the README's links, the GitHub workflows

def readme_links(text:str) -> list[str]:
    "The targets of README.md's links: Markdown `[text](target)`, HTML `href`/`src`, and bare URLs"
    md = re.findall(r'\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)', text)
    html = re.findall(r'(?:href|src)="([^"]+)"', text)
    bare = re.findall(r'(?<![(<"])\bhttps?://[^\s)>`"]+', text)
    return md + html + bare

def test_readme_links_resolve():
    """Every relative link of README.md leads to a file of the repository (the chapters in `nbs/`, which GitHub shows
    with their outputs), and none leads to the doc site of settings.ini (`doc_host`), which nothing publishes for this
    repository: the site is what .github/workflows/deploy.yaml publishes for the repository it runs in"""
    text = (ROOT/'README.md').read_text(encoding='utf-8')
    links = readme_links(text)
    rel = [l for l in links if not re.match(r'[a-z][a-z+.-]*:', l) and not l.startswith('#')]
    assert len(rel) > 10, rel
    missing = [l for l in rel if not (ROOT/l.split('#')[0]).exists()]
    assert missing == [], f"README.md links to files that do not exist: {missing}"
    host = re.sub(r'^https?://', '', bd.config().doc_host).rstrip('/')
    assert host and not [l for l in links if host in l], f"README.md links to {host}, which is not published"
    # the site is named only as the deploy workflow's, for the repository it runs in
    for para in text.split('\n\n'):
        if 'github.io' in para: assert 'deploy.yaml' in para and host not in para, para

def test_changelog_links_resolve():
    "Every relative link of CHANGELOG.md leads to a file of the repository: a chapter that moves takes its links along"
    links = readme_links((ROOT/'CHANGELOG.md').read_text(encoding='utf-8'))
    rel = [l for l in links if not re.match(r'[a-z][a-z+.-]*:', l) and not l.startswith('#')]
    assert len(rel) > 5, rel
    missing = [l for l in rel if not (ROOT/l.split('#')[0]).exists()]
    assert missing == [], f"CHANGELOG.md links to files that do not exist: {missing}"

def test_readme_link_check_can_fail():
    links = readme_links('[a](nbs/methods/37_theory.ipynb) [b](nbs/nope.ipynb#x) <a href="docs/x.png"> see https://lotus-nb.github.io/lotus_nb/')
    assert links == ['nbs/methods/37_theory.ipynb', 'nbs/nope.ipynb#x', 'docs/x.png', 'https://lotus-nb.github.io/lotus_nb/']

def _workflow(name:str) -> dict:
    import yaml
    wf = yaml.safe_load((ROOT/'.github'/'workflows'/name).read_text(encoding='utf-8'))
    wf['on'] = wf.pop(True, wf.get('on'))       # YAML 1.1 reads the key `on` as True
    return wf

def _runs(job:dict) -> str: return '\n'.join(s.get('run', '') for s in job['steps'])

def test_test_workflow():
    "CI runs the README's test command on every push and pull request, in Debian 12 with Python 3.11 as root (tools/setup.sh)"
    wf = _workflow('test.yaml')
    assert {'push', 'pull_request'} <= set(wf['on'])
    (job,) = wf['jobs'].values()
    c = job['container'] if isinstance(job['container'], dict) else dict(image=job['container'])
    assert job['runs-on'] == 'ubuntu-latest' and c['image'].startswith('python:3.11-bookworm')
    assert '--privileged' in c.get('options', '') and job['env']['LOTUS_NB_CLUSTER_TEST'] == 'required'   # the Ray multi-node test runs
    assert any(s.get('uses', '').startswith('actions/checkout@') for s in job['steps'])
    readme = (ROOT/'README.md').read_text(encoding='utf-8')
    cmd = 'bash tools/setup.sh && python -m pytest -n 2 --dist loadfile tests'
    assert cmd in readme and cmd in _runs(job).splitlines()
    assert bd.config().min_python == '3.11'

def test_deploy_workflow():
    "The docs deploy builds the site with Quarto (nbdev_docs) on a push to main and pushes _docs to gh-pages"
    wf = _workflow('deploy.yaml')
    assert 'main' in wf['on']['push']['branches'] and 'workflow_dispatch' in wf['on']
    assert wf['permissions']['contents'] == 'write'
    (job,) = wf['jobs'].values()
    runs = _runs(job)
    assert 'nbdev_docs' in runs.split() and 'pip install -e ".[dev]"' in runs
    assert any(s.get('with', {}).get('python-version') == bd.config().min_python for s in job['steps'])
    (pub,) = [s for s in job['steps'] if s.get('uses', '').startswith('peaceiris/actions-gh-pages@')]
    assert pub['with']['publish_dir'] == './' + bd.config().doc_path.relative_to(bd.ROOT).as_posix() and pub['with']['publish_branch'] == 'gh-pages'
    # a fork's site points at the fork: settings.ini's doc_host and doc_baseurl are rewritten before the build
    steps = [s.get('run', '') for s in job['steps']]
    i_fork = next(i for i, r in enumerate(steps) if 'doc_host' in r and 'settings.ini' in r)
    assert i_fork < next(i for i, r in enumerate(steps) if 'nbdev_docs' in r.split())
    assert all(f'^{k} = ' in steps[i_fork] for k in ('doc_host', 'doc_baseurl', 'git_url'))

def test_fork_settings(tmp_path):
    "The deploy's settings step points doc_host/doc_baseurl at the repository it runs in, and nbdev reads the result"
    import os, shutil, subprocess
    step = next(s['run'] for s in _workflow('deploy.yaml')['jobs']['deploy']['steps'] if 'doc_host' in s.get('run', ''))
    for repo, host, base in [('Someone/lotus_nb', 'https://someone.github.io', '/lotus_nb'),
                             ('someone/someone.github.io', 'https://someone.github.io', '')]:
        shutil.copy(ROOT/'settings.ini', tmp_path/'settings.ini')
        env = {**os.environ, 'GITHUB_REPOSITORY': repo, 'GITHUB_REPOSITORY_OWNER': repo.split('/')[0]}
        res = subprocess.run(['bash', '-e', '-c', step], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        import configparser
        cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(tmp_path/'settings.ini')
        d = cfg['DEFAULT']
        assert (d['doc_host'], d['doc_baseurl'], d['git_url']) == (host, base, f'https://github.com/{repo}')
        assert d['lib_name'] == 'lotus_nb'

# ---------------------------------------------------------------- nbdev_docs's own processing

def docs_build_cells(nb_path):
    """(cell, its parsed source) for each cell nbdev's `exec_show_docs` runs, in order: none in a notebook with no export
    and no `show_doc` (nbdev's `has_docs_`), else exported cells, cells with an import and `show_doc` cells (`_do_eval`)"""
    import ast, warnings
    from execnb.nbio import read_nb
    from nbdev.process import NBProcessor
    from nbdev.processors import _do_eval
    nb = read_nb(nb_path); NBProcessor(nb=nb, rm_directives=False)
    codes = [c for c in nb.cells if c.cell_type == 'code']
    if not any(c.directives_.keys() & {'export', 'exports', 'exporti'} or 'show_doc(' in c.source for c in codes): return
    for c in codes:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            if not _do_eval(c): continue
        yield c, ast.parse('\n'.join(l for l in c.source.splitlines() if not l.lstrip().startswith(('%', '!'))))

def unbound_in_show_doc_run(nb_path) -> list:
    """Names that a cell run by nbdev's `exec_show_docs` (what `nbdev_docs` executes before Quarto: exported cells and
    every cell with an import) reads but no cell of that run binds: such a cell raises and stops `nbdev_docs`"""
    import ast, builtins
    bound, out = set(dir(builtins)) | {'show_doc', 'get_ipython', 'display'}, []
    for c, tree in docs_build_cells(nb_path):
        here = {b for i in import_graph.scan_tree(tree) for b in i.bound}   # what its imports bind: the repository's one scanner
        reads = set()
        def visit(n):                                   # what runs now, at the cell's top level: not a function's or a class's body
            if isinstance(n, ast.Name): (reads if isinstance(n.ctx, ast.Load) else here).add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): here.add(n.name)
            elif isinstance(n, ast.ExceptHandler) and n.name: here.add(n.name)
            elif isinstance(n, (ast.Global, ast.Nonlocal)): here.update(n.names)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)): lazy = n.body + [n.args]   # parameters bind inside the call only
            elif isinstance(n, ast.Lambda): lazy = [n.body, n.args]
            elif isinstance(n, ast.ClassDef): lazy = n.body
            else: lazy = []
            for ch in ast.iter_child_nodes(n):
                if not any(ch is b for b in lazy): visit(ch)
        visit(tree)
        if missing := sorted(reads - bound - here): out.append((c.idx_, missing))
        bound |= here
    return out

def test_nbdev_docs_can_process():
    "Every chapter survives nbdev's `exec_show_docs`: no cell it runs reads a name only a skipped cell defines"
    bad = {p.name: u for p in bd.site_notebooks() if (u := unbound_in_show_doc_run(p))}
    assert bad == {}, f"nbdev_docs would stop on these cells (cell index, names): {bad}; put the imports in a cell of their own"

def shown_cells_that_compute(nb_path) -> list:
    """Cells that nbdev's `exec_show_docs` runs (every cell with an import) that also compute: a chapter's checks
    belong in cells it skips, so that the docs build runs exports, imports and `show_doc` only (seconds, not training)"""
    import ast
    return [c.idx_ for c, tree in docs_build_cells(nb_path)
            if not c.directives_.keys() & {'export', 'exports', 'exporti', 'exec_doc'} and 'show_doc(' not in c.source
            and any(not isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)]

ALLOWED_COMPUTE = set()   # chapters whose import cells may compute: none

def test_docs_build_runs_no_checks():
    bad = {p.name: u for p in bd.site_notebooks() if p.name not in ALLOWED_COMPUTE and (u := shown_cells_that_compute(p))}
    assert bad == {}, f"cells nbdev_docs would run besides imports (cell index): {bad}; put the imports in a cell of their own"

def test_compute_check_can_fail(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('#| export\ndef f(): return 1'),
                                         nbformat.v4.new_code_cell('import math'),
                                         nbformat.v4.new_code_cell('import math\ny = math.sqrt(f())'),
                                         nbformat.v4.new_code_cell('y = f()')])
    nbformat.write(nb, tmp_path/'t.ipynb')
    assert shown_cells_that_compute(tmp_path/'t.ipynb') == [2]

def test_nbdev_proc_nbs_on_a_fresh_copy(tmp_path):
    """`nbdev_proc_nbs`, what `nbdev_docs` (and so the Pages workflow) runs before Quarto, passes on a fresh copy of
    the repository at the machine's default thread count"""
    src = checkout_copy(tmp_path/'lotus_nb')
    # nbdev_proc_nbs "installs" Quarto when none is on PATH: it tries to download it, then runs `pip install -e` on the
    # checkout at hand, which would point this machine's lotus_nb at this temporary copy (every later process imported
    # it from there, until pytest deleted the folder). A stub on PATH stands for Quarto; nbdev only looks for it.
    stub = tmp_path/'bin'/'quarto'; stub.parent.mkdir(); stub.write_text('#!/bin/sh\necho "quarto: a stub of the tests" >&2; exit 1\n'); stub.chmod(0o755)
    def installed():   # where a process outside any checkout imports lotus_nb from (-I: no cwd, no PYTHONPATH)
        res = run([sys.executable, '-I', '-c', 'import lotus_nb; print(lotus_nb.__file__)'], cwd=stub.parent, timeout=120)
        assert res.returncode == 0, res.stdout[-3000:]
        return res.stdout.strip().splitlines()[-1]
    before = installed()
    res = run([script('nbdev_proc_nbs')], timeout=1200, cwd=src, env=dict(PYTHONPATH=str(src), PATH=f"{stub.parent}:{os.environ['PATH']}"),
              unset=('OMP_NUM_THREADS', 'MKL_NUM_THREADS'))
    assert res.returncode == 0, res.stdout[-20_000:]
    assert 'Quarto is not installed' not in res.stdout, res.stdout[-5000:]
    assert installed() == before and not before.startswith(str(tmp_path)), "the installed lotus_nb still points where it did"
    procd = {q.name for q in (src/'_proc').rglob('*.ipynb')}
    assert {q.name for q in bd.site_notebooks()} <= procd, sorted({q.name for q in bd.site_notebooks()} - procd)

def test_unbound_check_can_fail(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('#| export\ndef f(): return 1'),
                                         nbformat.v4.new_code_cell('x = f()'),
                                         nbformat.v4.new_code_cell('import math\ny = math.sqrt(x)'),
                                         nbformat.v4.new_code_cell('import math\ndef g(task): return task\nz = g(task)')])   # a parameter binds nothing outside
    nbformat.write(nb, tmp_path/'t.ipynb')
    assert unbound_in_show_doc_run(tmp_path/'t.ipynb') == [(2, ['x']), (3, ['task'])]
