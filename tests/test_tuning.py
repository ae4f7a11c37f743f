"""lotus_nb.running.tuner: every method's search space is valid, a study killed with SIGKILL resumes without losing or
redoing a finished trial, the validation sets never overlap a reported forget or test set, the tuned settings reach a benchmark,
a clearly bad trial is pruned at its rung of reduced epochs (also when trials run two at a time), and nbs/tuning.ipynb runs
end to end under papermill."""
import json, os, signal, subprocess, sys, time
import numpy as np
import pandas as pd
import pytest
import optuna
from optuna.trial import TrialState
from helpers import ROOT, ONE_THREAD, run_nb, show, read_rows
from lotus_nb.running.benchmark import BenchmarkSpec, resolve_spec, prepare
from lotus_nb.methods.base import list_methods, method_config, method_kinds, unlearn, METHODS
from lotus_nb.methods.demo import demo_task
from lotus_nb.running.tuner import search_space, suggest, validation_spec, storage_url, counted, tune, tuned_overrides

SEEDS = [3407, 13, 12]
SPEC = BenchmarkSpec('digits', 'resnet18_tiny', train_epochs=2)

def corners(space: dict) -> list:
    "The lowest and the highest value of every range at once"
    return [{k: r.low for k, r in space.items()}, {k: r.high for k, r in space.items()}]

def test_every_method_declares_a_space():
    "Each registered unlearning method has a search space; the references have none and are refused"
    for m in list_methods(reference=False): assert search_space(m), m
    for m in list_methods(reference=True):
        with pytest.raises(ValueError, match='reference'): search_space(m)

def test_search_spaces_are_valid():
    """Every registered method's space, sampled by a real sampler (and at its two corners), builds its config with
    method_config, lands inside the ranges with the right types, and holds the paper's default"""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for m in list_methods(reference=False):
        space = search_space(m)
        for p in [suggest(study.ask(), space) for _ in range(20)] + corners(space):
            cfg = method_config(m, 'resnet', **p)          # unknown names raise TypeError
            for k, r in space.items():
                v = getattr(cfg, k)
                assert v in r, (m, k, v, r)
                assert isinstance(v, int) == r.integer, (m, k, v)
        for arch in ('resnet', 'vit'):
            d = method_config(m, arch)
            assert all(getattr(d, k) in r for k, r in space.items()), (m, arch)

@pytest.fixture(scope='module')
def tiny_task():
    "A trained f_orig on digits (tiny ResNet, 2 epochs) and its task: seconds"
    f_orig, _, task = demo_task('digits', 'resnet18_tiny', epochs=2)
    c_orig, _, c_task = demo_task('digits', 'resnet18_tiny', epochs=2, forget_class=3)
    return {'instance': (f_orig, task), 'class': (c_orig, c_task)}

def test_search_space_corners_run(tiny_task):
    "Each method runs at both corners of its space (epochs capped at 1): the ranges hold values the methods accept"
    for m in list_methods(reference=False):
        f_orig, task = tiny_task['instance' if 'instance' in method_kinds(m) else 'class']   # a task of a kind it does
        for p in corners(search_space(m)):
            if 'epochs' in p: p['epochs'] = 1
            out = unlearn(m, f_orig, task, progress=False, **p)
            assert out.record['config'].items() >= p.items(), (m, p)

@pytest.mark.parametrize('dataset', ['digits', 'fashionmnist'])
def test_validation_sets_never_overlap_a_reported_one(dataset):
    """Through the tuning API: the validation benchmark's forget set (several validation seeds) shares no image with any reported
    seed's forget set, and its unseen and test sets (the Avg Gap's test term, the MIA's non-members) none with any reported
    seed's test set; the forget and retain sets index the training split, which no test set is drawn from"""
    spec = BenchmarkSpec(dataset)
    reported = prepare(resolve_spec(spec), ['lotus'])
    taken = np.concatenate([reported.splits(s).forget for s in SEEDS])
    tests = np.concatenate([reported.splits(s).test for s in SEEDS])
    n_train, yh = len(reported.data.y_train), np.asarray(reported.data.y_heldout)
    for v in (0, 1, 7):
        vs = prepare(validation_spec(spec, SEEDS, v), ['lotus']).splits(v)
        assert len(vs.forget) == len(reported.splits(SEEDS[0]).forget)
        assert np.intersect1d(vs.forget, taken).size == 0, (dataset, v)
        for k in ('unseen', 'test'):
            s = getattr(vs, k)
            assert len(s) and np.intersect1d(s, tests).size == 0, (dataset, v, k)
            assert set(yh[s]) == set(yh), (dataset, v, k)          # every class in both
        assert np.intersect1d(vs.unseen, vs.test).size == 0
        assert np.union1d(vs.forget, vs.retain).max() < n_train   # training-split positions
    # the paper's cut of the held-out split (the tuner before) shares reported test images
    old = prepare(validation_spec(spec, SEEDS, 0, heldout='paper'), ['lotus']).splits(0)
    assert np.intersect1d(old.test, tests).size > 0
    with pytest.raises(ValueError, match='reported seed'): validation_spec(spec, SEEDS, 13)

CHILD = """
import logging, sys
logging.basicConfig(level=logging.INFO, format='%(message)s')
from lotus_nb.running.benchmark import BenchmarkSpec
from lotus_nb.running.tuner import tune
tune(BenchmarkSpec('digits', 'resnet18_tiny', train_epochs=2), 'lotus', trials=int(sys.argv[2]), budget_s=1e6, out_dir=sys.argv[1],
     device='cpu', progress=False)
"""

def study_made(url: str) -> bool:
    "Whether the study exists, read without Optuna: opening the storage with Optuna while the child is still creating it races it to write the schema version (UNIQUE constraint failed: alembic_version)"
    import sqlite3
    path = url.removeprefix('sqlite:///')
    if not os.path.exists(path): return False
    try:
        with sqlite3.connect(f'file:{path}?mode=ro', uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM alembic_version").fetchone()[0] > 0 and \
                   db.execute("SELECT COUNT(*) FROM studies WHERE study_name = 'lotus'").fetchone()[0] > 0
    except sqlite3.Error: return False             # tables not made yet, or locked

def snapshot(url: str) -> list:
    "(number, state, params, value, user attrs) of every trial of the study 'lotus' in `url`"
    st = optuna.load_study(study_name='lotus', storage=url)
    return [(t.number, t.state, t.params, t.value, t.user_attrs) for t in st.trials]

def test_killed_study_resumes(tmp_path):
    """A real process tuning LoTUS is killed with SIGKILL mid-study; rerun, it keeps every finished trial as it was, marks the
    one it was running interrupted, reaches the target, and the study is the same one (not overwritten)"""
    out, target = tmp_path/'tuning', 8
    url = storage_url(out)
    cmd = [sys.executable, '-c', CHILD, str(out), str(target)]
    env = {**os.environ, **ONE_THREAD}
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        t0 = time.time()
        while time.time() - t0 < 300:
            time.sleep(0.2)
            if p.poll() is not None: pytest.fail(f"the study ended before it was killed:\n{p.stdout.read().decode()[-5000:]}")
            if not study_made(url): continue           # the child is still creating the storage
            snap = snapshot(url)
            if sum(s == TrialState.COMPLETE for _, s, *_ in snap) >= 2 and snap[-1][1] == TrialState.RUNNING: break
        else: pytest.fail("no two finished trials in 300 s")
        os.killpg(p.pid, signal.SIGKILL)
    finally:
        try: os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError: pass
        p.wait()
    assert p.returncode == -signal.SIGKILL
    before = snapshot(url)
    sid = optuna.load_study(study_name='lotus', storage=url)._study_id
    done = [t for t in before if t[1] == TrialState.COMPLETE]
    assert 2 <= len(done) < target and before[-1][1] == TrialState.RUNNING, before
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-5000:]
    after = snapshot(url)
    st = optuna.load_study(study_name='lotus', storage=url)
    assert st._study_id == sid and optuna.get_all_study_names(url) == ['lotus'], "the study was reused, not made anew"
    assert [t for t in after if t[0] in {d[0] for d in done}] == done, "the finished trials are kept as they were"
    killed = after[before[-1][0]]
    assert killed[1] == TrialState.FAIL and killed[4].get('interrupted') is True, killed
    assert counted(st)[0] == target and st.user_attrs['stopped'] == 'trials'
    assert sum(t[1] in (TrialState.COMPLETE, TrialState.PRUNED) for t in after) == target, after   # pruned trials count too
    assert st.user_attrs['prune'] is True and st.user_attrs['pruned'] == sum(t[1] == TrialState.PRUNED for t in after)
    # every finished trial has its row in the trials store, on the validation seed, and its value is that row's Avg Gap
    rows = read_rows(out/'trials'/'results.csv')
    assert set(rows.seed) == {0} and set(rows.method) == {'lotus'}
    assert set(np.round(rows.avg_gap, 12)) >= {round(t[3], 12) for t in after if t[1] == TrialState.COMPLETE}
    # rerun once more: nothing to do, nothing added
    tune(SPEC, 'lotus', trials=target, budget_s=1e6, out_dir=out, device='cpu', progress=False)
    assert len(snapshot(url)) == len(after)

def test_existing_study_is_never_overwritten(tmp_path):
    "The same storage asked to tune the same method on another validation set is refused, and keeps its study"
    out = tmp_path/'t'
    st = tune(SPEC, 'ssd', trials=2, budget_s=1e6, out_dir=out, device='cpu', progress=False)
    before = [(t.number, t.params, t.value) for t in st.trials]
    with pytest.raises(ValueError, match='val_seed'):
        tune(SPEC, 'ssd', trials=2, budget_s=1e6, out_dir=out, val_seed=1, device='cpu', progress=False)
    again = optuna.load_study(study_name='ssd', storage=storage_url(out))
    assert [(t.number, t.params, t.value) for t in again.trials] == before
    # the tuned settings reach a benchmark as method_overrides
    from lotus_nb.running.benchmark import run_benchmark
    best = tuned_overrides(out)
    assert best == {'ssd': again.best_params}
    b = run_benchmark('digits', 'resnet18_tiny', seeds=[3407], methods=['gold', 'ssd'], out_dir=tmp_path/'r', train_epochs=2,
                      method_overrides=best, device='cpu', progress=False)
    assert len(b.results.query("method == 'ssd'")) == 1
    hp = b.tables['hyperparams']
    assert f"alpha={best['ssd']['alpha']}" in hp.loc['SSD', 'Other'], hp

def test_papermill_tuning(tmp_path):
    "nbs/tuning.ipynb with tiny parameters: studies, tab:tuned, both figures; then experiments.ipynb -p tuned_from uses them"
    out_nb, res = tmp_path/'tuned.ipynb', tmp_path/'res'
    r = run_nb('tuning', out_nb, '-p', 'dataset', 'digits', '-p', 'train_epochs', '2', '-p', 'trials', '3', '-y', 'methods: [lotus, ssd]',
               '-y', 'seeds: [3407, 13]', '-p', 'out_dir', res, '-p', 'device', 'cpu')
    assert r.returncode == 0, show(r)
    assert sorted(optuna.get_all_study_names(storage_url(res))) == ['lotus', 'ssd']
    for m in ('lotus', 'ssd'):
        st = optuna.load_study(study_name=m, storage=storage_url(res))
        assert counted(st)[0] == 3 and st.user_attrs['trials'] == 3 and st.user_attrs['budget_s'] == 300.
    t = pd.read_csv(res/'tables'/'tuned.csv', index_col=0)
    assert {'LoTUS', 'SSD'} <= set(t.columns)
    assert list(t.index[:2]) == ["Avg Gap, paper's settings", 'Avg Gap, tuned']
    assert t.loc['Trials', 'SSD'] == '3 of 3' and str(t.loc['Pruned', 'SSD']) == '0'   # one shot: never pruned
    for f in ('tuning_history', 'tuning_importances'): assert (res/'figures'/f'{f}.png').stat().st_size > 1000
    rows = read_rows(res/'results.csv')
    assert sorted(set(rows.seed)) == [13, 3407] and set(rows.method) == {'gold', 'lotus', 'ssd'}
    assert len(rows) == 2 + 2*2*2, rows[['method', 'seed', 'setup']]   # gold once per seed; each method paper + tuned
    best = tuned_overrides(res)
    r2 = run_nb('experiments', tmp_path/'exp.ipynb', '-p', 'dataset', 'digits', '-p', 'train_epochs', '2', '-p', 'tuned_from', res,
                '-y', 'methods: [gold, ssd]', '-y', 'seeds: [3407]', '-p', 'out_dir', tmp_path/'exp')
    assert r2.returncode == 0, show(r2)
    nb = json.loads((tmp_path/'exp.ipynb').read_text())
    text = json.dumps([c.get('outputs', []) for c in nb['cells']])
    assert f"alpha={best['ssd']['alpha']}" in text, "the tuned alpha of SSD is in the hyperparameter table"

def test_trials_on_ray(tmp_path):
    """The trials run on the grid's Ray executor (a local instance on 2 CPUs), two at a time: the study reaches its target,
    and each trial's value is the Avg Gap of its own row, written by a Ray worker"""
    ray = pytest.importorskip('ray')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try: st = tune(SPEC, 'ssd', trials=4, budget_s=1e6, out_dir=tmp_path/'t', executor='ray', parallel=2, progress=False)
    finally: ray.shutdown()
    assert counted(st)[0] == 4 and all(t.state == TrialState.COMPLETE for t in st.trials)
    rows = read_rows(tmp_path/'t'/'trials'/'results.csv')
    assert len(rows) == 4 and set(rows.seed) == {0}
    assert sorted(rows.avg_gap) == pytest.approx(sorted(t.value for t in st.trials), abs=1e-12)

def test_pruning_in_parallel_rounds(tmp_path):
    """Trials asked two at a time run their rungs as one grid: in the second round the bad one (NegGrad+ at lr 0.1 with beta 0.5,
    whose gradient ascent wrecks the model) is pruned at its rung of 2 epochs; the one beside it, whose rung is trial 1's, goes on
    to its 5 epochs exactly when that rung is at or below the median of the two completed trials'; with prune=False the same points
    run once each"""
    pts = [dict(lr=3e-2, epochs=6, beta=0.95), dict(lr=1e-3, epochs=6, beta=0.95), dict(lr=0.1, epochs=6, beta=0.5), dict(lr=1e-3, epochs=5, beta=0.95)]
    # the last point's rung is trial 1's (lr 1e-3, 2 epochs). Which of trials 0 and 1 ranks first is the machine's numerics: lr 1e-3
    # against 3e-2 was 0.062 and 0.124 on one machine, 0.075 and 0.051 on another; the pruner's rule is checked on whichever it is
    spec = BenchmarkSpec('digits', 'resnet18_tiny')
    def study(out, prune):
        out.mkdir()
        q = optuna.create_study(storage=storage_url(out), study_name='neggrad_plus', direction='minimize')
        for p in pts: q.enqueue_trial(p)
        return tune(spec, 'neggrad_plus', trials=4, budget_s=1e6, out_dir=out, parallel=2, prune=prune, prune_startup=2,
                    cache_dir=tmp_path/'ckpt', device='cpu', progress=False)
    st = study(tmp_path/'pruned', True)
    assert [t.params for t in st.trials] == pts, [(t.params, t.intermediate_values) for t in st.trials]
    goes_on = st.trials[1].intermediate_values[2] <= st.trials[0].intermediate_values[2]   # at or below the median of the two
    last = TrialState.COMPLETE if goes_on else TrialState.PRUNED
    assert [t.state for t in st.trials] == [TrialState.COMPLETE]*2 + [TrialState.PRUNED, last], [(t.state, t.intermediate_values) for t in st.trials]
    assert [list(t.intermediate_values) for t in st.trials] == [[2]]*4
    assert st.trials[2].intermediate_values[2] > 0.5 and st.user_attrs['pruned'] == 2 - goes_on and counted(st)[0] == 4
    # rows: two runs for each of the first two, one for the pruned one; the last one's rung (lr 1e-3, 2 epochs) is trial 1's, already
    # stored, and its full run one more where it goes on
    assert len(read_rows(tmp_path/'pruned'/'trials'/'results.csv')) == 2*2 + 1 + goes_on
    assert st.trials[3].intermediate_values == st.trials[1].intermediate_values
    off = study(tmp_path/'full', False)
    assert all(t.state == TrialState.COMPLETE and t.intermediate_values == {} for t in off.trials) and off.user_attrs['pruned'] == 0
    assert len(read_rows(tmp_path/'full'/'trials'/'results.csv')) == 4
    # a full run is the same run with or without pruning: same value for the points both completed
    assert [t.value for t in off.trials[:2]] == pytest.approx([t.value for t in st.trials[:2]], abs=1e-12)
