"""The one AdminClient factory of the sandbox: quiet (librdkafka's logs go nowhere), with the
sandbox's login settings."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any


def quiet_admin(bootstrap: str, settings: Mapping[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("kreplica.sandbox.client")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet, **settings}
    return AdminClient(config)
