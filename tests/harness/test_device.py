"""--device on a study that does not move its models to a device: it runs on the CPU, says so, and records it."""

from __future__ import annotations

import json

from genlab.harness import runner


def test_a_cpu_only_study_ignores_the_device_loudly_and_records_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "check_device", lambda device: None)  # pretend this machine has CUDA
    res = runner.run_study("toy-mean", "smoke", root=tmp_path, device="cuda")
    env = json.loads((res.run_dir / "env.json").read_text())
    assert env["device"] == "cpu" and env["device_requested"] == "cuda"
    assert "toy-mean runs on the CPU only" in capsys.readouterr().err
