"""The layer planner: it predicts what each pip step of the Dockerfile installs, from the package index alone, checks
the result, and writes the pairing's locks (`make plan`, `make lock`)."""
