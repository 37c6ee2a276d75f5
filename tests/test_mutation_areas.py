"""The per-area mutation configuration (``[tool.mutmut_areas]``, tools/mutation_score.py --area)
cannot rot: it parses, every file it names exists, and an area's scratch settings say what it
mutates and which tests run. No mutmut run here (that takes minutes)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("mutation_score", ROOT / "tools" / "mutation_score.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
AREAS = SCRIPT.areas()


def test_the_issue_areas_are_configured() -> None:
    assert {"host", "relay", "conversations", "carried", "approvals", "evals", "tapes"} <= set(AREAS)


@pytest.mark.parametrize("name", sorted(AREAS))
def test_every_listed_file_exists_and_tests_need_no_cli(name: str) -> None:
    area = AREAS[name]
    for path in area["only_mutate"]:
        assert path.startswith("claude_sdkurl/") and path.endswith(".py"), path
        assert (ROOT / path).is_file(), f"area {name}: {path} does not exist"
    for path in area["tests"]:
        assert (ROOT / path).is_file(), f"area {name}: {path} does not exist"
        assert "realcli" not in path, f"area {name}: {path} drives a real CLI"
    for test_id in area.get("deselect", []):
        assert (ROOT / test_id.split("::")[0]).is_file(), test_id
    equivalent = SCRIPT.equivalent_file(name)
    modules = {p[:-3].replace("/", ".") for p in area["only_mutate"]}
    for mutant in SCRIPT.equivalents(equivalent):
        assert mutant.rsplit(".", 1)[0] in modules, f"{equivalent.name}: {mutant} is not a mutant of area {name}"
    for mutant, why in SCRIPT.equivalents(equivalent).items():
        assert why, f"{equivalent.name}: {mutant} has no reason"


@pytest.mark.parametrize("name", sorted(AREAS))
def test_an_area_runs_with_its_own_settings(name: str) -> None:
    area = AREAS[name]
    text = SCRIPT._without_mutmut_tables((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    text += "\n" + SCRIPT.area_settings(area)
    parsed = tomllib.loads(text)["tool"]
    assert "mutmut_areas" not in parsed
    settings = parsed["mutmut"]
    assert settings["only_mutate"] == area["only_mutate"]
    assert settings["pytest_add_cli_args_test_selection"] == area["tests"]
    assert settings["pytest_add_cli_args"][-2:] != ["-m", "realcli"]
    assert "not realcli" in settings["pytest_add_cli_args"]
    assert settings["do_not_mutate_patterns"] == ["logger\\.(debug|info)\\("]
    assert parsed["pytest"]["ini_options"]["testpaths"] == ["tests"]  # the rest of the file is kept


def test_a_bad_area_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[tool.mutmut_areas.x]\nonly_mutate = []\ntests = ["tests/test_carried.py"]\n')
    with pytest.raises(ValueError, match="only_mutate"):
        SCRIPT.areas(bad)
    bad.write_text('[tool.mutmut_areas.x]\nonly_mutate = ["a.py"]\ntests = ["t.py"]\nonly = 1\n')
    with pytest.raises(ValueError, match="unknown"):
        SCRIPT.areas(bad)
