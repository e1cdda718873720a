"""The host side of slime-image, run from the project virtualenv (`make venv`): the layer planner and the
lock, the recipe's structural rules and version tooling, the Kubernetes renderer and validator, the job
submitter and the base-manifest converter. Nothing here is copied into the image.
"""
