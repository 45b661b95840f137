"""The camelCase fields of a Mastra scorer run, which our results keep on the wire."""

from __future__ import annotations

MASTRA_FIELDS = {
    "runId",
    "preprocessStepResult",
    "preprocessPrompt",
    "analyzeStepResult",
    "analyzePrompt",
    "score",
    "reason",
    "generateReasonPrompt",
}
