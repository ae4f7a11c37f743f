"""Write README.md from the notebook settings.ini names as `readme_nb` (nbs/index.ipynb), the way `nbdev_readme` does.

nbdev_readme runs nbdev's notebook processors (hidden cells and directives removed, doc links added, the title and
summary turned into front matter) and then has Quarto render the processed notebook as GitHub markdown. Quarto
cannot be installed on our machines (its PyPI package downloads the binary from GitHub while it builds), so this
script runs the same processors (nbdev's `FilterDefaults`) and does Quarto's part itself, in Quarto's layout: the
title and its summary, nbdev's warning comment, markdown cells as written, code cells as ``` python blocks and their
stored text outputs indented, Quarto's cell options honoured (`#| echo: false` shows the outputs without the code,
`#| output: false` the code without the outputs, `#| include: false` neither). Quarto's own touches (typographic quotes,
re-aligned tables) are not reproduced. Links are made to work on GitHub, where the README is read: a relative link or
image, written relative to the notebook (`methods/36_lotus.ipynb`, `images/quick_start.png`), is made relative to the
repository's root (`nbs/methods/36_lotus.ipynb`, `nbs/images/quick_start.png`), and the API links nbdev adds (to the doc site,
settings.ini's `doc_host` + `doc_baseurl`, which only a deploy of the docs publishes) point at the chapter that defines
the name instead (`lotus.html#lotus_unlearn` -> `nbs/methods/36_lotus.ipynb`), which GitHub shows with its stored outputs.

    python tools/make_readme.py            # rewrite README.md
    python tools/make_readme.py --out F    # write F instead (tests/test_packaging.py compares the two)
"""
import argparse, os, re, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _nbtools import ROOT, config   # nbdev's config, as the other notebook tools read it

def _output(o) -> tuple:
    "(kind, text) that Quarto shows for one stored output: 'md' for markdown, else 'text' (empty for images and HTML)"
    if o.get('output_type') == 'stream': return 'text', ''.join(o.get('text', ''))
    data = o.get('data', {})
    if 'text/markdown' in data: return 'md', ''.join(data['text/markdown'])
    return 'text', ''.join(data.get('text/plain', ''))

def site_to_repo(md:str, site:str, nbs:Path) -> str:
    "Markdown `md` with each link to a page of the doc site `site` replaced by a link to its notebook in `nbs/`"
    from nbdev.doclinks import _nbpath2html
    pages = {_nbpath2html(p.relative_to(nbs)).as_posix(): p.relative_to(nbs).as_posix() for p in sorted(nbs.rglob('*.ipynb'))}   # methods/lotus.html -> methods/36_lotus.ipynb
    def repl(m):
        nb = pages.get(m.group(1))
        return f'](nbs/{nb})' if nb else m.group(0)
    return re.sub(r'\]\(' + re.escape(site.rstrip('/')) + r'/([^)\s#]+\.html)(?:#[^)\s]*)?\)', repl, md)

_re_rel = re.compile(r'(\]\(<?|\b(?:src|href)=")(?![a-z][a-z0-9+.-]*:|/|#)([^)\s">]+)')

def root_links(md:str, nbs:str='nbs') -> str:
    "Markdown `md`, written in the notebooks' folder `nbs`, with its relative links and images made relative to the repository's root"
    return _re_rel.sub(lambda m: m[1] + os.path.normpath(f'{nbs}/{m[2]}').replace(os.sep, '/'), md)

_re_opt = re.compile(r'^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$')

def cell_options(src:str) -> tuple[dict, str]:
    "The Quarto options (`#| echo: false`) leading a code cell's source, and the source without them"
    lines, opts = src.splitlines(), {}
    while lines and (m := _re_opt.match(lines[0])): opts[m[1]] = m[2].strip('"\'').lower(); lines.pop(0)
    return opts, '\n'.join(lines)

def render() -> str:
    "README.md's text, generated from settings.ini's readme_nb"
    import yaml
    from execnb.nbio import read_nb
    from nbdev.processors import FilterDefaults
    cfg = config()
    nbs = cfg.nbs_path
    # the doc links come from this checkout's lotus_nb/_modidx.py (nbdev loads it by its entry point), whatever the
    # working directory and wherever an installed lotus_nb points
    if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))
    cwd = os.getcwd()
    os.chdir(ROOT)              # nbdev finds settings.ini (and the doc links of _modidx) from the working directory
    try:
        nb = read_nb(nbs/cfg.get('readme_nb', 'index.ipynb'))
        FilterDefaults()(nb)
    finally: os.chdir(cwd)
    parts = []
    for cell in nb.cells:
        src = cell.source.strip('\n')
        if cell.cell_type == 'raw' and src.startswith('---'):
            front = yaml.safe_load(src.strip('-\n')) or {}
            if front.get('title'): parts.append(f"# {front['title']}\n")
            if front.get('description'): parts.append(f"> {front['description']}")
        elif cell.cell_type == 'markdown' and src:
            src = root_links(src, Path(nbs).resolve().relative_to(ROOT).as_posix())   # the folder as the repository names it (nbdev's config gives it absolute)
            parts.append(site_to_repo(src, cfg.get('doc_host', '') + cfg.get('doc_baseurl', ''), nbs))
        elif cell.cell_type == 'code' and src:
            opts, src = cell_options(src)
            if opts.get('include') == 'false': continue
            if opts.get('echo') != 'false' and src.strip(): parts.append(f"``` python\n{src}\n```")
            if opts.get('output') == 'false': continue
            for o in cell.get('outputs', []):
                kind, text = _output(o)
                text = text.strip('\n')
                if not text: continue
                parts.append(text if kind == 'md' else '\n'.join('    ' + l if l else '' for l in text.splitlines()))
    return '\n\n'.join(parts) + '\n'

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(ROOT/'README.md'), help='where to write (default: README.md)')
    args = ap.parse_args()
    Path(args.out).write_text(render(), encoding='utf-8')
