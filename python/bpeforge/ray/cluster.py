"""Connecting to a Ray cluster, or starting a local one, with errors that name the address."""

from __future__ import annotations

import logging
import socket

try:
    import ray
except ImportError:  # pragma: no cover - exercised only without the extra
    raise ImportError("bpeforge.ray needs Ray: pip install 'bpeforge[ray]'") from None

# How long to wait for a cluster's address to answer. Ray itself retries for
# a minute or more before it gives up on an address that does not answer.
CONNECT_TIMEOUT_S = 10.0
LOCAL = "local"


class ClusterUnreachable(ConnectionError):
    """The Ray cluster at the given address did not answer."""


def connect(address: str | None = LOCAL, *, num_cpus: int | None = None) -> None:
    """Join the cluster at `address` ("auto": the one `ray start` runs here;
    "host:port": a head node's GCS; "ray://host:port": Ray Client), or start a
    local one for `None`/"local". A cluster this process already joined is used as is."""
    if ray.is_initialized():
        return
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address in (None, LOCAL):
        ray.init(num_cpus=num_cpus, include_dashboard=False, **quiet)
        return
    if address != "auto":
        _check_reachable(address)
    _send_auth_token()
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, TimeoutError) as err:
        raise ClusterUnreachable(f"cannot join the Ray cluster at {address}: {err}") from err


def _send_auth_token() -> None:
    """Send this machine's Ray token when joining a cluster by address.

    Since Ray 2.59, `ray start --head` turns token authentication on when a
    token file exists (~/.ray/auth_token, which any local `ray.init()`
    writes), but `ray.init(address=...)` does not send it, so joining fails
    with InvalidAuthToken (ray-project/ray#64755, review). Ray's own helper
    turns token mode on for this process when a token exists and
    RAY_AUTH_MODE is unset; a cluster without authentication ignores it.
    Older Rays have neither the helper nor the problem.
    """
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _check_reachable(address: str) -> None:
    """Fail within `CONNECT_TIMEOUT_S` if nothing listens at `address`."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        raise ClusterUnreachable(
            f"no Ray cluster answers at {address} ({err}); start one with `ray start --head` "
            f"and pass the address it prints, or leave --ray without an address for a local cluster"
        ) from None


def _host_port(address: str) -> tuple[str, int]:
    bare = address.removeprefix("ray://")
    host, sep, port = bare.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"Ray address {address!r} is not host:port (or 'auto', or 'ray://host:port')")
    return host.strip("[]"), int(port)
