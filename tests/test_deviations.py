"The deviations ledger records every registered method's defaults: a default changed without its ledger row fails here"
import dataclasses
import pytest
from ledger_probes import switch_probes, config_probe   # the probes are tests: tests/ledger_probes.py
from lotus_nb.deviations import DEFAULTS, DEVIATIONS, KINDS, check_defaults, check_switches, defaults_mismatches, ledger, registry_defaults, offers_switch, stand_in_rows
from lotus_nb.methods import list_methods, method_config

def test_ledger_matches_registry():
    "Every method, every config field, ResNet and ViT: the ledger's recorded default is the registry's"
    assert defaults_mismatches() == []
    assert set(DEFAULTS) == set(list_methods(reference=False))

def test_check_can_fail():
    "A changed default, a new field or an unrecorded method is reported"
    tweak = lambda n, a: dataclasses.replace(method_config(n, a), **({'mask_fraction': 0.5} if n == 'salun' else {}))
    with pytest.raises(AssertionError, match='salun.mask_fraction'): check_defaults(config=tweak)
    with pytest.raises(AssertionError, match='lotus: registered'): check_defaults({k: v for k, v in DEFAULTS.items() if k != 'lotus'})

def test_every_value_has_a_source():
    assert all(src.strip() for fields in DEFAULTS.values() for (_, _, src) in fields.values())
    assert sum(len(f) for f in registry_defaults().values()) == sum(len(f) for f in DEFAULTS.values())

def test_ledger_table():
    L = ledger()
    assert set(L.kind) <= set(KINDS) and not (L == '').any().any()
    assert {"passes='shuffled'", 'lr=0.1', 'noise_steps=1', "model='resnet18_tv'", "mia_nonmember='unseen' (evaluate, run_benchmark, BenchmarkSpec)"} <= set(L.switch)
    assert not L.apply(lambda c: c.str.contains('{lotus_nb.', regex=False)).any().any(), "every citation of ours rendered as file:line"

def test_every_switch_changes_what_its_row_says():
    "Each row that offers a switch has a probe; applied, the switch changes the value or behaviour the row names"
    sw = check_switches(switch_probes())
    assert len(sw) == sum(offers_switch(r) for r in DEVIATIONS + stand_in_rows()) > 40 and sw.changes.all()

def test_a_switch_that_changes_nothing_fails():
    from lotus_nb.deviations import Deviation
    with pytest.raises(AssertionError, match='has no probe'): check_switches(switch_probes(), [Deviation('X', 'y', '-', '-', '-', '-', 'z=1', 'our choice')])
    row = Deviation('SalUn', 'mask fraction k', '-', '-', '-', '-', 'mask_fraction=0.1', 'code over table')
    with pytest.raises(AssertionError, match='changes nothing'): check_switches({('SalUn', 'mask fraction k'): config_probe('salun', mask_fraction=0.1)}, [row])

def test_ledger_imports_nothing_it_runs():
    "The ledger is data: lotus_nb.deviations imports no module of the package at a higher floor than the ones its rows read, and runs no probe"
    import ast, lotus_nb
    from pathlib import Path
    tree = ast.parse((Path(lotus_nb.__file__).parent/'deviations.py').read_text())
    inner = [n for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert inner == [], [ast.unparse(n) for n in inner]
    assert not any(isinstance(n, ast.Attribute) and n.attr == 'import_module' for n in ast.walk(tree))
