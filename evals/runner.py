"""Runs one scenario as ordinary recorded sessions and observes what they did.

Each question of the scenario is one run on one conversation, through the same ``Runner`` the API
uses, with the scenario's world in the run's context (``Context.world``) and origin ``eval``. What
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
from graph.graphs import Graphs
from persistence.db import Database
from persistence.models import SessionOrigin
from runs.runner import Runner


class ScenarioRunner:
    """Runs scenarios on ``graphs`` with ``model``, recording into ``db``."""

    def __init__(self, db: Database, graphs: Graphs, *, model: str, lease_s: float = 30.0) -> None:
        self.db, self.graphs, self.model = db, graphs, model
        self.runner = Runner(db, graphs, lease_s=lease_s)

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
