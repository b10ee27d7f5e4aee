"""The README's two set-up commands stay true: .ci/run runs the README's test command verbatim."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("python3 -m venv .venv")]


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    readme = _commands((ROOT / "README.md").read_text())
    assert len(readme) == 2
    assert "genlab reproduce" in readme[0] and "pytest" in readme[1]
    assert _commands((ROOT / ".ci" / "run").read_text()) == [readme[1]]
