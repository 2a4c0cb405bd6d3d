"""CEL selectors in the DRA environment kube-scheduler compiles them in
(k8s.io/dynamic-resource-allocation/cel, compile.go: a `version` attribute is a semver value, a
capacity a quantity; the semver and quantity libraries of k8s.io/apiserver/pkg/cel/library),
judged on the real GPU of tests/fixtures/dra/nvidia-gpu-slice-v1.yaml (driver 580.65.6,
compute capability 8.0.0, 8Gi)."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.selectors import Outcome, SelectorError, Selectors
from kube_rdma.core.dra.shapes import read_devices
from tests.kube_rdma.core.dra.fixtures import load

DEVICE = read_devices(load("nvidia-gpu-slice-v1.yaml")[0])[0]
GPU = "device.attributes['gpu.nvidia.com']"
MEMORY = "device.capacity['gpu.nvidia.com'].memory"


def fails(expression: str, why: str) -> tuple[str, Outcome]:
    return expression, f"CEL selector {expression!r} fails: {why}"


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        # Versions: the driver's attributes of type version.
        (f"{GPU}.driverVersion.compareTo(semver('550.0.0')) >= 0", True),
        (f"{GPU}.driverVersion.compareTo(semver('580.65.6')) == 0", True),
        (f"{GPU}.driverVersion.isGreaterThan(semver('590.0.0'))", False),
        (f"{GPU}.cudaComputeCapability.isLessThan(semver('9.0.0'))", True),
        (f"{GPU}.driverVersion.major() == 580 && {GPU}.driverVersion.minor() == 65", True),
        (f"{GPU}.driverVersion.patch() == 6", True),
        (f"{GPU}.driverVersion == semver('580.65.6')", True),
        (f"{GPU}.driverVersion == '580.65.6'", False),  # a version is not a string
        ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
        ("semver('1.0.0-alpha.2').compareTo(semver('1.0.0-alpha.10')) == -1", True),
        ("semver('1.0.0-beta').compareTo(semver('1.0.0-alpha.1')) == 1", True),
        ("semver('1.2.3+build.5') == semver('1.2.3')", True),
        ("semver('v1.2', true) == semver('1.2.0')", True),
        ("semver('01.02.03', true).minor() == 2", True),
        ("isSemver('v1.0') || isSemver('1.0') || isSemver('01.0.0')", False),
        ("isSemver('v1.0', true) && isSemver('1.0.0-rc.1')", True),
        # Capacities: quantities.
        (f"{MEMORY}.compareTo(quantity('40Gi')) >= 0", False),
        (f"{MEMORY}.compareTo(quantity('8192Mi')) == 0", True),
        (f"{MEMORY}.isGreaterThan(quantity('8G'))", True),  # 8Gi is 8.59G
        (f"{MEMORY}.isLessThan(quantity('8Gi'))", False),
        (f"{MEMORY}.asInteger() == 8589934592", True),
        (f"{MEMORY} == quantity('8Gi')", True),
        ("quantity('500m').add(quantity('500m')) == quantity('1')", True),
        ("quantity('2Gi').sub(1073741824) == quantity('1Gi')", True),
        ("quantity('-3').sign() == -1 && !quantity('1.5').isInteger()", True),
        ("quantity('1.5').asApproximateFloat() == 1.5", True),
        ("isQuantity('16Gi') && !isQuantity('12x')", True),
        # The maps as compile.go presents them.
        ("device.driver == 'gpu.nvidia.com' && " + f"{GPU}.type == 'gpu'", True),
        ("has(device.attributes['dra.net'].rdma)", False),  # a missing domain is an empty map
        ("'dra.net' in device.attributes", False),
        (
            f"{GPU}.index == 0 && device.attributes['resource.kubernetes.io'].pcieRoot == "
            "'pci0000:03'",
            True,
        ),
        # Errors, each with its reason.
        fails("device.attributes['dra.net'].rdma", "no such member in mapping: 'rdma'"),
        fails(f"{GPU}.productName", "the result is a StringType, not a bool"),
        fails("semver('550') == semver('550.0.0')", "'550' is not a semantic version (e.g. 1.2.3)"),
        fails(
            f"{MEMORY}.compareTo(semver('1.0.0')) == 0",
            "no such overload: cannot compare Quantity with Semver",
        ),
        fails("quantity('1.5').asInteger() == 1", "1.5 is not an integer within int64"),
        fails(
            "quantity('12x').sign() == 1",
            "'12x' is not a Kubernetes quantity (expected e.g. 16Gi, 512Mi, 1G or 8)",
        ),
        (f"cel.bind(g, {GPU}, g.type == 'gpu' && g.index == 0)", True),
        (f"cel.bind(g, {GPU}, cel.bind(v, g.driverVersion, v.major() == 580))", True),
        (f"cel.bind(g, {GPU}, g.index == 1)", False),
        fails(f"cel.bind(g, {GPU}, g.nope == 1)", "no such member in mapping: 'nope'"),
        ("'ABC'.lowerAscii() == 'abc' && 'abc'.upperAscii() == 'ABC'", True),
        ("' a '.trim() == 'a' && 'a-b'.replace('-', '+') == 'a+b'", True),
        ("'a-b-c'.split('-') == ['a', 'b', 'c'] && 'a-b-c'.split('-', 2) == ['a', 'b-c']", True),
        ("'a-b'.split('-', 0) == [] && 'a-b'.split('-', -1) == ['a', 'b']", True),
        ("'ab'.split('') == ['a', 'b'] && ['a', 'b'].join() == 'ab'", True),
        ("['a', 'b'].join('-') == 'a-b' && 'abab'.indexOf('b') == 1", True),
        ("'abab'.lastIndexOf('b') == 3", True),
        fails("'abc'.charAt(0) == 'a'", "undeclared reference to 'charAt': charAt"),
    ],
)
def test_selectors_evaluate_as_in_kube_scheduler(expression: str, outcome: Outcome) -> None:
    assert Selectors().judge([expression], DEVICE) == outcome


def test_matches_treats_an_evaluation_error_as_no_match() -> None:
    selectors = Selectors()
    assert selectors.matches(["device.attributes['dra.net'].rdma"], DEVICE) is False
    assert selectors.matches([f"{GPU}.driverVersion.major() == 580"], DEVICE) is True


def test_judge_stops_at_the_first_expression_that_does_not_match() -> None:
    broken = "device.attributes['dra.net'].rdma"
    assert Selectors().judge(["device.driver == 'dra.net'", broken], DEVICE) is False


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("x ==", "x =="),
        ("cel.bind(g.x, 1, true)", "cel.bind takes a name, a value and an expression"),
        ("cel.bind(g, 1)", "cel.bind takes a name, a value and an expression"),
    ],
)
def test_an_expression_that_does_not_compile_is_a_selector_error(expression: str, why: str) -> None:
    with pytest.raises(SelectorError) as raised:
        Selectors().check(expression)
    assert str(raised.value) == f"CEL selector {expression!r} does not compile: {why}"


@pytest.mark.parametrize(
    ("expression", "kind"),
    [('"fish".exists(x, x == "fish")', "string"), ("(1).all(x, x == 1)", "int")],
)
def test_a_macro_over_a_literal_that_is_no_list_or_map_does_not_compile(
    expression: str, kind: str
) -> None:
    """cel-go's checker refuses the range (github.com/google/cel-go checker/checker.go
    checkComprehension: "expression of type '%s' cannot be range of a comprehension"), where
    cel-python iterates a string's characters."""
    with pytest.raises(SelectorError) as raised:
        Selectors().check(expression)
    assert str(raised.value) == (
        f"CEL selector {expression!r} does not compile: expression of type '{kind}' cannot be "
        "range of a comprehension (must be list, map, or dynamic)"
    )


def test_a_macro_over_a_list_or_map_literal_compiles() -> None:
    Selectors().check("[1].exists(x, x == 1) && {1: 2}.all(k, k == 1)")
