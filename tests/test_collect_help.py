"""``tracekit collect --help`` keeps its own copies of the runtime names and of which runtimes need two
warm-up runs (the command line is built without importing the collectors); they must say what the collectors
do."""

from __future__ import annotations

import argparse
import re

from tracekit.collectors.runtimes import MIN_WARMUP, RUNTIMES
from tracekit.commands.collect import RUNTIME_NAMES


def _help(flag: str) -> str:
    from tracekit.commands.collect import _run_options

    parser = argparse.ArgumentParser()
    _run_options(parser)
    return next(a.help or "" for a in parser._actions if flag in a.option_strings)


def test_the_command_line_offers_every_runtime_the_collectors_have() -> None:
    assert RUNTIME_NAMES == tuple(RUNTIMES)


def test_the_warmup_help_names_every_runtime_that_needs_two_warmup_runs() -> None:
    text = _help("--warmup")
    named = set(re.findall(r"[a-z]+(?:-[a-z]+)*", text.split("at least 2 for", 1)[1]))
    assert {r for r, least in MIN_WARMUP.items() if least >= 2} == named & set(RUNTIMES)
