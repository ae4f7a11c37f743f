"The results store under faults: a kill between a row's first and last byte, and two processes racing on one store"
import os, signal, subprocess, sys, textwrap, time
import pandas as pd
import pytest
from helpers import ROOT
from lotus_nb.running.store import Store, row_id

def row(i, **kw):
    return {**dict(dataset='digits', model='m', forget_pct=.1, forget_class=None, unseen='heldout', method=f'm{i}', seed=i, setup='ab',
                   avg_gap=i/100), **kw}

KILLED = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    from lotus_nb.running.store import Store
    real = os.write
    def first_bytes(fd, b):                 # the row's first 9 bytes reach the file, then the process hangs until killed
        n = real(fd, bytes(b)[:9]); Path(sys.argv[2]).touch(); time.sleep(600); return n
    os.write = first_bytes
    Store(sys.argv[1]).append(dict(dataset='digits', model='m', forget_pct=.1, forget_class=None, unseen='heldout',
                                   method='torn', seed=99, setup='ab', avg_gap=.5))
''')

def test_kill_between_first_and_last_byte(tmp_path, caplog):
    st = Store(tmp_path/'res')
    for i in range(3): assert st.append(row(i))
    before = st.results.read_bytes()
    flag = tmp_path/'flag'
    proc = subprocess.Popen([sys.executable, '-c', KILLED, str(st.root), str(flag)], cwd=ROOT)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None, f"the writer exited ({proc.returncode}) before writing"
        assert time.monotonic() < deadline, "the writer never wrote"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL); proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    torn = st.results.read_bytes()
    assert torn.startswith(before) and len(torn) == len(before) + 9 and not torn.endswith(b'\n'), "a torn line was left"
    df = st.read()                                            # the torn line is no finished row
    assert df.method.tolist() == ['m0', 'm1', 'm2'] and 'no newline' in caplog.text
    assert st.append(row(3))                                  # the next append removes it, then writes a whole row
    rest = st.results.read_bytes()[len(before):]
    assert st.results.read_bytes().startswith(before) and rest.count(b'\n') == 1 and rest.split(b',')[5] == b'm3', rest
    assert st.read().method.tolist() == ['m0', 'm1', 'm2', 'm3'] and 'removed a torn last line' in caplog.text
    assert st.results.read_bytes().endswith(b'\n')

RACER = textwrap.dedent('''
    import random, sys, time
    from lotus_nb.running.store import Store
    who, root, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    time.sleep(max(0., start - time.time()))     # both start appending at the same moment
    keys = list(range(40)); random.Random(who).shuffle(keys)
    st, wrote = Store(root), 0
    for i in keys:                          # 40 rows both processes write, in different orders ...
        wrote += st.append(dict(dataset='digits', model='m', forget_pct=.1, forget_class=None, unseen='heldout', method=f'm{i}',
                                seed=i, setup='ab', avg_gap=i/100))
    for i in range(10):                     # ... and 10 of its own
        wrote += st.append(dict(dataset='digits', model='m', forget_pct=.1, forget_class=None, unseen='heldout', method=f'{who}{i}',
                                seed=i, setup='ab', avg_gap=1.))
    print(wrote)
''')

def test_two_processes_race_on_one_store(tmp_path):
    start = time.time() + 3   # after both have imported lotus_nb
    procs = [subprocess.Popen([sys.executable, '-c', RACER, who, str(tmp_path), str(start)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for who in ('a', 'b')]
    wrote = [int(p.communicate(timeout=300)[0].strip()) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    df = Store(tmp_path).read()
    ids = [row_id(r) for _, r in df.iterrows()]
    assert len(ids) == len(set(ids)) == 60, "every row once: no duplicate, none lost"
    assert sum(wrote) == 60 and min(wrote) >= 10, wrote    # each row was written by exactly one of them
    assert sorted(df.method) == sorted([f'm{i}' for i in range(40)] + [f'{w}{i}' for w in 'ab' for i in range(10)])
    assert df.set_index('method').loc['m7', 'avg_gap'] == .07

def test_a_results_file_of_0_7_resumes_without_redoing_rows(tmp_path):
    """0.8 renamed the authors' metric columns (jsd_legacy -> jsd_authors, rf_jsd_legacy -> rf_jsd_authors). A results
    file with 0.7's header, its rows logged by a tracker, resumes with nothing redone: no row run again, none logged
    again, and the old columns read under the new names. (0.8 also changed every setup hash on purpose,
    checkpoints.CACHE_VERSION 6 and new defaults: a store of 0.7 has its rows made again once, under 0.8's set-up.
    So the rows here are 0.8's, with the header as 0.7 wrote it)"""
    from lotus_nb.running.benchmark import run_benchmark
    from lotus_nb.running.store import RENAMED_COLUMNS
    from lotus_nb.models.checkpoints import CACHE_VERSION
    assert CACHE_VERSION == 6, "the cache version moved again: say in CHANGELOG what a store of 0.8 does under it"
    kw = dict(dataset='digits', model='resnet18_tiny', seeds=[1], methods=['original', 'gold', 'lotus'], out_dir=tmp_path, train_epochs=1, progress=False)
    first = run_benchmark(**kw).results
    st = Store(tmp_path)
    old_names = {new: old for old, new in RENAMED_COLUMNS.items()}
    v07 = pd.read_csv(st.results, dtype=str, keep_default_na=False).rename(columns=old_names)   # the file as 0.7 wrote it
    assert {'jsd_legacy', 'rf_jsd_legacy'} <= set(v07.columns) and 'jsd_authors' not in v07.columns
    st.results.write_text(v07.to_csv(index=False))
    from lotus_nb.running.tracking import Tracker
    class Logged(Tracker):                    # a tracker that logged every row under 0.7 (the keys are the rows' identities)
        name = 'logged'
        def __init__(self, keys): super().__init__(tmp_path); self.keys, self.rows = set(keys), []
        def logged(self): return self.keys
        def log_row(self, key, *a): self.rows.append(key); self.keys.add(key)
        def log_benchmark(self, *a): pass
    tracker = Logged(st.key_of(row_id(r)) for _, r in st.read().iterrows())
    again = run_benchmark(**kw, tracking=tracker).results
    assert len(st.read()) == 3 and tracker.rows == [], "a row was redone or logged again"
    pd.testing.assert_frame_equal(again[['method', 'seed', 'setup', 'jsd_authors', 'rf_jsd_authors', 'avg_gap']].reset_index(drop=True),
                                  first[['method', 'seed', 'setup', 'jsd_authors', 'rf_jsd_authors', 'avg_gap']].reset_index(drop=True))
    assert 'jsd_legacy' not in st.read().columns
