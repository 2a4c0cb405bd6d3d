"""kubectl's loading rules: --kubeconfig, else $KUBECONFIG (merged), else ~/.kube/config, else
in-cluster; --context, the context's namespace; a server never looks past its flag."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from kubernetes_asyncio import client, config

from kube_rdma.kube import kubeconfig
from kube_rdma.kube.kubeconfig import KubeconfigError, Loaded, add_cluster_flags, load_config
from kube_rdma_cli.cli_errors import explain_error


def document(current: str | None, *contexts: tuple[str, str | None]) -> dict[str, object]:
    """A kubeconfig whose context NAME reaches https://NAME.example:6443 in `namespace`."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": f"https://{name}.example:6443"}}
            for name, _ in contexts
        ],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [
            {
                "name": name,
                "context": {
                    "cluster": name,
                    "user": "me",
                    **({"namespace": namespace} if namespace else {}),
                },
            }
            for name, namespace in contexts
        ],
        **({"current-context": current} if current else {}),
    }


def write(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))
    return path


def host() -> str:
    return str(client.Configuration.get_default_copy().host)


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No KUBECONFIG, an empty HOME, not in a pod; the default client restored afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    saved = client.Configuration.get_default_copy()
    yield home
    client.Configuration.set_default(saved)


async def test_home_config_is_used_without_flag_or_variable(environment: Path) -> None:
    path = write(environment / ".kube" / "config", document("kind-gpu", ("kind-gpu", None)))
    used = await load_config(None)
    assert used == Loaded(f"kubeconfig {path}, context kind-gpu", "default", "kind-gpu")
    assert str(used) == f"kubeconfig {path}, context kind-gpu"
    assert host() == "https://kind-gpu.example:6443"


async def test_kubeconfig_variable_wins_over_home_and_lists_are_merged(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(environment / ".kube" / "config", document("home", ("home", None)))
    first = write(tmp_path / "a", document("a", ("a", "ml-training")))
    second = write(tmp_path / "b", document("b", ("a", "other"), ("b", None)))
    listed = f"{tmp_path / 'missing'}:{first}:{second}"
    monkeypatch.setenv("KUBECONFIG", listed)
    used = await load_config(None)
    # As kubectl merges: the first file to set current-context or name a context wins.
    assert used == Loaded(
        f"kubeconfig {first}, {second} (merged, from KUBECONFIG), context a", "ml-training", "a"
    )
    assert host() == "https://a.example:6443"
    assert (await load_config(None, "b")).namespace == "default"
    assert host() == "https://b.example:6443"
    monkeypatch.setenv("KUBECONFIG", str(second))
    assert str(await load_config(None)) == f"kubeconfig {second} (from KUBECONFIG), context b"


async def test_the_flag_wins_over_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write(tmp_path / "env", document("e", ("e", None)))))
    flag = write(tmp_path / "flag", document("f", ("f", "team-a"), ("g", None)))
    assert await load_config(flag) == Loaded(f"kubeconfig {flag}, context f", "team-a", "f")
    assert await load_config(flag, "g") == Loaded(f"kubeconfig {flag}, context g", "default", "g")


async def test_an_unknown_context_names_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path / "config", document("kind-gpu", ("kind-gpu", None), ("prod", None)))
    with pytest.raises(KubeconfigError) as raised:
        await load_config(path, "staging")
    assert explain_error(raised.value) == (
        f"{path} has no context 'staging' (--context); known: kind-gpu, prod",
        2,
    )
    stale = write(tmp_path / "stale", document("gone", ("kind-gpu", None)))
    with pytest.raises(KubeconfigError, match="has no context 'gone' \\(its current-context\\)"):
        await load_config(stale)


async def test_a_kubeconfig_without_current_context_asks_for_one(tmp_path: Path) -> None:
    path = write(tmp_path / "config", document(None, ("kind-gpu", None)))
    with pytest.raises(KubeconfigError) as raised:
        await load_config(path)
    assert str(raised.value) == (
        f"{path} sets no current-context: give --context NAME (known: kind-gpu), or run "
        "kubectl config use-context NAME"
    )
    assert str(await load_config(path, "kind-gpu")) == f"kubeconfig {path}, context kind-gpu"


async def test_a_kubeconfig_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "config", {**document("a", ("a", None)), "users": 5})
    with pytest.raises(config.ConfigException, match="is not a kubeconfig"):
        await load_config(path)
    write(path, {"hello": "world"})
    with pytest.raises(
        config.ConfigException, match=r"is not a kubeconfig .*: it names no context"
    ):
        await load_config(path)
    write(path, {**document("a", ("a", None)), "contexts": "a"})
    with pytest.raises(KubeconfigError, match="contexts is not a list"):
        await load_config(path)
    with pytest.raises(FileNotFoundError):
        await load_config(tmp_path / "absent")


async def test_nothing_found_says_what_was_looked_for(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(config.ConfigException) as raised:
        await load_config(None)
    message, status = explain_error(raised.value)
    assert status == 2
    assert message.startswith(
        "no usable Kubernetes configuration (Service host/port is not set. No kubeconfig "
        f"either: KUBECONFIG is not set and there is no {environment / '.kube' / 'config'})"
    )
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone"))
    with pytest.raises(config.ConfigException, match="names no file that exists"):
        await load_config(None)
    with pytest.raises(KubeconfigError) as context_error:
        await load_config(None, "kind-gpu")
    assert str(context_error.value) == (
        f"--context kind-gpu names a kubeconfig context, but no kubeconfig is used "
        f"(KUBECONFIG={tmp_path / 'gone'} names no file that exists): give --kubeconfig FILE"
    )


async def test_in_cluster_last_with_the_service_account_namespace(
    environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(config, "load_incluster_config", lambda: calls.append("in-cluster"))
    namespace = tmp_path / "namespace"
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT_NAMESPACE", namespace)
    assert await load_config(None) == Loaded("in-cluster ServiceAccount", "default")
    namespace.write_text("kube-rdma\n")
    assert await load_config(None) == Loaded("in-cluster ServiceAccount", "kube-rdma")
    # A server without --kubeconfig stays in-cluster, whatever a developer's HOME holds.
    write(environment / ".kube" / "config", document("home", ("home", None)))
    assert str(await load_config(None, server=True)) == "in-cluster ServiceAccount"
    assert str(await load_config(None)) == (
        f"kubeconfig {environment / '.kube' / 'config'}, context home"
    )
    assert calls == ["in-cluster"] * 3


async def test_a_server_outside_a_cluster_gets_the_library_error() -> None:
    with pytest.raises(config.ConfigException) as raised:
        await load_config(None, server=True)
    assert str(raised.value) == "Service host/port is not set."


def test_the_flags() -> None:
    parser = argparse.ArgumentParser()
    add_cluster_flags(parser)
    args = parser.parse_args(["-n", "ml-training", "--context", "c", "--kubeconfig", "k"])
    assert (args.namespace, args.context, args.kubeconfig) == ("ml-training", "c", Path("k"))
    assert parser.parse_args([]).namespace is None
    bare = argparse.ArgumentParser()
    add_cluster_flags(bare, namespace=False)
    assert not hasattr(bare.parse_args([]), "namespace")
