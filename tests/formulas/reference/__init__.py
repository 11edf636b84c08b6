"""The reference suite (truth.md 1, 5): every operator formula checked against an independent count.

One test module per formula family (``test_ref_<family>.py``); the reference implementations and the
trivial counter they run under live here, beside the tests, never in the library.
"""
