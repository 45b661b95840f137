"""The bias scorer: a port of Mastra's `createBiasScorer`."""
