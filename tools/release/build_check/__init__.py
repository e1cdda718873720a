"""The verification build (make build-check): the recipe built for real with buildah, its stand-ins, its record."""
