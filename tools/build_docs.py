"""Build the documentation site from the notebooks without Quarto, and check it in headless Chromium.

The site shows each notebook *executed*: its figures, tables and the numbers its prose quotes, computed when the
site is built: the outputs committed in `nbs/` (refreshed by `tools/refresh_outputs.py`, checked by `tests/test_outputs.py`)
are dropped and recomputed, so nothing stale can be published; the price is the build time (a few minutes for every page). Steps:

1. **execute** each notebook as `nbdev_test` does (execnb's `CaptureShell`, in the notebook's folder, `IN_TEST=1`,
   skipping the cells flagged with settings.ini's `tst_flags`, `#| eval: false` cells and the `nbdev_export()` cell),
   with a `show_doc` cell after every exported function or class (nbdev's `add_show_docs`), so the API reference
   is rendered in the same run; each notebook runs in its own process;
2. **process** it with the rest of nbdev's notebook processors, those `nbdev_proc_nbs` applies before Quarto
   (`FilterDefaults`: title and summary to front matter, hidden cells and directives removed, doc links added);
3. **render** it with nbconvert's HTML exporter (lab template), honouring the Quarto cell options those processors
   emit (`echo`, `output`, `include`), with MathJax 2 served from the site itself (`mathjax/`, a link to Debian's
   libjs-mathjax: no network needed) and a navigation bar from `nbs/sidebar.yml`;
4. **link**: `X.ipynb` becomes X's page and the site's absolute doc links (`doc_host` + `doc_baseurl`) become
   relative, so the pages link to each other offline. Page names follow nbdev (`methods/36_lotus.ipynb` -> `lotus.html`),
   as on the Quarto site, so the doc links nbdev writes resolve; headings get Pandoc's ids, as Quarto gives them.

`site.json` in the output folder records every page of the site (built or not), its title, and the errors and
figures of each built page. `check_site` opens the built pages in Chromium (Playwright driving Debian's
`/usr/bin/chromium`) and reports what a reader would see broken: a missing title, TeX left raw or in error, an
image that did not load, a relative link to a file or anchor that does not exist (or to a page that is not part of
the site), a cell that raised. `--check` also renders README.md as GitHub does (GitHub-flavoured Markdown by
markdown-it-py, math by MathJax: `readme_html`) and checks its images and links the same way (`check_readme`). With Quarto, `nbdev_docs` still builds the site from the notebooks as committed
(API reference, no outputs).

    python tools/build_docs.py                                   # every notebook into _site/
    python tools/build_docs.py --pages index 36_lotus 63_evaluation # a subset
    python tools/build_docs.py --pages index --check --screenshots docs/screenshots
"""
from __future__ import annotations
import argparse, html, json, multiprocessing as mp, os, re, shutil, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _nbtools import ROOT, config, skip_flags, skip_cell   # nbdev's config and the cell-skip rule refresh_outputs shares
SITE = ROOT/'_site'
MATHJAX_DIRS = ('/usr/share/javascript/mathjax', '/usr/share/mathjax')   # Debian's libjs-mathjax (MathJax 2)
MATHJAX_CDN = 'https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js'
MATHJAX_CONFIG = '?config=TeX-AMS_CHTML-full,Safe'
CHROMIUM = os.environ.get('CHROMIUM', '/usr/bin/chromium')

def nbs_path() -> Path: return config().nbs_path

def page_name(nb:str|Path) -> str:
    "The HTML page of notebook `nb` on the site, as nbdev names it (`methods/36_lotus.ipynb` -> `lotus.html`)"
    from nbdev.doclinks import _nbpath2html
    return _nbpath2html(Path(Path(nb).name).with_suffix('.ipynb')).name

def site_notebooks() -> list[Path]:
    "Every notebook of the site: the `.ipynb` files in `nbs/` and its subpackage folders that nbdev processes (not `_`- or `.`-prefixed)"
    nbs = nbs_path()
    return sorted(p for p in nbs.rglob('*.ipynb') if not any(x.startswith(('_', '.')) for x in p.relative_to(nbs).parts))

def slug(text:str) -> str:
    "Pandoc's identifier for a heading (as Quarto assigns it): lower case, punctuation but `_-.` dropped, spaces to `-`"
    s = re.sub(r'[^\w\s.-]', '', text.strip().lower())
    s = re.sub(r'\s+', '-', s)
    return re.sub(r'^[^a-z]+', '', s) or 'section'

# ---------------------------------------------------------------- 1. execute, 2. process

def execute_and_process(src:str, dst:str, execute:bool=True, timeout:int|None=None) -> dict:
    "Execute notebook `src` (with `show_doc` cells), process it with nbdev's processors, write it to `dst`; a summary"
    src, dst = Path(src).resolve(), Path(dst).resolve()
    cwd, in_test = os.getcwd(), os.environ.get('IN_TEST')
    os.chdir(ROOT)                                  # nbdev finds settings.ini (and _modidx's doc links) from here
    os.environ['IN_TEST'] = '1'                     # as under nbdev_test: the notebooks' fast paths
    import torch
    threads = torch.get_num_threads(); torch.set_num_threads(1)   # as refresh_outputs and the tests run the chapters (OMP_NUM_THREADS=1):
    try: return _execute_and_process(src, dst, execute, timeout)  # a chapter's checks are made at one thread, whatever the machine's default
    finally:                                        # called in-process (tests): leave no trace (IN_TEST stops nbdev_export)
        torch.set_num_threads(threads)
        os.chdir(cwd)
        if in_test is None: os.environ.pop('IN_TEST', None)
        else: os.environ['IN_TEST'] = in_test

def _execute_and_process(src:Path, dst:Path, execute:bool, timeout:int|None) -> dict:
    from execnb.nbio import read_nb, write_nb, mk_cell, nb2str, dict2nb
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    from nbdev.process import NBProcessor
    from nbdev.processors import FilterDefaults, add_show_docs, exec_show_docs, populate_language
    nb = read_nb(src)
    # show_doc cells after each export; `rm_directives=False` keeps the directives for the skip flags below
    NBProcessor(nb=nb, procs=[populate_language, add_show_docs], rm_directives=False, process=True)
    nb.cells.insert(0, mk_cell('#| hide\nfrom nbdev.showdoc import show_doc'))
    for i, c in enumerate(nb.cells): c.idx_ = i
    t0 = time.time()
    if execute:
        for c in nb.cells:                              # a cell that shows nothing now keeps no stored output
            if c.cell_type == 'code': c.outputs, c.execution_count = [], None
        k = CaptureShell(src, timeout=timeout)
        with working_directory(src.parent): k.run_all(nb, exc_stop=False, preproc=skip_cell(skip_flags()))
    else:                                           # stored outputs only: run the show_doc cells alone
        NBProcessor(nb=nb, procs=[exec_show_docs], rm_directives=False, process=True)
    secs = time.time() - t0
    errors = [dict(cell=c.idx_, error=f"{o.get('ename')}: {o.get('evalue')}")
              for c in nb.cells for o in c.get('outputs', []) if o.get('output_type') == 'error']
    nb = dict2nb(json.loads(nb2str(nb)))           # plain AttrDicts again (cells were added, outputs stored)
    nb.path_ = str(src)
    procs = [p for p in FilterDefaults().procs() if p not in (add_show_docs, exec_show_docs)]
    NBProcessor(nb=nb, procs=procs, process=True)
    fm = getattr(nb, 'frontmatter_', {}) or {}
    n_images = sum(any(k.startswith('image/') for k in o.get('data', {})) for c in nb.cells for o in c.get('outputs', []))
    write_nb(nb, dst)
    folder = src.parent.resolve().relative_to(nbs_path().resolve()).as_posix() if src.parent.resolve().is_relative_to(nbs_path().resolve()) else '.'
    return dict(notebook=src.name, page=page_name(src), folder=folder,
                title=str(fm.get('title', src.stem)),
                description=str(fm.get('description', '')), errors=errors, images=n_images, exec_s=round(secs, 1))

def _worker(args):
    src, dst, execute, timeout = args
    try: return execute_and_process(src, dst, execute, timeout)
    except Exception as e:                          # a notebook that cannot even be processed: report, go on
        import traceback
        return dict(notebook=Path(src).name, page=page_name(src), title=Path(src).stem, description='', images=0,
                    exec_s=0, errors=[dict(cell=None, error=f'{type(e).__name__}: {e}')], failed=traceback.format_exc())

# ---------------------------------------------------------------- 3. render, 4. link

TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block body_header -%}
{{ super() }}
<nav class="site-nav">{{ resources.site_nav }}</nav>
{%- endblock body_header -%}
{%- block error -%}<div class="nb-error">{{ super() }}</div>{%- endblock error -%}
{%- block header -%}
{{ super() }}
<style>
.site-nav { font: 13px/1.6 system-ui, sans-serif; padding: 6px 12px; border-bottom: 1px solid #ddd; background: #f7f7f9; }
.site-nav a { margin-right: 10px; white-space: nowrap; }
.site-nav a.current { font-weight: bold; }
.page-description { font-size: 1.15em; color: #555; border-left: 3px solid #ccc; padding-left: 10px; }
.jp-RenderedMarkdown pre { background: #f5f5f5; padding: 6px 10px; border-radius: 3px; }
</style>
{%- endblock header -%}
"""

_re_opt = re.compile(r'^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$')

def quarto_options(cell) -> dict:
    "Apply (and strip) the leading `#| key: value` Quarto options of a processed code cell; returns them"
    lines, opts = cell.source.splitlines(), {}
    while lines and (m := _re_opt.match(lines[0])): opts[m[1]] = m[2].strip('"\''); lines.pop(0)
    cell.source = '\n'.join(lines)
    return opts

_re_attr_link = re.compile(r'\[([^\]\n]+)\]\(([^)\s]+)\)\{([^}\n]*)\}')

def attr_links(md:str) -> str:
    "Pandoc's links with attributes, `[text](url){target=\"_blank\"}` (show_doc's source links), as HTML"
    return _re_attr_link.sub(lambda m: f'<a href="{html.escape(m[2])}" {m[3]}>{m[1]}</a>', md)

def _render_cells(nb, info:dict):
    "Turn the processed notebook into what nbconvert should show: front matter to a title, Quarto options to tags"
    import nbformat
    from execnb.nbio import mk_cell, nb2str
    cells = []
    for c in nb.cells:
        if c.cell_type == 'raw' and c.source.lstrip().startswith('---'): continue     # front matter: the title below
        if c.cell_type == 'code':
            o = quarto_options(c)
            if o.get('include') == 'false': continue
            tags = set(c.metadata.get('tags', []))
            if o.get('echo') == 'false' or not c.source.strip(): tags.add('remove_input')
            if o.get('output') == 'false': tags.add('remove_output')
            c.metadata['tags'] = sorted(tags)
            if not c.source.strip() and not c.get('outputs'): continue
            for o in c.get('outputs', []):
                md = o.get('data', {}).get('text/markdown')
                if md: o['data']['text/markdown'] = attr_links(''.join(md))
        cells.append(c)
    desc = f'\n\n<p class="page-description">{html.escape(info["description"])}</p>' if info['description'] else ''
    nb.cells = [mk_cell(f"# {info['title']}{desc}", 'markdown')] + cells
    for i, c in enumerate(nb.cells): c['id'] = f'cell-{i}'
    nb = nbformat.reads(nb2str(nb), as_version=4)
    nb.metadata['title'] = info['title']
    return nb

def _nav(pages:list, current:str) -> str:
    "The navigation bar: the site's pages in sidebar order (`nbs/sidebar.yml`), titles from `site.json`"
    cur = lambda p: ' class="current"' if p == current else ''
    return ' '.join(f'<a href="{p}"{cur(p)}>{html.escape(t)}</a>' for p, t in pages)

def nb_title(nb:Path) -> str:
    "The H1 title of notebook `nb` (its stem if it has none), read without nbdev"
    for c in json.loads(Path(nb).read_text(encoding='utf-8'))['cells']:
        src = ''.join(c['source'])
        if c['cell_type'] == 'markdown' and (m := re.match(r'\s*#\s+(.+)', src)): return m[1].strip()
    return Path(nb).stem

def page_collisions(nbs:list[Path]|None=None) -> dict:
    "{page: notebooks} for the pages that two notebooks would both be rendered to (nbdev drops the number prefix)"
    by = {}
    for p in nbs or site_notebooks(): by.setdefault(page_name(p), []).append(p.name)
    return {k: v for k, v in by.items() if len(v) > 1}

def sidebar_notebooks() -> list[str]:
    "The notebooks `nbs/sidebar.yml` lists, in its order (a glob: the notebooks it matches, sorted)"
    import yaml
    sb = yaml.safe_load((nbs_path()/'sidebar.yml').read_text())
    out = []
    def walk(x):   # a section's contents may be a glob (`methods/*.ipynb`): its notebooks in name (number) order, as Quarto lists them
        if isinstance(x, str) and '*' in x: out.extend(sorted(p.relative_to(nbs_path()).as_posix() for p in nbs_path().glob(x)))
        elif isinstance(x, str): out.append(x)
        elif isinstance(x, dict): [walk(v) for k, v in x.items() if k in ('contents', 'href', 'section')]
        elif isinstance(x, list): [walk(v) for v in x]
    walk(sb['website']['sidebar']['contents'])
    return [o for o in out if o.endswith('.ipynb')]

def _from_nbs(ref:str, folder:str) -> str:
    "A relative link or image `ref` written in the notebook folder `folder` (relative to `nbs/`), made relative to `nbs/`: the flat site's root"
    if folder in ('', '.') or re.match(r'^([a-z][a-z0-9+.-]*:|/|#)', ref) or re.match(r'^[^/#?]+\.html([#?]|$)', ref): return ref   # a page of the site: already flat
    path, sep, frag = ref.partition('#')
    return os.path.normpath(f'{folder}/{path}').replace(os.sep, '/') + sep + frag

def link_html(text:str, folder:str='.') -> str:
    "Rewrite links to notebooks (`X.ipynb`) and to the published site into relative page links, and the other relative links and images of a chapter in `nbs/<folder>/` as seen from the flat site; ids on headings"
    from bs4 import BeautifulSoup
    cfg = config()
    site_url = (cfg.get('doc_host', '') + cfg.get('doc_baseurl', '')).rstrip('/') + '/'
    soup = BeautifulSoup(text, 'html.parser')
    for a in soup.find_all('a', href=True):
        href = a['href']
        if site_url != '/' and href.startswith(site_url):   # nbdev's doc link: <site>/methods/lotus.html#anchor, a page of the flat site
            href = href[len(site_url):] or 'index.html'
            href = href.rsplit('/', 1)[-1] if re.match(r'^[^#?]*\.html', href) else href
        m = re.match(r'^(?![a-z][a-z0-9+.-]*:|/)([^#?]*?)([^/#?]+)\.ipynb(#.*)?$', href)
        if m: href = page_name(m[2]) + (m[3] or '')   # the site is flat: a chapter in nbs/<subpackage>/ is a page beside the others
        else: href = _from_nbs(href, folder)
        a['href'] = href
    for img in soup.find_all('img', src=True): img['src'] = _from_nbs(img['src'], folder)
    for h in soup.find_all(re.compile(r'^h[1-6]$')):
        text = h.get_text(' ', strip=True).rstrip('¶').strip()
        if text and not soup.find(id=slug(text)): h.insert(0, soup.new_tag('a', id=slug(text)))
    return str(soup)

def render(proc_nb:Path, out:Path, info:dict, nav:str, mathjax_url:str):
    "Render processed notebook `proc_nb` to `out` (HTML)"
    import jinja2
    from execnb.nbio import read_nb
    from nbconvert import HTMLExporter
    from traitlets.config import Config
    nb = _render_cells(read_nb(proc_nb), info)
    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = {'remove_input'}
    c.TagRemovePreprocessor.remove_all_outputs_tags = {'remove_output'}
    c.HTMLExporter.exclude_input_prompt = c.HTMLExporter.exclude_output_prompt = True
    ex = HTMLExporter(config=c, template_file='site.html.j2', extra_loaders=[jinja2.DictLoader({'site.html.j2': TEMPLATE})],
                      mathjax_url=mathjax_url)
    body, _ = ex.from_notebook_node(nb, resources=dict(site_nav=nav))
    out.write_text(link_html(body, info.get('folder', '.')), encoding='utf-8')

def link_mathjax(site:Path) -> str:
    "Serve MathJax from the site: `site/mathjax` links to the system's copy; its URL (relative), or the CDN's"
    dst = site/'mathjax'
    if not dst.exists():
        src = next((Path(d) for d in MATHJAX_DIRS if (Path(d)/'MathJax.js').exists()), None)
        if src is None:
            print(f"build_docs: no local MathJax in {MATHJAX_DIRS} (Debian: apt-get install libjs-mathjax); using {MATHJAX_CDN}")
            return MATHJAX_CDN + MATHJAX_CONFIG
        dst.symlink_to(src, target_is_directory=True)
    return 'mathjax/MathJax.js' + MATHJAX_CONFIG

def link_resources(site:Path, folders:tuple=('images',)):
    "The folders of `nbs/` that pages show files from (`![...](images/x.png)`), linked into the site as Quarto copies them"
    for name in folders:
        src, dst = nbs_path()/name, Path(site)/name
        if src.is_dir() and not dst.exists(): dst.symlink_to(src.resolve(), target_is_directory=True)

def build(pages:list[str]|None=None, out:Path=SITE, execute:bool=True, n_workers:int=1, timeout:int|None=None) -> dict:
    "Build `pages` (notebook names, stems or paths; all if None) into `out`; returns `site.json`'s content"
    nbs = site_notebooks()
    by_stem = {p.stem: p for p in nbs}
    if pages:
        want = [Path(p).stem for p in pages]
        if unknown := [p for p in want if p not in by_stem]:
            raise SystemExit(f"build_docs: no notebook {', '.join(unknown)} in {nbs_path()}")
        todo = [by_stem[p] for p in want]
    else: todo = nbs
    out = Path(out); (out/'_proc').mkdir(parents=True, exist_ok=True)
    manifest_f = out/'site.json'
    old = json.loads(manifest_f.read_text()) if manifest_f.exists() else {}
    t0 = time.time()
    jobs = [(str(p), str(out/'_proc'/p.name), execute, timeout) for p in todo]
    if n_workers > 1:
        with mp.get_context('spawn').Pool(n_workers, maxtasksperchild=1) as pool: infos = pool.map(_worker, jobs, chunksize=1)
    else:                                           # one process per notebook all the same: notebooks share no state
        infos = []
        for j in jobs:
            with mp.get_context('spawn').Pool(1) as pool: infos.append(pool.apply(_worker, (j,)))
    built = {i['page']: i for i in infos}
    prev = {k: v for k, v in old.get('built', {}).items() if (out/k).exists() and k not in built}
    titles = {page_name(p): nb_title(p) for p in nbs} | {k: v['title'] for k, v in (prev | built).items()}
    order = [page_name(n) for n in sidebar_notebooks() if (nbs_path()/n).exists()]
    order += [page_name(p) for p in nbs if page_name(p) not in order]
    order = list(dict.fromkeys(order))
    mathjax_url = link_mathjax(out)
    link_resources(out)
    for info in infos:
        if info.get('failed'): continue
        nav = _nav([(p, titles[p]) for p in order], info['page'])
        render(out/'_proc'/info['notebook'], out/info['page'], info, nav, mathjax_url)
    manifest = dict(pages={page_name(p): p.name for p in nbs}, built=prev | built, collisions=page_collisions(nbs),
                    seconds=round(time.time() - t0, 1))
    manifest_f.write_text(json.dumps(manifest, indent=1))
    return manifest

# ---------------------------------------------------------------- the check in Chromium

_PAGE_JS = r"""() => {
  const hidden = 'pre, code, script, style, textarea, .MathJax, .MathJax_CHTML, .mjx-chtml, .MJXc-display, .MathJax_Preview, .MJX_Assistive_MathML, .MathJax_Display';
  const body = document.body.cloneNode(true);
  body.querySelectorAll(hidden).forEach(e => e.remove());
  return {
    title: document.title,
    h1: [...document.querySelectorAll('h1')].map(h => h.textContent.replace('¶', '').trim()),
    text: body.textContent,
    code_text: [...document.querySelectorAll('pre, code')].map(e => e.textContent).join('\n'),
    math: document.querySelectorAll('.mjx-chtml, .MathJax_CHTML, .MathJax, .MathJax_SVG').length,
    math_errors: [...document.querySelectorAll('.mjx-merror, .MathJax_Error, merror')].map(e => e.textContent.slice(0, 80)),
    images: [...document.images].map(i => ({src: i.getAttribute('src').slice(0, 60), ok: i.complete && i.naturalWidth > 0})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    errors: [...document.querySelectorAll('.nb-error')].map(e => e.textContent.trim().split('\n').filter(l => l.trim()).pop().slice(0, 200)),   // the exception line
  };
}"""

_re_raw_link = re.compile(r'\[[^\]\n]*\]\((?:https?://|[\w./-]+\.html)[^)\s]*\)')
_re_doc_link = re.compile(r'\[`[^`\]\n]+`\]\([^)\s]+\)')
_re_raw_tex = re.compile(r'\$\$.+?\$\$|\$[^\s$][^$\n]*?\$|\\\(.+?\\\)|\\\[.+?\\\]', re.S)

def _ids(path:Path) -> set:
    from bs4 import BeautifulSoup
    return {t['id'] for t in BeautifulSoup(path.read_text(encoding='utf-8'), 'html.parser').find_all(id=True)}

def check_page(page, path:Path, site:Path, site_pages:set, title:str|None=None, images:int=0, math:bool|None=None) -> list[str]:
    "Problems a reader would see on the built page `path` (open in Playwright's `page`); [] when it is fine"
    page.goto(path.resolve().as_uri(), wait_until='load')
    mj = page.evaluate("() => !!(window.MathJax && window.MathJax.Hub)")
    if mj: page.evaluate("() => new Promise(r => MathJax.Hub.Queue(() => r(true)))")
    r = page.evaluate(_PAGE_JS)
    probs = []
    if title is not None:
        if r['title'] != title: probs.append(f"title is {r['title']!r}, not {title!r}")
        if title not in r['h1']: probs.append(f"no <h1> {title!r} (h1: {r['h1']})")
    if raw := _re_raw_tex.findall(r['text']): probs.append(f"TeX not rendered: {[s[:60] for s in raw[:5]]}")
    if raw := _re_raw_link.findall(r['text']) + _re_doc_link.findall(r['code_text']):   # nbdev links a `name` even in code
        probs.append(f"Markdown links not rendered: {raw[:5]}")
    if math is None:                                # expect math where the source has TeX outside code
        from bs4 import BeautifulSoup
        soup = BeautifulSoup(path.read_text(encoding='utf-8'), 'html.parser')
        for t in soup.find_all(['pre', 'code', 'script', 'style']): t.decompose()
        math = bool(_re_raw_tex.search(soup.get_text()))
    if math and not mj: probs.append("MathJax did not load")
    elif math and not r['math']: probs.append("no equation rendered by MathJax")
    if r['math_errors']: probs.append(f"TeX errors: {r['math_errors'][:5]}")
    if bad := [i['src'] for i in r['images'] if not i['ok']]: probs.append(f"images not loaded: {bad}")
    if len(r['images']) < images: probs.append(f"{len(r['images'])} images on the page, {images} figures expected")
    if r['errors']: probs.append(f"cells raised: {r['errors'][:3]}")
    ids = set(r['ids'])
    for href in dict.fromkeys(r['links']):
        if re.match(r'^[a-z][a-z0-9+.-]*:', href, re.I) or href.startswith('//'): continue   # http:, mailto:, data:
        target, _, frag = href.partition('#')
        target = target.split('?')[0]
        if not target:
            if frag and frag not in ids: probs.append(f"broken anchor {href}")
            continue
        f = (path.parent/target).resolve()
        rel = f.relative_to(site.resolve()).as_posix() if f.is_relative_to(site.resolve()) else None
        if f.is_file():
            if frag and f.suffix == '.html' and frag not in _ids(f): probs.append(f"broken anchor {href}")
        elif rel not in site_pages: probs.append(f"broken link {href}")
    return probs

def check_site(site:Path=SITE, pages:list[str]|None=None, screenshots:Path|None=None, width:int=1100) -> dict:
    "Open each built page (all of `site.json`'s, or those of notebooks `pages`) in Chromium: {page: problems}"
    from playwright.sync_api import sync_playwright
    site = Path(site); man = json.loads((site/'site.json').read_text())
    built = man['built']
    names = [page_name(p) for p in pages] if pages else list(built)
    res = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox', '--allow-file-access-from-files'])
        try:
            pg = browser.new_page(viewport=dict(width=width, height=900))
            for name in names:
                info = built.get(name)
                if info is None: res[name] = ['not built']; continue
                probs = [f"cell {e['cell']} raised {e['error']}" for e in info['errors']]
                probs += check_page(pg, site/name, site, set(man['pages']), info['title'], info['images'])
                if screenshots:
                    Path(screenshots).mkdir(parents=True, exist_ok=True)
                    shot = Path(screenshots)/f"{Path(info['notebook']).stem}.png"
                    pg.screenshot(path=str(shot), full_page=True)
                    shrink(shot)
                res[name] = probs
        finally: browser.close()
    return res

# ---------------------------------------------------------------- the README as GitHub shows it

def github_slug(text:str) -> str:
    "GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, each space a `-`"
    return re.sub(r'[^\w\- ]', '', text.strip().lower()).replace(' ', '-')

def heading_ids(path:Path) -> set:
    "The anchors GitHub gives the headings of a Markdown file or of a notebook's markdown cells"
    path = Path(path)
    if path.suffix == '.ipynb':
        text = '\n\n'.join(''.join(c['source']) for c in json.loads(path.read_text(encoding='utf-8'))['cells'] if c['cell_type'] == 'markdown')
    else: text = path.read_text(encoding='utf-8')
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    return {github_slug(re.sub(r'[`*]', '', m)) for m in re.findall(r'^#{1,6}\s+(.+?)\s*#*$', text, re.M)}

# the elements GitHub's HTML sanitizer keeps in a README (github.com/gjtorikian/html-pipeline's SanitizationFilter); it
# drops any other tag, keeping its text: `<u>` shows as plain text there (`<ins>` underlines)
GITHUB_HTML = set('''h1 h2 h3 h4 h5 h6 h7 h8 br b i strong em a pre code img tt div ins del sup sub p ol ul table thead tbody tfoot
    blockquote dl dt dd kbd q samp var hr ruby rt rp li tr td th s strike summary details caption figure figcaption abbr bdo cite
    dfn mark small span time wbr picture source'''.split())

def dropped_html(md:str) -> list[str]:
    "The raw HTML elements of Markdown `md` (outside code) that GitHub's sanitizer drops, sorted"
    text = re.sub(r'^```.*?^```', '', md, flags=re.S | re.M)
    text = re.sub(r'`[^`\n]*`', '', text)
    return sorted({t.lower() for t in re.findall(r'</?([A-Za-z][\w-]*)(?=[\s/>])', text)} - GITHUB_HTML)

def readme_html(readme:Path|None=None) -> str:
    """README.md rendered as GitHub renders it, near enough to check it offline: GitHub-flavoured Markdown (tables, raw
    HTML, strikethrough) by markdown-it-py, `$...$` and `$$...$$` as MathJax math, headings with GitHub's anchors, and a
    `<base>` at the repository's root, so that relative links and images resolve as they do on GitHub"""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    readme = Path(readme or ROOT/'README.md')
    math = lambda content, opts: (f'<div class="math">\\[{html.escape(content)}\\]</div>' if opts.get('display_mode')
                                  else f'<span class="math">\\({html.escape(content)}\\)</span>')
    md = MarkdownIt('gfm-like', {'html': True, 'linkify': False}).disable('linkify').use(dollarmath_plugin, renderer=math)
    body = md.render(readme.read_text(encoding='utf-8'))
    body = re.sub(r'<(h[1-6])>(.*?)</\1>', lambda m: f'<{m[1]} id="{github_slug(re.sub("<[^>]+>", "", html.unescape(m[2])))}">{m[2]}</{m[1]}>', body)
    mj = next((Path(d)/'MathJax.js' for d in MATHJAX_DIRS if (Path(d)/'MathJax.js').exists()), None)
    src = mj.as_uri() if mj else MATHJAX_CDN
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><base href="{readme.parent.resolve().as_uri()}/">'
            f'<title>{readme.name}</title><script src="{src}{MATHJAX_CONFIG}"></script>'
            '<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1000px;margin:20px auto}table{border-collapse:collapse}'
            'td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}pre{background:#f6f8fa;padding:8px;overflow:auto}'
            f'img{{max-width:100%}}</style></head><body>{body}</body></html>')

def check_readme(page, readme:Path|None=None, out:Path|None=None, screenshot:Path|None=None) -> list[str]:
    """Problems a reader of README.md on GitHub would see, found in Chromium (Playwright's `page`): HTML that GitHub's
    sanitizer drops, an image that does not load, TeX left raw or in error, a relative link to a file of the repository that does not exist or to a heading that
    is not there (in the README, another Markdown file or a notebook), a link to this repository's files on GitHub
    (settings.ini's `git_url` + `/blob/<branch>/`) that names no file of the checkout. [] when it is fine"""
    import tempfile
    readme = Path(readme or ROOT/'README.md'); root = readme.parent.resolve()
    with tempfile.TemporaryDirectory() as d:
        f = Path(out or d)/'README.html'
        f.write_text(readme_html(readme), encoding='utf-8')
        page.goto(f.as_uri(), wait_until='load')
        mj = page.evaluate("() => !!(window.MathJax && window.MathJax.Hub)")
        if mj: page.evaluate("() => new Promise(r => MathJax.Hub.Queue(() => r(true)))")
        r = page.evaluate(_PAGE_JS)
        if screenshot: page.screenshot(path=str(screenshot), full_page=True); shrink(Path(screenshot), max_height=12000)
    probs = []
    if bad := dropped_html(readme.read_text(encoding='utf-8')): probs.append(f"HTML that GitHub's sanitizer drops: {bad}")
    if raw := _re_raw_tex.findall(r['text']): probs.append(f"TeX not rendered: {[s[:60] for s in raw[:5]]}")
    if r['math_errors']: probs.append(f"TeX errors: {r['math_errors'][:5]}")
    if '\\(' in readme_html(readme) and not mj: probs.append("MathJax did not load")
    if bad := [i['src'] for i in r['images'] if not i['ok']]: probs.append(f"images not loaded: {bad}")
    if not r['images']: probs.append("no image")
    cfg = config()
    blob = f"{cfg.get('git_url', '').rstrip('/')}/blob/{cfg.get('branch', 'main')}/"
    for href in dict.fromkeys(r['links']):
        if href.startswith(blob): href = href[len(blob):]
        elif re.match(r'^[a-z][a-z0-9+.-]*:', href, re.I) or href.startswith('//'): continue
        target, _, frag = href.partition('#')
        if not target:
            if frag not in r['ids']: probs.append(f"broken anchor #{frag}")
            continue
        f = (root/target).resolve()
        if not f.is_relative_to(root) or not f.exists(): probs.append(f"broken link {href}"); continue
        if frag and f.suffix in ('.md', '.ipynb') and frag not in heading_ids(f): probs.append(f"broken anchor {href}")
    return probs

def check_readme_in_chromium(readme:Path|None=None, screenshot:Path|None=None) -> list[str]:
    "`check_readme` in a headless Chromium of its own"
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox', '--allow-file-access-from-files'])
        try: return check_readme(browser.new_page(viewport=dict(width=1100, height=900)), readme, screenshot=screenshot)
        finally: browser.close()

def shrink(png:Path, max_width:int=720, max_height:int=3600):
    "Keep a screenshot modest: scaled to `max_width`, cut at `max_height` pixels, palette colours"
    from PIL import Image
    im = Image.open(png).convert('RGB')
    if im.width > max_width: im = im.resize((max_width, round(im.height*max_width/im.width)), Image.LANCZOS)
    if im.height > max_height: im = im.crop((0, 0, im.width, max_height))
    im.quantize(128, method=Image.Quantize.FASTOCTREE).save(png, optimize=True)

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog='\n'.join(__doc__.splitlines()[1:]))
    ap.add_argument('--pages', nargs='*', help='notebooks to build (e.g. index 36_lotus); default: all')
    ap.add_argument('--out', default=str(SITE), help='output folder (default: _site/)')
    ap.add_argument('--no-exec', action='store_true', help='do not execute: stored outputs and the API reference only')
    ap.add_argument('--n_workers', type=int, default=1, help='notebooks executed in parallel (default 1)')
    ap.add_argument('--timeout', type=int, default=None, help="seconds a cell may run (default: no limit)")
    ap.add_argument('--check', action='store_true', help='then open the built pages in Chromium and report problems')
    ap.add_argument('--screenshots', default=None, help='with --check: save a screenshot of each page in this folder')
    a = ap.parse_args()
    man = build(a.pages, Path(a.out), execute=not a.no_exec, n_workers=a.n_workers, timeout=a.timeout)
    bad = {k: v['errors'] for k, v in man['built'].items() if v['errors']}
    print(f"build_docs: {len(man['built'])} pages in {a.out} ({man['seconds']} s)" + (f"; cells raised: {bad}" if bad else ''))
    if man['collisions'] and not a.pages:      # two notebooks, one page: the site would lose one of them
        print(f"build_docs: notebooks rendered to the same page (nbdev drops the number prefix): {man['collisions']}")
        bad = bad or man['collisions']
    if a.check:
        res = check_site(Path(a.out), a.pages, a.screenshots)
        shot = Path(a.screenshots)/'README.png' if a.screenshots else None
        res['README.md (as GitHub renders it)'] = check_readme_in_chromium(screenshot=shot)
        for k, v in res.items(): print(f"  {k}: {'ok' if not v else '; '.join(v)}")
        bad = bad or {k: v for k, v in res.items() if v}
    sys.exit(1 if bad else 0)
