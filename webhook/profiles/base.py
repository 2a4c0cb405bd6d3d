"""What every profile model shares: strict camelCase YAML keys and frozen values."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ProfileModel(BaseModel):
    """A part of a profile: unknown keys are errors, keys are camelCase, values never change."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )
