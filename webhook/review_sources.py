"""Who may send reviews without a client certificate: anything but a tenant's pod.

A forged AdmissionReview comes from a pod that can reach the webhook's Service (issue 37 row 4). The API server never
does: it connects from the control plane's host network, from the provider's network, or through a tunnel agent
that runs in `kube-system` (GKE's and AKS's konnectivity). So a source address that the API server says is the IP of
a live pod on the pod network, in a namespace not listed as trusted, is a tenant's pod, and its reviews are refused
(403) before anything is decided or created. Everything else is answered as before, which is why this check cannot
break a cluster: a source it cannot attribute to a tenant pod (a node, a hostNetwork pod, the provider's range, an
address behind SNAT, an API error) keeps today's behaviour.

A source refused that way has its next connections reset at accept (webhook.connections), before any TLS work,
for as long as its refusal is remembered: a tenant pod sends nothing the webhook would answer, and each handshake
it starts costs the event loop that the API server's reviews wait on about a millisecond of CPU.

One lookup per source address and worker process (a field-selected list of pods, `status.podIP=<address>`, served
from the API server's watch cache), shared by the connections that wait for it, and remembered: an allowed source
for `allowed_seconds`, a refused one for `refused_seconds` (a pod IP may be handed to another pod after its pod
ends), an unchecked one (API error) for `unchecked_seconds`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["DEFAULT_TRUSTED_NAMESPACES", "PodLookup", "ReviewSources", "SourceVerdict"]

log = logging.getLogger("gpudra.webhook.review_sources")

# Where the API server's own tunnel agents run on managed clusters (konnectivity-agent on GKE and AKS).
DEFAULT_TRUSTED_NAMESPACES = ("kube-system",)
# Bounds the remembered verdicts: a flood from many addresses costs at most this many entries per process.
_MAX_REMEMBERED = 4096

PodLookup = Callable[[str], list[tuple[str, str]]]
"""An address -> (namespace, name) of each live pod on the pod network that holds it; raises on an API error."""


@dataclass(frozen=True, slots=True)
class SourceVerdict:
    allowed: bool
    reason: str
    checked: bool = True  # False: the lookup failed and the source was let through, as before this check


# Asked at every accept (webhook.connections): parsing the text with ipaddress took a quarter of a worker's CPU
# while tenant pods' connections were reset at accept (issue 37 row 10), so each text is parsed once.
@functools.lru_cache(maxsize=_MAX_REMEMBERED)
def canonical_address(source: str) -> str:
    """`::ffff:10.0.0.7` (a dual-stack listener's view of an IPv4 peer) -> `10.0.0.7`; other text unchanged."""
    try:
        address = ipaddress.ip_address(source)
    except ValueError:
        return source
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


class ReviewSources:
    """Verdicts on review sources, one API lookup per address at a time, remembered for a while."""

    def __init__(
        self,
        lookup: PodLookup,
        *,
        trusted_namespaces: Iterable[str] = DEFAULT_TRUSTED_NAMESPACES,
        lookup_seconds: float = 2.0,
        allowed_seconds: float = 300.0,
        refused_seconds: float = 30.0,
        unchecked_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self.trusted_namespaces = frozenset(trusted_namespaces)
        self._lookup_seconds = lookup_seconds
        self._seconds = {"allowed": allowed_seconds, "refused": refused_seconds, "unchecked": unchecked_seconds}
        self._clock = clock
        self._known: dict[str, tuple[float, SourceVerdict]] = {}
        self._pending: dict[str, asyncio.Task[SourceVerdict]] = {}
        self.counts = {"allowed": 0, "refused": 0, "unchecked": 0}

    def refused(self, source: str) -> bool:
        """Whether `source` is a tenant pod's address by a verdict still remembered (no lookup: a dict read)."""
        known = self._known.get(canonical_address(source))
        return known is not None and not known[1].allowed and known[0] > self._clock()

    async def verdict(self, source: str) -> SourceVerdict:
        address = canonical_address(source)
        known = self._known.get(address)
        if known is not None and known[0] > self._clock():
            return known[1]
        task = self._pending.get(address)
        if task is None:  # one lookup per address; a waiter that goes away does not cancel it for the others
            task = self._pending[address] = asyncio.get_running_loop().create_task(self._decide(address))
            task.add_done_callback(lambda _: self._pending.pop(address, None))
        return await asyncio.shield(task)

    async def _decide(self, address: str) -> SourceVerdict:
        try:
            pods = await asyncio.wait_for(asyncio.to_thread(self._lookup, address), self._lookup_seconds)
        except Exception as exc:  # the check must not become the outage it prevents: let it through, as before
            log.warning("could not look up which pod holds %s (%s: %s): its reviews are answered unchecked",
                        address, type(exc).__name__, exc)  # fmt: skip
            verdict = SourceVerdict(True, f"not checked: {type(exc).__name__}", checked=False)
            return self._remember(address, verdict, "unchecked")
        tenants = sorted(f"{namespace}/{name}" for namespace, name in pods if namespace not in self.trusted_namespaces)
        if tenants:
            shown = ", ".join(tenants[:3]) + (f" and {len(tenants) - 3} more" if len(tenants) > 3 else "")
            reason = (
                f"reviews are accepted only from the API server; {address} is the address of pod {shown}, and pods "
                f"outside {', '.join(sorted(self.trusted_namespaces)) or 'no namespace'} may not send them"
            )
            log.warning("review source %s refused: pod %s", address, shown)
            return self._remember(address, SourceVerdict(False, reason), "refused")
        return self._remember(address, SourceVerdict(True, "not a tenant pod's address"), "allowed")

    def _remember(self, address: str, verdict: SourceVerdict, kind: str) -> SourceVerdict:
        self.counts[kind] += 1
        if len(self._known) >= _MAX_REMEMBERED:
            now = self._clock()
            for key in [key for key, (until, _) in self._known.items() if until <= now]:
                del self._known[key]
            if len(self._known) >= _MAX_REMEMBERED:
                self._known.pop(next(iter(self._known)))
        self._known[address] = (self._clock() + self._seconds[kind], verdict)
        return verdict
