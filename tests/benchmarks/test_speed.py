"""benchmarks/speed.py: rates from compiled steps only."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import speed  # noqa: E402


def test_the_timed_runs_follow_a_compiling_run():
    # wall times of three runs: the first compiles (10 s); the timed ones reuse it
    walls = iter([10.0, 1.0, 3.0])
    lengths = []

    def train(steps):
        lengths.append(steps)
        return next(walls)

    rate = speed._rate(train, warmup=100, steps=4000)
    assert lengths == [100, 100, 4100]
    assert rate["steps_per_second"] == 2000.0
    assert (rate["short_wall_s"], rate["long_wall_s"]) == (1.0, 3.0)


def test_setup_time_prints_a_line_per_replica_count(capsys):
    import setup_time

    assert setup_time.main(["2", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["R=2", "R=3"]
    assert all(float(line.split()[1]) > 0 for line in lines)
