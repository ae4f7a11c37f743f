"""The chapter on adding a method (nbs/methods/34_new_method.ipynb) is a complete recipe: its cells tagged `recipe`, and nothing
else, run as one script in a fresh interpreter, in an empty folder outside the repository, add a method that unlearns,
runs in a benchmark beside the package's and shows in its tables."""
import json, os, subprocess, sys
from pathlib import Path
import pandas as pd
from helpers import ROOT

def recipe() -> str:
    nb = json.loads((ROOT/'nbs'/'methods/34_new_method.ipynb').read_text())
    cells = [''.join(c['source']) for c in nb['cells'] if 'recipe' in c.get('metadata', {}).get('tags', [])]
    assert len(cells) >= 5, 'the chapter lost its recipe cells'
    return '\n\n'.join(cells)

def test_recipe_alone_adds_a_method(tmp_path):
    (tmp_path/'my_method.py').write_text(recipe())
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(ROOT)}   # the checkout under test (not its nbs/: the script runs outside it)
    r = subprocess.run([sys.executable, 'my_method.py'], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-6000:]
    rows = pd.read_csv(tmp_path/'results_uniform'/'results.csv')
    assert sorted(rows.method) == ['finetune', 'gold', 'original', 'uniform']
    u = rows.set_index('method').loc['uniform']
    assert 0 <= u.acc_forget <= 1 and u.avg_gap > 0
    extra = list((tmp_path/'results_uniform'/'tables').glob('*_avg_gap_extra.md'))
    assert extra and 'Uniform' in extra[0].read_text()
    assert 'Uniform' not in next((tmp_path/'results_uniform'/'tables').glob('*_avg_gap.md')).read_text()   # not a paper column
