"""Draw the README's figure, nbs/images/quick_start.png, from a run of the README's quick start.

The quick start is the code of nbs/index.ipynb's section "Quick start" (the same code the README shows and its test
runs): it trains a small MLP on scikit-learn's digits, unlearns its forget set with LoTUS and retrains a gold model
without it. This script runs that code as it stands, at one thread, then draws what it printed: the accuracy of each
model on the forget, unseen and test sets, and each model's Avg Gap to the gold model. The numbers drawn are stored in
the PNG's text chunk `lotus_nb:scores` (JSON), so that tests/test_readme.py can check the committed figure against the
output the README shows. Run it again after changing the quick start:

    python tools/readme_figure.py                # rewrite nbs/images/quick_start.png (about 10 s)
    python tools/readme_figure.py --out F.png    # write F.png instead
"""
import argparse, json, os, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURE = ROOT/'nbs'/'images'/'quick_start.png'
KEY = 'lotus_nb:scores'
HEADING = 'Quick start'

def quick_start_code(nb_path:Path=ROOT/'nbs'/'index.ipynb', heading:str=HEADING) -> str:
    "The code cells of `nb_path`'s section titled `heading` (up to the next heading), as one script"
    cells = json.loads(Path(nb_path).read_text(encoding='utf-8'))['cells']
    src = [''.join(c['source']) for c in cells]
    start = next((i for i, (c, s) in enumerate(zip(cells, src)) if c['cell_type'] == 'markdown'
                  and re.search(rf'^#+\s+{re.escape(heading)}\s*$', s, re.M)), None)
    if start is None: raise SystemExit(f"{Path(nb_path).name} has no section {heading!r}")
    code = []
    for c, s in zip(cells[start+1:], src[start+1:]):
        if c['cell_type'] == 'markdown' and re.search(r'^#+\s', s, re.M): break
        if c['cell_type'] == 'code': code.append(s)
    if not code: raise SystemExit(f"no code cells under {heading!r}")
    return '\n\n'.join(code) + '\n'

def run_quick_start() -> dict:
    "{model: {metric: value}} from a run of the quick start: accuracies and Avg Gap, as text formatted as its output prints them"
    import torch
    torch.set_num_threads(1)                       # as the tests and refresh_outputs run the notebooks
    from lotus_nb.metrics.evaluation import avg_gap
    ns = {}
    exec(compile(quick_start_code(), 'quick start', 'exec'), ns)
    scores = ns['scores']
    return {name: dict(forget=f"{r['acc_forget']:.3f}", unseen=f"{r['acc_unseen']:.3f}", test=f"{r['acc_test']:.3f}",
                       avg_gap=f"{avg_gap(r, scores['f_gold']):.4f}") for name, r in scores.items()}   # as the quick start prints them

def draw(scores:dict, out:Path):
    "The figure: accuracies by set and model (left), Avg Gap by model (right); `scores` stored in the PNG"
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from PIL import Image, PngImagePlugin
    text, scores = scores, {m: {k: float(v) for k, v in d.items()} for m, d in scores.items()}
    models = list(scores)
    colours = dict(f_orig='#9e9e9e', LoTUS='#1f77b4', f_gold='#2ca02c')
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.4), gridspec_kw=dict(width_ratios=[2.2, 1]))
    sets, w = ['forget', 'unseen', 'test'], 0.8/len(models)
    for i, m in enumerate(models):
        xs = [k + (i - (len(models)-1)/2)*w for k in range(len(sets))]
        bars = ax.bar(xs, [scores[m][s] for s in sets], w, label=m, color=colours.get(m))
        ax.bar_label(bars, fmt='%.3f', fontsize=7, padding=1)
    target = scores['f_orig']['unseen']
    ax.axhline(target, ls='--', lw=1, color='k', label="f_orig on unseen data")
    lo = min(v for m in models for s, v in scores[m].items() if s in sets)
    ax.set_ylim(max(0., lo - 0.05), 1.025); ax.set_xticks(range(len(sets)), [f'{s} set' for s in sets])
    ax.set_ylabel('accuracy'); ax.legend(fontsize=8, loc='upper right', ncols=2)
    ax.set_title('Forget accuracy falls toward unseen; test holds', fontsize=10)
    gaps = [scores[m]['avg_gap'] for m in models]
    bars = bx.bar(models, gaps, color=[colours.get(m) for m in models])
    bx.bar_label(bars, fmt='%.4f', fontsize=8, padding=1)
    bx.set_ylim(0, max(gaps)*1.25); bx.set_title('Avg Gap to f_gold (lower is better)', fontsize=10)
    fig.suptitle('LoTUS on the quick start: an MLP forgets 300 of the 900 digits it was trained on', fontsize=11)
    fig.tight_layout()
    out = Path(out); out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f'.{out.name}.tmp.png')
    fig.savefig(tmp, dpi=110); plt.close(fig)
    info = PngImagePlugin.PngInfo(); info.add_text(KEY, json.dumps(text, sort_keys=True))
    Image.open(tmp).save(out, pnginfo=info, optimize=True)
    tmp.unlink()

def stored_scores(png:Path=FIGURE) -> dict:
    "The scores a figure written by `draw` was drawn from, as the quick start printed them"
    from PIL import Image
    return json.loads(Image.open(png).text[KEY])

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(FIGURE), help='the PNG to write (default: nbs/images/quick_start.png)')
    a = ap.parse_args()
    if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))    # this checkout's lotus_nb, whatever is installed
    scores = run_quick_start()
    draw(scores, Path(a.out))
    print(f"{os.path.relpath(a.out)}: " + '; '.join(f"{m} {v}" for m, v in scores.items()))
