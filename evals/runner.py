"""Runs one scenario as ordinary recorded sessions and observes what they did.

Each question of the scenario is one run on one conversation, through a ``Runner`` built as the
API's is (``services.runner_on``: the same lease, the same recording) and handed in, with the scenario's world in the run's context (``Context.world``) and origin ``eval``. What
the runs did is read back from the records (answers, model steps, tokens) and the checkpoints (the
tool results in full), never from the model's own account of itself.
"""

from __future__ import annotations

import time
import uuid

from evals.checks import Observation
from evals.observe import observe_session
from evals.schema import Scenario
from graph.context import Context
from persistence.models import SessionOrigin
from runs.runner import Runner


class ScenarioRunner:
    """Runs scenarios with ``model`` on ``runner`` (its graphs, recording into its database)."""

    def __init__(self, runner: Runner, *, model: str) -> None:
        self.runner, self.model = runner, model
        self.db, self.graphs = runner.db, runner.graphs

    def context(self, scenario: Scenario) -> Context:
        # The model is told the question and sees tool results; nothing of the expectation.
        return Context(model=self.model, world=scenario.world.model_dump(mode="json"))

    async def run(self, scenario: Scenario) -> Observation:
        thread = f"eval-{uuid.uuid4().hex}"
        obs = Observation(answers=[])
        t0 = time.perf_counter()
        for question in scenario.questions():
            result = await self.runner.run(
                question,
                flow=scenario.graph_flow,
                thread_id=thread,
                context=self.context(scenario),
                origin=SessionOrigin.EVAL,
            )
            obs.questions.append(question)
            obs.session_ids.append(result.session_id)
            obs.statuses.append(result.status)
            obs.errors.append(result.error)
            obs.answers.append(result.answer or "")
            if result.session_id:
                _, evidence, calls, tokens = await observe_session(
                    self.db, self.graphs, result.session_id
                )
                obs.evidence += evidence
                obs.model_calls += calls
                obs.tokens += tokens
        obs.duration_ms = int((time.perf_counter() - t0) * 1000)
        return obs

    async def drain(self) -> None:
        await self.runner.drain()
