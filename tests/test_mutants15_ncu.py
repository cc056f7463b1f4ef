"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of the Nsight Compute CSV reader's
round-14 code (:mod:`tracekit.readers.ncu`): kernel rows whose ID does not read, CSVs of another separator
(:func:`_is_header`, :func:`_other_separator`) and polars' refusals in one line (:func:`_csv_problem`).

Every CSV is SYNTHETIC, hand-built in pytest's temporary folder and named ``*.synthetic.ncu.csv``; the expected
numbers and texts are exact."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracekit.errors import TraceFormatError
from tracekit.readers.ncu import _csv_problem, _is_header, _other_separator, read

HEAD = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']
FIVE = [f'"{i}","7","k{i}","{10 * (i + 1)}"' for i in range(5)]  # 10, 20, 30, 40, 50 us


def _file(tmp_path: Path, rows: list[str], head: list[str] = HEAD, name: str = "k") -> Path:
    path = tmp_path / f"{name}.synthetic.ncu.csv"
    path.write_text("\n".join([*head, *rows]) + "\n")
    return path


def _said(trace, word: str) -> list[str]:  # noqa: ANN001
    return [w for w in trace.meta["warnings"] if word in w]


def test_damaged_ids_are_counted_once_per_row_and_named_first(tmp_path: Path) -> None:
    """Rows 'x'/k1 (twice, as the same row written again) and '3a'/k3: 2 damaged rows, the first named; 3
    kernels left, 10 + 30 + 50 µs."""
    rows = list(FIVE)
    rows[1] = '"x","7","k1","20"'
    rows[3] = '"3a","7","k3","40"'
    rows.insert(2, '"x","7","k1","20"')
    trace = read(_file(tmp_path, rows))
    assert trace.ops.height == 3
    assert trace.ops.select((pl.col("end") - pl.col("start")).sum()).item() == 90_000
    assert _said(trace, "no readable ID") == [
        "2 row(s) of the CSV table name a kernel but have no readable ID (first: 'x', kernel 'k1'): ncu writes "
        "every kernel's ID, so the row is damaged and is left out: GPU busy time and the kernel count miss it"
    ]


def test_a_damaged_row_s_kernel_name_is_cut_to_80_characters(tmp_path: Path) -> None:
    name = "void gemm_kernel<" + "a" * 100 + ">"
    rows = list(FIVE)
    rows[0] = f'" 9x ","7","  {name}  ","10"'
    trace = read(_file(tmp_path, rows))
    assert _said(trace, "no readable ID")[0].startswith(
        f"1 row(s) of the CSV table name a kernel but have no readable ID (first: '9x', kernel {name[:80]!r}): "
    )


def test_a_units_row_is_no_damaged_row(tmp_path: Path) -> None:
    trace = read(_file(tmp_path, FIVE))
    assert trace.ops.height == 5
    assert not _said(trace, "no readable ID")


@pytest.mark.parametrize(
    ("line", "header", "other"),
    [
        ('"ID","Kernel Name"', True, None),
        ("ID,Kernel Name", True, None),
        ('"ID";"Kernel Name"', True, "';'"),
        ("ID;Kernel Name", True, "';'"),
        ('"ID"\t"Kernel Name"', True, "a tab"),
        ("ID\tKernel Name", True, "a tab"),
        ("ID Kernel Name", False, None),
        ("IDX,Kernel Name", False, None),
    ],
)
def test_header_and_separator(line: str, header: bool, other: str | None) -> None:
    assert _is_header(line) is header
    if header:
        assert _other_separator(line) == other


def test_polars_message_is_given_by_its_core_or_first_line() -> None:
    """A well-quoted table that polars refused: its message's quoted core, else its first line, with runs of
    spaces made one; no message at all, the exception's type."""
    text = '"ID","Kernel Name"\n"1","k"\n'
    core = pl.exceptions.ComputeError("could not parse\nOriginal error: ```bad   value\n in row 3```\nadvice")
    assert _csv_problem(core, text) == "bad value in row 3"
    first = pl.exceptions.ComputeError("found more fields than defined in 'Schema'\n\nConsider setting ...")
    assert _csv_problem(first, text) == "found more fields than defined in 'Schema'"
    assert _csv_problem(pl.exceptions.NoDataError(""), text) == "NoDataError"


def test_an_open_quote_is_named_by_its_row() -> None:
    text = '"ID","Kernel Name"\n"1","k"\n"2","k2\n'
    assert _csv_problem(pl.exceptions.ComputeError("x"), text) == (
        "row 3 of the CSV table: unexpected end of data: a quoted field does not close (the file cut short, "
        "or a quote inside a field not doubled)"
    )


def test_a_csv_of_semicolons_is_refused_in_one_line(tmp_path: Path) -> None:
    head = ["ID;Process ID;Kernel Name;gpu__time_duration.sum", ";;;usecond"]
    path = _file(tmp_path, ["0;7;k0;1,5"], head=head, name="semi")
    with pytest.raises(TraceFormatError) as err:
        read(path)
    assert str(err.value).endswith(
        "an ncu CSV whose fields are separated by ';', not ',' (re-saved by a spreadsheet, perhaps in a locale "
        "that writes decimal commas): export it again with ncu --csv"
    )
