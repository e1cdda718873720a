"""Child programs the smoke suite runs, each in its own process of the interpreter under test, as a script.

The one place under image/ where code imports the stack it probes (torch, torch_memory_saver, numpy, the
slime, Megatron and SGLang packages): a probe can crash, hang or abort at exit without taking the suite
with it. Each prints one JSON line as its last line of output.
"""
