"""Scenario files: found, read and validated, with errors that name the file and the field.

Two folders: the shipped suite (``evals/scenarios/``, on the shipped runbooks) and this
installation's own (``DATA_DIR/evals/scenarios/``: cases exported from the case library). One bad
file stops the load with every problem listed, so a typo never silently drops a scenario.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import ValidationError

from evals.schema import Scenario
from settings import Settings

SHIPPED_SCENARIOS = Path(__file__).resolve().parent / "scenarios"
LOCAL_SUBDIR = Path("evals") / "scenarios"


class ScenarioError(ValueError):
    """One or more scenario files cannot be used; the message lists each file and field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def local_scenarios_dir(settings: Settings) -> Path:
    """Where exported scenarios are saved and read: under DATA_DIR, never in the checkout."""
    return Path(settings.data_dir) / LOCAL_SUBDIR


def _field(loc: tuple[object, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_problems(exc: ValidationError, where: str) -> list[str]:
    return [
        f"{where}: {_field(e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    ]


def parse_scenario(text: str, where: str = "scenario") -> Scenario:
    """One scenario from YAML text; ``ScenarioError`` names ``where`` and each bad field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(
            [f"{where}: not valid YAML{at}: {getattr(exc, 'problem', exc)}"]
        ) from None
    if not isinstance(data, dict):
        raise ScenarioError([f"{where}: a scenario is a mapping of fields (id, title, …)"])
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(validation_problems(exc, where)) from None


def load_file(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([f"{path}: cannot be read: {exc}"]) from None
    scenario = parse_scenario(text, str(path))
    if scenario.id != path.stem:
        raise ScenarioError([f"{path}: id: {scenario.id!r} must match the file name ({path.stem})"])
    return scenario


def scenario_files(folders: Iterable[Path]) -> list[Path]:
    return [p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.yaml"))]


def load_scenarios(folders: Iterable[Path]) -> list[Scenario]:
    """Every scenario in ``folders`` (missing folders are skipped), in file order; all problems
    (bad files, duplicate ids) are raised together."""
    problems: list[str] = []
    out: list[Scenario] = []
    seen: dict[str, Path] = {}
    for path in scenario_files(folders):
        try:
            scenario = load_file(path)
        except ScenarioError as exc:
            problems += exc.problems
            continue
        if scenario.id in seen:
            problems.append(f"{path}: id: {scenario.id!r} is also used by {seen[scenario.id]}")
            continue
        seen[scenario.id] = path
        out.append(scenario)
    if problems:
        raise ScenarioError(problems)
    return out


def unknown_runbooks(scenarios: Iterable[Scenario], known: set[str]) -> list[str]:
    """Problems for runbook paths a scenario names that its knowledge base does not hold."""
    problems = []
    for s in scenarios:
        for path in dict.fromkeys(s.expected.all_runbooks()):
            if path not in known:
                problems.append(
                    f"scenario {s.id}: expected: runbook {path} is not in the "
                    f"{s.knowledge_base} knowledge base"
                )
    return problems


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as the YAML a file holds (defaults left out, Chinese kept readable)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100)
