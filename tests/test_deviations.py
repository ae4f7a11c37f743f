"""The deviations ledger (nbs/paper/90_deviations.ipynb, its rows in lotus_nb/paper/deviations.csv): every registered method's defaults
recorded (a default changed without its ledger row fails here), and every switch a row offers exercised by its probe
(tests/ledger_probes.py: the probes run the package's higher floors, so they run here, not in the chapter)"""
import dataclasses, subprocess
import pytest
from ledger_probes import switch_probes, config_probe   # the probes are tests: tests/ledger_probes.py
from helpers import ROOT
from lotus_nb.paper.deviations import DEFAULTS, DEVIATIONS, KINDS, ledger_defaults, declared_defaults, check_defaults, check_switches, defaults_mismatches, ledger, registry_defaults, offers_switch, stand_in_rows
from lotus_nb.paper.deviations import LEDGER_FILE, STAND_IN_SETUP, read_ledger
from lotus_nb.paper.deviations import PROTOCOL_ROWS, NOT_IN_PROTOCOL, check_protocol, protocol_switches, protocol_table
from lotus_nb.methods.base import list_methods, method_config
from lotus_nb.running.benchmark_spec import BenchmarkSpec

def test_ledger_matches_registry():
    "Every method, every config field, ResNet and ViT: the ledger's recorded default is the registry's"
    assert defaults_mismatches() == []
    assert set(ledger_defaults()) == set(list_methods(reference=False))
    assert set(DEFAULTS) == set(list_methods(paper=True, reference=False)) | {'lotus_salun'}   # the paper's rows; the rest in their chapters
    assert set(declared_defaults()) == set(list_methods(default_run=False))                    # the field's: each config's `sources`

def test_check_can_fail():
    "A changed default, a new field or an unrecorded method is reported"
    tweak = lambda n, a: dataclasses.replace(method_config(n, a), **({'mask_fraction': 0.5} if n == 'salun' else {}))
    with pytest.raises(AssertionError, match='salun.mask_fraction'): check_defaults(config=tweak)
    with pytest.raises(AssertionError, match='lotus: registered'): check_defaults({k: v for k, v in DEFAULTS.items() if k != 'lotus'})

def test_every_value_has_a_source():
    assert all(src.strip() for fields in ledger_defaults().values() for (_, _, src) in fields.values())
    assert sum(len(f) for f in registry_defaults().values()) == sum(len(f) for f in ledger_defaults().values())

def test_ledger_table():
    L = ledger()
    assert set(L.kind) <= set(KINDS) and not (L == '').any().any()
    assert {"passes='shuffled'", 'lr=0.1', 'noise_steps=1', "model='resnet18_tv'", "mia_nonmember='unseen' (evaluate, run_benchmark, BenchmarkSpec)"} <= set(L.switch)
    assert not L.apply(lambda c: c.str.contains('{lotus_nb.', regex=False)).any().any(), "every citation of ours rendered as file:line"

def test_every_switch_changes_what_its_row_says():
    "Each row that offers a switch has a probe; applied, the switch changes the value or behaviour the row names"
    sw = check_switches(switch_probes())
    assert len(sw) == sum(offers_switch(r) for r in DEVIATIONS + stand_in_rows()) > 40 and sw.changes.all()
    row = lambda topic, what: sw[(sw.topic == topic) & (sw.what == what)].iloc[0][['default', 'switched']].tolist()
    assert row('Models', 'ResNet18 network') == ["'MaxPool2d'", "'Identity'"]
    assert row('Training', 'weights kept after early stopping') == ['4', '0']   # the last epoch, or the best (the first)
    assert row('LoTUS', 'rounding and early stop')[1] == '(True, 82)'   # the float test fires on 82 of the 100 one-point gaps, not 100
    assert row('Metrics', 'batch size of metric passes') == ['15', '1']   # evaluate's smallest batch
    assert row('Data', 'the forget set') == ['(False, (5, 6, 13, 23))', '(True, (0, 1, 2, 3))']   # (do seeds 1 and 2 agree, seed 1's first positions)
    assert row('LoTUS', 'alpha on CIFAR-10 ResNet18') == ['(8.0, 32.0)', '(2.0, 2.0)']   # (instance, class) as the runner resolves them

def test_a_switch_that_changes_nothing_fails():
    from lotus_nb.paper.deviations import Deviation
    with pytest.raises(AssertionError, match='has no probe'): check_switches(switch_probes(), [Deviation('X', 'y', '-', '-', '-', '-', 'z=1', 'our choice')])
    row = Deviation('SalUn', 'mask fraction k', '-', '-', '-', '-', 'mask_fraction=0.1', 'code over table')
    with pytest.raises(AssertionError, match='changes nothing'): check_switches({('SalUn', 'mask fraction k'): config_probe('salun', mask_fraction=0.1)}, [row])

def test_ledger_file_ships():
    "The rows are the package's deviations.csv, which MANIFEST.in puts in the sdist and (include_package_data) the wheel"
    assert LEDGER_FILE.parent == ROOT/'lotus_nb'/'paper' and LEDGER_FILE.name == 'deviations.csv' and LEDGER_FILE.exists()
    assert 'include lotus_nb/paper/deviations.csv' in (ROOT/'MANIFEST.in').read_text().splitlines()
    assert subprocess.run(['git', 'check-ignore', '-q', str(LEDGER_FILE)], cwd=ROOT).returncode == 1, "deviations.csv is git-ignored"
    assert read_ledger() == DEVIATIONS + STAND_IN_SETUP and len(DEVIATIONS) > 60 and STAND_IN_SETUP
    assert {r.kind for r in STAND_IN_SETUP} == {'stand-in'} and 'stand-in' not in {r.kind for r in DEVIATIONS}

def test_ledger_imports_nothing_it_runs():
    "The ledger is data: lotus_nb.paper.deviations imports no module of the package at a higher floor than the ones its rows read, and runs no probe"
    import ast, lotus_nb
    from pathlib import Path
    tree = ast.parse((Path(lotus_nb.__file__).parent/'paper'/'deviations.py').read_text())
    inner = [n for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert inner == [], [ast.unparse(n) for n in inner]
    assert not any(isinstance(n, ast.Attribute) and n.attr == 'import_module' for n in ast.walk(tree))

def test_every_fixed_defect_with_a_switch_is_in_the_authors_protocol(monkeypatch):
    """Every ledger row of kind 'defect fixed' that offers a switch is covered by the 'authors' protocol (PROTOCOL_ROWS: a setting of
    PROTOCOLS['authors'], or their value's column beside ours) or listed in NOT_IN_PROTOCOL with its reason; a new row is caught"""
    rows = [r for r in DEVIATIONS + stand_in_rows() if r.kind == 'defect fixed' and offers_switch(r)]
    excluded = {k: why for k, why in NOT_IN_PROTOCOL}
    assert all(why.strip() for why in excluded.values()) and not set(excluded) & set(PROTOCOL_ROWS)
    missing = [(r.topic, r.what) for r in rows if (r.topic, r.what) not in {**PROTOCOL_ROWS, **excluded}]
    assert missing == [], f"defects fixed whose switch the 'authors' protocol neither sets nor excludes: {missing}"
    assert len(check_protocol()) >= len(PROTOCOL_ROWS)   # every path resolves, is named by its row's switch, differs from ours
    from lotus_nb.paper.deviations import Deviation
    new = Deviation('UNSIR', 'a new defect', '-', '-', '-', '-', 'noise_steps=3', 'defect fixed')
    with pytest.raises(AssertionError, match='a new defect.*a defect fixed with a switch'):
        check_protocol(DEVIATIONS + stand_in_rows() + [new])
    two = {**PROTOCOL_ROWS, ('UNSIR', 'Adam steps on each noise batch'): ('methods.unsir.noise_steps', 'methods.unsir.noise_mode')}
    with pytest.raises(AssertionError, match='noise_mode is not a setting of'): check_protocol(covered=two)
    from lotus_nb.running.benchmark_spec import PROTOCOLS
    monkeypatch.setitem(PROTOCOLS['authors']['methods']['unsir'], 'noise_mode', 'train')   # a setting the protocol would not change
    with pytest.raises(AssertionError, match="noise_mode='train' is unsir's default already"): check_protocol(covered=two)

def test_protocol_table_on_made_up_rows():
    "protocol_table: a row per (switch, method it touches), the report's four metrics under each protocol; a method short of one left out"
    import pandas as pd
    rows = pd.DataFrame([dict(method=m, protocol=p, seed=s, acc_forget=a + s/100, acc_test=.5, mia=.2, avg_gap=.1)
                         for m in ('gold', 'lotus', 'ssd') for p, a in (('lotus_nb', .9), ('authors', .8)) for s in (1, 3)
                         if (m, p) != ('ssd', 'authors')])
    t = protocol_table(rows, [('eval_augmented=True', None), ('lotus authors_stop=True', ('lotus',)), ('ssd repeats=10', ('ssd',))])
    want = [('eval_augmented=True', 'Gold Std'), ('eval_augmented=True', 'LoTUS'), ('lotus authors_stop=True', 'LoTUS')]
    assert t.index.tolist() == want
    assert t[('Forget Acc.', 'lotus_nb')].tolist() == [.92]*3 and t[('Forget Acc.', 'authors')].tolist() == [.82]*3   # the mean over seeds
    assert [c for c, _ in t.columns[::2]] == ['Forget Acc.', 'Test Acc.', 'MIA Acc.', 'Avg Gap']
    sw = protocol_switches(BenchmarkSpec('digits', 'resnet18_tiny'))
    assert ('eval_augmented=True', None) in sw and ("split='first'", None) in sw and ('lotus authors_stop=True', ('lotus',)) in sw
    assert ('ssd repeats=10', ('ssd',)) in sw and not any(s.startswith('ssd repeats=3') for s, _ in sw)   # ResNet: 10, not ViT's 3
