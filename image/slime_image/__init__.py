"""What slime-image runs inside the image: the smoke suite, the patcher and its patches, the preload
selector copied into slime, the versions record and the job launcher.

Standard library only, Python 3.12: this code runs in the image's own interpreter and must not change the
environment it inspects (tests/image/test_stdlib_only.py enforces it). The one exception is probes/, the
child programs the suite starts in their own process, which import the stack they probe.
"""
