"""The DRA CEL environment's tests, case by case: `testcases` of
k8s.io/dynamic-resource-allocation cel/compile_test.go (TestCEL), translated from v0.34.9
(commit bf5dd065dee3baa9819013d591805cc78dd7be00) and checked against release-1.35,
release-1.36 and master (cel_names.json, written by `python -m testbed.upstream_dra --file
cel/compile_test.go --write-names ...`). Each case is an expression, a device, and what
Kubernetes does: MATCH or NO_MATCH, COMPILE (the expression does not compile) or EVALUATE
(it fails to evaluate on the device). The expected cost of each is not checked: kube-rdma
does not estimate CEL costs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.kube_rdma.core.dra.upstream.builders import LeftOut

MATCH, NO_MATCH, COMPILE, EVALUATE = "match", "no match", "compile error", "evaluation error"
DRIVER = "dra.example.com"


@dataclass(frozen=True)
class CelCase:
    name: str
    expression: str
    expect: str
    driver: str = ""
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """As upstream writes them: unqualified names are the driver's."""
    capacity: dict[str, str] = field(default_factory=dict)


def _on(
    case: str, expression: str, expect: str = MATCH, /, **attributes: dict[str, Any]
) -> CelCase:
    """A case on a device of DRIVER with the attributes given by name."""
    return CelCase(case, expression, expect, DRIVER, dict(attributes))


ATTRIBUTE = f'device.attributes["{DRIVER}"]'
CAPACITY = f'device.capacity["{DRIVER}"]'
ALL = f"""
{CAPACITY}.quantity.isGreaterThan(quantity("1Ki")) &&
{ATTRIBUTE}.bool &&
{ATTRIBUTE}.int > 0 &&
{ATTRIBUTE}.string == "fish" &&
{ATTRIBUTE}.version.isGreaterThan(semver("0.0.1")) &&
{CAPACITY}["quantity"].isGreaterThan(quantity("1Ki")) &&
{ATTRIBUTE}["bool"] &&
{ATTRIBUTE}["int"] > 0 &&
{ATTRIBUTE}["string"] == "fish" &&
{ATTRIBUTE}["version"].isGreaterThan(semver("0.0.1"))
"""
_TYPES = "list-typed attributes (DRAListTypeAttributes, alpha in 1.36)"
_MULTIPLE = "consumable capacity: device.allowMultipleAllocations (DRAConsumableCapacity)"

_CASES: list[CelCase | LeftOut] = [
    CelCase("true", "true", MATCH),
    CelCase("false", "false", NO_MATCH),
    CelCase("syntax-error", "?!", COMPILE),
    LeftOut("type-error", "type checking: `1` fails to evaluate here, to compile upstream"),
    CelCase(
        "runtime-error-lookup-identifier",
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        EVALUATE,
    ),
    CelCase(
        "runtime-error-lookup-map",
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        EVALUATE,
    ),
    CelCase("domain-check-negative", '"no-such-domain" in device.attributes', NO_MATCH),
    CelCase(
        "domain-check-positive",
        f'"{DRIVER}" in device.attributes',
        MATCH,
        attributes={f"{DRIVER}/something": {"bool": True}},
    ),
    CelCase("empty-driver-name", 'device.driver == ""', MATCH),
    _on("real-driver-name", f'device.driver == "{DRIVER}"'),
    _on("driver-name-qualifier", f"{ATTRIBUTE}.name", name={"bool": True}),
    _on("driver-name-qualifier-map-lookup", f'{ATTRIBUTE}["name"]', name={"bool": True}),
    _on("bind", f"cel.bind(dra, {ATTRIBUTE}, dra.name)", name={"bool": True}),
    CelCase(
        "qualified-attribute-name",
        'device.attributes["other.example.com"].name',
        MATCH,
        DRIVER,
        {"other.example.com/name": {"bool": True}},
    ),
    _on("bool", f"{ATTRIBUTE}.name", name={"bool": True}),
    _on("int", f"{ATTRIBUTE}.name > 0", name={"int": 1}),
    _on("string", f'{ATTRIBUTE}.name == "fish"', name={"string": "fish"}),
    _on("macro-exists-on-int", f"{ATTRIBUTE}.name.exists(x, x > 0)", EVALUATE, name={"int": 1}),
    _on(
        "macro-exists-on-bool",
        f"{ATTRIBUTE}.name.exists(x, x == true)",
        EVALUATE,
        name={"bool": True},
    ),
    _on(
        "macro-exists-on-string",
        f'{ATTRIBUTE}.name.exists(x, x == "fish")',
        EVALUATE,
        name={"string": "fish"},
    ),
    LeftOut("attribute-access-causes-match-error", _TYPES),
    LeftOut("list-result-type-causes-match-error", _TYPES),
    _on(
        "version",
        f'{ATTRIBUTE}.name.isGreaterThan(semver("0.0.1"))',
        name={"version": "1.0.0"},
    ),
    _on(
        "version_v",
        f'{ATTRIBUTE}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        name={"version": "1.0.0"},
    ),
    _on(
        "macro-exists-on-version",
        f'{ATTRIBUTE}.name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        EVALUATE,
        name={"version": "1.0.0"},
    ),
    CelCase(
        "quantity",
        f'{CAPACITY}.name.isGreaterThan(quantity("1Ki"))',
        MATCH,
        DRIVER,
        capacity={"name": "1Mi"},
    ),
    CelCase(
        "check-positive",
        f'"name" in {CAPACITY} && {CAPACITY}.name.isGreaterThan(quantity("1Ki"))',
        MATCH,
        DRIVER,
        capacity={"name": "1Mi"},
    ),
    CelCase(
        "check-negative",
        f'!("name" in {CAPACITY}) || {CAPACITY}.name.isGreaterThan(quantity("1Ki"))',
        MATCH,
    ),
    CelCase(
        "all",
        ALL,
        MATCH,
        DRIVER,
        {
            "bool": {"bool": True},
            "int": {"int": 1},
            "string": {"string": "fish"},
            "version": {"version": "1.0.0"},
        },
        {"quantity": "1Mi"},
    ),
    _on(
        "many",
        f"{ATTRIBUTE}.a && {ATTRIBUTE}.b && {ATTRIBUTE}.c",
        a={"bool": True},
        b={"bool": True},
        c={"bool": True},
    ),
    _on(
        "check_attribute_domains",
        f'device.attributes.exists_one(x, x == "{DRIVER}")',
        services={"string": "some_example_value"},
    ),
    _on(
        "check_attribute_ids",
        f'{ATTRIBUTE}.exists_one(x, x == "services")',
        services={"string": "some_example_value"},
    ),
    _on(
        "split_attribute",
        f'{ATTRIBUTE}.services.split("example").size() >= 2',
        services={"string": "some_example_value"},
    ),
    _on(
        "regexp_attribute",
        f'{ATTRIBUTE}.services.matches("[^a]?sym")',
        services={"string": "asymetric"},
    ),
    CelCase(
        "check_capacity_domains",
        f'device.capacity.exists_one(x, x == "{DRIVER}")',
        MATCH,
        DRIVER,
        capacity={"memory": "1Mi"},
    ),
    CelCase(
        "check_capacity_ids",
        f'{CAPACITY}.exists_one(x, x == "memory")',
        MATCH,
        DRIVER,
        capacity={"memory": "1Mi"},
    ),
    LeftOut("expensive", "CEL cost limit: kube-rdma does not count evaluation costs"),
    *(
        LeftOut(name, _MULTIPLE)
        for name in (
            "allow_multiple_allocations",
            "allow_multiple_allocations_default",
            "allow_multiple_allocations_false",
            "allow_multiple_allocations_new",
            "allow_multiple_allocations_enabled",
            "allow_multiple_allocations_disabled",
        )
    ),
]

_PREFIXES = ("list-of-", "macro-on-list-of-", "includes-function-", "in-operator-on-list")

CEL_CASES: dict[str, CelCase | LeftOut] = {c.name: c for c in _CASES}


def cel_case(name: str) -> CelCase | LeftOut | None:
    found = CEL_CASES.get(name)
    if found is None and name.startswith(_PREFIXES):
        return LeftOut(name, _TYPES)
    return found
