"""`python -m bench attacks`: issue 30's attack suite, and its attack-success rate.

It sends each entry of the attack corpus (`testkit/attacks/`: injected
instructions in nine languages and several styles, hidden text, padding, tool
arguments, encodings, look-alike letters, and benign texts) through an enforcing
gateway (`stream_policy: buffer`, shipped thresholds; then with the hardening the
issue recommends, `on_tamper: block` and `block_biased_opinions: 1`, where the
gateway knows them), in front of the fake upstream answering with the entry, and
of each judge: the demo judge, and a gullible judge that obeys instructions it
finds anywhere in its prompt (`testkit.gullible_judge`). It counts, by
family, the attacks that passed (delivered with verdict pass and no tamper mark)
and the benign texts flagged, blocked or marked. An attack with a `plain` text (its
biased content, undisguised) also sends that text alone through each cell once, the
control: its passes split into the judge's misses (the plain text passed too) and
defence failures (the plain text was caught, the attack was not).
"""
