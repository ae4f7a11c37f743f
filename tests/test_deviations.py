"The deviations ledger records every registered method's defaults: a default changed without its ledger row fails here"
import dataclasses
import pytest
from lotus_nb.deviations import DEFAULTS, KINDS, check_defaults, defaults_mismatches, ledger, registry_defaults
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
    assert {'legacy_stop=True', "passes='shuffled'", 'lr=0.1', 'noise_steps=1'} <= set(L.switch)
