"""uids and timestamps drawn from the generator's seeded streams, so output is reproducible."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2024, 6, 3, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
