"""Progress on stderr: plain lines with counts and an ETA when piped, nothing when quiet."""

from genlab.harness.progress import PlainProgress, track


def test_piped_progress_prints_counts_and_eta(capsys):
    assert list(track(range(4), desc="seeds")) == [0, 1, 2, 3]
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("seeds 4/4, ETA 0 s")  # the last line always comes; earlier ones every 5 s


def test_quiet_progress_is_silent_and_unknown_totals_count_up(capsys):
    assert list(track(iter(range(3)), desc="x", quiet=True)) == [0, 1, 2]
    assert capsys.readouterr().err == ""
    plain = PlainProgress("solved", "instances", every=0.0)
    plain(3, None)
    plain(2, 4)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("solved 3 instances, ") and lines[1].startswith("solved 2/4 instances, ETA ")
