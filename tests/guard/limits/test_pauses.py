"""429 pauses: capped, backed off without a header, and ended by one probe call."""

from __future__ import annotations

import pytest

from guard.limits.pauses import Gate, Pauses

NOW = 1000.0


def test_a_pause_asked_for_is_kept_but_capped_at_max_pause() -> None:
    pauses = Pauses(max_pause=5.0)
    assert pauses.rate_limited(NOW, 2.0) == 2.0
    assert pauses.gate(NOW + 1) == (Gate.SHUT, 1.0)
    fresh = Pauses(max_pause=5.0)
    assert fresh.rate_limited(NOW, 86400.0) == 5.0  # Retry-After: 86400 waits 5 s, then probes
    assert fresh.gate(NOW + 4.9)[0] is Gate.SHUT
    assert fresh.gate(NOW + 5.0)[0] is Gate.PROBE


def test_without_a_header_the_backoff_doubles_and_stays_capped() -> None:
    pauses = Pauses(backoff=1.0, max_pause=8.0)
    seen = [pauses.rate_limited(NOW + n, None, started=NOW + n) for n in range(6)]
    assert 0.5 <= seen[0] <= 1.5  # 1 s with jitter
    assert 1.0 <= seen[1] <= 3.0
    assert seen[4] == pytest.approx(8.0)  # 16 with jitter, capped
    assert max(seen) <= 8.0


def test_a_refill_time_bounds_the_backoff_and_paced_a_whole_second_retry_after() -> None:
    pauses = Pauses(backoff=1.0, max_pause=8.0)
    assert pauses.rate_limited(NOW, None, refill=0.02) == pytest.approx(0.02)
    # Paced, a Retry-After of whole seconds from a judge full again in 20 ms waits 20 ms.
    assert Pauses(paced=True).rate_limited(NOW, 1.0, refill=0.02) == pytest.approx(0.02)
    assert Pauses(paced=True).rate_limited(NOW, 2.0, refill=360.0) == 2.0  # tokens: 6 min
    # Unpaced, the whole wait: every call would go at once when it ends.
    assert Pauses().rate_limited(NOW, 1.0, refill=0.02) == 1.0


def test_429s_of_calls_sent_before_the_storm_do_not_lengthen_the_backoff() -> None:
    pauses = Pauses(backoff=1.0, max_pause=60.0)
    pauses.rate_limited(NOW, None, started=NOW - 1)
    for _ in range(50):  # the rest of a burst sent together, all answered 429
        pauses.rate_limited(NOW + 0.01, None, started=NOW - 1)
    assert pauses.strikes == 1


def test_after_a_pause_one_probe_goes_and_its_success_opens_the_gate() -> None:
    pauses = Pauses(max_pause=5.0)
    pauses.rate_limited(NOW, 1.0)
    assert pauses.gate(NOW + 1.0) == (Gate.PROBE, 0.0)
    pauses.probe_sent(NOW + 1.0)
    # No refusal was timed (the 429 came with no send time): the rest wait for the probe.
    assert pauses.gate(NOW + 1.1) == (Gate.SHUT, 0.0)
    pauses.succeeded(NOW + 1.0, probe=True)
    assert pauses.gate(NOW + 1.2) == (Gate.OPEN, 0.0)
    assert pauses.strikes == 0


def test_a_probe_that_gets_a_429_starts_a_new_pause() -> None:
    pauses = Pauses(backoff=1.0, max_pause=5.0)
    pauses.rate_limited(NOW, 1.0)
    pauses.probe_sent(NOW + 1.0)
    pauses.rate_limited(NOW + 1.0, 2.0, started=NOW + 1.0, probe=True)
    assert pauses.gate(NOW + 2.0) == (Gate.SHUT, 1.0)
    assert pauses.gate(NOW + 3.0)[0] is Gate.PROBE
    assert pauses.strikes == 2


def test_a_probe_that_fails_otherwise_lets_the_next_call_probe() -> None:
    pauses = Pauses()
    pauses.rate_limited(NOW, 0.5)
    pauses.probe_sent(NOW + 0.5)
    pauses.failed(probe=True)
    assert pauses.gate(NOW + 1)[0] is Gate.PROBE


def test_paced_a_probe_out_longer_than_a_refusal_takes_was_let_in() -> None:
    unpaced = Pauses()  # the rest would go as a herd: they wait for the probe's answer
    unpaced.rate_limited(NOW, 0.1, started=NOW - 0.004)
    unpaced.probe_sent(NOW + 0.1)
    assert unpaced.gate(NOW + 0.5) == (Gate.SHUT, 0.0)
    pauses = Pauses(paced=True)
    pauses.rate_limited(NOW, 0.1, started=NOW - 0.004)  # refused in 4 ms
    pauses.probe_sent(NOW + 0.1)
    gate, left = pauses.gate(NOW + 0.105)
    assert gate is Gate.SHUT
    assert left == pytest.approx(0.007)  # three refusal times after the probe went
    # No 429 came back for the probe: the judge let it in, so the rest follow while it
    # is being answered, and its answer still ends the storm.
    assert pauses.gate(NOW + 0.113) == (Gate.OPEN, 0.0)
    assert pauses.strikes == 1
    pauses.succeeded(NOW + 0.1, probe=True)
    assert pauses.strikes == 0


def test_paced_a_pause_shorter_than_a_refusal_ends_without_a_probe() -> None:
    unpaced = Pauses()  # every waiting call would go at once: the probe stays
    unpaced.rate_limited(NOW, 0.002, started=NOW - 0.004)
    assert unpaced.gate(NOW + 0.002) == (Gate.PROBE, 0.0)
    pauses = Pauses(paced=True)
    # The judge refused in 4 ms and said its budget is back in 2 ms.
    assert pauses.rate_limited(NOW, 1.0, refill=0.002, started=NOW - 0.004) == 0.002
    gate, left = pauses.gate(NOW + 0.001)
    assert gate is Gate.SHUT
    assert left == pytest.approx(0.001)
    assert pauses.gate(NOW + 0.002) == (Gate.OPEN, 0.0)  # every call, no probe first
    # A pause longer than a refusal still sends a probe first.
    pauses.rate_limited(NOW + 0.01, 0.5, started=NOW + 0.009)
    assert pauses.gate(NOW + 0.51) == (Gate.PROBE, 0.0)


def test_a_slow_refusal_makes_the_next_probe_wait_longer_and_fades() -> None:
    pauses = Pauses(paced=True)
    pauses.rate_limited(NOW, 0.1, started=NOW - 0.004)
    pauses.probe_sent(NOW + 0.1)
    pauses.rate_limited(NOW + 0.2, 0.1, started=NOW + 0.1, probe=True)  # refused in 0.1 s
    pauses.probe_sent(NOW + 0.3)
    assert pauses.gate(NOW + 0.5)[0] is Gate.SHUT  # 0.2 s out: not yet three refusals
    assert pauses.gate(NOW + 0.6)[0] is Gate.OPEN
    for n in range(1, 11):  # quick refusals again: the slow one fades from the estimate
        pauses.rate_limited(NOW + n, 0.0, started=NOW + n - 0.004)
    assert pauses.refusal is not None
    assert pauses.refusal < 0.02


def test_an_answer_to_a_call_sent_before_the_429_does_not_end_the_storm() -> None:
    pauses = Pauses()
    pauses.rate_limited(NOW, 3.0)
    pauses.succeeded(NOW - 0.5)  # sent before the 429: says nothing about now
    assert pauses.gate(NOW + 1)[0] is Gate.SHUT


def test_an_ended_storm_is_forgotten_by_the_next_success() -> None:
    pauses = Pauses(backoff=1.0, max_pause=30.0)
    for n in range(4):
        pauses.rate_limited(NOW + n, None, started=NOW + n)
    pauses.succeeded(NOW + 10, probe=True)
    assert pauses.gate(NOW + 10) == (Gate.OPEN, 0.0)
    assert pauses.rate_limited(NOW + 11, None, started=NOW + 11) <= 1.5  # a first 429 again


@pytest.mark.parametrize(("backoff", "max_pause"), [(0.0, 5.0), (0.5, -1.0)])
def test_bad_settings_are_refused(backoff: float, max_pause: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        Pauses(backoff=backoff, max_pause=max_pause)
