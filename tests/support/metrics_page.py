"""Read one sample from a running service's Prometheus /metrics page."""

from __future__ import annotations

import httpx


def metric(port: int, name: str, **labels: str) -> float:
    """The value of the first sample of `name` whose labels include `labels`; 0 when there is none yet (or the
    service does not serve its page yet)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    except httpx.TransportError:
        return 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
