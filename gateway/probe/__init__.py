"""The live probe: served requests replayed about other groups (`live`), within caps
(`caps`); its pairs are stored by `gateway.store.probes`."""

from gateway.probe.caps import DropReason, ReplayCaps
from gateway.probe.live import LiveProbe, Replay, ReplayAnswer

__all__ = ["DropReason", "LiveProbe", "Replay", "ReplayAnswer", "ReplayCaps"]
