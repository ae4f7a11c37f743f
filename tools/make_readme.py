"""Write README.md from the notebook settings.ini names as `readme_nb` (nbs/index.ipynb), the way `nbdev_readme` does.

nbdev_readme runs nbdev's notebook processors (hidden cells and directives removed, doc links added, the title and
summary turned into front matter) and then has Quarto render the processed notebook as GitHub markdown. Quarto
cannot be installed on our machines (its PyPI package downloads the binary from GitHub while it builds), so this
script runs the same processors (nbdev's `FilterDefaults`) and does Quarto's part itself, in Quarto's layout: the
title, nbdev's warning comment, markdown cells as written, code cells as ``` python blocks and their stored text
outputs indented. Quarto's own touches (typographic quotes, re-aligned tables) are not reproduced, and links to
sibling notebooks get the `nbs/` prefix so that they work from the repository's root.

    python tools/make_readme.py            # rewrite README.md
    python tools/make_readme.py --out F    # write F instead (tests/test_packaging.py compares the two)
"""
import argparse, configparser, os, re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _settings():
    cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(ROOT/'settings.ini', encoding='utf-8')
    return cfg['DEFAULT']

def _output(o) -> tuple:
    "(kind, text) that Quarto shows for one stored output: 'md' for markdown, else 'text' (empty for images and HTML)"
    if o.get('output_type') == 'stream': return 'text', ''.join(o.get('text', ''))
    data = o.get('data', {})
    if 'text/markdown' in data: return 'md', ''.join(data['text/markdown'])
    return 'text', ''.join(data.get('text/plain', ''))

def render() -> str:
    "README.md's text, generated from settings.ini's readme_nb"
    import yaml
    from execnb.nbio import read_nb
    from nbdev.processors import FilterDefaults
    cfg = _settings()
    nbs = ROOT/cfg.get('nbs_path', 'nbs')
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
        elif cell.cell_type == 'markdown' and src:
            parts.append(re.sub(r'\]\((?![a-z]+:|/|#|nbs/)([^)\s]+\.ipynb(?:#[^)\s]*)?)\)', r'](nbs/\1)', src))
        elif cell.cell_type == 'code' and src:
            parts.append(f"``` python\n{src}\n```")
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
