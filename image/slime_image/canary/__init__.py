"""slime-canary: slime's own GRPO job on one GPU, phase by phase: cli, its child processes (job), its report
(phases)."""
