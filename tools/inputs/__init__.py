"""The build's inputs as the host reads them: the Dockerfile (recipe, pip_cli) and its structural rules, the pairings
and the slime releases they are drafted from, the locks, and the fingerprint that digests them all."""
