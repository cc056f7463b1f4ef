"""Which of two identical chosen ranges is the iteration must not depend on the rows' order (nsys 2025.6+
writes rows in any order; test_diff11_formats' shuffle found it: the same synthetic workload read 4
iterations in one order and 3, numbered from 2, in another). Hand-built rows (synthetic), times in µs."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.analyzers.ranges import _left_out

MAIN = [(100, 100, 135, 206), (100, 100, 218, 329), (100, 100, 345, 560), (100, 100, 579, 662)]
WORKER_COPY = (
    100,
    103,
    135,
    206,
)  # a second thread's range over the same interval as the main thread's first


def _rows(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["pid", "thread", "start", "end"], orient="row").with_columns(
        pl.lit("iteration").alias("name")
    )


@pytest.mark.parametrize("position", [0, 1, 4])
def test_the_worker_threads_copy_is_left_out_wherever_its_row_lies(position: int) -> None:
    rows = list(MAIN)
    rows.insert(position, WORKER_COPY)
    frame = _rows(rows)
    left_out = frame.filter(_left_out(frame))
    assert left_out.select("thread", "start", "end").rows() == [(103, 135, 206)]
