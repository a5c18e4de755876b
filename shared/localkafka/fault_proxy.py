"""A network between Strait and a local cluster that tests control: Toxiproxy, built from Go modules, per broker.

Users run Strait between regions: round trips of 30-150 ms, capped bandwidth, connections reset by load balancers,
links that answer nothing for minutes. A cluster started with a `FaultProxy` gives every broker a second listener
whose advertised address is a Toxiproxy port, so every connection a client makes after bootstrap goes through the
proxy too; the brokers' own traffic (replication, the controller) stays direct. `NetworkPath` puts the same fault on
every broker's link: latency, a bandwidth cap, resets, a black hole, an outage; `heal` takes them all away.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from shared.localkafka.go_build import built_once
from shared.localkafka.jars import CACHE_DIR, HarnessError
from shared.localkafka.ports import free_port
from shared.localkafka.processes import die_with_parent

TOXIPROXY_VERSION = "2.5.0"  # the newest the Go module proxy serves here (v2.3.0 and v2.5.0 are listed)
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
UPSTREAM, DOWNSTREAM = "upstream", "downstream"  # client -> broker, broker -> client
BOTH = (UPSTREAM, DOWNSTREAM)
START_TIMEOUT_S = 15
RESET_WINDOW_S = 0.2


def toxiproxy_binary() -> Path:
    """Where the pinned Toxiproxy server is kept (built once per machine by `install_toxiproxy`)."""
    return CACHE_DIR / "bin" / f"toxiproxy-server-{TOXIPROXY_VERSION}"


def install_toxiproxy() -> Path:
    """Build the pinned Toxiproxy server from Go modules unless it is there (about 40 s, once)."""
    module = f"{TOXIPROXY_MODULE}@v{TOXIPROXY_VERSION}"
    return built_once(toxiproxy_binary(), f"Toxiproxy v{TOXIPROXY_VERSION}", ["install", module])


@dataclass(frozen=True)
class Toxic:
    """One fault on one direction of a link, as Toxiproxy names it (`type`, `attributes`)."""

    name: str
    type: str
    stream: str
    attributes: dict[str, int]

    def body(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": 1.0,  # every connection
            "attributes": self.attributes,
        }


class FaultProxy:
    """One Toxiproxy server on loopback; `link` makes a proxied path to one upstream port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.api_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}", timeout=10)

    def start(self) -> FaultProxy:
        """Start the server (building it first if this machine has none) and wait until its API answers."""
        binary = install_toxiproxy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / "toxiproxy.log").open("ab") as log:  # the server keeps its own descriptor
            self._process = subprocess.Popen(
                [str(binary), "-host", "127.0.0.1", "-port", str(self.api_port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # a killed test run leaves no proxy behind, as it leaves no broker
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if self._http.get("/version").status_code == 200:
                    return self
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise HarnessError(f"Toxiproxy did not start; see {self.workdir / 'toxiproxy.log'}")
            time.sleep(0.1)

    def link(self, name: str, listen_port: int, upstream_port: int) -> Link:
        """A proxied path: connections to 127.0.0.1:`listen_port` reach 127.0.0.1:`upstream_port`."""
        body = {"name": name, "listen": f"127.0.0.1:{listen_port}", "upstream": f"127.0.0.1:{upstream_port}"}
        self._call("POST", "/proxies", body)
        return Link(self, name)

    def stop(self) -> None:
        """Stop the server (every proxied connection closes); safe to call twice."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._http.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=body)
        if response.status_code >= 300:
            raise HarnessError(f"Toxiproxy {method} {path}: {response.status_code} {response.text.strip()}")
        return response.json() if response.content else None


class Link:
    """One proxied path (one broker's listener): its toxics and whether it passes anything at all."""

    def __init__(self, proxy: FaultProxy, name: str) -> None:
        self._proxy = proxy
        self.name = name

    def add(self, toxic: Toxic) -> None:
        self._proxy._call("POST", f"/proxies/{self.name}/toxics", toxic.body())

    def remove(self, toxic_name: str) -> None:
        self._proxy._call("DELETE", f"/proxies/{self.name}/toxics/{toxic_name}")

    def toxics(self) -> list[str]:
        return [toxic["name"] for toxic in self._proxy._call("GET", f"/proxies/{self.name}/toxics")]

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: open connections close and new ones are refused (a link that is down)."""
        self._proxy._call("POST", f"/proxies/{self.name}", {"enabled": enabled})


class NetworkPath:
    """The network between clients and every broker of one cluster; each fault applies to every broker's link."""

    def __init__(self, links: list[Link]) -> None:
        self.links = links

    def latency(self, round_trip_ms: int, jitter_ms: int = 0) -> None:
        """Add `round_trip_ms` to every round trip: half on the way in, half on the way out."""
        for stream in BOTH:
            self._add("latency", stream, {"latency": round_trip_ms // 2, "jitter": jitter_ms // 2})

    def bandwidth(self, kib_per_s: int, stream: str = DOWNSTREAM) -> None:
        """Cap one direction (default: broker -> client, what a fetch brings) at `kib_per_s` per connection."""
        self._add("bandwidth", stream, {"rate": kib_per_s})

    def reset_connections(self, window_s: float = RESET_WINDOW_S) -> None:
        """Reset (TCP RST) every connection that sends or receives anything within `window_s`, as a load
        balancer or a NAT table that drops its state does; connections opened afterwards pass again.

        (Toxiproxy's reset_peer toxic swallows what it sees before it resets: left on, nothing would pass at
        all, so it is on for a moment only.)"""
        for stream in BOTH:
            self._add("reset_peer", stream, {"timeout": 0})
        time.sleep(window_s)
        for link in self.links:
            for stream in BOTH:
                link.remove(f"reset_peer-{stream}")

    @contextlib.contextmanager
    def resets_every(self, period_s: float) -> Iterator[None]:
        """Reset the connections every `period_s` while the block runs (on a thread of its own)."""
        stop = threading.Event()

        def reset_until_stopped() -> None:
            while not stop.wait(period_s):
                self.reset_connections()

        thread = threading.Thread(target=reset_until_stopped, name="connection-resets", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=10)

    def black_hole(self) -> None:
        """Nothing passes and nothing closes: requests go unanswered until the clients' own timeouts."""
        for stream in BOTH:
            self._add("timeout", stream, {"timeout": 0})

    def down(self) -> None:
        """The link is gone: connections close and new ones are refused."""
        for link in self.links:
            link.set_enabled(False)

    def heal(self) -> None:
        """Take every fault away (the link is up again and passes everything at once)."""
        for link in self.links:
            for name in link.toxics():
                link.remove(name)
            link.set_enabled(True)

    def _add(self, kind: str, stream: str, attributes: dict[str, int]) -> None:
        for link in self.links:
            link.add(Toxic(f"{kind}-{stream}", kind, stream, attributes))
