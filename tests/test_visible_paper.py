"""The regenerated paper, visible on GitHub: nbs/experiments.ipynb is committed with the outputs of one papermill run on
its defaults (the embedded benchmark), and nbs/embedded_paper.ipynb shows that run's tables and figures, both written
by `python tools/refresh_outputs.py experiments` (part of `--papermill`). Checked here without rerunning it (minutes):
they were made by the current code (the fingerprint of lotus_nb's files, the notebook's source and its parameters,
recorded when they were written), the page's tables and figures are the notebook's, and both are clean as nbdev keeps
them. This test fails after any change to lotus_nb until the command is run again: that is its purpose. Also: the
refresh itself, on `digits` into a temporary folder, from the repository's notebook with its stored outputs (papermill
starts from none of them)."""
import base64, json, shutil, sys
from pathlib import Path
import pytest
from helpers import ROOT, run, script, show

sys.path.insert(0, str(ROOT/'tools'))
import refresh_outputs as ro

NBS = ROOT/'nbs'
HOW = f"run `{ro.EXPERIMENTS_CMD}` ({ro.EXPERIMENTS_COST}) and commit nbs/experiments.ipynb, nbs/embedded_paper.ipynb and nbs/images/embedded/"

def _fingerprint_problem(p:str) -> bool: return 'made by other code' in p

def test_made_by_the_current_code():
    "The stored outputs and the page were made by the code as it is now: lotus_nb's files, the notebook, its default parameters"
    probs = [p for p in ro.check_experiments() if _fingerprint_problem(p) or p.startswith('no ')]
    assert not probs, (f"the embedded paper (nbs/experiments.ipynb's outputs, nbs/embedded_paper.ipynb) is stale: {HOW}\n" + '\n'.join(probs))

def test_page_shows_the_notebooks_run():
    "Every table on the page is one the stored notebook shows, and the same number; the figures are its figures, and the files hold them"
    probs = [p for p in ro.check_experiments() if not _fingerprint_problem(p)]
    assert not probs, f"nbs/embedded_paper.ipynb is not nbs/experiments.ipynb's run: {HOW}\n" + '\n'.join(probs)
    page = json.loads((NBS/ro.EMBEDDED_PAGE).read_text())
    tables = ro._page_tables(page)
    assert len(tables) >= 5, tables          # tab:avg_gap, tab:avg_gap_supp, their certainty, ours (_extra), tab:hyperparams
    assert 'Avg Gap' in tables[0] and 'LoTUS' in tables[0] and '**' in tables[0], tables[0][:500]
    prov = json.loads((NBS/ro.EMBEDDED_DIR/ro.PROVENANCE).read_text())
    assert prov['parameters'] == {} and prov['command'] == ro.EXPERIMENTS_CMD, prov
    assert set(prov['figures']) == {p.name for p in (NBS/ro.EMBEDDED_DIR).glob('*.png')} and len(prov['figures']) >= 2, prov['figures']

def test_stored_outputs_are_clean(tmp_path):
    "No papermill metadata, no injected cell, no execution counts, no absolute paths; nbdev_clean leaves both files as they are"
    for name in (ro.EXPERIMENTS, ro.EMBEDDED_PAGE):
        text = (NBS/name).read_text()
        nb = json.loads(text)
        assert set(nb['metadata']) <= {'kernelspec'}, (name, nb['metadata'].keys())
        assert not [c for c in nb['cells'] if c.get('metadata', {}).get('tags') == ['injected-parameters']]
        assert '"execution_count": null' in text and not any(f'"execution_count": {i}' in text for i in range(1, 10))
        for bad in ('/tmp/', str(ROOT), 'papermill":', 'it/s]'): assert bad not in text, (name, bad)
        shutil.copy(NBS/name, tmp_path/name)
        res = run([script('nbdev_clean'), '--fname', tmp_path/name], cwd=ROOT, timeout=120)
        assert res.returncode == 0 and (tmp_path/name).read_text() == text, f"nbdev_clean changes {name}\n{show(res)}"
    nb = json.loads((NBS/ro.EXPERIMENTS).read_text())
    outs = [c['outputs'] for c in nb['cells'] if c['cell_type'] == 'code']
    assert [c['cell_type'] for c in nb['cells']][0] == 'raw' and 'skip_exec: true' in ''.join(nb['cells'][0]['source'])
    assert 'parameters' in next(c for c in nb['cells'] if c['cell_type'] == 'code')['metadata'].get('tags', [])
    assert sum(bool(o) for o in outs) >= 6, [len(o) for o in outs]   # the run, 3 tables, figures, verdict
    verdict = json.dumps([o for o in outs if o][-1])   # the last cell that printed (after it: the rehearsal's report, empty in a real run)
    assert 'results/tables/' in verdict and 'fashionmnist' in verdict, verdict[:500]    # its default out_dir, relative: what a user sees

def test_sidebar_lists_the_page():
    "The page is on the site, beside the experiments notebook"
    sb = (NBS/'sidebar.yml').read_text()
    assert f'- {ro.EXPERIMENTS}\n' in sb and f'- {ro.EMBEDDED_PAGE}\n' in sb
    assert sb.index(ro.EMBEDDED_PAGE) > sb.index(ro.EXPERIMENTS)

def test_field_page_made_by_the_current_code():
    """nbs/embedded_field.ipynb (`-p methods field` on the embedded benchmark, written by `python tools/refresh_outputs.py
    field`) was made by the code as it is now, shows its fingerprint and a field table, and is on the site"""
    probs = ro.check_field()
    assert not probs, f"the field's page is stale: run `{ro.FIELD_CMD}` ({ro.FIELD_COST}) and commit it\n" + '\n'.join(probs)
    prov = json.loads((NBS/ro.EMBEDDED_DIR/ro.FIELD_PROVENANCE).read_text())
    assert prov['parameters'] == ro.FIELD_PARAMS and prov['command'] == ro.FIELD_CMD, prov
    sb = (NBS/'sidebar.yml').read_text()
    assert f'- {ro.FIELD_PAGE}\n' in sb and sb.index(ro.FIELD_PAGE) > sb.index(ro.EMBEDDED_PAGE)

def test_field_check_can_fail(tmp_path):
    "check_field names an absent page, and a page made by other code (a provenance whose fingerprint is not the current one)"
    assert ro.check_field(tmp_path)[0].startswith('no ')
    for f in (ro.EXPERIMENTS, ro.FIELD_PAGE): shutil.copy(NBS/f, tmp_path/f)
    (tmp_path/ro.EMBEDDED_DIR).mkdir(parents=True)
    prov = json.loads((NBS/ro.EMBEDDED_DIR/ro.FIELD_PROVENANCE).read_text())
    (tmp_path/ro.EMBEDDED_DIR/ro.FIELD_PROVENANCE).write_text(json.dumps(dict(prov, fingerprint='0'*16)))
    probs = ro.check_field(tmp_path)
    assert any('made by other code' in p for p in probs) and any('does not show the fingerprint' in p for p in probs), probs

def test_page_runs_under_nbdev_test():
    "The page's cells only read committed files (its figures): nbdev_test runs it, in tests/test_notebooks.py's run (not skip_exec, not skipped there)"
    from nbdev.doclinks import nbglob
    from test_notebooks import SKIP
    assert (NBS/ro.EMBEDDED_PAGE).resolve() in [p.resolve() for p in nbglob(NBS, as_path=True, skip_file_re=SKIP)]
    cells = json.loads((NBS/ro.EMBEDDED_PAGE).read_text())['cells']
    assert not [c for c in cells if c['cell_type'] == 'raw' and 'skip_exec' in ''.join(c['source'])], "front matter skips it"

DIGITS = {'dataset': 'digits', 'seeds': [3407]}   # one seed: the refresh's path in a third of the time (the embedded run has three)

@pytest.fixture(scope='module')
def digits_refresh(tmp_path_factory):
    "The refresh on digits (seconds to minutes), written into a temporary folder instead of nbs/"
    out = tmp_path_factory.mktemp('visible')
    res = ro.refresh_experiments(params=DIGITS, out=out, log=print)
    assert res['status'] == 'ok', res
    return out

def test_refresh_writes_a_consistent_pair(digits_refresh):
    "From the repository's notebook (its stored Fashion-MNIST outputs): outputs of this run alone, a page that checks, figures on disk"
    out = digits_refresh
    # the fingerprint's currency is test_made_by_the_current_code's (here lotus_nb may change while it runs, in a shared tree)
    assert [p for p in ro.check_experiments(out, params=DIGITS) if not _fingerprint_problem(p)] == []
    nb = json.loads((out/ro.EXPERIMENTS).read_text())
    text = json.dumps([c.get('outputs', []) for c in nb['cells']])
    assert 'digits_' in text and 'fashionmnist' not in text, "stale outputs of the stored run mixed into a new one"
    assert ro._cells(nb) == ro._cells(json.loads((NBS/ro.EXPERIMENTS).read_text())), "the source is the repository's, unchanged"
    assert not [c for c in nb['cells'] if 'injected-parameters' in c.get('metadata', {}).get('tags', [])]
    log = [o for c in nb['cells'] for o in c.get('outputs', []) if o.get('output_type') == 'stream' and o['name'] == 'stderr']
    assert len(log) == 1 and '[grid 12/12 rows' in ''.join(log[0]['text']), "the log lines, one stream"
    prov = json.loads((out/ro.EMBEDDED_DIR/ro.PROVENANCE).read_text())
    assert prov['parameters'] == DIGITS and prov['defaults']['dataset'] == 'fashionmnist'
    assert {'tau_trace.png', 'entropy.png'} <= {p.name for p in (out/ro.EMBEDDED_DIR).glob('*.png')}
    # a run made with other parameters than the defaults is not the committed one
    assert any('made with parameters' in p for p in ro.check_experiments(out))

def test_check_catches_each_fault(digits_refresh, tmp_path, monkeypatch):
    "A changed code file (named), an edited table, a swapped figure file and a page without the notebook's outputs are each reported"
    out = tmp_path/'copy'; shutil.copytree(digits_refresh, out)
    P = DIGITS
    extra = tmp_path/'lotus_nb_extra.py'; extra.write_text('x = 1\n')
    monkeypatch.setattr(ro, 'ROOT', tmp_path)          # the code: this one file, named relative to tmp_path
    monkeypatch.setattr(ro, 'code_files', lambda: [extra])
    prov_f = out/ro.EMBEDDED_DIR/ro.PROVENANCE
    prov = json.loads(prov_f.read_text()); prov['files'] = {'lotus_nb_extra.py': 'old'}; prov_f.write_text(json.dumps(prov))
    probs = ro.check_experiments(out, P)
    assert any('made by other code' in p and 'lotus_nb_extra.py' in p and ro.EXPERIMENTS_CMD in p for p in probs), probs
    monkeypatch.undo()
    shutil.rmtree(out); shutil.copytree(digits_refresh, out)
    page_f = out/ro.EMBEDDED_PAGE
    page = json.loads(page_f.read_text())
    c = next(c for c in page['cells'] if c['cell_type'] == 'markdown' and ''.join(c['source']).lstrip().startswith('|'))
    c['source'] = [''.join(c['source']).replace('LoTUS', 'LoTUZ')]
    page_f.write_text(ro.nb_text(page))
    assert any('does not show' in p for p in ro.check_experiments(out, P)), ro.check_experiments(out, P)
    shutil.rmtree(out); shutil.copytree(digits_refresh, out)
    a, b = sorted((out/ro.EMBEDDED_DIR).glob('*.png'))[:2]
    ba, bb = a.read_bytes(), b.read_bytes(); a.write_bytes(bb); b.write_bytes(ba)
    assert any('is not the figure' in p for p in ro.check_experiments(out, P))
    shutil.rmtree(out); shutil.copytree(digits_refresh, out)
    nb = json.loads((out/ro.EXPERIMENTS).read_text())
    for c in nb['cells']:
        if c['cell_type'] == 'code': c['outputs'] = []
    (out/ro.EXPERIMENTS).write_text(ro.nb_text(nb))
    assert any('keeps no outputs' in p for p in ro.check_experiments(out, P))
