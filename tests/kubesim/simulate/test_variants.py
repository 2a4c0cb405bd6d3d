"""The variants of a simulation: plain kube-scheduler first, then one per weights file, then one
per sweep value; bad input names the option, the value and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube_rdma.core.config_file import ConfigError
from kubesim.simulate.variants import build_variants


def test_one_variant_per_weights_file_then_per_sweep_value(tmp_path: Path) -> None:
    heavy = tmp_path / "heavy.yaml"
    heavy.write_text("weights:\n  affinity: 5\n")
    variants = build_variants([heavy], "locality=0,2")
    assert [v.name for v in variants] == ["kube-scheduler", "heavy", "locality=0", "locality=2"]
    assert variants[1].weights is not None
    assert variants[1].weights.affinity == 5
    assert variants[3].weights is not None
    assert (variants[3].weights.affinity, variants[3].weights.locality) == (5, 2)


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ("locality", "--sweep locality: expected CRITERION=v1,v2,..."),
        ("locality=1,x", "--sweep locality=1,x: 'x' is not a number"),
        ("locality=-1", "--sweep locality=-1: locality=-1: "),
    ],
)
def test_a_bad_sweep_says_what_is_wrong(sweep: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_variants([], sweep)
    assert str(raised.value).startswith(message)
