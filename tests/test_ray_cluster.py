"""The grid on a real multi-node Ray cluster on this machine, whose nodes share nothing with the driver but Ray.

The head runs no task (`--num-cpus 0`); two worker nodes run in mount namespaces of their own (`unshare -m`) with a fresh
tmpfs over the test's folder, so that they cannot see the driver's results folder, its checkpoints or its data, nor each
other's checkpoint folders. The grid runs there; `results.csv` gets every row, equal to the local executor's; a driver killed
mid-grid resumes; a worker node lost mid-grid (every process of it SIGKILLed while it runs a unit) costs nothing but time: Ray
runs the lost unit again on the node left and every row comes once; data the nodes lack stops the grid before
any training, naming the node and the path; the privacy audit's shadows run on the nodes, its results equal to the local
executor's. Every process of the cluster is killed at the end, pass or fail, by process group and by the cluster's own
temporary folder (never with `ray stop`, which would stop every Ray instance of the machine). Needs root (for the mounts) and
Ray; skipped otherwise, except where `LOTUS_NB_CLUSTER_TEST=required` (.ci/run sets it: there the test must run).
"""
import os, signal, socket, subprocess, sys, tempfile, time, shutil
from pathlib import Path
import pandas as pd
import pytest
from helpers import ROOT, read_rows
from lotus_nb.running.store import KEY, METRICS

ray = pytest.importorskip('ray')

SEEDS, METHODS = [1, 2], ['original', 'gold', 'finetune', 'lotus']
SPECS = ("[BenchmarkSpec('digits', 'resnet18_tiny', 0.1, train_epochs=3), "
         "BenchmarkSpec('digits', 'resnet18_tiny', forget_class=3, train_epochs=3)]")
ENV = dict(RAY_AUTH_MODE='disabled', RAY_USAGE_STATS_ENABLED='0', OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONHASHSEED='0',
           RAY_raylet_start_wait_time_s='120')   # a busy 2-core machine can take longer than Ray's default to register a node
UP = 'This command will now block forever'      # what `ray start --block` logs once its node is up
COLS = [c for c in METRICS if c != 'time_min']

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def can_isolate() -> bool:
    if os.geteuid() != 0 or not shutil.which('unshare'): return False
    try: return subprocess.run(['unshare', '-m', 'sh', '-c', 'mount -t tmpfs tmpfs /mnt'], timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired): return False

CONNECT = """
import sys, time, logging, ray
from pathlib import Path
logging.basicConfig(level=logging.INFO, format='%(message)s')
address, nodes, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ray.init(address=address, include_dashboard=False, log_to_driver=False)
t0 = time.time()
while len([n for n in ray.nodes() if n['Alive']]) < nodes:
    if time.time() - t0 > 120: sys.exit(f'the cluster did not come up: {ray.nodes()}')
    time.sleep(1)
"""
DRIVER = CONNECT + """
from lotus_nb.running.benchmark import BenchmarkSpec
from lotus_nb.running.grid import run_grid
specs, seeds, methods = map(eval, sys.argv[4:7])
run_grid(specs, seeds=seeds, methods=methods, out_dir=out, executor='ray', progress=True, poll_s=1, write=False)
print(f"NODES DEAD {sum(not n['Alive'] for n in ray.nodes())}")
print('DRIVER DONE')
"""
AUDIT_DRIVER = CONNECT + """
from lotus_nb.models.training import Recipe
from lotus_nb.running.privacy import prepare_audit, run_audit
setup, methods = map(eval, sys.argv[4:6])
audit = run_audit(setup, methods, out_dir=out, executor='ray', progress=True)
audit.results.to_pickle(Path(out)/'audit_results.pkl')
print('DRIVER DONE')
"""

class Cluster:
    "A head (no CPUs) and `workers` nodes of one CPU each, the workers in their own mount namespace with a tmpfs over `hide`"
    def __init__(self, hide:Path, workers:int=2):
        self.hide, self.workers, self.procs, self.nodes = hide, workers, [], {}   # nodes: worker name -> its `ray start` process
        self.ray_bin = str(Path(sys.executable).parent/'ray') if (Path(sys.executable).parent/'ray').exists() else 'ray'
        self.temp = tempfile.mkdtemp(prefix='lotus-rc-', dir='/tmp')   # short (socket paths), and no other Ray finds it
        self.port, self.address = free_port(), None
        self.logs = Path(self.temp)/'logs'; self.logs.mkdir()

    def _start(self, name, cmd, env=None, tries:int=2, timeout:float=150):
        "Start a node and wait until it is up (its log says so); a node that dies while starting is started again, once"
        for attempt in range(tries):
            log = open(self.logs/f'{name}.log', 'w')
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **ENV, **(env or {})})
            self.procs.append(p)
            deadline = time.time() + timeout
            while time.time() < deadline and p.poll() is None and UP not in self.log(name, None): time.sleep(0.5)
            if UP in self.log(name, None) and p.poll() is None: return p
            try: os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError: pass
        raise RuntimeError(f'Ray node {name} did not start:\n{self.log(name)}')

    def start(self):
        self._start('head', [self.ray_bin, 'start', '--head', '--num-cpus', '0', '--port', str(self.port), '--node-ip-address', '127.0.0.1',
                             '--temp-dir', self.temp, '--include-dashboard', 'false', '--disable-usage-stats', '--block',
                             '--dashboard-agent-listen-port', str(free_port())])
        self.address = f'127.0.0.1:{self.port}'
        for k in range(self.workers): self.start_worker(k)
        return self

    def start_worker(self, k:int):
        "Start worker node `k` (again, after kill_node: a fresh machine, its tmpfs empty) and wait until it is up"
        node = (f"mount --make-rprivate / && mount -t tmpfs tmpfs {self.hide} && exec {self.ray_bin} start --address {self.address} "
                f"--num-cpus 1 --node-ip-address 127.0.0.1 --disable-usage-stats --block --dashboard-agent-listen-port {free_port()}")
        self.nodes[f'worker{k}'] = self._start(f'worker{k}', ['unshare', '-m', 'sh', '-c', node], env=dict(LOTUS_NB_NODE_CACHE=str(self.hide/'node_cache')))

    def node_pids(self, k:int) -> dict:
        "pid -> command line of every process of worker node `k`: its session (Ray's workers have process groups of their own, not sessions)"
        sid, out = self.nodes[f'worker{k}'].pid, {}
        for pid in os.listdir('/proc'):
            if not pid.isdigit(): continue
            try: stat, cmd = Path(f'/proc/{pid}/stat').read_text(), Path(f'/proc/{pid}/cmdline').read_bytes()
            except OSError: continue
            state, _, _, session = stat[stat.rindex(')') + 2:].split()[:4]
            if int(session) == sid and state != 'Z': out[int(pid)] = cmd.replace(b'\0', b' ').decode(errors='replace').strip()
        return out

    def running(self, k:int, task:str='_ray_unit') -> bool:
        "Whether a Ray worker process of node `k` is running `task` now (Ray titles the process `ray::<task>` while it runs)"
        return any(cmd.startswith(f'ray::{task}') for cmd in self.node_pids(k).values())

    def kill_node(self, k:int):
        "Lose worker node `k` as a machine is lost: SIGKILL every process of it at once (raylet, object store, workers, agents)"
        for _ in range(20):
            if not (pids := self.node_pids(k)): return
            for pid in pids:
                try: os.kill(pid, signal.SIGKILL)
                except ProcessLookupError: pass
            self.nodes[f'worker{k}'].poll()   # reaps the `ray start` process, our child
            time.sleep(0.2)
        raise RuntimeError(f'worker{k} left processes alive: {self.node_pids(k)}')

    def log(self, name, tail:int=5000) -> str:
        text = (self.logs/f'{name}.log').read_text(errors='replace'); return text[-tail:] if tail else text

    def stop(self):
        "Kill every process of the cluster: its process groups, then any process left that names its temporary folder"
        for p in self.procs:
            try: os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError: pass
        for p in self.procs:
            try: p.wait(timeout=30)
            except subprocess.TimeoutExpired: pass
        for pid in os.listdir('/proc'):
            if not pid.isdigit() or int(pid) == os.getpid(): continue
            try: cmd = Path(f'/proc/{pid}/cmdline').read_bytes()
            except OSError: continue
            if self.temp.encode() in cmd:
                try: os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError: pass
        shutil.rmtree(self.temp, ignore_errors=True)

@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    if not can_isolate():
        why = 'needs root and unshare -m (mount namespaces) for nodes that cannot see the driver\'s files'
        if os.environ.get('LOTUS_NB_CLUSTER_TEST') == 'required': pytest.fail(why + ' (LOTUS_NB_CLUSTER_TEST=required, as in CI)')
        pytest.skip(why)
    hide = tmp_path_factory.mktemp('cluster')
    c = Cluster(hide)
    try:
        c.start(); yield c
    finally:
        c.stop()

def drive(c:Cluster, out:Path, specs:str=SPECS, timeout=240, kill_after_rows:int=None, watch=None, script:str=DRIVER, args=None):
    """Run the grid (or `script` with `args`) from a driver process connected to the cluster; with `kill_after_rows`, SIGKILL the driver
    once that many rows are in; `watch(rows)`, called every half second with the rows in results.csv so far until it returns True, acts
    on the cluster mid-grid"""
    args = (specs, repr(SEEDS), repr(METHODS)) if args is None else args
    cmd = [sys.executable, '-c', script, c.address, str(c.workers + 1), str(out), *args]
    p = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    t0 = time.time()
    try:
        while p.poll() is None and time.time() - t0 < timeout:
            rows = len(read_rows(out/'results.csv')) if (out/'results.csv').exists() else 0
            if kill_after_rows is not None and rows >= kill_after_rows:
                os.killpg(p.pid, signal.SIGKILL); break
            if watch is not None and watch(rows): watch = None
            time.sleep(0.5)
        else:
            if p.poll() is None: os.killpg(p.pid, signal.SIGKILL); pytest.fail(f'driver timed out after {timeout} s:\n{p.communicate()[0][-8000:]}')
        out_text = p.communicate(timeout=30)[0]
    finally:
        try: os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError: pass
    return p.returncode, out_text, time.time() - t0

def sorted_rows(path) -> pd.DataFrame:
    return read_rows(path).sort_values(['forget_class', 'method', 'seed'], na_position='first').reset_index(drop=True)

def test_grid_on_three_nodes(cluster, tmp_path):
    from lotus_nb.running.benchmark import BenchmarkSpec
    from lotus_nb.running.grid import run_grid
    hide = cluster.hide
    t0 = time.time(); run_grid(eval(SPECS), seeds=SEEDS, methods=METHODS, out_dir=hide/'local', progress=False, write=False); t_local = time.time() - t0
    rc, out, t_ray = drive(cluster, hide/'ray')
    assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
    a, b = sorted_rows(hide/'local'/'results.csv'), sorted_rows(hide/'ray'/'results.csv')
    with pd.option_context('display.width', 250, 'display.max_columns', 30):
        print(f"\nlocal executor ({t_local:.0f} s) vs the 3-node cluster ({t_ray:.0f} s, driver included):")
        print(pd.concat({'local': a.set_index(['forget_class', 'method', 'seed'])[['avg_gap', 'mia', 'acc_forget', 'rf_jsd', 'threads']],
                         'cluster': b.set_index(['forget_class', 'method', 'seed'])[['avg_gap', 'mia', 'acc_forget', 'rf_jsd', 'threads']]}, axis=1).round(6))
    assert len(a) == len(b) == 16
    pd.testing.assert_frame_equal(a[KEY + COLS], b[KEY + COLS], check_exact=False, rtol=1e-9, atol=1e-12)
    assert set(b.threads) == {1}
    assert 'Ray node' in out and len(list((hide/'ray'/'runs').glob('*.json'))) == 16, "the driver wrote every record"
    # without storage, the checkpoints came home through the object store: the driver keeps each, trained once
    assert len(list((hide/'ray'/'checkpoints').glob('orig_*.pt'))) == 2 and len(list((hide/'ray'/'checkpoints').glob('gold_*.pt'))) == 4

def test_resume_after_driver_kill(cluster):
    hide = cluster.hide
    rc, out, _ = drive(cluster, hide/'resume', kill_after_rows=1)
    got = read_rows(hide/'resume'/'results.csv')
    assert 1 <= len(got) < 16, (len(got), out[-4000:])
    rc, out, _ = drive(cluster, hide/'resume')
    assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
    b = sorted_rows(hide/'resume'/'results.csv')
    assert len(b) == 16 and not b.duplicated(KEY).any()
    if (hide/'local'/'results.csv').exists():
        a = sorted_rows(hide/'local'/'results.csv')
        pd.testing.assert_frame_equal(a[KEY + COLS], b[KEY + COLS], check_exact=False, rtol=1e-9, atol=1e-12)

def local_rows(hide:Path) -> pd.DataFrame:
    "The local executor's rows of the grid (test_grid_on_three_nodes ran it; run here when a test runs alone)"
    if not (hide/'local'/'results.csv').exists():
        from lotus_nb.running.benchmark import BenchmarkSpec
        from lotus_nb.running.grid import run_grid
        run_grid(eval(SPECS), seeds=SEEDS, methods=METHODS, out_dir=hide/'local', progress=False, write=False)
    return sorted_rows(hide/'local'/'results.csv')

def test_worker_node_lost_mid_grid(cluster):
    """A worker node lost while it runs a unit (every process of it SIGKILLed, raylet and object store included, once the first rows are
    in): Ray runs the lost unit again on the node left, and the grid completes with every row once, equal to the local executor's"""
    hide, a, killed = cluster.hide, local_rows(cluster.hide), []
    def kill_a_busy_node(rows):
        if rows < 1: return False                       # the grid is under way: a unit has come home
        busy = [k for k in range(cluster.workers) if cluster.running(k)]
        if not busy: return False                       # between units: wait until one runs, so that a running unit is lost
        cluster.kill_node(busy[0]); killed.append((busy[0], rows, time.time())); return True
    try:
        rc, out, t = drive(cluster, hide/'nodelost', watch=kill_a_busy_node)
        assert killed, f'no worker node was running a unit once rows came in:\n{out[-6000:]}'
        (k, rows, when), = killed
        print(f"\nworker{k} killed after {rows} row(s) were in, while it ran a unit; the driver finished {time.time() - when:.0f} s later ({t:.0f} s in all)")
        assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
        # Ray saw the node go: it marked it dead by the end (the driver asks), or, before its heartbeats timed out (a busy machine),
        # it reported the unit lost with its node and retried it
        assert 'NODES DEAD 1' in out or 'node it was running on is dead' in out, out[-4000:]
        assert 'already in the store' not in out, out[-8000:]
        raw = pd.read_csv(hide/'nodelost'/'results.csv')
        b = sorted_rows(hide/'nodelost'/'results.csv')
        assert len(raw) == len(b) == 16 and not b.duplicated(KEY).any(), raw
        pd.testing.assert_frame_equal(a[KEY + COLS], b[KEY + COLS], check_exact=False, rtol=1e-9, atol=1e-12)
        assert len(list((hide/'nodelost'/'runs').glob('*.json'))) == 16, "every run has its record"
    finally:
        for k, *_ in killed: cluster.start_worker(k)    # a fresh node in its place, for the tests after this one

def test_data_missing_on_nodes_stops_before_training(cluster):
    "The driver has the data, the nodes do not: the grid stops before any training, naming the node and the path"
    from lotus_nb.core.testing import write_cifar10
    hide = cluster.hide
    write_cifar10(hide/'data', per_class=20)
    specs = f"[BenchmarkSpec('cifar10', 'resnet18_tiny', 0.1, train_epochs=1, data_root={str(hide/'data')!r})]"
    rc, out, _ = drive(cluster, hide/'missing', specs=specs, timeout=120)
    assert rc != 0 and 'data missing on the cluster' in out, out[-6000:]
    lines = [l for l in out.splitlines() if 'Ray node' in l and str(hide/'data') in l]
    assert len(lines) == 2, out[-6000:]                               # each worker node, named, with the folder it lacks
    assert not (hide/'missing'/'results.csv').exists() and not list((hide/'missing').glob('checkpoints/*.pt'))

AUDIT_SETUP = ("prepare_audit('digits', 'resnet18_tiny', shadows=4, pool_size=20, held_size=40, "
               "recipe=Recipe(epochs=3, batch_size=32, warmup=1, patience=None, schedule='cosine', keep='best'))")
AUDIT_METHODS = ['gold', 'finetune', 'lotus']

def test_privacy_audit_on_the_cluster(cluster):
    "The privacy audit's shadows run as a grid on the cluster's nodes: Audit.results equal the local executor's"
    import inspect
    from lotus_nb.models.training import Recipe
    from lotus_nb.running.privacy import prepare_audit, run_audit
    if 'executor' not in inspect.signature(run_audit).parameters: pytest.skip('run_audit takes no executor yet: the audit is not on the grid')
    hide = cluster.hide
    setup = eval(AUDIT_SETUP)
    t0 = time.time(); a = run_audit(setup, AUDIT_METHODS, out_dir=hide/'audit_local', executor='local', progress=False).results; t_local = time.time() - t0
    rc, out, t_ray = drive(cluster, hide/'audit_ray', script=AUDIT_DRIVER, args=(AUDIT_SETUP, repr(AUDIT_METHODS)), timeout=300)
    assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
    b = pd.read_pickle(hide/'audit_ray'/'audit_results.pkl')
    print(f"\nprivacy audit, {setup.shadows} shadows x {len(AUDIT_METHODS)} methods: local executor {t_local:.0f} s, the cluster {t_ray:.0f} s (driver included)")
    with pd.option_context('display.width', 250, 'display.max_columns', 30): print(b.round(4))
    assert list(a.columns) == list(b.columns) and len(a) == len(b) == setup.shadows*len(AUDIT_METHODS)
    key = lambda d: d.sort_values(['method', 'seed']).reset_index(drop=True)
    pd.testing.assert_frame_equal(key(a), key(b), check_exact=False, rtol=1e-9, atol=1e-12)
    on_nodes = [l for l in out.splitlines() if '(Ray node' in l]
    assert len(on_nodes) == setup.shadows*len(AUDIT_METHODS), out[-8000:]   # every row of every shadow came from a Ray node
