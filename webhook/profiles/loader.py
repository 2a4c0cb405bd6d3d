"""Profile files: named profiles and the default one, parsed and validated from YAML."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Self

import yaml
from pydantic import ValidationError, model_validator

from kube_rdma.core.config_file import ConfigError, read_text
from webhook.profiles.base import ProfileModel
from webhook.profiles.profile import Profile

DEFAULT_PROFILE = "default"
_PROFILE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class ProfileSet(ProfileModel):
    default_profile: str = DEFAULT_PROFILE
    profiles: dict[str, Profile]

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in self.profiles:
            if not _PROFILE_NAME.match(name):
                raise ValueError(f"profile name {name!r} must be lowercase letters, digits, - or .")
        if self.default_profile not in self.profiles:
            raise ValueError(
                f"defaultProfile {self.default_profile!r} is not one of the profiles "
                f"({', '.join(sorted(self.profiles)) or 'none'}); add it or change defaultProfile"
            )
        return self

    @property
    def default(self) -> Profile:
        return self.profiles[self.default_profile]

    def load_warnings(self) -> dict[str, tuple[str, ...]]:
        """Each profile's load-time warnings, for the profiles that have any."""
        return {n: p.load_warnings for n, p in sorted(self.profiles.items()) if p.load_warnings}


BUILTIN = ProfileSet(profiles={DEFAULT_PROFILE: Profile()})


class ProfileError(ConfigError):
    """A profile file that cannot be used; the message says where and why."""


def parse_profiles(text: str, source: str) -> ProfileSet:
    """Parse and validate a profile file's text; `source` names it in error messages."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ProfileError(f"{source}: not valid YAML: {e}") from e
    except RecursionError as e:
        raise ProfileError(f"{source}: not valid YAML: nested too deeply") from e
    if data is None:
        raise ProfileError(
            f"{source}: the file is empty; it should hold a mapping with `profiles:`, each "
            "profile's name with its settings (`profiles: {default: {}}` is the built-in one), "
            "and optionally `defaultProfile:`"
        )
    if not isinstance(data, dict):
        raise ProfileError(
            f"{source}: expected a mapping with `profiles:`, got {_yaml_kind(data)}; write "
            "`profiles:` then each profile's name with its settings"
        )
    try:
        return ProfileSet.model_validate(data)
    except ValidationError as e:
        raise ProfileError(f"{source}: {_describe(e)}") from e


def _yaml_kind(data: object) -> str:
    if isinstance(data, list):
        return "a list"
    if isinstance(data, str):
        return f"the text {data[:40]!r}"
    return f"the value {data!r}"


def load_profiles(path: Path) -> ProfileSet:
    return parse_profiles(read_text(path), str(path))


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
