"""Score weights: how much each criterion counts, as the admin tunes them in YAML.

```yaml
weights:
  affinity: 3     # GPU-NIC PCIe pairing quality
  rate: 1         # link rate of the rails the pod would use
  binpack: 2      # fill nodes, keep whole nodes free for 8-GPU pods
  locality: 1     # gang members close together; other pods away from a waiting gang
```

The fields of `Weights` are the criteria: each has its scorer in the module of the same name
under extender/scores/, and every list of criteria is derived from them (`CRITERIA`).
"""

from __future__ import annotations

from typing import Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kube_rdma.core.config_file import ConfigError


class Weights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    affinity: float = Field(default=3.0, ge=0)
    rate: float = Field(default=1.0, ge=0)
    binpack: float = Field(default=2.0, ge=0)
    locality: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> Self:
        if not any(self.as_dict().values()):
            raise ValueError("at least one weight must be above 0")
        return self

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in type(self).model_fields}


CRITERIA: tuple[str, ...] = tuple(Weights.model_fields)
"""The scoring criteria, in the order explain shows them."""


class WeightsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: Weights = Weights()


DEFAULT = Weights()


def parse_weights(text: str, source: str) -> Weights:
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as e:
        raise ConfigError(f"{source}: not valid YAML: {e}") from e
    if data is None:
        return DEFAULT
    try:
        return WeightsFile.model_validate(data).weights
    except ValidationError as e:
        problems = []
        for item in e.errors():
            where = ".".join(str(p) for p in item["loc"])
            message = item["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
        raise ConfigError(f"{source}: {'; '.join(problems)}") from e
