"""Mutants of ``tracekit/inputs.py``'s ``profiler_name`` (53d867c) that tests/test_metadata_evidence.py let
live: each spelling a source gives, in collect's words."""

from __future__ import annotations

from tracekit.inputs import profiler_name


def test_each_readers_format_is_collects_profiler_word() -> None:
    assert profiler_name("kineto") == "torch"
    assert profiler_name("nsys-sqlite") == "nsys"
    assert profiler_name("ncu-rep") == "ncu"


def test_a_word_not_a_readers_format_is_kept_as_given() -> None:
    assert profiler_name("torch") == "torch"
    assert profiler_name("rocprof") == "rocprof"


def test_no_word_is_no_profiler() -> None:
    assert profiler_name(None) is None
    assert profiler_name("") is None
