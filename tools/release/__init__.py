"""Building a pairing: the one build entry point (`make build`), the version set it stamps, and the verification build
that builds the recipe here and writes its record (docs/build/<pairing>/)."""
