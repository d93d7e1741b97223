"""Alert diagnosis for the AI-Ops report: runbook items, evidence facts, cause judgement."""
